import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setLogLevel } from '../../src/util/logger.js';
import { request } from '../../test/harness/service.js';
import { loadAnchoredRecords } from '../anchored-loader.js';
import { busyPercent, cpuTimes } from '../lib/environment.js';
import { chdbFloor } from '../lib/floors/chdb.js';
import { startBareServer } from '../lib/floors/http.js';
import { generatorWorkers, LOAD_OPTIONS, measureHttp, pinRequested, plannedLoads, sweepHttp, sweepRequested, type HttpWorkload } from '../lib/http-phase.js';
import { num, optNum, str, type OptionValues } from '../lib/options.js';
import { payload1k } from '../lib/payload.js';
import { pinProcesses } from '../lib/pinning.js';
import type { PhaseHandle, PlannedPhase } from '../lib/progress.js';
import type { Figure, FloorFigure, Phase, SweepResult } from '../lib/results.js';
import { withFloors, type Scenario, type ScenarioContext, type ScenarioOutput } from '../lib/scenario.js';
import { BENCH_TENANT, startBenchService, type BenchService } from '../lib/service.js';
import { fmtNum, table } from '../lib/table.js';
import { breakdownOf, formatBreakdown, readTime } from '../lib/where-time-went.js';

/**
 * verify: POST /api/v1/verify/record in stored-hash mode against the embedded default holding
 * --records anchored records (loaded by anchored-loader.ts with dris's own code, or reused with
 * --reuse DIR). Each request names a record drawn uniformly at random; every answer must be 200
 * with verified=true and verificationStatus=pass, anything else is counted as failed. Floors:
 * bare uWebSockets.js (same generator, same load) and raw chDB point look-ups.
 */

const DATABASE = 'erp';
const COLLECTION = 'invoices';
const recordId = (i: number): string => `inv-${i}`;
/** Written last by a completed load; its presence is what --reuse trusts. */
const MARKER = 'verify-bench.json';
/** Written first by a load: a directory holding it but no marker was left half-loaded. */
const LOADING = 'verify-bench.loading';
/** Records a 2-core machine loads per second, for the load's first ETA. */
const LOAD_RATE_GUESS = 2500;

/** The service's count of verifications: what the time breakdown is per 1000 of. */
const VERIFICATIONS = 'dris_verifications_total';

interface Marker {
  readonly records: number;
  readonly batches: number;
  readonly contractAddress: string;
  readonly hashBackend: string;
  readonly loadedAt: string;
  readonly loadSeconds: number;
}

interface Data {
  readonly dir: string;
  readonly marker: Marker;
  readonly loaded: boolean;
  readonly temporary: boolean;
}

async function load(dir: string, records: number, h: PhaseHandle): Promise<Marker> {
  await writeFile(path.join(dir, LOADING), `${new Date().toISOString()}\n`);
  const started = Date.now();
  const r = await loadAnchoredRecords({
    dataDir: dir,
    records,
    tenantId: BENCH_TENANT,
    database: DATABASE,
    collection: COLLECTION,
    recordId,
    step: (stage, done, total) => {
      const elapsed = (Date.now() - started) / 1000;
      // Forming and anchoring overlap; the first is most of the time.
      const left = stage === 'form' ? (elapsed / done) * (total - done) * 1.2 : ((elapsed / Math.max(1, done)) * (total - done)) / 2;
      h.note(`${stage === 'form' ? 'formed' : 'anchored'} ${done}/${total} batches`);
      h.remaining(left);
    },
  });
  const marker: Marker = { records: r.records, batches: r.batches, contractAddress: r.contractAddress, hashBackend: r.hashBackend, loadedAt: new Date().toISOString(), loadSeconds: Math.round(r.seconds) };
  await writeFile(path.join(dir, MARKER), `${JSON.stringify(marker, null, 2)}\n`);
  await rm(path.join(dir, LOADING), { force: true });
  return marker;
}

