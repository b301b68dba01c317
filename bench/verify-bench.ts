import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { setLogLevel } from '../src/util/logger.js';
import { createKey, request, startService, type ServiceHandle } from '../test/harness/service.js';
import { loadAnchoredRecords } from './anchored-loader.js';
import { arg, num } from './args.js';

/**
 * bench:verify — POST /api/v1/verify/record in stored-hash mode (no payload, no batchId) against
 * the embedded default holding --records anchored records (1 000 000 by default), keep-alive,
 * --connections connections (64) from wrk. Each request names a record drawn uniformly at random
 * from all loaded ones, so index look-ups are coalesced across unrelated records and the per-root
 * chain cache sees every batch. Every answer must be 200 with verified=true and
 * verificationStatus=pass; any other answer is counted as an error and reported.
 *
 *   npm run bench:verify [-- --records 1000000 --duration 30 --warmup 15 --connections 64 --reuse DIR]
 *
 * The records are written by anchored-loader.ts (formed, stored, pinned and anchored by dris's
 * own code, without HTTP ingestion). With --reuse DIR the data directory is kept: a later run on
 * the same DIR skips the load when its marker says it holds the same number of records. Without
 * --reuse a temporary directory is loaded and removed at the end.
 *
 * The first verification of a batch also fetches and checks its manifest, so the same load runs
 * unmeasured for --warmup seconds first; what follows is the steady state, where batch rows and
 * chain reads still expire and are read again.
 */

const TENANT = 'bench';
const DATABASE = 'erp';
const COLLECTION = 'invoices';
const recordId = (i: number): string => `inv-${i}`;
/** Written last by a completed load; its presence is what --reuse trusts. */
const MARKER = 'verify-bench.json';
/** Written first by a load: a directory holding it but no marker was left half-loaded. */
const LOADING = 'verify-bench.loading';

interface Marker {
  readonly records: number;
  readonly batches: number;
  readonly contractAddress: string;
  readonly hashBackend: string;
  readonly loadedAt: string;
  readonly loadSeconds: number;
}

/** Per-request checks run inside wrk, so a wrong answer is seen however fast the load runs. */
const LUA = `
local n = tonumber(os.getenv("BENCH_RECORDS"))
local key = os.getenv("BENCH_KEY")
local headers = { ["Content-Type"] = "application/json", ["X-API-Key"] = key }
local threads = {}
local next_id = 1
function setup(thread)
  thread:set("tid", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end
function init(args)
  math.randomseed(os.time() * 1000 + tid * 7919)
  ok = 0
  non200 = 0
  unverified = 0
  firstbad = ""
end
request = function()
  local body = '{"tenantId":"${TENANT}","database":"${DATABASE}","collection":"${COLLECTION}","recordId":"inv-' .. math.random(0, n - 1) .. '"}'
  return wrk.format("POST", "/api/v1/verify/record", headers, body)
end
response = function(status, hdrs, body)
  if status ~= 200 then
    non200 = non200 + 1
    if firstbad == "" then firstbad = status .. " " .. string.sub(body, 1, 400) end
  elseif string.find(body, '"verified":true', 1, true) == nil or string.find(body, '"verificationStatus":"pass"', 1, true) == nil then
    unverified = unverified + 1
    if firstbad == "" then firstbad = status .. " " .. string.sub(body, 1, 400) end
  else
    ok = ok + 1
  end
end
done = function(summary, latency, requests)
  local ok_, non200_, unverified_, bad = 0, 0, 0, ""
  for _, t in ipairs(threads) do
    ok_ = ok_ + t:get("ok")
    non200_ = non200_ + t:get("non200")
    unverified_ = unverified_ + t:get("unverified")
    if bad == "" then bad = t:get("firstbad") end
  end
  local e = summary.errors
  io.write(string.format("WRKJSON {\\"requests\\":%d,\\"durationUs\\":%d,\\"p50Us\\":%d,\\"p90Us\\":%d,\\"p99Us\\":%d,\\"maxUs\\":%d,\\"socketErrors\\":%d,\\"ok\\":%d,\\"non200\\":%d,\\"unverified\\":%d}\\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    e.connect + e.read + e.write + e.timeout, ok_, non200_, unverified_))
  io.write("WRKBAD " .. string.gsub(bad, "[\\r\\n]", " ") .. "\\n")
end
`;

interface WrkResult {
  requests: number;
  durationUs: number;
  p50Us: number;
  p90Us: number;
  p99Us: number;
  maxUs: number;
  socketErrors: number;
  ok: number;
  non200: number;
  unverified: number;
  firstBad: string;
}

