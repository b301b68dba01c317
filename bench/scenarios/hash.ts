import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { HashingService } from '../../src/adapters/hashing/hashing-service.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { proofAt } from '../../src/domain/hashing/merkle.js';
import type { HashingBackend } from '../../src/domain/hashing/port.js';
import { checkHashBackend } from '../lib/environment.js';
import { shaFloor } from '../lib/floors/sha.js';
import { BATCH, batchedRecordsPerSec, bulkOf, makeRecord, pooledRecordsPerSec, recordsPerSec, timeMs } from '../lib/hash-measure.js';
import { bool, type OptionValues } from '../lib/options.js';
import type { PlannedPhase } from '../lib/progress.js';
import type { Figure, FloorFigure } from '../lib/results.js';
import { withFloors, type Scenario, type ScenarioContext, type ScenarioOutput } from '../lib/scenario.js';
import { fmtNum, table } from '../lib/table.js';

/**
 * hash: per backend, records/s of canonicalise + payloadHash + recordHash on 256 B, 1 KiB and
 * 16 KiB records (one thread, batched or one body per record, and through the worker pool); Merkle
 * root and all proofs for 1 000 and 1 000 000 leaves; checking a record's path from its text (as a
 * verification does) in a tree of 1 000; the inline/pool crossover. Floor: the
 * machine's SHA-256 rate on 1 KiB blocks (openssl speed), in the same run.
 */

const SIZES = [256, 1024, 16384] as const;
const BACKENDS = ['native', 'wasm', 'js'] as const;

function quick(values: OptionValues): boolean {
  return bool(values, 'quick') || process.env['DRIS_BENCH_QUICK'] === '1';
}

interface Measured {
  readonly floor: ReturnType<typeof shaFloor>;
  readonly backends: HashingBackend[];
  readonly unavailable: string[];
  readonly per: Record<string, Record<string, number>>;
  readonly merkle: Record<string, Record<string, number>>;
}

