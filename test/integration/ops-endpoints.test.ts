import { execFileSync } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { run } from '../harness/deploy-tools.js';
import { parseExposition, type Exposition } from '../harness/prom-text.js';
import { createKey, eventually, repoRoot, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * A real `dris serve` (the embedded default, every role) and its ops port: /metrics after some
 * traffic (names, types, values, `promtool check metrics` and deploy/prometheus/check-metrics.sh
 * on the live endpoint), /livez, /readyz, the access log, and the graceful stop: on SIGTERM
 * /readyz turns 503 at once, new connections are refused, a request in flight still gets its
 * answer, and the process exits 0 within DRIS_SHUTDOWN_TIMEOUT_MS.
 */

const SHUTDOWN_TIMEOUT_MS = 10_000;

let svc: ServiceHandle;
let key: string;

t.before(async () => {
  svc = await startService({
    env: { DRIS_BATCH_MAX_WAIT_MS: '1000', DRIS_ACCESS_LOG_SAMPLE: '1', DRIS_SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS), DRIS_RATE_LIMITS: 'standard=1000000' },
  });
  key = (await createKey(svc, { tenantId: 'acme', clientId: 'ops' })).apiKey;
});
t.teardown(() => svc.dispose());

const record = (i: number): Record<string, unknown> => ({ tenantId: 'acme', database: 'erp', collection: 'ops', recordId: `r-${i}`, recordPayload: { i } });

async function scrape(): Promise<{ text: string; x: Exposition; type: string | null }> {
  const res = await fetch(`${svc.opsUrl}/metrics`);
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const text = await res.text();
  return { text, x: parseExposition(text), type: res.headers.get('content-type') };
}

void t.test('/livez and /readyz answer 200 on a running process', async (t) => {
  const live = await fetch(`${svc.opsUrl}/livez`);
  t.equal(live.status, 200);
  t.same(await live.json(), { status: 'alive' });
  const ready = await eventually(async () => {
    const r = await fetch(`${svc.opsUrl}/readyz`);
    return r.status === 200 ? ((await r.json()) as unknown) : undefined;
  }, 10_000);
  t.same(ready, { status: 'ready' });
  t.equal((await fetch(`${svc.url}/readyz`)).status, 404, 'the public port does not serve the ops endpoints');
});

void t.test('/metrics after traffic: requests by route and status, records accepted, the pipeline, build info', async (t) => {
  const singles = 5;
  for (let i = 0; i < singles; i++) t.equal((await request(svc, 'POST', '/api/v1/records', { key, body: record(i) })).status, 202);
  const bulk = await request(svc, 'POST', '/api/v1/records/bulk', { key, body: { tenantId: 'acme', records: [10, 11, 12].map((i) => ({ database: 'erp', collection: 'ops', recordId: `r-${i}`, recordPayload: { i } })) } });
  t.equal(bulk.status, 202);
  t.equal((await request(svc, 'GET', '/no/such/route')).status, 404);
  t.equal((await request(svc, 'POST', '/api/v1/records', { body: record(99) })).status, 401);
  const health = await request<{ hashBackend: { active: string }; version: string }>(svc, 'GET', '/api/Admin/health');

  // Anchored with a one-second batch wait: every record counted through to the chain.
  const { x, text, type } = await eventually(async () => {
    const s = await scrape();
    const done =
      (s.x.value('dris_ingest_to_anchored_seconds_count') ?? 0) >= singles + 3 &&
      (s.x.value('dris_records_indexed_total') ?? 0) >= singles + 3 &&
      // Batches by state are read from the store at most every few seconds.
      (s.x.value('dris_batches', { state: 'Anchored' }) ?? 0) >= 1;
    return done ? s : undefined;
  }, 60_000, 250);
  t.equal(type, 'text/plain; version=0.0.4; charset=utf-8');

  t.equal(x.value('dris_build_info', { version: health.body.version, roles: 'api,indexer,anchorer', hash_backend: health.body.hashBackend.active }), 1, 'build info names the hash backend in use');
  t.equal(x.types.get('dris_http_requests_total'), 'counter');
  t.equal(x.value('dris_http_requests_total', { route: 'IngestRecord', method: 'POST', status: '202' }), singles);
  t.equal(x.value('dris_http_requests_total', { route: 'BulkIngestRecords', method: 'POST', status: '202' }), 1);
  t.equal(x.value('dris_http_requests_total', { route: 'unmatched', method: 'GET', status: '404' }), 2, '/no/such/route, and /readyz asked on the public port');
  t.equal(x.value('dris_http_requests_total', { route: 'IngestRecord', method: 'POST', status: '401' }), 1);
  t.equal(x.types.get('dris_http_request_duration_seconds'), 'histogram');
  t.equal(x.value('dris_http_request_duration_seconds_count', { route: 'IngestRecord', method: 'POST' }), singles + 1);
  t.ok((x.value('dris_records_accepted_total', { kind: 'single' }) ?? 0) >= singles);
  t.equal(x.value('dris_records_accepted_total', { kind: 'bulk' }), 3);
  t.ok((x.value('dris_records_indexed_total') ?? 0) >= singles + 3);
  t.ok((x.value('dris_batches_formed_total') ?? 0) >= 1);
  t.ok((x.value('dris_batches_anchored_total') ?? 0) >= 1);
  t.equal(x.value('dris_batches', { state: 'Failed' }), 0);
  t.ok((x.value('dris_batches', { state: 'Anchored' }) ?? 0) >= 1);
  t.ok((x.value('dris_anchor_gas_used_count') ?? 0) >= 1, 'gas of the anchor transactions');
  t.ok((x.value('dris_anchor_fee_wei_total') ?? 0) > 0);
  t.equal(x.value('dris_leader'), 1, 'the embedded process leads');
  t.equal(x.value('dris_leader_epoch'), 1);
  for (const consumer of ['indexer', 'accumulator']) t.type(x.value('dris_queue_lag_messages', { consumer }), 'number', `lag of ${consumer}`);
  t.type(x.value('dris_queue_bytes'), 'number');
  t.ok((x.value('dris_storage_free_bytes') ?? 0) > 0);
  t.type(x.value('dris_chain_head_lag_seconds'), 'number');
  t.ok(x.find('dris_index_query_duration_seconds_count').length > 0, 'index queries timed');
  t.equal(x.types.get('process_cpu_seconds_total'), 'counter', 'default process metrics');
  t.ok(!text.includes(key), 'no key in the exposition');

  const promtool = execFileSync('bash', [path.join(repoRoot, 'scripts', 'tools.sh'), 'promtool'], { encoding: 'utf8', timeout: 30 * 60_000 }).trim();
  const check = await run(promtool, ['check', 'metrics'], { input: text });
  t.equal(check.code, 0, `promtool check metrics: ${check.stdout}${check.stderr}`);
  const live = await run('bash', [path.join(repoRoot, 'deploy', 'prometheus', 'check-metrics.sh'), `${svc.opsUrl}/metrics`], { env: { PROMTOOL: promtool } });
  t.equal(live.code, 0, live.stdout + live.stderr);
});

