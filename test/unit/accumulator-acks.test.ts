import t, { type Test } from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Accumulator } from '../../src/app/accumulator.js';
import { SUSPECT_CLOCK_MARGIN_MS } from '../../src/app/seen-before.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { createLogger, setLogLevel } from '../../src/util/logger.js';
import { HandQueue } from '../harness/hand-queue.js';
import { MemoryStore, record, until } from '../harness/pipeline-memory.js';

/**
 * Acks the queue refuses after a batch is stored (a NATS node going away) and copies of messages
 * delivered again while their records wait: a record is in one stored batch only, and a message
 * is acked only once its records are in a stored batch.
 */

setLogLevel('silent');
const { backend: hashing } = await loadHashingBackend('js');
const quiet = { logger: createLogger('silent') };

interface Sent {
  readonly delivery: Delivery;
  acks: number;
  naks: number;
}

/** A message of `records`; its acks reject while `refuse()` says so. */
function message(seq: number, records: readonly AcceptedRecord[], refuse: () => boolean = () => false, deliveryCount = 1): Sent {
  const sent: Sent = {
    acks: 0,
    naks: 0,
    delivery: {
      records,
      seq,
      deliveryCount,
      ack: () => {
        if (refuse()) return Promise.reject(new Error('no responders'));
        sent.acks += 1;
        return Promise.resolve();
      },
      nak: () => {
        sent.naks += 1;
      },
      deadLetter: () => Promise.resolve(),
    },
  };
  return sent;
}

function accumulating(t: Test, store: MemoryStore, maxWaitMs: number): { queue: HandQueue; acc: Accumulator } {
  const queue = new HandQueue();
  const acc = new Accumulator(queue, store, hashing, { consumer: 'accumulator', maxRecords: 3, maxWaitMs, retryMs: 50 }, quiet);
  acc.start();
  t.teardown(() => acc.stop());
  return { queue, acc };
}

/** How many stored batches hold each ingest id. */
function batchesPerRecord(store: MemoryStore): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of store.snapshots.values()) for (const id of s.ingestIds) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

void t.test('records of a timed batch whose acks failed are not batched again with later records', async (t) => {
  const store = new MemoryStore();
  const { queue } = accumulating(t, store, 80);
  let refusing = true;
  const first = message(1, [record(1, 0), record(1, 1)], () => refusing);
  await queue.deliver([first.delivery]);
  await until(() => store.batches.size === 1, 'the timed batch of two');
  await new Promise((resolve) => setTimeout(resolve, 20));
  refusing = false;
  const second = message(2, [record(2, 0), record(2, 1)]);
  await queue.deliver([second.delivery]);
  await until(() => store.batches.size === 2, 'the next timed batch');
  t.same([...store.batches.values()].map((b) => b.treeSize).sort(), [2, 2], 'two batches of two');
  t.same([...batchesPerRecord(store).values()], [1, 1, 1, 1], 'each record in one batch');
  t.equal(first.acks, 0, 'the refused message was not acked');
  t.equal(second.acks, 1);
});

void t.test('a full batch whose acks fail does not fail the delivery, and is not formed again', async (t) => {
  const store = new MemoryStore();
  const { queue, acc } = accumulating(t, store, 60_000);
  let refusing = true;
  const first = message(1, [record(1, 0), record(1, 1), record(1, 2)], () => refusing);
  await queue.deliver([first.delivery]);
  refusing = false;
  await queue.deliver([message(2, [record(2, 0), record(2, 1), record(2, 2)]).delivery]);
  t.equal(store.batches.size, 2);
  t.same([...batchesPerRecord(store).values()], [1, 1, 1, 1, 1, 1]);
  t.equal(acc.openBatch(), null, 'nothing left waiting');
});

void t.test('after a refused ack, a first delivery of records accepted before it is looked for in the store', async (t) => {
  const store = new MemoryStore();
  const looked: string[][] = [];
  store.batchedIngestIds = (ids: readonly string[]) => {
    looked.push([...ids]);
    return Promise.resolve(new Set<string>());
  };
  const t0 = Date.now();
  const { queue } = accumulating(t, store, 60_000);
  // Past the start's margin, but before the margin of a doubt 200 ms later.
  const at = (r: AcceptedRecord, ms: number): AcceptedRecord => ({ ...r, acceptedAt: new Date(ms).toISOString() });
  const between = t0 + SUSPECT_CLOCK_MARGIN_MS + 100;
  await queue.deliver([message(1, [0, 1, 2].map((i) => at(record(1, i), between))).delivery]);
  t.same(looked, [], 'a first delivery is not looked for');
  await new Promise((resolve) => setTimeout(resolve, 200));
  await queue.deliver([message(2, [0, 1, 2].map((i) => at(record(2, i), t0 + 3_600_000)), () => true).delivery]);
  t.same(looked, [], 'nor before the refusal');
  await queue.deliver([message(3, [at(record(3, 0), between)]).delivery]);
  t.same(looked, [[record(3, 0).ingestId]], 'but after it');
});

void t.test('a copy of a waiting record is acked with it, once its batch is stored, not before', async (t) => {
  const store = new MemoryStore();
  const { queue } = accumulating(t, store, 60_000);
  const first = message(1, [record(1, 0)]);
  await queue.deliver([first.delivery]);
  const copy = message(1, [record(1, 0)], () => false, 2);
  await queue.deliver([copy.delivery]);
  t.equal(copy.acks, 0, 'the copy waits with the record');
  t.equal(store.batches.size, 0);
  await queue.deliver([message(2, [record(1, 1), record(1, 2)]).delivery]);
  t.equal(store.batches.size, 1);
  t.equal(first.acks, 1);
  t.equal(copy.acks, 1, 'settled with the batch');
  t.same([...store.batches.values()].map((b) => b.treeSize), [3], 'the record once');
});

void t.test('stopping gives back copies that waited as well', async (t) => {
  const { queue, acc } = accumulating(t, new MemoryStore(), 60_000);
  const first = message(1, [record(1, 0)]);
  const copy = message(1, [record(1, 0)], () => false, 2);
  await queue.deliver([first.delivery]);
  await queue.deliver([copy.delivery]);
  await acc.stop();
  t.same([first.naks, copy.naks, first.acks, copy.acks], [1, 1, 0, 0]);
});
