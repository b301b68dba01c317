import { NATS_QUEUE_DEFAULTS } from '../../src/adapters/queue/nats-queue.js';
import { makeTempDir, removeTempDir } from '../../test/harness/servers.js';
import { runAnchoredLoad } from '../lib/anchored-load.js';
import { BENCH_ROLE, DRIS_ROLES, ROLE_ORDER, startBenchFleet, type BenchFleet, type FleetCounts } from '../lib/cluster-fleet.js';
import { anvilFloor } from '../lib/floors/anvil.js';
import { clickHouseHttpFloor } from '../lib/floors/clickhouse-http.js';
import { startBareBehindLoadBalancer } from '../lib/floors/http.js';
import { jetStreamFloor } from '../lib/floors/jetstream.js';
import { generatorWorkers, LOAD_OPTIONS, measureHttp, plannedLoads, sweepRequested, type HttpWorkload } from '../lib/http-phase.js';
import type { LoadMode, RequestSource } from '../lib/load/types.js';
import { list, num, optNum, str, type OptionValues } from '../lib/options.js';
import { payload1k } from '../lib/payload.js';
import { roleCosts, type RoleCost } from '../lib/process-cpu.js';
import type { PlannedPhase } from '../lib/progress.js';
import type { Figure, FloorFigure, Phase, SweepResult } from '../lib/results.js';
import { withFloors, type Scenario, type ScenarioContext, type ScenarioOutput } from '../lib/scenario.js';
import { BENCH_TENANT } from '../lib/service.js';
import { describeKnee, runSweep, type Measured } from '../lib/sweep.js';
import { fmtNum, table } from '../lib/table.js';
import { HAPROXY, KUBO, NATS_SERVER, REDIS_SERVER } from '../lib/tools.js';

/**
 * cluster: the local fleet of `npm run cluster` (3-node NATS JetStream R3, Redis, the ClickHouse
 * HTTP bridge over chDB, Kubo, anvil, HAProxy over --api api processes, --indexers indexers and
 * --anchorers anchorers) loaded through its load balancer with the suite's generator, every
 * accepted record followed to Anchored. Reports ingest records/s and latency, 202 -> Anchored
 * latency, transactions from the chain, and CPU seconds per 1000 records of every role. Floors in
 * the same run, on the fleet's own servers: bare uWebSockets.js behind the same HAProxy, a raw
 * JetStream publish to an R3 stream, a raw insert through the ClickHouse HTTP interface, and a
 * raw anvil transaction rate times the batch size.
 */

const VARIANTS = ['single', 'bulk'] as const;
type Variant = (typeof VARIANTS)[number];

/** The fleet comes up in 5-10 s on a warm machine; more when chDB's library is read from a cold disk. */
const STARTUP_SEC = 20;

function counts(values: OptionValues): FleetCounts {
  return { api: num(values, 'api'), indexer: num(values, 'indexers'), anchorer: num(values, 'anchorers') };
}

/** Requests whose record ids name their request (`<prefix><worker>-<seq>-<k>`), as the follower reads them. */
function source(v: Variant, prefix: string, key: string, bulkSize: number): RequestSource {
  const headers = { 'Content-Type': 'application/json', ...(key === '' ? {} : { 'X-API-Key': key }) };
  const template =
    v === 'single'
      ? JSON.stringify({ tenantId: BENCH_TENANT, database: 'erp', collection: 'invoices', recordId: `${prefix}{{W}}-{{S}}-0`, recordPayload: payload1k(1) })
      : JSON.stringify({ tenantId: BENCH_TENANT, records: Array.from({ length: bulkSize }, (_, k) => ({ database: 'erp', collection: 'invoices', recordId: `${prefix}{{W}}-{{S}}-${k}`, recordPayload: payload1k(k) })) });
  return { kind: 'template', method: 'POST', path: v === 'single' ? '/api/v1/records' : '/api/v1/records/bulk', headers, template };
}

function perRequest(v: Variant, values: OptionValues): number {
  return v === 'single' ? 1 : num(values, 'bulk-size');
}

function connectionsOf(v: Variant, values: OptionValues): number {
  return num(values, v === 'single' ? 'connections' : 'bulk-connections');
}

/** Records per JetStream message of dris's own messages: one request's records, at most the coalescing limit. */
function recordsPerMessage(v: Variant, values: OptionValues): number {
  return v === 'single' ? 1 : Math.min(num(values, 'bulk-size'), NATS_QUEUE_DEFAULTS.coalesceMaxRecords);
}

