import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createKey, startService, type ServiceHandle } from '../test/harness/service.js';
import { startNats, startRedis } from '../test/harness/servers.js';
import { arg } from './args.js';

/**
 * bench:ingest — POST /api/v1/records with a 1 KiB payload (keep-alive, 64 connections), bulk
 * ingest of 1000-record requests, and a bare uWebSockets.js handler answering 202 to the same
 * requests as the physical baseline, all in one run: embedded (every role in one process), with
 * NATS + Redis, and the embedded front alone (DRIS_ROLES=api).
 * Load comes from wrk on the other core (server pinned to CPU 0, wrk to CPU 1 where taskset exists).
 *
 *   npm run bench:ingest [-- --duration 10 --modes embedded,nats-redis,embedded-api]
 */

const here = path.dirname(fileURLToPath(import.meta.url));

interface WrkResult {
  requests: number;
  durationUs: number;
  p50Us: number;
  p99Us: number;
  errors: number;
  non2xx: number;
}

const LUA = `
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("BENCH_KEY")
if key ~= nil and key ~= "" then wrk.headers["X-API-Key"] = key end
local f = io.open(os.getenv("BENCH_BODY"), "rb")
wrk.body = f:read("*a")
f:close()
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("WRKJSON {\\"requests\\":%d,\\"durationUs\\":%d,\\"p50Us\\":%d,\\"p99Us\\":%d,\\"errors\\":%d,\\"non2xx\\":%d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99), e.connect + e.read + e.write + e.timeout, e.status))
end
`;

const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;
const pin = (cpu: string, cmd: string[]): string[] => (hasTaskset ? ['taskset', '-c', cpu, ...cmd] : cmd);

