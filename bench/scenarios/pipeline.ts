import { tmpdir } from 'node:os';
import { anchorContract, chainOf } from '../../test/harness/pipeline.js';
import { request } from '../../test/harness/service.js';
import { chainCounter, runAnchoredLoad, type ChainCounter } from '../lib/anchored-load.js';
import { anvilFloor } from '../lib/floors/anvil.js';
import { chdbFloor } from '../lib/floors/chdb.js';
import { fsyncFloor } from '../lib/floors/fsync.js';
import { indexSchemaFloor } from '../lib/floors/index-schema.js';
import { generatorWorkers, LOAD_OPTIONS, pinRequested, plannedLoads, sweepRequested } from '../lib/http-phase.js';
import { num, optNum, type OptionValues } from '../lib/options.js';
import { payload1k } from '../lib/payload.js';
import { pinProcesses } from '../lib/pinning.js';
import type { PlannedPhase } from '../lib/progress.js';
import type { Figure, FloorFigure, Phase, SweepResult } from '../lib/results.js';
import { withFloors, type Scenario, type ScenarioContext, type ScenarioOutput } from '../lib/scenario.js';
import { BENCH_TENANT, startBenchService, type BenchService } from '../lib/service.js';
import { describeKnee, runSweep, type Measured } from '../lib/sweep.js';
import { cpuMsPerThousand, measureTree } from '../lib/tree-usage.js';
import { fmtNum, table } from '../lib/table.js';
import { breakdownOf, formatBreakdown, readTime } from '../lib/where-time-went.js';

/**
 * pipeline: the embedded default end to end. An open-loop bulk load at --rate records/s for
 * --duration seconds; every accepted record is followed through the snapshot listing until it is
 * Anchored; 202 -> Anchored latency from each request's intended send time. The last batch is
 * topped up so it closes on its size. Floors: fdatasync, a raw chDB insert, the engine's insert of
 * the indexer's rows into dris's own schema (its rate, and its CPU per 1000 records: the floor of
 * the CPU figure), a raw anvil transaction rate (times the batch size).
 */

const STARTUP_SEC = 8;

function bulkTemplate(prefix: string, bulk: number): string {
  const records = Array.from({ length: bulk }, (_, k) => ({ database: 'erp', collection: 'invoices', recordId: `${prefix}{{W}}-{{S}}-${k}`, recordPayload: payload1k(k) }));
  return JSON.stringify({ tenantId: BENCH_TENANT, records });
}

interface StepState {
  /** Records the service accepted over all steps: the next top-up fills the open batch. */
  acceptedTotal: number;
}

interface StepResult {
  readonly phase: Phase;
  readonly measured: Measured;
  readonly row: string[];
  readonly anchoredPerSec: number;
  readonly txPer1000: number;
  /** CPU of the service's processes (anvil included) per 1000 records of the step, ms. */
  readonly cpuMsPer1000: number;
  readonly peakRssMiB: number;
  /** The service's CPU by thread and its index's time by statement, as text. */
  readonly breakdown: string;
}

