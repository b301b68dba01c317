import { appendFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import { queued, sampleRecord, type QueuedRecord } from '../harness/records.js';

const rec = (i: number): QueuedRecord => queued(sampleRecord(i));

const opts = { consumer: 'indexer', maxBatch: 50, maxInFlight: 100, ackWaitMs: 60_000 };

function collect(q: EmbeddedQueue, onBatch: (ds: readonly Delivery[]) => Promise<void> | void, o = opts) {
  return q.consume(o, async (ds) => {
    await onBatch(ds);
  });
}

async function until(cond: () => boolean, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timeout');
    await new Promise((r) => setTimeout(r, 10));
  }
}

t.test('publishes durably and delivers every record once when acked', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  await Promise.all(Array.from({ length: 300 }, (_, i) => q.publish([rec(i)])));
  const seen: string[] = [];
  const sub = collect(q, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => seen.length === 300);
  await sub.stop();
  t.equal(new Set(seen).size, 300);
  t.equal(q.positions().consumers['indexer'], 300);
  await q.close();
});

t.test('nak and unacked messages are delivered again; a restart resumes at the ack floor', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  for (let i = 0; i < 10; i++) await q.publish([rec(i)]);
  const counts = new Map<string, number>();
  let nakked = false;
  const sub = collect(q, async (ds) => {
    for (const d of ds) {
      const id = d.records[0]?.ingestId ?? '';
      counts.set(id, (counts.get(id) ?? 0) + 1);
      if (id === 'id-3' && !nakked) {
        nakked = true;
        t.equal(d.deliveryCount, 1);
        d.nak(5);
      } else if (id !== 'id-7') {
        await d.ack();
      }
    }
  });
  await until(() => counts.get('id-3') === 2);
  await sub.stop();
  t.equal(q.positions().consumers['indexer'], 7, 'floor stops below the unacked message (id-7 is seq 8)');
  await q.close();

  // Restart: id-7 was never acked, so it (and everything after the floor) comes back.
  q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  const again: string[] = [];
  const sub2 = collect(q, async (ds) => {
    for (const d of ds) {
      again.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => again.includes('id-7'));
  await sub2.stop();
  t.notOk(again.includes('id-0'), 'acked messages below the floor are not redelivered');
  t.equal(q.positions().consumers['indexer'], 10);
  await q.close();
});

t.test('ack wait expiry redelivers', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  await q.publish([rec(1)]);
  const deliveries: number[] = [];
  const sub = collect(
    q,
    async (ds) => {
      for (const d of ds) {
        deliveries.push(d.deliveryCount);
        if (d.deliveryCount === 2) await d.ack();
      }
    },
    { ...opts, ackWaitMs: 50 },
  );
  await until(() => deliveries.length === 2);
  await sub.stop();
  t.same(deliveries, [1, 2]);
  await q.close();
});

t.test('a torn tail is cut off on open and the log continues after it', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  await q.publish([rec(1)]);
  await q.publish([rec(2)]);
  await q.close();
  const logDir = path.join(dir, 'log');
  const seg = readdirSync(logDir).find((f) => f.endsWith('.seg')) ?? '';
  appendFileSync(path.join(logDir, seg), Buffer.from([200, 0, 0, 0, 1, 2, 3]));
  q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  t.equal(q.positions().lastSeq, 2);
  await q.publish([rec(3)]);
  const seen: string[] = [];
  const sub = collect(q, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => r.ingestId));
      await d.ack();
    }
  });
  await until(() => seen.length === 3);
  await sub.stop();
  t.same(seen, ['id-1', 'id-2', 'id-3']);
  await q.close();
});

t.test('publish refuses beyond the pending bound', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 2 });
  const results = await Promise.allSettled([q.publish([rec(1)]), q.publish([rec(2)]), q.publish([rec(3)])]);
  t.same(results.map((r) => r.status), ['fulfilled', 'fulfilled', 'rejected']);
  const reason = (results[2] as PromiseRejectedResult).reason as { code: string };
  t.equal(reason.code, 'overloaded');
  await q.close();
});

t.test('a queue written in the earlier format drains after an upgrade, and later messages follow it', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // The earlier format: a `.log` segment, FNV-1a frames, each message a JSON array of whole records.
  const fnv = (buf: Buffer): number => {
    let h = 0x811c9dc5;
    for (const b of buf) h = Math.imul(h ^ b, 0x01000193);
    return h >>> 0;
  };
  const frames = [1, 2].map((i) => {
    const { payloadBytes: _bytes, ...old } = rec(i);
    const body = Buffer.from(JSON.stringify([old]));
    const header = Buffer.alloc(16);
    header.writeUInt32LE(body.length, 0);
    header.writeUInt32LE(fnv(body), 4);
    header.writeDoubleLE(i, 8);
    return Buffer.concat([header, body]);
  });
  mkdirSync(path.join(dir, 'log'), { recursive: true });
  writeFileSync(path.join(dir, 'log', `${'1'.padStart(16, '0')}.log`), Buffer.concat(frames));

  let q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  t.equal(q.positions().lastSeq, 2, 'the old segment is read whole');
  await q.publish([rec(3)]);
  t.same(readdirSync(path.join(dir, 'log')).sort(), [`${'1'.padStart(16, '0')}.log`, `${'3'.padStart(16, '0')}.seg`], 'new messages go to a new segment');
  await q.close();
  q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  const seen: QueuedRecord['payload'][] = [];
  const sub = collect(q, async (ds) => {
    for (const d of ds) {
      seen.push(...d.records.map((r) => `${r.ingestId}:${r.payload}`));
      await d.ack();
    }
  });
  await until(() => seen.length === 3);
  await sub.stop();
  t.same(seen, ['id-1:{}', 'id-2:{}', 'id-3:{}']);
  await q.close();
});

t.test('unacked messages come back after their ack wait in delivery order; one given back for long does not hold the others', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer'], maxPendingPublishes: 1000 });
  for (let i = 1; i <= 5; i++) await q.publish([rec(i)]);
  const seen: string[] = [];
  const sub = collect(
    q,
    (ds) => {
      for (const d of ds) {
        const id = d.records[0]?.ingestId ?? '';
        seen.push(`${id}#${d.deliveryCount}`);
        if (d.deliveryCount === 1 && id === 'id-1') d.nak(60_000); // back much later
        else if (d.deliveryCount === 1 && id === 'id-2') d.nak(0); // back at once
        else if (d.deliveryCount >= 2) void d.ack();
        // id-3..5, first delivery: neither acked nor given back; the ack wait brings them back
      }
    },
    { consumer: 'indexer', maxBatch: 2, maxInFlight: 100, ackWaitMs: 150 },
  );
  await until(() => seen.filter((s) => s.endsWith('#2')).length === 4);
  await sub.stop();
  const again = seen.filter((s) => s.endsWith('#2'));
  t.same(again[0], 'id-2#2', 'the message given back at once comes first');
  t.same(again.slice(1), ['id-3#2', 'id-4#2', 'id-5#2'], 'then the expired ones, oldest delivery first');
  t.notOk(seen.includes('id-1#2'), 'the one given back for a minute stays back');
  t.equal(q.positions().consumers['indexer'], 0, 'id-1 is unacked, so the floor stays');
  await q.close();
});
