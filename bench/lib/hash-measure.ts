import type { HashingService } from '../../src/adapters/hashing/hashing-service.js';
import type { HashingBackend } from '../../src/domain/hashing/port.js';
import type { RecordEnvelope } from '../../src/domain/records/types.js';

/**
 * The hashing measurements: records of a given size, and records/s of canonicalise + payloadHash +
 * recordHash through one backend on one thread (one call per bulk body, or one per record) or
 * through the worker pool; Merkle timings as medians.
 */

export function makeRecord(size: number, i: number): Uint8Array {
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

export function envelopeFor(i: number, payloadHash: string): RecordEnvelope {
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

/** Runs `fn` (which processes `unit` records) repeatedly for about `seconds`; returns records/s. */
function rate(seconds: number, unit: number, fn: () => void): number {
  for (let i = 0; i < 3; i++) fn();
  let n = 0;
  const start = performance.now();
  let elapsed = 0;
  do {
    fn();
    n += unit;
    elapsed = performance.now() - start;
  } while (elapsed < seconds * 1000);
  return (n / elapsed) * 1000;
}

export const BATCH = 64;

/** One core: prepareBody of each record, then recordHashes of the batch's envelopes. */
export function recordsPerSec(seconds: number, b: HashingBackend, bodies: Uint8Array[], touchValue: boolean): number {
  let k = 0;
  return rate(seconds, BATCH, () => {
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
export function batchedRecordsPerSec(seconds: number, b: HashingBackend, bulkBodies: Uint8Array[]): number {
  let k = 0;
  return rate(seconds, BATCH, () => {
    const p = b.prepareBody(bulkBodies[k++ % bulkBodies.length]!, 'bulk');
    const envelopes = p.payloads.map((x, i) => envelopeFor(i, x!.payloadHash));
    if (b.recordHashes(envelopes).length !== BATCH) throw new Error('bad batch');
  });
}

/** Through the pool: bulk bodies of BATCH records, one task per body and one per envelope batch. */
export async function pooledRecordsPerSec(service: HashingService, bulkBodies: Uint8Array[], seconds: number): Promise<number> {
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

export function bulkOf(records: Uint8Array[], from: number): Uint8Array {
  const parts: string[] = [];
  for (let j = 0; j < BATCH; j++) parts.push(Buffer.from(records[(from + j) % records.length]!).toString('utf8'));
  return new Uint8Array(Buffer.from(`{"records":[${parts.join(',')}]}`));
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

export function timeMs(repeats: number, fn: () => void): number {
  fn();
  const xs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    fn();
    xs.push(performance.now() - t0);
  }
  return median(xs);
}
