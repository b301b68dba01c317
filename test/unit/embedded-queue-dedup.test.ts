import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import type { NotedMessage } from '../../src/domain/records/ports.js';
import { consumed, queued, sampleRecord, type QueuedRecord } from '../harness/records.js';

/** Publishes under a message id: stored once, duplicates answered with what was stored first. */

const rec = (i: number): QueuedRecord => queued(sampleRecord(i));

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-qd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function drain(q: EmbeddedQueue): Promise<string[]> {
  const seen: string[] = [];
  const sub = q.consume({ consumer: 'indexer', maxBatch: 100, maxInFlight: 1000, ackWaitMs: 60_000 }, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  const end = Date.now() + 5000;
  while (Date.now() < end && seen.length < q.positions().lastSeq) await new Promise((r) => setTimeout(r, 10));
  // A little longer: a duplicate stored by mistake would show now.
  await new Promise((r) => setTimeout(r, 100));
  await sub.stop();
  return seen;
}

t.test('a second publish of an id stores nothing and answers with the first records and note', async (t) => {
  const q = EmbeddedQueue.open({ dir: tempDir(t), consumers: ['indexer'], maxPendingPublishes: 100 });
  t.same(await q.publish([rec(1), rec(2)], { msgId: 'm-1', note: 'first' }), { duplicate: false });
  t.same(await q.publish([rec(3)], { msgId: 'm-1', note: 'second' }), { duplicate: true, records: [consumed(rec(1)), consumed(rec(2))], note: 'first' });
  t.same(await q.publish([rec(4)], { msgId: 'm-2' }), { duplicate: false }, 'another id is another message');
  t.same(await q.publish([rec(5)]), { duplicate: false });
  t.same(await q.publish([rec(5)]), { duplicate: false }, 'without an id nothing is deduplicated');
  t.same(await drain(q), ['id-1', 'id-2', 'id-4', 'id-5', 'id-5']);
  await q.close();
});

t.test('concurrent publishes of one id: one message, every caller told the same records', async (t) => {
  const q = EmbeddedQueue.open({ dir: tempDir(t), consumers: ['indexer'], maxPendingPublishes: 100 });
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => q.publish([rec(100 + i)], { msgId: 'same', note: `n${i}` })));
  t.equal(results.filter((r) => !r.duplicate).length, 1, 'one stored');
  const winner = results.findIndex((r) => !r.duplicate);
  for (const r of results) if (r.duplicate) t.same(r, { duplicate: true, records: [consumed(rec(100 + winner))], note: `n${winner}` });
  t.same(await drain(q), [`id-${100 + winner}`]);
  await q.close();
});

t.test('ids are rebuilt from the log at open; noted messages are listed', async (t) => {
  const dir = tempDir(t);
  let q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 100 });
  await q.publish([rec(1)], { msgId: 'a', note: 'note-a' });
  await q.publish([rec(2)]);
  await q.publish([rec(3)], { msgId: 'b' });
  await q.publish([rec(4)], { msgId: 'c', note: 'note-c' });
  await q.close();
  q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 100 });
  t.same(await q.publish([rec(9)], { msgId: 'a', note: 'again' }), { duplicate: true, records: [consumed(rec(1))], note: 'note-a' });
  t.same(await q.publish([rec(9)], { msgId: 'b' }), { duplicate: true, records: [consumed(rec(3))], note: '' });
  const noted: NotedMessage[] = [];
  for await (const m of q.notedMessages()) noted.push(m);
  t.same(noted, [
    { msgId: 'a', note: 'note-a', records: [consumed(rec(1))] },
    { msgId: 'c', note: 'note-c', records: [consumed(rec(4))] },
  ]);
  t.same(await drain(q), ['id-1', 'id-2', 'id-3', 'id-4']);
  await q.close();
});

t.test('a failed publish of an id leaves it free for the next', async (t) => {
  const q = EmbeddedQueue.open({ dir: tempDir(t), consumers: ['indexer'], maxPendingPublishes: 1 });
  const first = q.publish([rec(1)], { msgId: 'x' });
  // The bound of pending publishes refuses the second while the first awaits the disk.
  await t.rejects(q.publish([rec(2)], { msgId: 'y' }), { code: 'overloaded' });
  t.same(await first, { duplicate: false });
  t.same(await q.publish([rec(2)], { msgId: 'y' }), { duplicate: false }, 'y was never stored: stored now');
  await q.close();
});