function wrk(url: string, luaFile: string, env: Record<string, string>, seconds: number, connections: number): WrkResult {
  const r = spawnSync('wrk', ['-t2', `-c${connections}`, `-d${seconds}s`, '--timeout', '10s', '--latency', '-s', luaFile, url], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 16 * 1024 * 1024,
  });
  const lines = (r.stdout ?? '').split('\n');
  const line = lines.find((l) => l.startsWith('WRKJSON '));
  if (line === undefined) throw new Error(`wrk failed: ${r.stderr ?? ''}${r.stdout ?? ''}`);
  const bad = lines.find((l) => l.startsWith('WRKBAD '))?.slice(7).trim() ?? '';
  return { ...(JSON.parse(line.slice(8)) as Omit<WrkResult, 'firstBad'>), firstBad: bad };
}

/** The data directory to verify against, loaded now unless a completed load of the same size is there. */
async function prepareData(records: number, reuse: string | undefined): Promise<{ dir: string; marker: Marker; loaded: boolean; temporary: boolean }> {
  const dir = reuse === undefined ? await mkdtemp(path.join(tmpdir(), 'dris-verify-bench-')) : path.resolve(reuse);
  if (reuse !== undefined) {
    await mkdir(dir, { recursive: true });
    if (existsSync(path.join(dir, MARKER))) {
      const marker = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as Marker;
      if (marker.records !== records) throw new Error(`${dir} holds ${marker.records} loaded records, not ${records}: use another --reuse directory or --records ${marker.records}`);
      console.error(`reusing ${dir}: ${marker.records} anchored records in ${marker.batches} batches, loaded ${marker.loadedAt}`);
      return { dir, marker, loaded: false, temporary: false };
    }
    const entries = await readdir(dir);
    if (entries.length > 0 && !entries.includes(LOADING)) throw new Error(`${dir} is neither empty nor a verify-bench data directory; refusing to load into it`);
    // Left by a load that did not finish: start again from nothing.
    for (const e of entries) await rm(path.join(dir, e), { recursive: true, force: true });
  }
  await writeFile(path.join(dir, LOADING), `${new Date().toISOString()}\n`);
  console.error(`loading ${records} anchored records into ${dir}`);
  let r: Awaited<ReturnType<typeof loadAnchoredRecords>>;
  try {
    r = await loadAnchoredRecords({
      dataDir: dir,
      records,
      tenantId: TENANT,
      database: DATABASE,
      collection: COLLECTION,
      recordId,
      progress: (line) => console.error(`  ${line}`),
    });
  } catch (err) {
    // A --reuse directory keeps its loading marker, so the next run starts it again from nothing.
    if (reuse === undefined) await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const marker: Marker = { records: r.records, batches: r.batches, contractAddress: r.contractAddress, hashBackend: r.hashBackend, loadedAt: new Date().toISOString(), loadSeconds: Math.round(r.seconds) };
  await writeFile(path.join(dir, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
  await rm(path.join(dir, LOADING), { force: true });
  console.error(`loaded in ${r.seconds.toFixed(0)} s (batches formed and stored in ${r.formSeconds.toFixed(0)} s)`);
  return { dir, marker, loaded: true, temporary: reuse === undefined };
}

/** A few verifications one by one before the load: a broken setup fails here, with its answer. */
async function spotCheck(svc: ServiceHandle, key: string, records: number): Promise<void> {
  for (const i of [0, records - 1, Math.floor(records / 2)]) {
    const r = await request<{ verified?: boolean; verificationStatus?: string }>(svc, 'POST', '/api/v1/verify/record', {
      key,
      body: { tenantId: TENANT, database: DATABASE, collection: COLLECTION, recordId: recordId(i) },
    });
    if (r.status !== 200 || r.body.verified !== true || r.body.verificationStatus !== 'pass') {
      throw new Error(`verification of ${recordId(i)} answered ${r.status}: ${r.text.slice(0, 600)}`);
    }
  }
}

/** Busy and total jiffies of all CPUs so far (/proc/stat), to tell how busy the machine was. */
function cpuTimes(): { busy: number; total: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = fields.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th fields.
    return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
  } catch {
    return null;
  }
}

function busyPercent(from: ReturnType<typeof cpuTimes>, to: ReturnType<typeof cpuTimes>): number | null {
  if (from === null || to === null || to.total === from.total) return null;
  return Math.round((100 * (to.busy - from.busy)) / (to.total - from.total));
}

function round1(v: number): number {
  return Math.round(v * 10) / 10;
}

async function main(): Promise<void> {
  if (spawnSync('wrk', ['--version']).error !== undefined) throw new Error('wrk is required: apt-get install wrk');
  const records = Math.floor(num('records', 1_000_000));
  const seconds = num('duration', 30);
  const warmup = num('warmup', 15);
  const connections = Math.floor(num('connections', 64));
  const reuse = process.argv.includes('--reuse') ? arg('reuse', '') : undefined;
  if (reuse === '') throw new Error('--reuse needs a directory');
  // The loader runs dris's components in this process: keep their per-batch logs out of the report.
  setLogLevel('warn');

  const loadStarted = Date.now();
  const data = await prepareData(records, reuse);
  const loadSeconds = data.loaded ? Math.round((Date.now() - loadStarted) / 1000) : 0;
  const loadBefore = loadavg()[0] ?? 0;
  // What the machine does without this bench: other work on a shared machine skews every figure.
  const idleStart = cpuTimes();
  await new Promise((r) => setTimeout(r, 3000));
  const backgroundCpuBusyPercent = busyPercent(idleStart, cpuTimes());

  let svc: ServiceHandle;
  try {
    svc = await startService({
      dataDir: data.dir,
      env: { DRIS_RATE_LIMITS: 'standard=1000,premium=10000,enterprise=1000000000', DRIS_LOG_LEVEL: 'info' },
    });
  } catch (err) {
    if (data.temporary) await rm(data.dir, { recursive: true, force: true });
    throw err;
  }
  let result: WrkResult;
  let cpuBefore: ReturnType<typeof cpuTimes> = null;
  let cpuAfter: ReturnType<typeof cpuTimes> = null;
  try {
    const key = (await createKey(svc, { tenantId: TENANT, clientId: 'bench', level: 'enterprise' })).apiKey;
    await spotCheck(svc, key, records);
    const scratch = await mkdtemp(path.join(tmpdir(), 'dris-verify-wrk-'));
    try {
      const lua = path.join(scratch, 'verify.lua');
      await writeFile(lua, LUA);
      const env = { BENCH_KEY: key, BENCH_RECORDS: String(records) };
      const url = `${svc.url}/api/v1/verify/record`;
      // Warm-up: JIT, the key cache and the first manifests; not counted.
      wrk(url, lua, env, warmup, connections);
      cpuBefore = cpuTimes();
      result = wrk(url, lua, env, seconds, connections);
      cpuAfter = cpuTimes();
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  } finally {
    if (data.temporary) await svc.dispose();
    else await svc.stop();
  }
  const loadAfter = loadavg()[0] ?? 0;

  const errors = result.non200 + result.unverified + result.socketErrors;
  // Everything that ran meanwhile: the service, wrk, and whatever else shares the machine.
  const cpuBusyPercent = busyPercent(cpuBefore, cpuAfter);
  const out = {
    verifyPerSec: Math.round(result.ok / (result.durationUs / 1e6)),
    verifyP99Ms: round1(result.p99Us / 1000),
    verifyP50Ms: round1(result.p50Us / 1000),
    verifyP90Ms: round1(result.p90Us / 1000),
    verifyMaxMs: round1(result.maxUs / 1000),
    requestsPerSec: Math.round(result.requests / (result.durationUs / 1e6)),
    requests: result.requests,
    verified: result.ok,
    errors,
    non200: result.non200,
    notVerified: result.unverified,
    socketErrors: result.socketErrors,
    firstError: result.firstBad === '' ? null : result.firstBad,
    records,
    batches: data.marker.batches,
    loadedThisRun: data.loaded,
    loadSeconds,
    connections,
    durationSeconds: seconds,
    loadAvg1mBefore: round1(loadBefore),
    loadAvg1mAfter: round1(loadAfter),
    backgroundCpuBusyPercent,
    cpuBusyPercent,
    cpus: availableParallelism(),
  };
  const rows: [string, string][] = [
    ['anchored records (batches)', `${records} (${out.batches})${data.loaded ? `, loaded in ${loadSeconds} s` : ', reused'}`],
    ['verifications/s (200, verified=true)', String(out.verifyPerSec)],
    ['latency p50 / p90 / p99 / max (ms)', `${out.verifyP50Ms} / ${out.verifyP90Ms} / ${out.verifyP99Ms} / ${out.verifyMaxMs}`],
    ['requests (errors)', `${out.requests} (${errors}: ${out.non200} non-200, ${out.notVerified} not verified, ${out.socketErrors} socket)`],
    ['connections / duration (s)', `${connections} / ${seconds}`],
    ['load average 1 min before / after', `${out.loadAvg1mBefore} / ${out.loadAvg1mAfter}`],
    ['machine CPU busy before / during the run (%)', `${backgroundCpuBusyPercent ?? 'n/a'} / ${cpuBusyPercent ?? 'n/a'}`],
  ];
  if (out.firstError !== null) rows.push(['first error', out.firstError]);
  const width = Math.max(...rows.map((r) => r[0].length));
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  console.log(JSON.stringify(out));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