interface Floors {
  readonly floors: FloorFigure[];
  readonly phases: Phase[];
  readonly rows: string[][];
}

async function measureFloors(ctx: ScenarioContext, bf: BenchFleet, workers: number): Promise<Floors> {
  const { values, progress } = ctx;
  const variants = list(values, 'variants') as Variant[];
  const secs = num(values, 'floor-seconds');
  const inFlight = num(values, 'floor-in-flight');
  const batch = num(values, 'batch-records');
  const fleet = bf.fleet;
  const out: Floors = { floors: [], phases: [], rows: [] };
  for (const v of variants) {
    const n = recordsPerMessage(v, values);
    const js = await progress.phase(`floor.jetstream.${v}`, `floor: raw JetStream publish (R3), ${n} record(s) per message`, () =>
      jetStreamFloor({ servers: fleet.nats.url, user: fleet.nats.user, password: fleet.nats.password, replicas: Number(fleet.env['NATS_REPLICAS'] ?? '3'), recordsPerMessage: n, inFlight, seconds: secs }),
    );
    out.floors.push({ key: `jetstream.${v}`, label: `raw JetStream publish (R3), ${n} record(s)/message`, value: js.recordsPerSec, unit: 'records/s', source: `${fmtNum(js.messagesPerSec)} messages/s of ${js.messageBytes} B (dris's message format), ${inFlight} in flight, each ack awaited, nats.js; a scratch stream of file storage on the fleet's cluster` });
  }
  const ch = await progress.phase('floor.clickhouse', 'floor: raw insert through the ClickHouse HTTP interface', () =>
    clickHouseHttpFloor({ url: fleet.clickhouse.url, user: fleet.env['CLICKHOUSE_USER'] ?? 'default', password: fleet.env['CLICKHOUSE_PASSWORD'] ?? '', seconds: secs, payload: JSON.stringify(payload1k(1)) }),
  );
  out.floors.push({ key: 'clickhouse', label: 'raw insert through the ClickHouse HTTP interface', value: ch.insertRowsPerSec, unit: 'records/s', source: `1000-row JSONEachRow inserts of ${ch.rowBytes} B rows into a MergeTree, one at a time, POSTed to ${fleet.clickhouse.bridge === null ? 'the ClickHouse server' : 'the fleet\'s bridge over chDB'}` });
  const anvil = await progress.phase('floor.anvil', 'floor: raw anvil transactions (the fleet\'s anvil)', () => anvilFloor(secs, { rpcUrl: fleet.chain.rpcUrl, chainId: fleet.chain.chainId }));
  out.floors.push({ key: 'anvil', label: `raw anvil transactions x ${batch} records`, value: Math.round(anvil.txPerSec * batch), unit: 'records/s', source: `${anvil.txPerSec} tx/s (signed transfers, 16 in flight, ${anvil.transactions} of ${anvil.sent} mined) on the fleet's anvil, one batch per transaction` });

  const dir = await makeTempDir('dris-bench-bare-lb-');
  try {
    const bare = await startBareBehindLoadBalancer(num(values, 'api'), dir);
    try {
      for (const v of variants) {
        const per = perRequest(v, values);
        const w: HttpWorkload = { source: source(v, 'bare-', '', per), check: { statuses: [202] }, recordsPerRequest: per, connections: connectionsOf(v, values) };
        const title = `floor: bare uWebSockets.js x ${num(values, 'api')} behind HAProxy, ${v}`;
        const p = await measureHttp(progress, `floor.http.${v}`, title, bare, w, values, { warmupSec: num(values, 'warmup'), durationSec: num(values, 'duration'), workers, rateRecords: undefined });
        out.phases.push(p);
        out.floors.push({ key: `http.${v}`, label: `bare uWebSockets.js behind HAProxy, ${v}`, value: Math.round(p.load.okPerSec * per), unit: 'records/s', source: `${num(values, 'api')} bare servers behind the fleet's HAProxy configuration, same generator, closed loop, ${w.connections} connections` });
        const l = p.load.latency;
        out.rows.push(['bare uWS + HAProxy', v, `closed ${w.connections}`, fmtNum(p.load.okPerSec * per), ...[l.p50, l.p99, l.p999, l.max].map(fmtNum), '', '', '', '', '', '', String(p.load.failed), JSON.stringify(p.load.statuses)]);
      }
    } finally {
      await bare.stop();
    }
  } finally {
    await removeTempDir(dir);
  }
  return out;
}