async function step(ctx: ScenarioContext, s: BenchService, state: StepState, rate: number, index: number, workers: number, chain: ChainCounter): Promise<StepResult> {
  const { values, progress } = ctx;
  const bulk = num(values, 'bulk');
  const batch = num(values, 'batch-records');
  const prefix = `p${index}-`;
  const key = sweepRequested(values) ? `pipeline.sweep${index}` : 'pipeline';
  const title = `pipeline @ ${fmtNum(rate)} records/s`;
  // Fill the open batch so it closes on its size rather than on the max-wait timer.
  const topUp = async (accepted: number): Promise<number> => {
    state.acceptedTotal += accepted;
    const remainder = (batch - (state.acceptedTotal % batch)) % batch;
    if (remainder > 0) {
      const records = Array.from({ length: remainder }, (_, k) => ({ database: 'erp', collection: 'invoices', recordId: `${prefix}top-${k}`, recordPayload: payload1k(k) }));
      const r = await request(s.svc, 'POST', '/api/v1/records/bulk', { key: s.key, body: { tenantId: BENCH_TENANT, records } });
      if (r.status !== 202) throw new Error(`the top-up bulk request answered ${r.status}`);
      state.acceptedTotal += remainder;
    }
    return remainder;
  };
  // The whole step: warm-up, load and settling, until every record of it is Anchored; the CPU is
  // that of all the work those records caused (and of the listing polls that followed them).
  const timeBefore = await readTime(s.svc.pid, s.svc.opsUrl);
  const { result: r, usage } = await measureTree(s.svc.pid, () => runAnchoredLoad(progress, {
    key,
    title,
    target: { host: '127.0.0.1', port: s.svc.port, url: s.svc.url },
    apiKey: s.key,
    source: { kind: 'template', method: 'POST', path: '/api/v1/records/bulk', headers: { 'Content-Type': 'application/json', 'X-API-Key': s.key }, template: bulkTemplate(prefix, bulk) },
    prefix,
    recordsPerRequest: bulk,
    mode: { kind: 'open', ratePerSec: rate / bulk },
    check: { statuses: [202], bodyIncludes: [`"accepted":${bulk}`] },
    warmupSec: num(values, 'warmup'),
    durationSec: num(values, 'duration'),
    workers,
    initialConnections: 8,
    maxConnections: num(values, 'max-connections'),
    timeoutMs: num(values, 'timeout'),
    pollMs: num(values, 'poll-ms'),
    settleSec: num(values, 'settle-timeout'),
    chain,
    topUp,
  }));
  const breakdown = breakdownOf(timeBefore, await readTime(s.svc.pid, s.svc.opsUrl), r.acceptedRecords + r.topUpRecords);
  const { load, follow: f, anchoredPerSec } = r;
  const cpuMsPer1000 = cpuMsPerThousand(usage, r.acceptedRecords + r.topUpRecords);
  const peakRssMiB = Math.round(usage.peakRssBytes / 2 ** 20);
  const txPer1000 = r.txPerThousandRecords;
  const e2e = f.latency.summary;
  const data = { offeredRecordsPerSec: rate, acceptedRecords: r.acceptedRecords, topUpRecords: r.topUpRecords, anchoredRecords: f.anchored, anchoredRecordsPerSec: anchoredPerSec, transactions: r.transactions, txPerThousandRecords: txPer1000, serviceCpuSec: usage.cpuSec, cpuMsPer1000Records: cpuMsPer1000, peakRssMiB, threadCpu: breakdown.threads, indexStatements: breakdown.statements };
  return {
    phase: { key, title, load, latencies: [f.latency], data },
    measured: { offered: rate, achieved: load.okPerSec * bulk, p50: e2e.p50, p99: e2e.p99, failed: load.failed, requests: load.ok + load.failed },
    row: [fmtNum(rate), fmtNum(load.okPerSec * bulk), fmtNum(anchoredPerSec), ...[e2e.p50, e2e.p90, e2e.p99, e2e.max, load.latency.p99].map(fmtNum), String(txPer1000), fmtNum(cpuMsPer1000), fmtNum(peakRssMiB), String(load.failed)],
    anchoredPerSec,
    txPer1000,
    cpuMsPer1000,
    peakRssMiB,
    breakdown: formatBreakdown(title, breakdown),
  };
}

async function floorsOf(ctx: ScenarioContext): Promise<FloorFigure[]> {
  const { values, progress } = ctx;
  const secs = num(values, 'floor-seconds');
  const batch = num(values, 'batch-records');
  const payload = JSON.stringify(payload1k(1));
  const fsync = await progress.phase('floor.fsync', 'floor: fdatasync append loop', () => fsyncFloor(tmpdir(), secs));
  const chdb = await progress.phase('floor.chdb', 'floor: raw chDB insert', () => chdbFloor(secs, { lookups: false, payload }));
  const schema = await progress.phase('floor.schema', 'floor: chDB insert into the index schema', () => indexSchemaFloor(secs, payload));
  const anvil = await progress.phase('floor.anvil', 'floor: raw anvil transactions', () => anvilFloor(secs));
  const schemaSource = `1000-row inserts of the indexer's own rows into dris's records table (skip indexes, compression, evidence view), one at a time, ${schema.rowsInserted} rows`;
  return [
    { key: 'fsync', label: 'fdatasync bandwidth (1 MiB appends)', value: Math.round((fsync.mbPerSec * 1e6) / chdb.rowBytes), unit: 'records/s', source: `${fsync.mbPerSec} MB/s durable, ${chdb.rowBytes} B per record` },
    { key: 'chdb', label: 'raw chDB insert', value: chdb.insertRowsPerSec, unit: 'records/s', source: `1000-row JSONEachRow inserts of ${chdb.rowBytes} B rows into a MergeTree, one at a time` },
    { key: 'chdbSchema', label: 'chDB insert into the index schema', value: schema.insertRowsPerSec, unit: 'records/s', source: schemaSource },
    { key: 'chdbSchemaCpu', label: 'chDB CPU of that insert per 1000 records', value: schema.cpuMsPer1000, unit: 'ms', source: `${schemaSource}; CPU of every engine thread` },
    { key: 'anvil', label: `raw anvil transactions x ${batch} records`, value: Math.round(anvil.txPerSec * batch), unit: 'records/s', source: `${anvil.txPerSec} tx/s (signed transfers, 16 in flight, ${anvil.transactions} of ${anvil.sent} mined), one batch per transaction` },
  ];
}