async function loadBackends(): Promise<{ backends: HashingBackend[]; unavailable: string[] }> {
  const backends: HashingBackend[] = [];
  const unavailable: string[] = [];
  for (const name of BACKENDS) {
    try {
      backends.push((await loadHashingBackend(name)).backend);
    } catch (e) {
      unavailable.push(`${name}: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  return { backends, unavailable };
}

async function measure(ctx: ScenarioContext, q: boolean): Promise<Measured> {
  const { progress } = ctx;
  const seconds = q ? 0.3 : 1;
  const floor = await progress.phase('floor.sha', 'floor: SHA-256 of 1 KiB blocks (openssl speed)', async () => shaFloor(q ? 1 : 2));
  const { backends, unavailable } = await loadBackends();
  const corpus = Object.fromEntries(SIZES.map((s) => [s, Array.from({ length: 256 }, (_, i) => makeRecord(s, i))])) as Record<(typeof SIZES)[number], Uint8Array[]>;
  const bulk = Object.fromEntries(SIZES.map((s) => [s, Array.from({ length: 8 }, (_, i) => bulkOf(corpus[s], i * BATCH))])) as Record<(typeof SIZES)[number], Uint8Array[]>;
  const cores = availableParallelism();
  const per: Record<string, Record<string, number>> = {};
  await progress.phase('records', 'records/s per backend and size, one thread', async (h) => {
    for (const b of backends) {
      h.note(b.name);
      const row: Record<string, number> = {};
      for (const s of SIZES) {
        row[`oneCore${s}`] = batchedRecordsPerSec(seconds, b, bulk[s]);
        row[`oneCoreSingle${s}`] = recordsPerSec(seconds, b, corpus[s], false);
        await new Promise((r) => setImmediate(r));
      }
      per[b.name] = row;
    }
  });
  await progress.phase('pool', `records/s through the pool (${cores} threads)`, async (h) => {
    for (const b of backends) {
      h.note(b.name);
      const service = await HashingService.create({ backend: b.name, threads: cores, inlineThresholdBytes: 0, maxQueue: 1024 });
      try {
        for (const s of SIZES) (per[b.name] as Record<string, number>)[`pool${s}`] = await pooledRecordsPerSec(service, bulk[s], seconds * 2);
      } finally {
        await service.close();
      }
    }
  });
  const merkle: Record<string, Record<string, number>> = {};
  await progress.phase('merkle', 'Merkle roots and proofs', async (h) => {
    const leaves1k = Array.from({ length: 1000 }, () => new Uint8Array(randomBytes(32)));
    const leavesBig = Array.from({ length: q ? 100_000 : 1_000_000 }, () => new Uint8Array(randomBytes(32)));
    for (const b of backends) {
      h.note(b.name);
      merkle[b.name] = {
        checkPathUs: checkPathUs(b, leaves1k, q ? 3 : 20),
        root1kMs: timeMs(q ? 20 : 200, () => b.merkleRoot(leaves1k)),
        allProofs1kMs: timeMs(q ? 10 : 50, () => b.allProofs(leaves1k)),
        rootBigMs: timeMs(q ? 1 : 3, () => b.merkleRoot(leavesBig)),
        allProofsBigMs: timeMs(1, () => b.allProofs(leavesBig)),
        bigLeaves: leavesBig.length,
      };
      await new Promise((r) => setImmediate(r));
    }
  });
  return { floor, backends, unavailable, per, merkle };
}

/** Microseconds to check one record's path from its text (recordInclusionHolds), over every leaf of a tree of `leaves`. */
function checkPathUs(b: HashingBackend, leaves: readonly Uint8Array[], repeats: number): number {
  const hex = (x: Uint8Array): string => Buffer.from(x).toString('hex');
  const all = b.allProofs(leaves);
  const root = hex(all.root);
  const claims = leaves.map((l, i) => ({ hash: hex(l), path: proofAt(all, i).map(hex) }));
  const ms = timeMs(repeats, () => {
    for (let i = 0; i < claims.length; i++) {
      const c = claims[i] as { hash: string; path: string[] };
      if (!b.recordInclusionHolds(c.hash, i, claims.length, c.path, root)) throw new Error(`${b.name}: path ${i} does not hold`);
    }
  });
  return (ms * 1000) / claims.length;
}

async function run(ctx: ScenarioContext): Promise<ScenarioOutput> {
  const q = quick(ctx.values);
  ctx.environment.hashBackend.bench = await checkHashBackend(ctx.allowFallback);
  const { floor, backends, unavailable, per, merkle } = await measure(ctx, q);
  const cores = availableParallelism();
  const floors: FloorFigure[] = [
    { key: 'sha256', label: 'SHA-256 of 1 KiB blocks, one core', value: Math.round((floor.mbPerSec * 1e6) / 1024), unit: 'records/s', source: `${floor.mbPerSec} MB/s, ${floor.source}` },
  ];
  const headline: Figure[] = [];
  for (const b of backends) {
    const r = per[b.name] as Record<string, number>;
    headline.push(withFloors({ key: `${b.name}.oneCore1k`, label: `${b.name}: 1 KiB records/s, one thread (bulk bodies of ${BATCH})`, value: Math.round(r['oneCore1024'] ?? 0), unit: 'records/s', better: 'higher' }, floors));
    headline.push({ key: `${b.name}.pool1k`, label: `${b.name}: 1 KiB records/s through the pool (${cores} threads)`, value: Math.round(r['pool1024'] ?? 0), unit: 'records/s', better: 'higher' });
    headline.push({ key: `${b.name}.merkle1kMs`, label: `${b.name}: Merkle root of 1000 leaves`, value: Math.round((merkle[b.name]?.['root1kMs'] ?? 0) * 1000) / 1000, unit: 'ms', better: 'lower' });
  }
  const recordsTable = table(
    ['backend', ...SIZES.map((s) => `${s} B 1 thread`), ...SIZES.map((s) => `${s} B single`), ...SIZES.map((s) => `${s} B pool`)],
    backends.map((b) => {
      const r = per[b.name] as Record<string, number>;
      return [b.name, ...SIZES.map((s) => fmtNum(r[`oneCore${s}`])), ...SIZES.map((s) => fmtNum(r[`oneCoreSingle${s}`])), ...SIZES.map((s) => fmtNum(r[`pool${s}`]))];
    }),
  );
  const big = (merkle[backends[0]?.name ?? '']?.['bigLeaves'] ?? 0).toLocaleString('en-US');
  const merkleTable = table(
    ['backend', 'root 1k ms', 'proofs 1k ms', `root ${big} ms`, `proofs ${big} ms`, 'check a path µs'],
    backends.map((b) => {
      const m = merkle[b.name] as Record<string, number>;
      return [b.name, fmtNum(m['root1kMs']), fmtNum(m['allProofs1kMs']), fmtNum(m['rootBigMs']), fmtNum(m['allProofsBigMs']), fmtNum(m['checkPathUs'])];
    }),
  );
  const shaExt = (backends.find((b) => b.name === 'native') as (HashingBackend & { shaExtensions?: boolean }) | undefined)?.shaExtensions;
  return {
    headline,
    floors,
    phases: [{ key: 'hash', title: 'hashing', data: { records: per, merkle, unavailable } }],
    sweeps: [],
    config: { batch: BATCH, sizes: SIZES, poolThreads: cores, quick: q, secondsPerCase: q ? 0.3 : 1 },
    notes: [
      `records/s: canonicalise + payloadHash + recordHash ("1 thread": bulk bodies of ${BATCH}, one call each; "single": one body per record; "pool": ${cores} threads)`,
      ...(shaExt === undefined ? [] : [`native SHA-256 uses CPU SHA extensions: ${shaExt}`]),
      ...unavailable.map((u) => `backend unavailable: ${u}`),
    ],
    warmupSeconds: 0,
    tables: [recordsTable, merkleTable],
  };
}

function plan(values: OptionValues): PlannedPhase[] {
  const q = quick(values);
  const s = q ? 0.3 : 1;
  return [
    { key: 'floor.sha', seconds: q ? 1 : 2 },
    { key: 'records', seconds: Math.ceil(BACKENDS.length * SIZES.length * 2 * s * 1.2) },
    { key: 'pool', seconds: Math.ceil(BACKENDS.length * SIZES.length * 2 * s + 3) },
    { key: 'merkle', seconds: q ? 5 : 40 },
  ];
}

export const scenario: Scenario = {
  name: 'hash',
  order: 40,
  summary: 'hashing backends: records/s, Merkle roots and proofs, beside the SHA-256 limit',
  description: [
    'Per hashing backend (native, wasm, js): records/s of canonicalise + payloadHash + recordHash on 256 B,',
    '1 KiB and 16 KiB records, on one thread and through the worker pool; Merkle root and all proofs for 1 000',
    'and 1 000 000 leaves. Floor in the same run: the machine\'s SHA-256 rate on 1 KiB blocks (openssl speed).',
    'Refuses to run without the native backend unless --allow-fallback. --duration and --warmup do not apply.',
  ].join('\n'),
  options: [{ name: 'quick', kind: 'boolean', help: 'shorter measurements (also DRIS_BENCH_QUICK=1)' }],
  defaults: { duration: 1, warmup: 0, p99BoundMs: 1 },
  ownBackendCheck: true,
  plan,
  run,
};
