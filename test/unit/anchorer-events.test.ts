import t, { type Test } from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Accumulator } from '../../src/app/accumulator.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { EventBus } from '../../src/app/event-bus.js';
import type { DomainEvent, EventOf, EventType } from '../../src/app/events.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import { ingestIdTimeMs } from '../../src/domain/records/ids.js';
import { createLogger, setLogLevel } from '../../src/util/logger.js';
import { delivery, HandQueue } from '../harness/hand-queue.js';
import { MemoryPinner, MemoryStore, OrderedChain, record, until } from '../harness/pipeline-memory.js';

/**
 * The anchorer fed through the event seam: BatchFormed events bring it the batches of its term,
 * its transitions come back as events, and a BatchFormed it could not hold only sends it to the
 * store, where the batch waits in its place.
 */

setLogLevel('silent');

const { backend: hashing } = await loadHashingBackend('js');
const quiet = { logger: createLogger('silent') };

const OPTIONS = { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 60_000 };

function batches(first: number, count: number): FormedBatch[] {
  return Array.from({ length: count }, (_, k) => formBatch(Array.from({ length: 3 }, (_, i) => record(first + k, i)), hashing, 1_700_000_000_000 + first + k));
}

function formedEvent(formed: readonly FormedBatch[]): EventOf<'BatchFormed'> {
  return { type: 'BatchFormed', batches: formed.map((f) => ({ batch: f.batch, snapshots: f.snapshots })), atMs: Date.now() };
}

/** Every event of these types published on the bus, in order. */
function recorder(bus: EventBus, types: EventType[]): DomainEvent[] {
  const seen: DomainEvent[] = [];
  bus.subscribe({ name: 'test', types }, (e) => {
    seen.push(e);
  });
  return seen;
}

/** A store counting its reads of pending batches. */
function countingStore(): { store: MemoryStore; pendingReads: () => number } {
  const store = new MemoryStore();
  let reads = 0;
  const read = store.batchesByStatus.bind(store);
  store.batchesByStatus = (status, limit) => {
    if (status === 'Pending') reads += 1;
    return read(status, limit);
  };
  return { store, pendingReads: () => reads };
}

async function started(store: MemoryStore, chain: OrderedChain, bus: EventBus, t: Test): Promise<Anchorer> {
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, OPTIONS, { events: bus, logger: createLogger('silent') });
  await anchorer.start();
  t.teardown(() => anchorer.stop());
  return anchorer;
}

void t.test('batches formed by the accumulator reach the anchorer as BatchFormed events, without a read of the store; anchoring publishes its steps', async (t) => {
  const bus = new EventBus(quiet);
  const seen = recorder(bus, ['BatchFormed', 'AnchorSubmitted', 'BatchAnchored', 'SnapshotStateChanged']);
  const { store, pendingReads } = countingStore();
  const chain = new OrderedChain();
  chain.release();
  await started(store, chain, bus, t);
  await until(() => pendingReads() >= 1, 'the first read of pending batches');
  const before = pendingReads();

  const queue = new HandQueue();
  const accumulator = new Accumulator(queue, store, hashing, { consumer: 'accumulator', maxRecords: 3, maxWaitMs: 60_000, retryMs: 1000 }, { events: bus, logger: createLogger('silent') });
  accumulator.start();
  t.teardown(() => accumulator.stop());
  const records = [1, 2].flatMap((b) => Array.from({ length: 3 }, (_, i) => record(b, i)));
  await queue.deliver(records.map((r, i) => delivery(i + 1, r)));
  await until(() => [...store.batches.values()].filter((b) => b.status === 'Anchored').length === 2, 'both batches anchored');
  t.equal(pendingReads(), before, 'no read of pending batches: they came with the event');
  t.equal(await bus.idle(5000), true, 'every event handled by the recorder');

  const formed = seen.filter((e): e is EventOf<'BatchFormed'> => e.type === 'BatchFormed');
  t.equal(formed.length, 1, 'one event for the write that stored both batches');
  const ids = formed[0]?.batches.map((b) => b.batch.batchId) ?? [];
  t.equal(ids.length, 2);
  t.same(
    seen.filter((e) => e.type === 'AnchorSubmitted').map((e) => (e.type === 'AnchorSubmitted' ? [e.batchId, e.batchSeq, e.attempt] : [])),
    [
      [ids[0], 1, 1],
      [ids[1], 2, 1],
    ],
    'each batch sent once, in the order formed',
  );
  const anchored = seen.filter((e): e is EventOf<'BatchAnchored'> => e.type === 'BatchAnchored');
  t.same(
    anchored.map((e) => [e.batchId, e.batchSeq, e.records, e.adopted, e.gasUsed, e.feeWei]),
    [
      [ids[0], 1, 3, false, 60_001, '1000000'],
      [ids[1], 2, 3, false, 60_002, '2000000'],
    ],
    'BatchAnchored with the cost of each transaction',
  );
  const firstIds = [1, 2].map((b) => record(b, 0).ingestId);
  t.same(
    anchored.map((e) => e.firstAcceptedAtMs),
    firstIds.map((id) => ingestIdTimeMs(id)),
    'and the acceptance time of its first record',
  );
  const states = seen.filter((e): e is EventOf<'SnapshotStateChanged'> => e.type === 'SnapshotStateChanged').map((e) => [e.batchId, e.state]);
  t.same(states, [
    [ids[0], 'Batched'],
    [ids[1], 'Batched'],
    [ids[0], 'Anchored'],
    [ids[1], 'Anchored'],
  ]);
  for (const e of seen) t.notOk(JSON.stringify(e).includes('"payload"'), `${e.type} carries no record payload`);
});

