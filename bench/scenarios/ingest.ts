import { tmpdir } from 'node:os';
import { startNats, startRedis } from '../../test/harness/servers.js';
import { fsyncFloor } from '../lib/floors/fsync.js';
import { startBareServer } from '../lib/floors/http.js';
import { generatorWorkers, LOAD_OPTIONS, measureHttp, pinRequested, plannedLoads, sweepHttp, sweepRequested, type HttpTarget, type HttpWorkload, type PhaseTiming } from '../lib/http-phase.js';
import { list, num, optNum, type OptionValues } from '../lib/options.js';
import { payload1k } from '../lib/payload.js';
import { pinProcesses, type Pinning } from '../lib/pinning.js';
import type { PlannedPhase } from '../lib/progress.js';
import type { Figure, FloorFigure, Phase, SweepResult } from '../lib/results.js';
import { withFloors, type Scenario, type ScenarioContext, type ScenarioOutput } from '../lib/scenario.js';
import { BENCH_TENANT, startBenchService } from '../lib/service.js';
import { fmtNum, table } from '../lib/table.js';
import { NATS_SERVER, REDIS_SERVER } from '../lib/tools.js';

/**
 * ingest: POST /api/v1/records (one 1 KiB record) and /api/v1/records/bulk (--bulk-size records)
 * against the real service in each --modes, beside bare uWebSockets.js (the HTTP floor, same
 * generator, same load) and a raw fdatasync append loop (the durability floor).
 */

const MODES = ['embedded', 'nats-redis', 'embedded-api'] as const;
const VARIANTS = ['single', 'bulk'] as const;
type Variant = (typeof VARIANTS)[number];

const STARTUP_SEC = 6;

function bodies(bulkSize: number): { single: string; bulk: string } {
  return {
    single: JSON.stringify({ tenantId: BENCH_TENANT, database: 'erp', collection: 'invoices', recordId: 'inv-1', recordPayload: payload1k(1) }),
    bulk: JSON.stringify({
      tenantId: BENCH_TENANT,
      records: Array.from({ length: bulkSize }, (_, i) => ({ database: 'erp', collection: 'invoices', recordId: `inv-${i}`, recordPayload: payload1k(i) })),
    }),
  };
}

function workloads(values: OptionValues, key: string): Record<Variant, HttpWorkload> {
  const bulkSize = num(values, 'bulk-size');
  const headers = { 'Content-Type': 'application/json', ...(key === '' ? {} : { 'X-API-Key': key }) };
  const { single, bulk } = bodies(bulkSize);
  const check = { statuses: [202] };
  return {
    single: { source: { kind: 'fixed', method: 'POST', path: '/api/v1/records', headers, bodies: [single] }, check, recordsPerRequest: 1, connections: num(values, 'connections') },
    bulk: {
      source: { kind: 'fixed', method: 'POST', path: '/api/v1/records/bulk', headers, bodies: [bulk] },
      // The bare floor answers 202 with no count; the service must accept every record.
      check: key === '' ? check : { statuses: [202], bodyIncludes: [`"accepted":${bulkSize}`] },
      recordsPerRequest: bulkSize,
      connections: num(values, 'bulk-connections'),
    },
  };
}

function plan(values: OptionValues): PlannedPhase[] {
  const variants = list(values, 'variants');
  const each = num(values, 'warmup') + num(values, 'duration') + 1;
  const phases: PlannedPhase[] = [{ key: 'floor.fsync', seconds: num(values, 'floor-seconds') }];
  for (const v of variants) phases.push({ key: `floor.http.${v}`, seconds: each });
  for (const m of list(values, 'modes')) {
    phases.push({ key: `${m}.start`, seconds: STARTUP_SEC });
    for (const v of variants) phases.push(...plannedLoads(`${m}.${v}`, values, each));
  }
  return phases;
}