async function run(ctx: ScenarioContext): Promise<ScenarioOutput> {
  const { values, progress } = ctx;
  const floors = await floorsOf(ctx);
  const rateFloors = floors.filter((f) => f.unit === 'records/s');
  const cpuFloors = floors.filter((f) => f.unit === 'ms');
  const pinning = pinProcesses(pinRequested(values));
  ctx.environment.pinning = pinning;
  const workers = generatorWorkers(values, 1);
  const batch = num(values, 'batch-records');
  const serviceEnv = { DRIS_BATCH_MAX_RECORDS: String(batch), DRIS_BATCH_MAX_WAIT_MS: String(num(values, 'max-wait-ms')) };
  const s = await progress.phase('start', 'starting the service (embedded default)', () => startBenchService(ctx, { env: serviceEnv, pinCpu: pinning?.server ?? null }));
  const phases: Phase[] = [];
  const sweeps: SweepResult[] = [];
  const headline: Figure[] = [];
  const rows: string[][] = [];
  const breakdowns: string[] = [];
  try {
    const chainInfo = await chainOf(s.svc);
    const reader = await anchorContract(chainInfo.rpcUrl, chainInfo.contractAddress);
    const chain = chainCounter(reader);
    const state: StepState = { acceptedTotal: 0 };
    let last: StepResult | null = null;
    try {
      const measure = async (rate: number, i: number): Promise<Measured> => {
        last = await step(ctx, s, state, rate, i, workers, chain);
        phases.push(last.phase);
        rows.push(last.row);
        if (last.breakdown !== '') breakdowns.push(last.breakdown);
        return last.measured;
      };
      if (sweepRequested(values)) {
        const listed = values['sweep'];
        const boundMs = num(values, 'p99-bound');
        const r = await runSweep(
          { ...(Array.isArray(listed) ? { rates: listed as number[] } : {}), from: optNum(values, 'sweep-from') ?? 500, factor: num(values, 'sweep-factor'), maxSteps: num(values, 'sweep-steps'), refine: num(values, 'sweep-refine'), boundMs },
          measure,
        );
        sweeps.push({ key: 'pipeline', title: 'pipeline (embedded default)', unit: 'records/s', boundMs, latencyLabel: '202 -> Anchored p99', ...r });
        progress.line(`knee: ${describeKnee(r, 'records/s')} (202 -> Anchored p99 <= ${boundMs} ms)`);
        headline.push(withFloors({ key: 'pipeline.knee', label: `knee: records/s with 202 -> Anchored p99 <= ${boundMs} ms`, value: r.knee ?? 0, unit: 'records/s', better: 'higher' }, rateFloors));
      } else {
        await measure(num(values, 'rate'), 0);
        const l = last as StepResult | null;
        if (l !== null) {
          const e2e = l.phase.latencies?.[0]?.summary;
          headline.push(withFloors({ key: 'anchoredRecordsPerSec', label: 'anchored records/s (first send to last Anchored)', value: l.anchoredPerSec, unit: 'records/s', better: 'higher' }, rateFloors));
          headline.push({ key: 'ingestToAnchoredP99Ms', label: '202 -> Anchored p99', value: e2e?.p99 ?? 0, unit: 'ms', better: 'lower' });
          headline.push({ key: 'ingestToAnchoredP50Ms', label: '202 -> Anchored p50', value: e2e?.p50 ?? 0, unit: 'ms', better: 'lower' });
          headline.push({ key: 'txPerThousandRecords', label: 'anchor transactions per 1000 records', value: l.txPer1000, unit: 'tx', better: 'lower' });
          headline.push(withFloors({ key: 'cpuMsPer1000Records', label: 'service CPU per 1000 records (anvil included)', value: l.cpuMsPer1000, unit: 'ms', better: 'lower' }, cpuFloors));
          headline.push({ key: 'peakRssMiB', label: 'service peak resident memory (anvil included)', value: l.peakRssMiB, unit: 'MiB', better: 'lower' });
        }
      }
    } finally {
      reader.close();
    }
  } finally {
    await s.svc.dispose();
  }
  const header = ['offered rec/s', 'accepted rec/s', 'anchored rec/s', 'e2e p50 ms', 'e2e p90 ms', 'e2e p99 ms', 'e2e max ms', 'bulk req p99 ms', 'tx/1000 rec', 'CPU ms/1000 rec', 'peak RSS MiB', 'failed'];
  return {
    headline,
    floors,
    phases,
    sweeps,
    config: { ...serviceEnv, bulkRecordsPerRequest: num(values, 'bulk'), pollMs: num(values, 'poll-ms'), workers },
    notes: [`202 -> Anchored is counted from each request's intended send time to the answer of the first snapshot listing page (polled every ${num(values, 'poll-ms')} ms) that showed it Anchored; records of the warm-up are anchored and waited for but not counted`],
    warmupSeconds: num(values, 'warmup'),
    tables: [table(header, rows), ...breakdowns],
  };
}

