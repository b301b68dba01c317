import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { decodeDeadLetter } from '../../src/adapters/queue/dead-letter.js';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import { SegmentLog } from '../../src/adapters/storage/segment-log.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import { queued, sampleRecord, type QueuedRecord } from '../harness/records.js';

const rec = (i: number): QueuedRecord => queued(sampleRecord(i));

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function deadLetters(dir: string): Promise<ReturnType<typeof decodeDeadLetter>[]> {
  const log = SegmentLog.open(path.join(dir, 'dead-letter'));
  try {
    return (await log.read(1, 100)).map((e) => decodeDeadLetter(e.payload));
  } finally {
    await log.close();
  }
}

t.test('a dead letter is durable, settles the message for its consumer only, and survives a restart', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-dlq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let q = EmbeddedQueue.open({ dir, consumers: ['indexer', 'accumulator'], maxPendingPublishes: 100 });
  await q.publish([rec(1)]);
  await q.publish([rec(2), rec(3)]);
  await q.publish([rec(4)]);

  const indexed: string[] = [];
  let poisonDeliveries = 0;
  const sub = q.consume({ consumer: 'indexer', maxBatch: 10, maxInFlight: 10, ackWaitMs: 60_000 }, async (ds: readonly Delivery[]) => {
    for (const d of ds) {
      if (d.records.some((r) => r.ingestId === 'id-3')) {
        poisonDeliveries += 1;
        if (d.deliveryCount < 3) d.nak(1);
        else await d.deadLetter('index_refused:internal_error', d.records.filter((r) => r.ingestId === 'id-3'));
        continue;
      }
      indexed.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => indexed.length === 2 && q.positions().consumers['indexer'] === 3);
  await new Promise((r) => setTimeout(r, 50));
  await sub.stop();
  t.equal(poisonDeliveries, 3, 'delivered three times, then set aside and never again');
  t.same(indexed, ['id-1', 'id-4'], 'the others flowed');
  t.equal(await q.deadLetterCount(), 1);

  const seenByAccumulator: string[] = [];
  const acc = q.consume({ consumer: 'accumulator', maxBatch: 10, maxInFlight: 10, ackWaitMs: 60_000 }, async (ds) => {
    for (const d of ds) {
      seenByAccumulator.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => seenByAccumulator.length === 4);
  await acc.stop();
  t.same(seenByAccumulator, ['id-1', 'id-2', 'id-3', 'id-4'], 'another consumer still gets the message');
  await q.close();

  const letters = await deadLetters(dir);
  t.equal(letters.length, 1);
  const [letter] = letters;
  t.same(
    letter === undefined ? null : { consumer: letter.info.consumer, seq: letter.info.seq, deliveryCount: letter.info.deliveryCount, reason: letter.info.reason, ids: letter.info.ingestIds },
    { consumer: 'indexer', seq: 2, deliveryCount: 3, reason: 'index_refused:internal_error', ids: ['id-3'] },
  );
  t.same(letter?.records?.map((r) => [r.ingestId, r.payload]), [['id-3', '{}']], 'the record set aside, whole');

  q = EmbeddedQueue.open({ dir, consumers: ['indexer', 'accumulator'], maxPendingPublishes: 100 });
  t.teardown(() => q.close());
  t.equal(await q.deadLetterCount(), 1, 'counted after a restart');
  const again: string[] = [];
  const sub2 = q.consume({ consumer: 'indexer', maxBatch: 10, maxInFlight: 10, ackWaitMs: 60_000 }, async (ds) => {
    for (const d of ds) {
      again.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await q.publish([rec(5)]);
  await until(() => again.length > 0);
  await sub2.stop();
  t.same(again, ['id-5'], 'nothing set aside or acked comes back');
});

t.test('a message that does not decode is set aside as it is, and the consumer goes on', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-dlq-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const raw = SegmentLog.open(path.join(dir, 'log'));
  await raw.append(Buffer.from('not a dris message'));
  await raw.close();
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 100 });
  t.teardown(() => q.close());
  await q.publish([rec(1)]);
  const seen: string[] = [];
  const sub = q.consume({ consumer: 'indexer', maxBatch: 10, maxInFlight: 10, ackWaitMs: 60_000 }, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => seen.length === 1);
  await sub.stop();
  t.same(seen, ['id-1']);
  t.equal(await q.deadLetterCount(), 1);
  t.equal(q.positions().consumers['indexer'], 2, 'acked past it');
  const [letter] = await deadLetters(dir);
  t.equal(letter?.info.undecodable, true);
  t.equal(letter?.info.reason, 'undecodable');
  t.equal(letter?.body.toString('utf8'), 'not a dris message', 'its bytes as they were');
});