/** The floors of the run: fdatasync, then bare uWebSockets.js with each variant's load. */
async function measureFloors(ctx: ScenarioContext, pinning: Pinning | null, timing: PhaseTiming & { workers: number }): Promise<{ floors: FloorFigure[]; phases: Phase[]; rows: string[][] }> {
  const { values, progress } = ctx;
  const variants = list(values, 'variants') as Variant[];
  const bulkSize = num(values, 'bulk-size');
  const floors: FloorFigure[] = [];
  const phases: Phase[] = [];
  const rows: string[][] = [];
  const fsync = await progress.phase('floor.fsync', 'floor: fdatasync append loop', () => fsyncFloor(tmpdir(), num(values, 'floor-seconds')));
  const bulkBytes = Buffer.byteLength(bodies(bulkSize).bulk) / bulkSize;
  floors.push({ key: 'fsync.single', label: 'fdatasync per 1 KiB append', value: fsync.syncsPerSec, unit: 'records/s', source: `raw append + fdatasync loop in ${tmpdir()}, one record per sync` });
  floors.push({ key: 'fsync.bulk', label: 'fdatasync bandwidth (1 MiB appends)', value: Math.round((fsync.mbPerSec * 1e6) / bulkBytes), unit: 'records/s', source: `${fsync.mbPerSec} MB/s durable, ${Math.round(bulkBytes)} B per record` });

  const bare = await startBareServer(pinning?.server ?? null);
  try {
    const w = workloads(values, '');
    for (const v of variants) {
      const p = await measureHttp(progress, `floor.http.${v}`, `floor: bare uWebSockets.js, ${v}`, bare, w[v], values, { ...timing, rateRecords: undefined });
      phases.push(p);
      floors.push({ key: `http.${v}`, label: `bare uWebSockets.js ${v}`, value: Math.round(p.load.okPerSec * w[v].recordsPerRequest), unit: 'records/s', source: `same generator, closed loop, ${w[v].connections} connections` });
      rows.push(['bare uWS', v, `closed ${w[v].connections}`, ...cells(p, w[v].recordsPerRequest)]);
    }
  } finally {
    await bare.stop();
  }
  return { floors, phases, rows };
}

async function run(ctx: ScenarioContext): Promise<ScenarioOutput> {
  const { values, progress } = ctx;
  const variants = list(values, 'variants') as Variant[];
  const modes = list(values, 'modes');
  const pinning = pinProcesses(pinRequested(values));
  ctx.environment.pinning = pinning;
  const workers = generatorWorkers(values, pinning === null ? null : Math.max(1, ctx.environment.cores - 1));
  const timing = { warmupSec: num(values, 'warmup'), durationSec: num(values, 'duration'), workers, rateRecords: optNum(values, 'rate') };
  const bulkSize = num(values, 'bulk-size');
  const phases: Phase[] = [];
  const sweeps: SweepResult[] = [];
  const floors: FloorFigure[] = [];
  const headline: Figure[] = [];
  const rows: string[][] = [];

  const measuredFloors = await measureFloors(ctx, pinning, timing);
  floors.push(...measuredFloors.floors);
  phases.push(...measuredFloors.phases);
  rows.push(...measuredFloors.rows);
  const floorOf = (key: string): FloorFigure | undefined => floors.find((f) => f.key === key);

  for (const mode of modes) {
    const env: Record<string, string> = {};
    const stops: (() => Promise<void>)[] = [];
    if (mode === 'embedded-api') Object.assign(env, { DRIS_ROLES: 'api', DRIS_FRONT_ONLY: 'true' });
    const started = await progress.phase(`${mode}.start`, `${mode}: starting the service`, async () => {
      if (mode === 'nats-redis') {
        const nats = await startNats();
        stops.push(() => nats.stop());
        const redis = await startRedis();
        stops.push(() => redis.stop());
        env['NATS_URL'] = nats.url;
        env['REDIS_URL'] = redis.url;
      }
      return startBenchService(ctx, { env, pinCpu: pinning?.server ?? null });
    });
    try {
      const target: HttpTarget = { host: '127.0.0.1', port: started.svc.port };
      const w = workloads(values, started.key);
      for (const v of variants) {
        const key = `${mode}.${v}`;
        const fl = [floorOf(`http.${v}`), floorOf(`fsync.${v}`)];
        if (sweepRequested(values)) {
          const s = await sweepHttp(progress, key, `${mode} ${v}`, target, w[v], values, { ...timing, defaultFrom: v === 'single' ? 500 : 2000 });
          phases.push(...s.phases);
          sweeps.push(s.sweep);
          headline.push(withFloors({ key: `${key}.knee`, label: `${mode} ${v}: knee (p99 <= ${s.sweep.boundMs} ms)`, value: s.sweep.knee ?? 0, unit: 'records/s', better: 'higher' }, fl));
          for (const p of s.phases) if (p.load !== undefined) rows.push([mode, v, `open ${fmtNum((p.load.offeredPerSec ?? 0) * w[v].recordsPerRequest)}/s`, ...cells(p as Phase & { load: NonNullable<Phase['load']> }, w[v].recordsPerRequest)]);
          continue;
        }
        const p = await measureHttp(progress, key, `${mode} ${v}`, target, w[v], values, timing);
        phases.push(p);
        const rate = Math.round(p.load.okPerSec * w[v].recordsPerRequest);
        headline.push(withFloors({ key: `${key}.recordsPerSec`, label: `${mode} ${v}: records/s`, value: rate, unit: 'records/s', better: 'higher' }, fl));
        headline.push({ key: `${key}.p99Ms`, label: `${mode} ${v}: p99 latency`, value: p.load.latency.p99, unit: 'ms', better: 'lower' });
        rows.push([mode, v, timing.rateRecords === undefined ? `closed ${w[v].connections}` : `open ${fmtNum(timing.rateRecords)}/s`, ...cells(p, w[v].recordsPerRequest)]);
      }
    } finally {
      await started.svc.dispose();
      for (const s of stops.reverse()) await s();
    }
  }
  const header = ['mode', 'variant', 'load', 'records/s', 'p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms', 'failed', 'statuses'];
  return {
    headline,
    floors,
    phases,
    sweeps,
    config: { modes, variants, bulkSize, connections: num(values, 'connections'), bulkConnections: num(values, 'bulk-connections'), rateRecordsPerSec: timing.rateRecords ?? null, workers, recordBytes: 1024 },
    notes: [
      timing.rateRecords === undefined && !sweepRequested(values)
        ? 'closed loop: throughput is the maximum; its latency is queueing at that maximum, not what a client at a lower rate sees (use --rate or --sweep for that)'
        : 'open loop: latency counted from each request\'s intended send time (coordinated omission corrected)',
    ],
    warmupSeconds: timing.warmupSec,
    tables: [table(header, rows)],
  };
}

