import t, { type Test } from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Accumulator } from '../../src/app/accumulator.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { Batch } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { createLogger, setLogLevel } from '../../src/util/logger.js';
import { delivery, HandQueue } from '../harness/hand-queue.js';
import { MemoryPinner, MemoryStore, OrderedChain, record, until } from '../harness/pipeline-memory.js';

/**
 * Stored batch writes wait a little for more batches (groupWaitMs, markGroupWaitMs): fewer,
 * larger inserts. A write never waits longer than that, and starts at once when enough wait.
 */

setLogLevel('silent');
const { backend: hashing } = await loadHashingBackend('js');
const quiet = { logger: createLogger('silent') };


/** A store counting its writes of formed batches and of batch rows. */
function countingStore(): { store: MemoryStore; formedWrites: number[]; batchWrites: number[] } {
  const store = new MemoryStore();
  const formedWrites: number[] = [];
  const batchWrites: number[] = [];
  const save = store.saveFormedBatches.bind(store);
  store.saveFormedBatches = (formed: readonly FormedBatch[]) => {
    formedWrites.push(formed.length);
    return save(formed);
  };
  const put = store.putBatches.bind(store);
  store.putBatches = (batches: readonly Batch[]) => {
    batchWrites.push(batches.length);
    return put(batches);
  };
  return { store, formedWrites, batchWrites };
}

const batchOf = (b: number): AcceptedRecord[] => Array.from({ length: 3 }, (_, i) => record(b, i));

/** An accumulator of 3-record batches on a hand-fed queue; `deliver` hands it records, one message each. */
function accumulating(store: MemoryStore, t: Test, groupWaitMs?: number): { deliver: (records: readonly AcceptedRecord[]) => Promise<void>; acc: Accumulator } {
  const queue = new HandQueue();
  const acc = new Accumulator(queue, store, hashing, { consumer: 'accumulator', maxRecords: 3, maxWaitMs: 60_000, retryMs: 1000, ...(groupWaitMs === undefined ? {} : { groupWaitMs }) }, quiet);
  acc.start();
  t.teardown(() => acc.stop());
  return { deliver: (records) => queue.deliver(records.map((r, i) => delivery(i + 1, r))), acc };
}

void t.test('a full batch waits for others up to groupWaitMs, then is written alone', async (t) => {
  const { store, formedWrites } = countingStore();
  const { deliver } = accumulating(store, t, 150);
  const started = Date.now();
  await deliver(batchOf(1));
  t.same(formedWrites, [], 'not written at once');
  await until(() => formedWrites.length === 1, 'the grouped write');
  t.ok(Date.now() - started >= 140, 'written after the group wait');
  t.ok(Date.now() - started < 5_000, 'and not after the batch wait');
  t.same(formedWrites, [1]);
});

void t.test('batches filled during the wait are written with the first', async (t) => {
  const { store, formedWrites } = countingStore();
  const { deliver } = accumulating(store, t, 150);
  await deliver(batchOf(1));
  await deliver(batchOf(2));
  await until(() => formedWrites.length === 1, 'the grouped write');
  t.same(formedWrites, [2], 'one write, two batches');
});

void t.test('four full batches are written at once, without the wait', async (t) => {
  const { store, formedWrites } = countingStore();
  const { deliver } = accumulating(store, t, 60_000);
  await deliver([1, 2, 3, 4].flatMap(batchOf));
  t.same(formedWrites, [4], 'written in the delivery');
});

void t.test('without groupWaitMs a full batch is written at once', async (t) => {
  const { store, formedWrites } = countingStore();
  const { deliver } = accumulating(store, t);
  await deliver(batchOf(1));
  t.same(formedWrites, [1]);
});

void t.test('batches anchored within markGroupWaitMs are recorded Anchored in one write', async (t) => {
  const { store, batchWrites } = countingStore();
  const formed = [1, 2, 3].map((b, i) => formBatch(batchOf(b), hashing, 1_700_000_000_000 + i));
  await store.saveFormedBatches(formed);
  const chain = new OrderedChain();
  chain.release();
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 60_000, markGroupWaitMs: 300 }, quiet);
  await anchorer.start();
  t.teardown(() => anchorer.stop());
  await until(() => [...store.batches.values()].every((b) => b.status === 'Anchored'), 'all anchored');
  t.same(batchWrites, [3], 'one Anchored write for the three');
});

void t.test('a group wait that ends after a write took its batches does not write the open batch early', async (t) => {
  const { store, formedWrites } = countingStore();
  // A look-up of redelivered records that takes longer than the group wait, so the wait ends while
  // the delivery that fills four batches is still being taken.
  store.batchedIngestIds = async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    return new Set<string>();
  };
  const { deliver, acc } = accumulating(store, t, 50);
  await deliver(batchOf(1).map((r) => ({ ...r, acceptedAt: new Date(Date.now() + 3_600_000).toISOString() })));
  await deliver([2, 3, 4].flatMap(batchOf).concat([record(5, 0)]));
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(formedWrites, [4], 'the four full batches, and not the one record left');
  t.equal(acc.openBatch()?.records, 1, 'which waits in the open batch');
});