void t.test('a BatchFormed the feed could not hold sends the loop to the store: the batch is anchored in its place', async (t) => {
  const bus = new EventBus(quiet);
  const { store, pendingReads } = countingStore();
  const chain = new OrderedChain();
  chain.release();
  await started(store, chain, bus, t);
  await until(() => pendingReads() >= 1, 'the first read of pending batches');

  const [a, b, c] = batches(10, 3) as [FormedBatch, FormedBatch, FormedBatch];
  await store.saveFormedBatches([a, b]);
  // The feed holds 256 events: A and 255 others fill it before the loop takes any, so B is lost.
  bus.publish(formedEvent([a]));
  for (let i = 0; i < 255; i++) bus.publish(formedEvent([]));
  bus.publish(formedEvent([b]));
  await bus.idle(5000);
  await store.saveFormedBatches([c]);
  bus.publish(formedEvent([c]));
  // The loop's own reads of the store are a minute apart: only the loss sends it there sooner.
  await until(() => [a, b, c].every((f) => store.batches.get(f.batch.batchId)?.status === 'Anchored'), 'every batch anchored');
  t.same(
    [a, b, c].map((f) => store.batches.get(f.batch.batchId)?.batchSeq),
    [1, 2, 3],
    'in the order formed, the lost one in its place',
  );
  t.same(chain.calls, [1, 2, 3], 'one anchor per batch');
  const feed = bus.stats().find((s) => s.name === 'anchorer');
  t.equal(feed?.dropped, 1, 'the loss is counted');
});

void t.test('a BatchFormed that arrives after the loop took its batch from the store does not send it again', async (t) => {
  const bus = new EventBus(quiet);
  const failures = recorder(bus, ['AnchorAttemptFailed']);
  const { store } = countingStore();
  const chain = new OrderedChain();
  chain.release();
  const [x] = batches(20, 1) as [FormedBatch];
  await store.saveFormedBatches([x]);
  await started(store, chain, bus, t);
  await until(() => store.batches.get(x.batch.batchId)?.status === 'Anchored', 'the batch read from the store anchored');
  bus.publish(formedEvent([x]));
  await bus.idle(5000);
  // Past a pass of the loop: a second anchor would be sent at once.
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.same(chain.calls, [1], 'anchored once');
  t.same(failures, [], 'no attempt refused by the chain');
});

void t.test('after stop, the feed is gone: BatchFormed is no longer wanted by the anchorer', async (t) => {
  const bus = new EventBus(quiet);
  const { store } = countingStore();
  const chain = new OrderedChain();
  chain.release();
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, OPTIONS, { events: bus, logger: createLogger('silent') });
  await anchorer.start();
  t.equal(bus.wants('BatchFormed'), true, 'fed while it runs');
  await anchorer.stop();
  t.equal(bus.wants('BatchFormed'), false, 'not after its term');
});

