import { Writable } from 'node:stream';
import t from 'tap';
import { HealthMonitor, type Probe } from '../../src/app/health.js';
import { Readiness } from '../../src/app/readiness.js';
import { insertName, queryName } from '../../src/adapters/clickhouse/timed-runner.js';
import { loadConfig } from '../../src/config/config.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { AccessLog } from '../../src/http/access-log.js';
import { startOpsListener } from '../../src/http/ops-listener.js';
import { createLogger } from '../../src/util/logger.js';

/** Configuration of the ops side, the access log, readiness, the ops listener, query names. */

function capture(): { lines: Record<string, unknown>[]; log: ReturnType<typeof createLogger> } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const l of chunk.toString('utf8').split('\n')) if (l !== '') lines.push(JSON.parse(l) as Record<string, unknown>);
      cb();
    },
  });
  return { lines, log: createLogger('info', sink) };
}

function fieldsOf(e: unknown): string[] {
  return e instanceof DrisError ? e.fields.map((f) => `${f.path}:${f.code}`).sort() : [];
}

void t.test('configuration: defaults, values, and what is refused', async (t) => {
  t.same(loadConfig({}, '/srv').ops, { host: '127.0.0.1', port: 9464, accessLogSample: 0.01, shutdownTimeoutMs: 15_000 });
  t.same(loadConfig({ DRIS_OPS_HOST: '0.0.0.0', DRIS_OPS_PORT: '0', DRIS_ACCESS_LOG_SAMPLE: '0.25', DRIS_SHUTDOWN_TIMEOUT_MS: '45000' }, '/srv').ops, {
    host: '0.0.0.0',
    port: 0,
    accessLogSample: 0.25,
    shutdownTimeoutMs: 45_000,
  });
  t.equal(loadConfig({ DRIS_ACCESS_LOG_SAMPLE: '1' }, '/srv').ops.accessLogSample, 1);
  t.equal(loadConfig({ PORT: '0', DRIS_ADMIN_PORT: '0', DRIS_OPS_PORT: '0' }, '/srv').ops.port, 0, 'several 0s never collide');
  const refused = (env: Record<string, string>): string[] => {
    try {
      loadConfig(env, '/srv');
    } catch (err) {
      return fieldsOf(err);
    }
    return [];
  };
  t.same(refused({ PORT: '9464' }), ['DRIS_OPS_PORT:invalid_value'], 'the default ops port taken by PORT');
  t.same(refused({ DRIS_OPS_PORT: '8081' }), ['DRIS_OPS_PORT:invalid_value'], 'the admin port');
  t.same(refused({ DRIS_OPS_PORT: '70000' }), ['DRIS_OPS_PORT:out_of_range']);
  t.same(refused({ DRIS_ACCESS_LOG_SAMPLE: '1.5' }), ['DRIS_ACCESS_LOG_SAMPLE:out_of_range']);
  t.same(refused({ DRIS_ACCESS_LOG_SAMPLE: 'often' }), ['DRIS_ACCESS_LOG_SAMPLE:not_a_number']);
  t.same(refused({ DRIS_SHUTDOWN_TIMEOUT_MS: '10' }), ['DRIS_SHUTDOWN_TIMEOUT_MS:out_of_range']);
});

void t.test('access log: a sampled share, every 5xx, never a path or header', async (t) => {
  const { lines, log } = capture();
  let r = 0.5;
  const access = new AccessLog(log, 0.1, () => r);
  access.answered('IngestRecord', 'POST', 202, 0.0123, 'c-1', undefined);
  r = 0.05;
  access.answered('IngestRecord', 'POST', 202, 0.0123, 'c-2', undefined);
  r = 0.99;
  access.answered('IngestRecord', 'POST', 503, 0.5, 'c-3', 'overloaded');
  access.answered('IngestRecord', 'POST', 500, 0.5, 'c-4', 'internal_error');
  t.same(
    lines.map((l) => [l['component'], l['msg'], l['route'], l['method'], l['status'], l['durationMs'], l['correlationId'], l['code']]),
    [
      [undefined, 'request', 'IngestRecord', 'POST', 202, 12.3, 'c-2', undefined],
      [undefined, 'request', 'IngestRecord', 'POST', 503, 500, 'c-3', 'overloaded'],
      [undefined, 'request', 'IngestRecord', 'POST', 500, 500, 'c-4', 'internal_error'],
    ],
  );
  const off = capture();
  const none = new AccessLog(off.log, 0, () => 0);
  none.answered('GetHealth', 'GET', 200, 0.001, 'c-5', undefined);
  none.answered('GetHealth', 'GET', 503, 0.001, 'c-6', undefined);
  t.same(off.lines.map((l) => l['correlationId']), ['c-6'], 'sampling 0: only the 5xx');
  const all = capture();
  new AccessLog(all.log, 1, () => 0.999).answered('GetHealth', 'GET', 200, 0.001, 'c-7', undefined);
  t.equal(all.lines.length, 1, 'sampling 1: every request');
});

