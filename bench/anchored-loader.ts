import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { Anchorer } from '../src/app/anchorer.js';
import { startEmbeddedChain } from '../src/adapters/chain/embedded-chain.js';
import { loadHashingBackend } from '../src/adapters/hashing/select-backend.js';
import { openClickHouseStorage } from '../src/adapters/clickhouse/open-storage.js';
import { EmbeddedPinner } from '../src/adapters/ipfs/embedded-pinner.js';
import { ProcessLock } from '../src/adapters/process-lock.js';
import type { HashingBackend } from '../src/domain/hashing/port.js';
import { formBatch } from '../src/domain/pipeline/batch-formation.js';
import { newIngestId } from '../src/domain/records/ids.js';
import { HASH_SCHEME, type AcceptedRecord, type RecordEnvelope } from '../src/domain/records/types.js';
import { randomHex } from '../src/util/random.js';
import { payload1k } from './lib/payload.js';

/**
 * Fills an embedded data directory with anchored records without the HTTP front and the queue,
 * which together anchor only about 2 000 records/s on a small machine. Everything after acceptance
 * is dris's own code on the directory's own engines: records are hashed as ingestion hashes them,
 * inserted by the hot index as the indexer inserts them, formed into batches by formBatch and
 * written by the pipeline store as the accumulator writes them, then anchored by the real
 * Anchorer, which pins each manifest in the embedded block store and commits each root with the
 * deployed contract on the embedded anvil. So a stored-mode verification of any loaded record
 * reads a genuine on-chain anchor.
 *
 * Not written: the indexer's record.ingest audit entries, which verification does not read.
 */

export interface LoadOptions {
  readonly dataDir: string;
  readonly records: number;
  readonly tenantId: string;
  readonly database: string;
  readonly collection: string;
  /** recordId of the i-th record (0-based). */
  readonly recordId: (i: number) => string;
  readonly progress?: (line: string) => void;
  /** Batches done so far of each stage (formed and stored, then anchored), for an ETA. */
  readonly step?: (stage: 'form' | 'anchor', done: number, total: number) => void;
}

export interface LoadResult {
  readonly records: number;
  readonly batches: number;
  readonly contractAddress: string;
  readonly hashBackend: string;
  readonly formSeconds: number;
  readonly seconds: number;
}

/** One flush is one batch of at most 1000 records (DECISIONS). */
const BATCH_RECORDS = 1000;
/** Batches written concurrently, as the accumulator does with the full batches in its buffer. */
const WRITES_IN_FLIGHT = 4;

/** Records first..first+count-1, accepted as IngestService accepts them (salt, ids, hashes). */
function acceptRecords(o: LoadOptions, hashing: HashingBackend, first: number, count: number, acceptedAtMs: number): AcceptedRecord[] {
  const acceptedAt = new Date(acceptedAtMs).toISOString();
  const canonical: string[] = [];
  const envelopes: RecordEnvelope[] = [];
  for (let i = first; i < first + count; i++) {
    const text = hashing.canonicalize(payload1k(i));
    canonical.push(text);
    envelopes.push({
      hashScheme: HASH_SCHEME,
      tenantId: o.tenantId,
      database: o.database,
      collection: o.collection,
      recordId: o.recordId(i),
      recordVersion: '1',
      operationType: 'upsert',
      sourceTimestamp: null,
      payloadHash: hashing.sha256Hex(Buffer.from(text, 'utf8')),
      salt: randomHex(16),
    });
  }
  const hashes = hashing.recordHashes(envelopes);
  const correlationId = randomUUID();
  return envelopes.map((e, k) => ({
    ...e,
    ingestId: newIngestId(acceptedAtMs),
    clientId: 'bench',
    keyId: 'bench-loader',
    recordHash: hashes[k] as string,
    acceptedAt,
    payload: canonical[k] as string,
    idempotencyKey: null,
    correlationId,
  }));
}

