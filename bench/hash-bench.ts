/**
 * Hashing benchmark: per backend, records/s for canonicalise + payloadHash + recordHash on 256 B,
 * 1 KiB and 16 KiB records (one core, and through the worker pool); Merkle root and all proofs
 * for 1 000 and 1 000 000 leaves; the inline/pool crossover; and the machine's SHA-256 limit.
 * Prints a table, then one JSON object as the last line.
 */
import { execFileSync } from 'node:child_process';
import { hash as cryptoHash, randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { HashingService } from '../src/adapters/hashing/hashing-service.js';
import { loadHashingBackend } from '../src/adapters/hashing/select-backend.js';
import type { HashBackendName, HashingBackend } from '../src/domain/hashing/port.js';
import type { RecordEnvelope } from '../src/domain/records/types.js';

const QUICK = process.env['DRIS_BENCH_QUICK'] === '1';
const SECONDS = QUICK ? 0.3 : 1;

function makeRecord(size: number, i: number): Uint8Array {
  const payload: Record<string, unknown> = {
    customerId: 100000 + i,
    name: `Customer ${i} Ä`,
    email: `customer${i}@example.com`,
    active: i % 2 === 0,
    balance: 1234.5 + i / 7,
    tags: ['gold', 'emea', 'b2b'],
    address: { street: `${i} Main Street`, city: 'Zürich', zip: '8001', geo: [47.3769, 8.5417] },
    updatedAt: '2024-05-01T12:30:00.000Z',
  };
  const wrap = (): string =>
    JSON.stringify({ tenantId: 'acme', database: 'crm', collection: 'customers', recordId: `c-${i}`, operationType: 'upsert', recordPayload: payload });
  let n = 0;
  while (wrap().length < size) {
    const missing = size - wrap().length;
    payload[`note${n++}`] = 'lorem ipsum dolor sit amet '.repeat(4).slice(0, Math.max(1, Math.min(96, missing - 12)));
  }
  return new Uint8Array(Buffer.from(wrap()));
}

function envelopeFor(i: number, payloadHash: string): RecordEnvelope {
  return {
    hashScheme: 'dris-v1',
    tenantId: 'acme',
    database: 'crm',
    collection: 'customers',
    recordId: `c-${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash,
    salt: '9f86d081884c7d659a2feaa0c55ad015',
  };
}

/** Runs `fn` (which processes `unit` records) repeatedly for about SECONDS; returns records/s. */
function rate(unit: number, fn: () => void): number {
  for (let i = 0; i < 3; i++) fn();
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    fn();
    n += unit;
    elapsed = performance.now() - start;
  } while (elapsed < SECONDS * 1000);
  return (n / elapsed) * 1000;
}

const BATCH = 64;

/** One core: prepareBody of each record, then recordHashes of the batch's envelopes. */
function recordsPerSec(b: HashingBackend, bodies: Uint8Array[], touchValue: boolean): number {
  let k = 0;
  return rate(BATCH, () => {
    const envelopes: RecordEnvelope[] = [];
    for (let j = 0; j < BATCH; j++) {
      const p = b.prepareBody(bodies[k++ % bodies.length]!, 'single');
      if (touchValue && p.value === undefined) throw new Error('no value');
      envelopes.push(envelopeFor(j, p.payloads[0]!.payloadHash));
    }
    if (b.recordHashes(envelopes).length !== BATCH) throw new Error('bad batch');
  });
}

/**
 * One core through the batch API: each bulk body of BATCH records is one prepareBody call, its
 * envelopes one recordHashes call, as ingestion does for a bulk request.
 */
function batchedRecordsPerSec(b: HashingBackend, bulkBodies: Uint8Array[]): number {
  let k = 0;
  return rate(BATCH, () => {
    const p = b.prepareBody(bulkBodies[k++ % bulkBodies.length]!, 'bulk');
    const envelopes = p.payloads.map((x, i) => envelopeFor(i, x!.payloadHash));
    if (b.recordHashes(envelopes).length !== BATCH) throw new Error('bad batch');
  });
}

/** Through the pool: bulk bodies of BATCH records, one task per body and one per envelope batch. */
async function pooledRecordsPerSec(service: HashingService, bulkBodies: Uint8Array[], seconds: number): Promise<number> {
  const pool = service.pool;
  if (pool === undefined) throw new Error('no pool');
  const inFlight = 2 * pool.threads;
  let done = 0;
  let k = 0;
  const start = performance.now();
  const deadline = start + seconds * 1000;
  async function lane(): Promise<void> {
    while (performance.now() < deadline) {
      const src = bulkBodies[k++ % bulkBodies.length]!;
      const p = await pool!.prepareBody(src.slice(), 'bulk');
      const hashes = await pool!.recordHashes(p.payloads.map((x, i) => envelopeFor(i, x!.payloadHash)));
      done += hashes.length;
    }
  }
  await Promise.all(Array.from({ length: inFlight }, lane));
  return (done / (performance.now() - start)) * 1000;
}

function bulkOf(records: Uint8Array[], from: number): Uint8Array {
  const parts: string[] = [];
  for (let j = 0; j < BATCH; j++) parts.push(Buffer.from(records[(from + j) % records.length]!).toString('utf8'));
  return new Uint8Array(Buffer.from(`{"records":[${parts.join(',')}]}`));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function timeMs(repeats: number, fn: () => void): number {
  fn();
  const xs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}

function sha256Limit(): { mbps: number; source: string } {
  try {
    const out = execFileSync('openssl', ['speed', '-bytes', '1024', '-seconds', QUICK ? '1' : '2', 'sha256'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 30_000 });
    const line = out.split('\n').find((l) => /^sha256\s/.test(l));
    const k = line === undefined ? NaN : Number(line.trim().split(/\s+/).pop()!.replace(/k$/, ''));
    if (Number.isFinite(k)) return { mbps: k / 1000, source: 'openssl speed -bytes 1024 sha256' };
  } catch {
    // openssl absent: measure node:crypto instead.
  }
  const buf = randomBytes(1024);
  const perSec = rate(1000, () => {
    for (let i = 0; i < 1000; i++) cryptoHash('sha256', buf, 'buffer');
  });
  return { mbps: (perSec * 1024) / 1e6, source: 'crypto.hash 1 KiB loop' };
}

function fmt(n: number): string {
  return n >= 100 ? Math.round(n).toLocaleString('en-US') : n.toFixed(3);
}

async function main(): Promise<void> {
  const backends: HashingBackend[] = [];
  for (const name of ['native', 'wasm', 'js'] as const) {
    try {
      backends.push((await loadHashingBackend(name)).backend);
    } catch (e) {
      console.log(`# backend ${name} unavailable: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
  const sizes = [256, 1024, 16384] as const;
  const corpus = Object.fromEntries(sizes.map((s) => [s, Array.from({ length: 256 }, (_, i) => makeRecord(s, i))])) as Record<(typeof sizes)[number], Uint8Array[]>;
  const cores = availableParallelism();
  const result: Record<string, unknown> = { cores };
  const recordsTable: string[][] = [];
  const perBackend: Record<string, Record<string, number>> = {};

  const bulk = Object.fromEntries(sizes.map((s) => [s, Array.from({ length: 8 }, (_, i) => bulkOf(corpus[s], i * BATCH))])) as Record<(typeof sizes)[number], Uint8Array[]>;
  for (const b of backends) {
    const row: Record<string, number> = {};
    for (const s of sizes) {
      row[`oneCore${s}`] = batchedRecordsPerSec(b, bulk[s]);
      row[`oneCoreSingle${s}`] = recordsPerSec(b, corpus[s], false);
      if (b.name === 'native') row[`oneCoreWithValue${s}`] = recordsPerSec(b, corpus[s], true);
    }
    perBackend[b.name] = row;
  }

  // Through the pool: all cores, bulk bodies of BATCH records, several in flight.
  for (const b of backends) {
    const service = await HashingService.create({ backend: b.name, threads: cores, inlineThresholdBytes: 0, maxQueue: 1024 });
    try {
      for (const s of sizes) perBackend[b.name]![`pool${s}`] = await pooledRecordsPerSec(service, bulk[s], SECONDS * 2);
    } finally {
      await service.close();
    }
  }

  for (const b of backends) {
    const r = perBackend[b.name]!;
    recordsTable.push([
      b.name,
      ...sizes.map((s) => fmt(r[`oneCore${s}`]!)),
      ...sizes.map((s) => fmt(r[`oneCoreSingle${s}`]!)),
      ...sizes.map((s) => fmt(r[`pool${s}`]!)),
    ]);
  }
  console.log(
    `\nrecords/s: canonicalise + payloadHash + recordHash (1core: one thread, bulk bodies of ${BATCH} records, one call each; ` +
      `single: one thread, one body per record; pool: ${cores} threads, bulk bodies of ${BATCH})`,
  );
  console.log(
    ['backend', '256B 1core', '1KiB 1core', '16KiB 1core', '256B single', '1KiB single', '16KiB single', '256B pool', '1KiB pool', '16KiB pool']
      .map((h) => h.padStart(13))
      .join(''),
  );
  for (const row of recordsTable) console.log(row.map((c) => c.padStart(13)).join(''));
  const native = perBackend['native'];
  if (native !== undefined) {
    console.log(`native with the parsed value materialised (JSON.parse on access): ${sizes.map((s) => `${s}B ${fmt(native[`oneCoreWithValue${s}`]!)}/s`).join(', ')}`);
  }

  // Merkle.
  const merkle1kMs: Record<string, number> = {};
  const merkleRows: string[][] = [];
  const leaves1k = Array.from({ length: 1000 }, () => new Uint8Array(randomBytes(32)));
  const leaves1m = Array.from({ length: QUICK ? 100_000 : 1_000_000 }, () => new Uint8Array(randomBytes(32)));
  const merkle: Record<string, Record<string, number>> = {};
  for (const b of backends) {
    const root1k = timeMs(QUICK ? 20 : 200, () => b.merkleRoot(leaves1k));
    const proofs1k = timeMs(QUICK ? 10 : 50, () => b.allProofs(leaves1k));
    const root1m = timeMs(QUICK ? 1 : 3, () => b.merkleRoot(leaves1m));
    const proofs1m = timeMs(1, () => b.allProofs(leaves1m));
    merkle1kMs[b.name] = root1k;
    merkle[b.name] = { root1kMs: root1k, allProofs1kMs: proofs1k, root1mMs: root1m, allProofs1mMs: proofs1m };
    merkleRows.push([b.name, fmt(root1k), fmt(proofs1k), fmt(root1m), fmt(proofs1m)]);
  }
  const big = `${leaves1m.length.toLocaleString('en-US')} leaves`;
  console.log('\nMerkle (RFC 9162), milliseconds (median)');
  console.log(['backend', 'root 1k', 'proofs 1k', `root ${big}`, `proofs ${big}`].map((h) => h.padStart(18)).join(''));
  for (const row of merkleRows) console.log(row.map((c) => c.padStart(18)).join(''));

  // Crossover: inline cost of one body against one pooled round trip.
  const crossover: Record<string, Record<number, { inlineUs: number; poolUs: number }>> = {};
  const crossSizes = [256, 1024, 4096, 16384, 65536, 262144];
  console.log('\ninline vs pool, microseconds per body (sequential)');
  console.log(['backend', ...crossSizes.map((s) => `${s}B in/pool`)].map((h) => h.padStart(18)).join(''));
  for (const b of backends) {
    const service = await HashingService.create({ backend: b.name, threads: 1, inlineThresholdBytes: 0 });
    const row: string[] = [b.name];
    crossover[b.name] = {};
    try {
      for (const s of crossSizes) {
        const body = makeRecord(s, 1);
        const reps = Math.max(20, Math.min(2000, Math.floor(2e6 / s)));
        const inlineUs = timeMs(5, () => {
          for (let i = 0; i < reps; i++) b.prepareBody(body, 'single');
        }) * (1000 / reps);
        for (let i = 0; i < 20; i++) await service.prepareBody(body.slice(), 'single');
        const t0 = performance.now();
        const poolReps = QUICK ? 50 : 200;
        for (let i = 0; i < poolReps; i++) await service.prepareBody(body.slice(), 'single');
        const poolUs = ((performance.now() - t0) * 1000) / poolReps;
        crossover[b.name]![s] = { inlineUs, poolUs };
        row.push(`${inlineUs.toFixed(1)}/${poolUs.toFixed(1)}`);
      }
    } finally {
      await service.close();
    }
    console.log(row.map((c) => c.padStart(18)).join(''));
  }

  const limit = sha256Limit();
  console.log(`\nSHA-256 limit: ${limit.mbps.toFixed(0)} MB/s (${limit.source})`);
  const nativeBackend = backends.find((b) => b.name === 'native') as (HashingBackend & { shaExtensions?: boolean }) | undefined;
  if (nativeBackend?.shaExtensions !== undefined) console.log(`native SHA-256 uses CPU SHA extensions: ${nativeBackend.shaExtensions}`);

  const pick = (name: HashBackendName, key: string): number | null => perBackend[name]?.[key] ?? null;
  Object.assign(result, {
    nativeRecordsPerSec1k: pick('native', 'oneCore1024'),
    jsRecordsPerSec1k: pick('js', 'oneCore1024'),
    wasmRecordsPerSec1k: pick('wasm', 'oneCore1024'),
    nativeOverJs1k: pick('native', 'oneCore1024') !== null && pick('js', 'oneCore1024') !== null ? pick('native', 'oneCore1024')! / pick('js', 'oneCore1024')! : null,
    merkle1kMs,
    sha256LimitMBps: limit.mbps,
    sha256LimitSource: limit.source,
    records: perBackend,
    merkle,
    crossover,
  });
  console.log(JSON.stringify(result));
}

await main();