/** The data directory to verify against, loaded now unless a completed load of the same size is there. */
async function prepareData(ctx: ScenarioContext, records: number, reuse: string | undefined): Promise<Data> {
  const dir = reuse === undefined ? await mkdtemp(path.join(tmpdir(), 'dris-verify-bench-')) : path.resolve(reuse);
  if (reuse !== undefined) {
    await mkdir(dir, { recursive: true });
    if (existsSync(path.join(dir, MARKER))) {
      const marker = JSON.parse(await readFile(path.join(dir, MARKER), 'utf8')) as Marker;
      if (marker.records !== records) throw new Error(`${dir} holds ${marker.records} loaded records, not ${records}: use another --reuse directory or --records ${marker.records}`);
      ctx.progress.line(`reusing ${dir}: ${marker.records} anchored records in ${marker.batches} batches, loaded ${marker.loadedAt}`);
      return { dir, marker, loaded: false, temporary: false };
    }
    const entries = await readdir(dir);
    if (entries.length > 0 && !entries.includes(LOADING)) throw new Error(`${dir} is neither empty nor a verify-bench data directory; refusing to load into it`);
    // Left by a load that did not finish: start again from nothing.
    for (const e of entries) await rm(path.join(dir, e), { recursive: true, force: true });
  }
  try {
    const marker = await ctx.progress.phase('load', `loading ${fmtNum(records)} anchored records into ${dir}`, (h) => load(dir, records, h));
    return { dir, marker, loaded: true, temporary: reuse === undefined };
  } catch (err) {
    // A --reuse directory keeps its loading marker, so the next run starts it again from nothing.
    if (reuse === undefined) await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** A few verifications one by one before the load: a broken setup fails here, with its answer. */
async function spotCheck(s: BenchService, records: number): Promise<void> {
  for (const i of [0, records - 1, Math.floor(records / 2)]) {
    const r = await request<{ verified?: boolean; verificationStatus?: string }>(s.svc, 'POST', '/api/v1/verify/record', {
      key: s.key,
      body: { tenantId: BENCH_TENANT, database: DATABASE, collection: COLLECTION, recordId: recordId(i) },
    });
    if (r.status !== 200 || r.body.verified !== true || r.body.verificationStatus !== 'pass') {
      throw new Error(`verification of ${recordId(i)} answered ${r.status}: ${r.text.slice(0, 600)}`);
    }
  }
}

function workload(key: string, records: number, connections: number): HttpWorkload {
  return {
    source: {
      kind: 'template',
      method: 'POST',
      path: '/api/v1/verify/record',
      headers: { 'Content-Type': 'application/json', ...(key === '' ? {} : { 'X-API-Key': key }) },
      template: `{"tenantId":"${BENCH_TENANT}","database":"${DATABASE}","collection":"${COLLECTION}","recordId":"inv-{{R}}"}`,
      randomBelow: records,
    },
    check: key === '' ? { statuses: [202] } : { statuses: [200], bodyIncludes: ['"verified":true', '"verificationStatus":"pass"'] },
    recordsPerRequest: 1,
    connections,
  };
}

async function run(ctx: ScenarioContext): Promise<ScenarioOutput> {
  const { values, progress } = ctx;
  const records = num(values, 'records');
  const connections = num(values, 'connections');
  const reuse = str(values, 'reuse');
  // The loader runs dris's components in this process: keep their per-batch logs out of the report.
  setLogLevel('warn');
  const data = await prepareData(ctx, records, reuse);
  const floors: FloorFigure[] = [];
  const phases: Phase[] = [];
  const sweeps: SweepResult[] = [];
  const headline: Figure[] = [];
  const rows: string[][] = [];
  const breakdowns: string[] = [];
  const cleanup = async (): Promise<void> => {
    if (data.temporary) await rm(data.dir, { recursive: true, force: true });
  };
  try {
    const pinning = pinProcesses(pinRequested(values));
    ctx.environment.pinning = pinning;
    const workers = generatorWorkers(values, pinning === null ? null : Math.max(1, ctx.environment.cores - 1));
    const timing = { warmupSec: num(values, 'warmup'), durationSec: num(values, 'duration'), workers, rateRecords: optNum(values, 'rate') };
    const secs = num(values, 'floor-seconds');
    const chdb = await progress.phase('floor.chdb', 'floor: raw chDB point look-ups', () => chdbFloor(secs, { lookups: true, payload: JSON.stringify(payload1k(1)) }));
    floors.push({ key: 'chdb', label: 'raw chDB point look-ups', value: chdb.lookupsPerSec ?? 0, unit: 'verifications/s', source: 'one row by its key, 8 at a time, from a scratch MergeTree' });
    const bare = await startBareServer(pinning?.server ?? null);
    try {
      const p = await measureHttp(progress, 'floor.http', 'floor: bare uWebSockets.js', bare, workload('', records, connections), values, { ...timing, rateRecords: undefined, warmupSec: Math.min(2, timing.warmupSec) });
      phases.push(p);
      floors.push({ key: 'http', label: 'bare uWebSockets.js', value: Math.round(p.load.okPerSec), unit: 'verifications/s', source: `same generator, closed loop, ${connections} connections` });
    } finally {
      await bare.stop();
    }
    const s = await progress.phase('start', 'starting the service on the loaded data', () =>
      startBenchService(ctx, { env: {}, dataDir: data.dir, pinCpu: pinning?.server ?? null }),
    );
    try {
      await spotCheck(s, records);
      const w = workload(s.key, records, connections);
      const target = { host: '127.0.0.1', port: s.svc.port };
      const cpuBefore = cpuTimes();
      if (sweepRequested(values)) {
        const r = await sweepHttp(progress, 'verify', 'verify', target, w, values, { ...timing, defaultFrom: 250 });
        phases.push(...r.phases);
        sweeps.push(r.sweep);
        headline.push(withFloors({ key: 'verify.knee', label: `knee: verifications/s with p99 <= ${r.sweep.boundMs} ms`, value: r.sweep.knee ?? 0, unit: 'verifications/s', better: 'higher' }, floors));
        for (const p of r.phases) if (p.load !== undefined) rows.push([`open ${fmtNum(p.load.offeredPerSec)}/s`, fmtNum(p.load.okPerSec), ...[p.load.latency.p50, p.load.latency.p90, p.load.latency.p99, p.load.latency.p999, p.load.latency.max].map(fmtNum), String(p.load.failed)]);
      } else {
        const timeBefore = await readTime(s.svc.pid, s.svc.opsUrl, VERIFICATIONS);
        const p = await measureHttp(progress, 'verify', 'verify (stored mode)', target, w, values, timing);
        const spent = breakdownOf(timeBefore, await readTime(s.svc.pid, s.svc.opsUrl, VERIFICATIONS));
        phases.push({ ...p, data: { machineCpuBusyPercent: busyPercent(cpuBefore, cpuTimes()), threadCpu: spent.threads, indexStatements: spent.statements } });
        breakdowns.push(formatBreakdown('verify (warm-up included)', spent, 'verifications'));
        const l = p.load.latency;
        headline.push(withFloors({ key: 'verifyPerSec', label: 'verifications/s (200, verified=true)', value: Math.round(p.load.okPerSec), unit: 'verifications/s', better: 'higher' }, floors));
        headline.push({ key: 'verifyP99Ms', label: 'verification p99', value: l.p99, unit: 'ms', better: 'lower' });
        headline.push({ key: 'verifyP50Ms', label: 'verification p50', value: l.p50, unit: 'ms', better: 'lower' });
        rows.push([timing.rateRecords === undefined ? `closed ${connections}` : `open ${fmtNum(timing.rateRecords)}/s`, fmtNum(p.load.okPerSec), ...[l.p50, l.p90, l.p99, l.p999, l.max].map(fmtNum), String(p.load.failed)]);
      }
    } finally {
      if (data.temporary) await s.svc.dispose();
      else await s.svc.stop();
    }
  } finally {
    await cleanup();
  }
  return {
    headline,
    floors,
    phases,
    sweeps,
    config: { records, batches: data.marker.batches, loadedThisRun: data.loaded, loadSeconds: data.marker.loadSeconds, connections, reuse: reuse ?? null },
    notes: [`${fmtNum(records)} anchored records in ${data.marker.batches} batches${data.loaded ? `, loaded in ${data.marker.loadSeconds} s this run` : ', reused'}`],
    warmupSeconds: num(values, 'warmup'),
    tables: [table(['load', 'verifications/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'failed'], rows), ...breakdowns],
  };
}

function plan(values: OptionValues): PlannedPhase[] {
  const records = num(values, 'records');
  const each = num(values, 'warmup') + num(values, 'duration') + 1;
  return [
    ...(str(values, 'reuse') === undefined ? [{ key: 'load', seconds: Math.ceil(records / LOAD_RATE_GUESS) + 10 }] : []),
    { key: 'floor.chdb', seconds: num(values, 'floor-seconds') + 3 },
    { key: 'floor.http', seconds: Math.min(2, num(values, 'warmup')) + num(values, 'duration') + 1 },
    { key: 'start', seconds: 8 },
    ...plannedLoads('verify', values, each),
  ];
}

export const scenario: Scenario = {
  name: 'verify',
  order: 30,
  summary: 'POST /api/v1/verify/record (stored mode) over N anchored records, beside bare uWebSockets.js and chDB look-ups',
  description: [
    'Stored-hash verification against the embedded default holding --records anchored records (loaded first',
    'with dris\'s own code, or reused from --reuse DIR). Each request names a record drawn uniformly at random;',
    'an answer counts only if it is 200 with verified=true and verificationStatus=pass. Without --rate: closed',
    'loop over --connections; --rate: open loop; --sweep: the knee. The first verification of a batch fetches',
    'its manifest, so --warmup seconds run unmeasured first. Floors in the same run: bare uWebSockets.js and',
    'raw chDB point look-ups.',
  ].join('\n'),
  options: [
    { name: 'records', kind: 'integer', default: 1_000_000, help: 'anchored records to verify against' },
    { name: 'reuse', kind: 'string', value: 'DIR', help: 'keep the loaded data in DIR and reuse it on later runs with the same --records' },
    { name: 'connections', kind: 'integer', default: 64, help: 'closed loop: connections' },
    ...LOAD_OPTIONS.map((o) => (o.name === 'pin' ? { ...o, default: false } : o)),
  ],
  defaults: { duration: 30, warmup: 15, p99BoundMs: 50 },
  plan,
  run,
};