void t.test('the access log: one line per request (sampling 1), route and status, no key', async (t) => {
  const access = svc.logs.map((l) => JSON.parse(l.startsWith('{') ? l : '{}') as Record<string, unknown>).filter((r) => r['component'] === 'access');
  const ingest = access.filter((r) => r['route'] === 'IngestRecord' && r['status'] === 202);
  t.ok(ingest.length >= 5);
  t.ok(ingest.every((r) => typeof r['correlationId'] === 'string' && typeof r['durationMs'] === 'number' && r['method'] === 'POST'));
  t.ok(access.some((r) => r['route'] === 'unmatched' && r['status'] === 404 && r['code'] === 'route_not_found'));
  t.ok(!access.some((r) => JSON.stringify(r).includes(key) || 'path' in r || 'recordPayload' in r), 'no key, path or payload');
});

/** Sends the head and half the body of a POST on a raw connection; returns a function that sends the rest and reads the answer. */
async function startSlowPost(port: number, apiKey: string): Promise<() => Promise<string>> {
  const body = Buffer.from(JSON.stringify(record(1000)));
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  let answer = '';
  socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
  const ended = new Promise<void>((resolve) => {
    socket.once('close', () => resolve());
  });
  socket.write(`POST /api/v1/records HTTP/1.1\r\nHost: dris\r\nContent-Type: application/json\r\nX-Api-Key: ${apiKey}\r\nContent-Length: ${body.length}\r\n\r\n`);
  socket.write(body.subarray(0, 10));
  return async () => {
    socket.write(body.subarray(10));
    await Promise.race([ended, sleep(15_000)]);
    socket.destroy();
    return answer;
  };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
}

void t.test('SIGTERM: not ready at once, no new connections, the request in flight answered, exit 0 within the bound', async (t) => {
  const finish = await startSlowPost(svc.port, key);
  // The head is in: the request counts as in flight once the server has read it.
  await sleep(300);
  const signalledAt = Date.now();
  process.kill(svc.pid, 'SIGTERM');
  const readyz = await eventually(async () => {
    try {
      const r = await fetch(`${svc.opsUrl}/readyz`);
      return r.status === 503 ? ((await r.json()) as unknown) : undefined;
    } catch {
      return 'refused';
    }
  }, 5000, 20);
  t.same(readyz, { status: 'stopping' }, '/readyz says 503 while the process drains');
  t.ok(await eventually(async () => ((await refused(svc.port)) ? true : undefined), 5000, 20), 'the public listener accepts no new connection');
  const answer = await finish();
  t.match(answer, /^HTTP\/1\.1 202 /, 'the request in flight got its 202');
  t.match(answer, /"ingestId":"[0-9A-Z]{26}"/);
  const exit = await Promise.race([svc.exited, sleep(SHUTDOWN_TIMEOUT_MS + 5000).then(() => null)]);
  t.same(exit, { code: 0, signal: null }, 'exit 0');
  t.ok(Date.now() - signalledAt < SHUTDOWN_TIMEOUT_MS + 5000, 'within the bound');
  const drained = svc.logs.find((l) => l.includes('"listeners closed; requests in flight answered"'));
  t.match(drained ?? '', /"inFlight":1/, 'one request was in flight when the listener closed');
  t.ok(svc.logs.some((l) => l.includes('"msg":"stopped"')));
});