function cells(p: Phase & { load: NonNullable<Phase['load']> }, per: number): string[] {
  const l = p.load.latency;
  return [fmtNum(p.load.okPerSec * per), ...[l.p50, l.p90, l.p99, l.p999, l.max].map(fmtNum), String(p.load.failed), JSON.stringify(p.load.statuses)];
}

export const scenario: Scenario = {
  name: 'ingest',
  order: 10,
  summary: 'POST /api/v1/records and /bulk against the service, beside bare uWebSockets.js and fdatasync',
  description: [
    'Ingestion of 1 KiB records, one per request (single) and --bulk-size per request (bulk), against the',
    'real service started with the embedded default (embedded), NATS + Redis (nats-redis) or the HTTP front',
    'alone (embedded-api, DRIS_ROLES=api with DRIS_FRONT_ONLY). Without --rate: closed loop, maximum throughput. With --rate:',
    'open loop at that many records/s, latency from each intended send time. --sweep finds the knee.',
    'Floors in the same run: bare uWebSockets.js answering 202 (same generator, same load) and a raw',
    'fdatasync append loop; the service is pinned to CPU 0 and the generator to the others (taskset).',
  ].join('\n'),
  options: [
    { name: 'modes', kind: 'list', default: ['embedded'], choices: MODES, help: 'service set-ups to measure, in turn' },
    { name: 'variants', kind: 'list', default: ['single', 'bulk'], choices: VARIANTS, help: 'single records and/or bulk requests' },
    { name: 'bulk-size', kind: 'integer', default: 1000, max: 1000, unit: 'records', help: 'records per bulk request' },
    { name: 'connections', kind: 'integer', default: 64, help: 'closed loop: connections of the single variant' },
    { name: 'bulk-connections', kind: 'integer', default: 4, help: 'closed loop: connections of the bulk variant' },
    ...LOAD_OPTIONS,
  ],
  defaults: { duration: 10, warmup: 2, p99BoundMs: 50 },
  requirements: (values) => (list(values, 'modes').includes('nats-redis') ? [NATS_SERVER, REDIS_SERVER] : []),
  plan,
  run,
};