interface StepResult {
  readonly phase: Phase;
  readonly measured: Measured;
  readonly row: string[];
  readonly costs: RoleCost[];
  readonly anchoredPerSec: number;
  readonly txPer1000: number;
  readonly transactions: number;
  readonly batches: number;
  /** The listing's last refusal while following (status and code), null when none. */
  readonly lastRefusal: string | null;
}

async function step(ctx: ScenarioContext, bf: BenchFleet, v: Variant, mode: LoadMode, key: string, index: number, workers: number): Promise<StepResult> {
  const { values, progress } = ctx;
  const per = perRequest(v, values);
  const prefix = `c${index}-`;
  const offered = mode.kind === 'open' ? mode.ratePerSec * per : null;
  const title = `cluster ${v} ${offered === null ? `closed ${mode.kind === 'closed' ? mode.connections : ''}` : `@ ${fmtNum(offered)} records/s`}`;
  const before = bf.roles();
  const startedAt = Date.now();
  const r = await runAnchoredLoad(progress, {
    key,
    title,
    target: bf.target,
    apiKey: bf.key,
    source: source(v, prefix, bf.key, per),
    prefix,
    recordsPerRequest: per,
    mode,
    check: v === 'single' ? { statuses: [202] } : { statuses: [202], bodyIncludes: [`"accepted":${per}`] },
    warmupSec: num(values, 'warmup'),
    durationSec: num(values, 'duration'),
    workers,
    initialConnections: Math.min(num(values, 'max-connections'), connectionsOf(v, values)),
    maxConnections: num(values, 'max-connections'),
    timeoutMs: num(values, 'timeout'),
    pollMs: num(values, 'poll-ms'),
    settleSec: num(values, 'settle-timeout'),
    chain: bf.chain,
  });
  const costs = roleCosts(before, bf.roles(), (Date.now() - startedAt) / 1000, r.acceptedRecords).sort((a, b) => ROLE_ORDER.indexOf(a.role as never) - ROLE_ORDER.indexOf(b.role as never));
  const l = r.load.latency;
  const e2e = r.follow.latency.summary;
  const byRequest = str(values, 'knee-latency') !== 'anchored';
  const data: Record<string, number | null> = {
    offeredRecordsPerSec: offered,
    acceptedRecords: r.acceptedRecords,
    anchoredRecords: r.follow.anchored,
    listingRefusals: r.follow.listingRefusals,
    anchoredRecordsPerSec: r.anchoredPerSec,
    transactions: r.transactions,
    batches: r.batches,
    txPerThousandRecords: r.txPerThousandRecords,
  };
  for (const c of costs) {
    data[`cpuSecondsPer1000Records.${c.role}`] = c.cpuSecPer1000;
    data[`coresBusy.${c.role}`] = c.cores;
    data[`rssMiB.${c.role}`] = c.rssMiB;
  }
  return {
    phase: { key, title, load: r.load, latencies: [r.follow.latency], data },
    lastRefusal: r.follow.lastRefusal,
    measured: { offered: offered ?? 0, achieved: r.load.okPerSec * per, p50: byRequest ? l.p50 : e2e.p50, p99: byRequest ? l.p99 : e2e.p99, failed: r.load.failed, requests: r.load.ok + r.load.failed },
    row: [
      'fleet',
      v,
      offered === null ? `closed ${connectionsOf(v, values)}` : `open ${fmtNum(offered)}/s`,
      fmtNum(r.load.okPerSec * per),
      ...[l.p50, l.p99, l.p999, l.max].map(fmtNum),
      fmtNum(r.anchoredPerSec),
      ...[e2e.p50, e2e.p99, e2e.max].map(fmtNum),
      String(r.transactions),
      String(r.batches),
      String(r.load.failed),
      JSON.stringify(r.load.statuses),
    ],
    costs,
    anchoredPerSec: r.anchoredPerSec,
    txPer1000: r.txPerThousandRecords,
    transactions: r.transactions,
    batches: r.batches,
  };
}

function costRows(title: string, costs: readonly RoleCost[]): string[][] {
  const fleet = costs.filter((c) => c.role !== BENCH_ROLE);
  const total = { processes: 0, cpuSec: 0, cpuSecPer1000: 0, cores: 0, rssMiB: 0 };
  for (const c of fleet) {
    total.processes += c.processes;
    total.cpuSec += c.cpuSec;
    total.cpuSecPer1000 += c.cpuSecPer1000;
    total.cores += c.cores;
    total.rssMiB += c.rssMiB;
  }
  const row = (name: string, c: Omit<RoleCost, 'role'>): string[] => [title, name, String(c.processes), fmtNum(c.cpuSec), fmtNum(c.cpuSecPer1000), fmtNum(c.cores), fmtNum(c.rssMiB)];
  return [...costs.map((c) => row(c.role, c)), row('fleet total', total)];
}