function monitorOf(probes: Probe[]): HealthMonitor {
  return new HealthMonitor({ version: '1', startedAtMs: 0, roles: ['api'], hashBackend: { active: 'js', requested: 'auto', unavailable: {} }, http: { engine: 'x', native: true }, probes, timeoutMs: 200, cacheMs: 0 });
}

void t.test('readiness: starting, ready, down components by name, stopping', async (t) => {
  const readiness = new Readiness();
  t.same(await readiness.check(), { ready: false, status: 'starting' });
  let queueUp = true;
  readiness.started(
    monitorOf([
      { name: 'queue', adapter: 'nats', check: () => (queueUp ? Promise.resolve() : Promise.reject(new Error('nats://user:pw@10.0.0.1:4222 refused'))) },
      { name: 'index', adapter: 'chdb', check: () => Promise.resolve('degraded' as const) },
    ]),
  );
  t.same(await readiness.check(), { ready: true, status: 'ready' }, 'degraded still works');
  queueUp = false;
  t.same(await readiness.check(), { ready: false, status: 'not_ready', failed: ['queue'] }, 'the component, never its error');
  queueUp = true;
  readiness.stopping();
  t.same(await readiness.check(), { ready: false, status: 'stopping' });
});

void t.test('the ops listener: /livez, /readyz, /metrics, and nothing else', async (t) => {
  let ready = true;
  let renders = 0;
  const ops = await startOpsListener({
    host: '127.0.0.1',
    port: 0,
    metrics: {
      contentType: 'text/plain; version=0.0.4; charset=utf-8',
      render: async () => {
        renders += 1;
        await new Promise((r) => setTimeout(r, 50));
        return 'dris_build_info{version="1"} 1\n';
      },
    },
    readiness: { check: () => Promise.resolve(ready ? { ready: true, status: 'ready' } : { ready: false, status: 'not_ready', failed: ['queue'] }) },
    logger: capture().log,
  });
  t.teardown(() => ops.close());
  const base = `http://127.0.0.1:${ops.port}`;
  const get = async (path: string, init?: RequestInit): Promise<{ status: number; type: string | null; body: string }> => {
    const res = await fetch(`${base}${path}`, init);
    return { status: res.status, type: res.headers.get('content-type'), body: await res.text() };
  };
  t.same(await get('/livez'), { status: 200, type: 'application/json', body: '{"status":"alive"}' });
  t.same(await get('/readyz'), { status: 200, type: 'application/json', body: '{"status":"ready"}' });
  ready = false;
  t.same(await get('/readyz'), { status: 503, type: 'application/json', body: '{"status":"not_ready","failed":["queue"]}' });
  const scrapes = await Promise.all([get('/metrics'), get('/metrics'), get('/metrics?x=1')]);
  t.ok(scrapes.every((s) => s.status === 200 && s.type === 'text/plain; version=0.0.4; charset=utf-8' && s.body === 'dris_build_info{version="1"} 1\n'));
  t.equal(renders, 1, 'concurrent scrapes share one rendering');
  t.equal((await get('/metrics', { method: 'HEAD' })).status, 200);
  t.equal((await get('/api/v1/records')).status, 404);
  t.equal((await get('/metrics', { method: 'POST', body: 'x' })).status, 405);
});

void t.test('the ops listener refuses a port in use, naming the variables', async (t) => {
  const first = await startOpsListener({ host: '127.0.0.1', port: 0, metrics: { contentType: 'text/plain', render: () => Promise.resolve('') }, readiness: { check: () => Promise.resolve({ ready: true, status: 'ready' }) }, logger: capture().log });
  t.teardown(() => first.close());
  await t.rejects(startOpsListener({ host: '127.0.0.1', port: first.port, metrics: { contentType: 'text/plain', render: () => Promise.resolve('') }, readiness: { check: () => Promise.resolve({ ready: true, status: 'ready' }) }, logger: capture().log }), { code: 'config_invalid' });
});

void t.test('index query names: a small fixed set, never SQL text', async (t) => {
  t.equal(queryName('SELECT a FROM dris.records FINAL WHERE x = {x:String}'), 'records');
  t.equal(queryName('SELECT status, count() AS c FROM `dris`.batches FINAL GROUP BY status'), 'batches');
  t.equal(queryName("SELECT toString((SELECT max(version) FROM dris.batches)) AS b"), 'batches');
  t.equal(queryName('SELECT 1 AS ok'), 'other');
  t.equal(queryName('SELECT * FROM dris.secret_table_of_someone'), 'other');
  t.equal(insertName('dris.record_leaves'), 'insert_record_leaves');
  t.equal(insertName('x.unknown'), 'other');
});