function plan(values: OptionValues): PlannedPhase[] {
  const secs = num(values, 'floor-seconds');
  return [
    { key: 'floor.fsync', seconds: secs },
    { key: 'floor.chdb', seconds: secs + 2 },
    { key: 'floor.schema', seconds: secs + 2 },
    { key: 'floor.anvil', seconds: secs + 4 },
    { key: 'start', seconds: STARTUP_SEC },
    ...plannedLoads('pipeline', values, num(values, 'warmup') + num(values, 'duration') + 15),
  ];
}

export const scenario: Scenario = {
  name: 'pipeline',
  order: 20,
  summary: 'bulk ingest to Anchored on the embedded default (202 -> Anchored latency), beside fdatasync, chDB and anvil',
  description: [
    'The embedded default end to end: an open-loop bulk load at --rate records/s for --duration seconds,',
    'every accepted record followed through GET /api/v1/snapshots until Anchored. Reports 202 -> Anchored',
    'latency from each intended send time, anchored records/s, and anchor transactions per 1000 records',
    'counted from the chain. --sweep runs rates in turn and prints the knee: the highest rate whose',
    '202 -> Anchored p99 stays under --p99-bound. Floors in the same run: fdatasync bandwidth, a raw chDB',
    'insert, and a raw anvil transaction rate times the batch size. Each rate also reports the CPU the',
    "service's processes (anvil included) spent per 1000 records, and their peak resident memory.",
  ].join('\n'),
  options: [
    ...LOAD_OPTIONS.filter((o) => o.name !== 'rate' && o.name !== 'pin'),
    { name: 'rate', kind: 'number', default: 2000, unit: 'records/s', help: 'offered rate (open loop) without --sweep' },
    { name: 'bulk', kind: 'integer', default: 250, max: 1000, unit: 'records', help: 'records per bulk request' },
    { name: 'batch-records', kind: 'integer', default: 1000, max: 1000, help: 'DRIS_BATCH_MAX_RECORDS of the service' },
    { name: 'max-wait-ms', kind: 'integer', default: 60_000, unit: 'ms', help: 'DRIS_BATCH_MAX_WAIT_MS of the service' },
    { name: 'poll-ms', kind: 'number', default: 200, unit: 'ms', help: 'interval of the snapshot listing polls (the resolution of 202 -> Anchored)' },
    { name: 'settle-timeout', kind: 'number', default: 300, unit: 's', help: 'after the load, how long every record has to be Anchored' },
    { name: 'pin', kind: 'boolean', default: false, help: 'service on CPU 0, generator on the others (taskset)' },
  ],
  defaults: { duration: 60, warmup: 5, p99BoundMs: 5_000 },
  plan,
  run,
};