/** The headline of one measured load: ingest and Anchored beside their floors, and each role's cost. */
function headlineOf(v: Variant, s: StepResult, floorOf: (k: string) => FloorFigure | undefined): Figure[] {
  const load = s.phase.load;
  const e2e = s.phase.latencies?.[0]?.summary;
  const out: Figure[] = [
    withFloors({ key: `${v}.recordsPerSec`, label: `${v}: ingest records/s through HAProxy`, value: Math.round(s.measured.achieved), unit: 'records/s', better: 'higher' }, [floorOf(`http.${v}`), floorOf(`jetstream.${v}`)]),
    { key: `${v}.p99Ms`, label: `${v}: request p99`, value: load?.latency.p99 ?? 0, unit: 'ms', better: 'lower' },
    withFloors({ key: `${v}.anchoredRecordsPerSec`, label: `${v}: anchored records/s (first send to last Anchored)`, value: s.anchoredPerSec, unit: 'records/s', better: 'higher' }, [floorOf('clickhouse'), floorOf('anvil')]),
    { key: `${v}.ingestToAnchoredP50Ms`, label: `${v}: 202 -> Anchored p50`, value: e2e?.p50 ?? 0, unit: 'ms', better: 'lower' },
    { key: `${v}.ingestToAnchoredP99Ms`, label: `${v}: 202 -> Anchored p99`, value: e2e?.p99 ?? 0, unit: 'ms', better: 'lower' },
    { key: `${v}.txPerThousandRecords`, label: `${v}: anchor transactions per 1000 records`, value: s.txPer1000, unit: 'tx', better: 'lower' },
  ];
  for (const role of DRIS_ROLES) {
    const c = s.costs.find((x) => x.role === role);
    if (c !== undefined) out.push({ key: `${v}.cpuPer1000.${role}`, label: `${v}: ${role} CPU per 1000 records`, value: c.cpuSecPer1000, unit: 'CPU s', better: 'lower' });
  }
  const fleetCpu = s.costs.filter((c) => c.role !== BENCH_ROLE).reduce((a, c) => a + c.cpuSecPer1000, 0);
  out.push({ key: `${v}.cpuPer1000.fleet`, label: `${v}: whole fleet CPU per 1000 records`, value: Math.round(fleetCpu * 1000) / 1000, unit: 'CPU s', better: 'lower' });
  return out;
}