function wrk(url: string, bodyFile: string, luaFile: string, key: string, seconds: number, connections: number, threads = 2): WrkResult {
  const cmd = pin('1', ['wrk', `-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency', '-s', luaFile, url]);
  const r = spawnSync(cmd[0] as string, cmd.slice(1), { env: { ...process.env, BENCH_KEY: key, BENCH_BODY: bodyFile }, encoding: 'utf8', maxBuffer: 16 * 1024 * 1024 });
  const line = (r.stdout ?? '').split('\n').find((l) => l.startsWith('WRKJSON '));
  if (line === undefined) throw new Error(`wrk failed: ${r.stderr ?? ''}${r.stdout ?? ''}`);
  return JSON.parse(line.slice(8)) as WrkResult;
}

function payload1k(i: number): Record<string, unknown> {
  const lines = Array.from({ length: 8 }, (_, k) => ({ sku: `SKU-${i}-${k}`, qty: k + 1, price: 12.5 + k, note: 'standard delivery' }));
  return { invoice: `INV-${i}`, customer: { id: `C-${i % 997}`, name: 'Example Customer Ltd', country: 'DE' }, currency: 'EUR', total: 1234.56, lines, memo: 'x'.repeat(200) };
}

function singleBody(): string {
  return JSON.stringify({ tenantId: 'bench', database: 'erp', collection: 'invoices', recordId: 'inv-1', recordPayload: payload1k(1) });
}

function bulkBody(): string {
  return JSON.stringify({ tenantId: 'bench', records: Array.from({ length: 1000 }, (_, i) => ({ database: 'erp', collection: 'invoices', recordId: `inv-${i}`, recordPayload: payload1k(i) })) });
}

async function startBare(): Promise<{ url: string; child: ChildProcess }> {
  const cmd = pin('0', [process.execPath, path.join(here, 'bare-uws.js'), '0']);
  const child = spawn(cmd[0] as string, cmd.slice(1), { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout?.on('data', (d: Buffer) => {
      const m = /ready (\d+)/.exec(d.toString());
      if (m?.[1] !== undefined) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error('bare server exited')));
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

interface ModeResult {
  singleReqPerSec: number;
  singleP50Ms: number;
  singleP99Ms: number;
  singleNon2xx: number;
  bulkRecordsPerSec: number;
  bulkP99Ms: number;
  bulkNon2xx: number;
}

async function benchService(svc: ServiceHandle, files: { single: string; bulk: string; lua: string }, seconds: number): Promise<ModeResult> {
  const key = (await createKey(svc, { tenantId: 'bench', clientId: 'bench', level: 'enterprise' })).apiKey;
  const url = `${svc.url}/api/v1/records`;
  wrk(url, files.single, files.lua, key, 2, 64); // warm-up: JIT, caches, first log segment
  const single = wrk(url, files.single, files.lua, key, seconds, 64);
  const bulk = wrk(`${url}/bulk`, files.bulk, files.lua, key, seconds, 4, 1);
  return {
    singleReqPerSec: Math.round(single.requests / (single.durationUs / 1e6)),
    singleP50Ms: single.p50Us / 1000,
    singleP99Ms: single.p99Us / 1000,
    singleNon2xx: single.non2xx,
    bulkRecordsPerSec: Math.round((bulk.requests * 1000) / (bulk.durationUs / 1e6)),
    bulkP99Ms: bulk.p99Us / 1000,
    bulkNon2xx: bulk.non2xx,
  };
}

async function main(): Promise<void> {
  if (spawnSync('wrk', ['--version']).error !== undefined) throw new Error('wrk is required: apt-get install wrk');
  const seconds = Number(arg('duration', '10'));
  // embedded-api: the ingest front alone (DRIS_ROLES=api): acceptance made durable in the queue,
  // with no indexer or anchorer sharing the core, as an API process of a cluster runs.
  const modes = arg('modes', 'embedded,nats-redis,embedded-api').split(',');
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-bench-'));
  const files = { single: path.join(dir, 'single.json'), bulk: path.join(dir, 'bulk.json'), lua: path.join(dir, 'post.lua') };
  await writeFile(files.single, singleBody());
  await writeFile(files.bulk, bulkBody());
  await writeFile(files.lua, LUA);

  const bare = await startBare();
  wrk(bare.url, files.single, files.lua, '', 2, 64);
  const b = wrk(bare.url, files.single, files.lua, '', seconds, 64);
  bare.child.kill('SIGTERM');
  const bareReqPerSec = Math.round(b.requests / (b.durationUs / 1e6));

  const results: Record<string, ModeResult> = {};
  const env = { DRIS_RATE_LIMITS: 'standard=1000,premium=10000,enterprise=1000000000', DRIS_LOG_LEVEL: 'info' };
  for (const mode of modes) {
    const extra: Record<string, string> = {};
    const stops: (() => Promise<void>)[] = [];
    if (mode === 'embedded-api') extra['DRIS_ROLES'] = 'api';
    if (mode === 'nats-redis') {
      const nats = await startNats();
      const redis = await startRedis();
      stops.push(() => nats.stop(), () => redis.stop());
      extra['NATS_URL'] = nats.url;
      extra['REDIS_URL'] = redis.url;
    }
    const svc = await startService({ env: { ...env, ...extra }, pinCpu: hasTaskset ? '0' : undefined });
    try {
      results[mode] = await benchService(svc, files, seconds);
    } finally {
      await svc.dispose();
      for (const s of stops) await s();
    }
  }
  await rm(dir, { recursive: true, force: true });

  const rows = [['mode', 'single req/s', 'p50 ms', 'p99 ms', '% of bare', 'bulk records/s', 'bulk p99 ms', 'non-2xx']];
  rows.push(['bare uWS', String(bareReqPerSec), (b.p50Us / 1000).toFixed(2), (b.p99Us / 1000).toFixed(2), '100', '-', '-', String(b.non2xx)]);
  for (const [mode, r] of Object.entries(results)) {
    rows.push([mode, String(r.singleReqPerSec), r.singleP50Ms.toFixed(2), r.singleP99Ms.toFixed(2), ((100 * r.singleReqPerSec) / bareReqPerSec).toFixed(1), String(r.bulkRecordsPerSec), r.bulkP99Ms.toFixed(1), String(r.singleNon2xx + r.bulkNon2xx)]);
  }
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  for (const r of rows) console.log(r.map((c, i) => c.padEnd(widths[i] ?? 0)).join('  '));
  const first = results[modes[0] ?? 'embedded'];
  console.log(
    JSON.stringify({
      singleReqPerSec: first?.singleReqPerSec ?? 0,
      singleP99Ms: first?.singleP99Ms ?? 0,
      bulkRecordsPerSec: first?.bulkRecordsPerSec ?? 0,
      bareReqPerSec,
      singleVsBarePercent: first === undefined ? 0 : Math.round((1000 * first.singleReqPerSec) / bareReqPerSec) / 10,
      durationSeconds: seconds,
      modes: results,
    }),
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