export async function loadAnchoredRecords(o: LoadOptions): Promise<LoadResult> {
  const say = o.progress ?? (() => undefined);
  const started = Date.now();
  const lock = ProcessLock.acquire(path.join(o.dataDir, 'dris.lock'));
  const closers: (() => Promise<void>)[] = [async () => lock.release()];
  const closeAll = async (): Promise<void> => {
    for (const c of closers.splice(0).reverse()) await c();
  };
  try {
    const { backend: hashing } = await loadHashingBackend('auto');
    const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: path.join(o.dataDir, 'clickhouse'), queryTimeoutMs: 600_000 } });
    closers.push(() => index.close());
    await index.database.migrate();
    const store = index.pipeline;
    const pinner = await EmbeddedPinner.open({ directory: path.join(o.dataDir, 'ipfs') });
    closers.push(() => pinner.close());
    // Receipts polled every 10 ms rather than 100: anvil mines at once, and the load waits on
    // one confirmation per batch.
    const chain = await startEmbeddedChain({ dataDir: o.dataDir, confirmations: 1, pollIntervalMs: 10 });
    closers.push(() => chain.close());
    const anchorer = new Anchorer(store, pinner, chain.chain, hashing, { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 200 });
    await anchorer.start();
    closers.push(() => anchorer.stop());

    const batches = Math.ceil(o.records / BATCH_RECORDS);
    // Acceptance times as if the records had come in at 2 000/s, ending now.
    const firstAcceptedMs = started - Math.ceil(o.records / 2);
    const writes = new Set<Promise<void>>();
    let failure: unknown = null;
    for (let b = 0; b < batches && failure === null; b++) {
      const first = b * BATCH_RECORDS;
      const count = Math.min(BATCH_RECORDS, o.records - first);
      const records = acceptRecords(o, hashing, first, count, firstAcceptedMs + Math.floor(first / 2));
      const formed = formBatch(records, hashing, Date.now());
      // The indexer's insert first, then the accumulator's batch: the order of the real pipeline.
      const w: Promise<void> = index.records
        .insertRecords(records)
        .then(() => store.saveFormedBatch(formed))
        .then(() => anchorer.notify())
        .catch((err: unknown) => {
          failure = err;
        })
        .finally(() => writes.delete(w));
      writes.add(w);
      if (writes.size >= WRITES_IN_FLIGHT) await Promise.race(writes);
      if ((b + 1) % 100 === 0) say(`formed ${b + 1}/${batches} batches (${Math.round((Date.now() - started) / 1000)} s)`);
      o.step?.('form', b + 1, batches);
    }
    await Promise.all(writes);
    if (failure !== null) throw failure;
    const formSeconds = (Date.now() - started) / 1000;

    const db = index.database.name;
    let lastReport = 0;
    for (;;) {
      const rows = await index.database.runner.query<{ status: string; n: number | string }>(`SELECT status, count() AS n FROM ${db}.batches FINAL GROUP BY status`);
      const count = (s: string): number => Number(rows.find((r) => r.status === s)?.n ?? 0);
      if (count('Failed') > 0) throw new Error(`${count('Failed')} batches failed to anchor; see the anchorer's log`);
      o.step?.('anchor', count('Anchored'), batches);
      if (count('Anchored') >= batches && count('Pending') === 0) break;
      if (Date.now() - lastReport >= 10_000) {
        lastReport = Date.now();
        say(`anchored ${count('Anchored')}/${batches} batches (${Math.round((Date.now() - started) / 1000)} s)`);
      }
      await new Promise((r) => setTimeout(r, 500));
    }
    const contractAddress = chain.chain.info().contractAddress;
    await closeAll();
    return { records: o.records, batches, contractAddress, hashBackend: hashing.name, formSeconds, seconds: (Date.now() - started) / 1000 };
  } catch (err) {
    await closeAll().catch(() => undefined);
    throw err;
  }
}