async function run(ctx: ScenarioContext): Promise<ScenarioOutput> {
  const { values, progress } = ctx;
  const variants = list(values, 'variants') as Variant[];
  const workers = generatorWorkers(values, null);
  const fleetEnv = { DRIS_BATCH_MAX_RECORDS: String(num(values, 'batch-records')), DRIS_BATCH_MAX_WAIT_MS: String(num(values, 'max-wait-ms')) };
  const c = counts(values);
  const bf = await progress.phase('start', `starting the fleet (${c.api} api, ${c.indexer} indexer, ${c.anchorer} anchorer processes and their servers)`, (h) => startBenchFleet(ctx, c, fleetEnv, (l) => h.note(l)));
  const fleetProcesses = [...bf.roles()].filter(([role]) => role !== BENCH_ROLE).reduce((a, [, u]) => a + u.processes, 0);
  const headline: Figure[] = [];
  const phases: Phase[] = [];
  const sweeps: SweepResult[] = [];
  const rows: string[][] = [];
  const cpuRows: string[][] = [];
  const notes: string[] = [];
  let floors: FloorFigure[] = [];
  try {
    const f = await measureFloors(ctx, bf, workers);
    floors = f.floors;
    phases.push(...f.phases);
    rows.push(...f.rows);
    const floorOf = (k: string): FloorFigure | undefined => floors.find((x) => x.key === k);
    let index = 0;
    for (const v of variants) {
      const per = perRequest(v, values);
      const measure = async (mode: LoadMode, key: string): Promise<StepResult> => {
        const s = await step(ctx, bf, v, mode, key, index++, workers);
        phases.push(s.phase);
        rows.push(s.row);
        cpuRows.push(...costRows(s.phase.title, s.costs));
        if (s.transactions !== s.batches) notes.push(`${s.phase.title}: ${s.transactions} transactions for ${s.batches} batches (one per batch expected)`);
        const refused = Number(s.phase.data?.['listingRefusals'] ?? 0);
        if (refused > 0) notes.push(`${s.phase.title}: ${refused} snapshot listing poll(s) refused (last: ${s.lastRefusal ?? '?'}) and tried again`);
        return s;
      };
      if (sweepRequested(values)) {
        const listed = values['sweep'];
        const boundMs = num(values, 'p99-bound');
        const anchored = str(values, 'knee-latency') === 'anchored';
        const r = await runSweep(
          { ...(Array.isArray(listed) ? { rates: listed as number[] } : {}), from: optNum(values, 'sweep-from') ?? (v === 'single' ? 250 : 1000), factor: num(values, 'sweep-factor'), maxSteps: num(values, 'sweep-steps'), refine: num(values, 'sweep-refine'), boundMs },
          async (rate, i) => (await measure({ kind: 'open', ratePerSec: rate / per }, `${v}.sweep${i}`)).measured,
        );
        const latencyLabel = anchored ? '202 -> Anchored p99' : 'request p99';
        sweeps.push({ key: v, title: `cluster ${v}`, unit: 'records/s', boundMs, latencyLabel, ...r });
        progress.line(`knee: cluster ${v}: ${describeKnee(r, 'records/s')} (${latencyLabel} <= ${boundMs} ms)`);
        const against = anchored ? [floorOf('clickhouse'), floorOf('anvil')] : [floorOf(`http.${v}`), floorOf(`jetstream.${v}`)];
        headline.push(withFloors({ key: `${v}.knee`, label: `${v}: knee, records/s with ${latencyLabel} <= ${boundMs} ms`, value: r.knee ?? 0, unit: 'records/s', better: 'higher' }, against));
        continue;
      }
      const rate = optNum(values, 'rate');
      const mode: LoadMode = rate === undefined ? { kind: 'closed', connections: connectionsOf(v, values) } : { kind: 'open', ratePerSec: rate / per };
      headline.push(...headlineOf(v, await measure(mode, v), floorOf));
    }
  } finally {
    await progress.phase('stop', 'stopping the fleet', () => bf.stop());
  }
  notes.push(
    `one machine: ${ctx.environment.cores} cores shared by the fleet's ${fleetProcesses} processes, the load generator and the follower, so the fleet competes with itself; read the CPU per 1000 records of each role as its cost, not the throughput as what more machines would give`,
    bf.fleet.clickhouse.bridge === null ? 'index: a ClickHouse server' : 'index: the ClickHouse HTTP test bridge over one chDB session (test/harness), not a ClickHouse server: it runs one statement at a time (docs/operations.md, "ClickHouse server")',
    optNum(values, 'rate') === undefined && !sweepRequested(values)
      ? 'closed loop: throughput is the maximum; its latency is queueing at that maximum (use --rate or --sweep for latency at a given rate); 202 -> Anchored counts from each actual send'
      : "open loop: latency counted from each request's intended send time (coordinated omission corrected), 202 -> Anchored too",
    `202 -> Anchored ends at the answer of the first snapshot listing page through the load balancer (polled every ${num(values, 'poll-ms')} ms) that showed the record Anchored; records of the warm-up are anchored and waited for but not counted`,
    'CPU per role: user + system time of every process of the role (from /proc) from the start of each load until its last record was Anchored, idle work included, divided by the records accepted in it (warm-up included); RSS at the end',
  );
  return {
    headline,
    floors,
    phases,
    sweeps,
    config: { fleet: c, ...fleetEnv, natsReplicas: Number(bf.fleet.env['NATS_REPLICAS'] ?? '3'), clickhouse: bf.fleet.clickhouse.bridge === null ? 'server' : 'test bridge over chDB', variants, bulkSize: num(values, 'bulk-size'), connections: num(values, 'connections'), bulkConnections: num(values, 'bulk-connections'), rateRecordsPerSec: optNum(values, 'rate') ?? null, workers, pollMs: num(values, 'poll-ms'), floorInFlight: num(values, 'floor-in-flight'), recordBytes: 1024 },
    notes,
    warmupSeconds: num(values, 'warmup'),
    tables: [
      table(['target', 'variant', 'load', 'ingest rec/s', 'p50 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'anchored rec/s', 'e2e p50 ms', 'e2e p99 ms', 'e2e max ms', 'tx', 'batches', 'failed', 'statuses'], rows),
      table(['load', 'role', 'processes', 'CPU s', 'CPU s / 1000 rec', 'cores busy', 'RSS MiB'], cpuRows),
    ],
  };
}

function plan(values: OptionValues): PlannedPhase[] {
  const variants = list(values, 'variants');
  const secs = num(values, 'floor-seconds');
  const each = num(values, 'warmup') + num(values, 'duration');
  return [
    { key: 'start', seconds: STARTUP_SEC },
    ...variants.map((v) => ({ key: `floor.jetstream.${v}`, seconds: secs })),
    { key: 'floor.clickhouse', seconds: secs + 1 },
    { key: 'floor.anvil', seconds: secs + 3 },
    ...variants.map((v) => ({ key: `floor.http.${v}`, seconds: each + 1 })),
    ...variants.flatMap((v) => plannedLoads(v, values, each + 20)),
    { key: 'stop', seconds: 15 },
  ];
}

export const scenario: Scenario = {
  name: 'cluster',
  order: 50,
  summary: 'the local fleet through HAProxy to Anchored, CPU per role, beside uWS+HAProxy, JetStream R3, ClickHouse HTTP, anvil',
  description: [
    'The local fleet of `npm run cluster` started by the same harness: a 3-node NATS JetStream cluster (R3),',
    'Redis, the ClickHouse HTTP interface (test bridge over chDB), Kubo, anvil, HAProxy in front of --api api',
    'processes, --indexers indexers and --anchorers anchorers. Single records and/or bulk requests go through',
    'HAProxy (closed loop without --rate, open loop with it, --sweep for the knee), every accepted record is',
    'followed until Anchored. Reports ingest records/s and latency, 202 -> Anchored latency, transactions',
    'counted from the chain (one per batch), and the CPU seconds per 1000 records and memory of every role.',
    'Floors in the same run, on the fleet\'s servers: bare uWebSockets.js behind the same HAProxy, a raw',
    'JetStream publish to an R3 stream (same message size, acks awaited), a raw insert through the ClickHouse',
    'HTTP interface, and a raw anvil transaction rate times the batch size. Everything shares this machine.',
  ].join('\n'),
  options: [
    { name: 'variants', kind: 'list', default: ['single', 'bulk'], choices: VARIANTS, help: 'single records and/or bulk requests' },
    { name: 'bulk-size', kind: 'integer', default: 500, max: 1000, unit: 'records', help: 'records per bulk request (500: one JetStream message each)' },
    { name: 'connections', kind: 'integer', default: 64, help: 'closed loop: connections of the single variant' },
    { name: 'bulk-connections', kind: 'integer', default: 4, help: 'closed loop: connections of the bulk variant' },
    { name: 'api', kind: 'integer', default: 2, max: 8, unit: 'processes', help: 'api processes behind HAProxy (and bare servers of the HTTP floor)' },
    { name: 'indexers', kind: 'integer', default: 2, max: 8, unit: 'processes', help: 'indexer processes' },
    { name: 'anchorers', kind: 'integer', default: 2, max: 8, unit: 'processes', help: 'anchorer processes (one leads)' },
    { name: 'batch-records', kind: 'integer', default: 1000, max: 1000, help: 'DRIS_BATCH_MAX_RECORDS of the fleet' },
    { name: 'max-wait-ms', kind: 'integer', default: 2000, unit: 'ms', help: 'DRIS_BATCH_MAX_WAIT_MS of the fleet' },
    { name: 'poll-ms', kind: 'number', default: 250, unit: 'ms', help: 'interval of the snapshot listing polls (the resolution of 202 -> Anchored)' },
    { name: 'settle-timeout', kind: 'number', default: 300, unit: 's', help: 'after each load, how long every record has to be Anchored' },
    { name: 'knee-latency', kind: 'string', default: 'request', choices: ['request', 'anchored'], help: 'the p99 a sweep bounds: the request\'s, or 202 -> Anchored (then raise --p99-bound, e.g. 15000)' },
    { name: 'floor-in-flight', kind: 'integer', default: 16, max: 1024, help: 'publishes outstanding in the JetStream floor' },
    ...LOAD_OPTIONS.filter((o) => o.name !== 'pin'),
  ],
  defaults: { duration: 20, warmup: 3, p99BoundMs: 100 },
  requirements: () => [NATS_SERVER, REDIS_SERVER, HAPROXY, KUBO],
  plan,
  run,
};
