import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import { StorageGuard } from '../../src/adapters/storage/storage-guard.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { loadConfig } from '../../src/config/config.js';
import { setLogLevel } from '../../src/util/logger.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import { queued, sampleRecord } from '../harness/records.js';
import { httpStatusOf } from '../../src/http/status.js';

setLogLevel('silent');

const MiB = 1024 * 1024;

/** A guard over a file system whose free space the test sets; time moves when the test says. */
async function guardWith(minFreeBytes: number): Promise<{ guard: StorageGuard; setFree: (n: number) => void; advance: (ms: number) => void }> {
  let free = 1000 * MiB;
  let now = 1_000_000;
  const guard = await StorageGuard.start({ dir: '/unused', minFreeBytes, refreshMs: 3_600_000, statfs: () => Promise.resolve(free), now: () => now });
  return {
    guard,
    setFree: (n) => {
      free = n;
    },
    advance: (ms) => {
      now += ms;
    },
  };
}

function refusalCode(guard: StorageGuard): string | null {
  try {
    guard.admit();
    return null;
  } catch (err) {
    return err instanceof DrisError ? err.code : 'not a DrisError';
  }
}

t.test('below the free-space floor new records are refused with storage_full and Retry-After, and accepted again above it', async (t) => {
  const { guard, setFree } = await guardWith(100 * MiB);
  t.equal(refusalCode(guard), null);
  setFree(99 * MiB);
  await guard.refresh();
  t.equal(refusalCode(guard), 'storage_full');
  const why = guard.refusal();
  t.equal(why === null ? null : httpStatusOf(why), 503);
  t.equal(why?.headers['Retry-After'], '5');
  t.equal(why?.extra['retryAfter'], 5);
  await t.rejects(guard.check(), { code: 'storage_full' }, 'the health probe is down');
  t.equal(guard.status().state, 'full');
  setFree(101 * MiB);
  await guard.refresh();
  t.equal(refusalCode(guard), null, 'resumed by itself');
  await t.resolves(guard.check());
  await guard.close();
});

t.test('after ENOSPC: refused until room comes back, or writes are tried again after a while', async (t) => {
  const { guard, setFree, advance } = await guardWith(0);
  setFree(10 * MiB);
  guard.noteFull();
  t.equal(refusalCode(guard), 'storage_full', 'at once');
  await guard.refresh();
  t.equal(refusalCode(guard), 'storage_full', 'the free space read right after is the baseline');
  setFree(11 * MiB);
  await guard.refresh();
  t.equal(refusalCode(guard), 'storage_full', 'a little room is not enough');
  setFree(20 * MiB);
  await guard.refresh();
  t.equal(refusalCode(guard), null, 'room came back');

  guard.noteFull();
  await guard.refresh();
  advance(9_000);
  await guard.refresh();
  t.equal(refusalCode(guard), 'storage_full');
  advance(2_000);
  await guard.refresh();
  t.equal(refusalCode(guard), null, 'after 10 s without room, writes are tried again');
  await guard.close();
});

t.test('a fatal storage fault refuses everything until a restart', async (t) => {
  const { guard, setFree } = await guardWith(0);
  guard.noteFatal(new DrisError('storage_failed', 'the log failed', { headers: { 'Retry-After': '5' } }));
  t.equal(refusalCode(guard), 'storage_failed');
  setFree(10_000 * MiB);
  await guard.refresh();
  t.equal(refusalCode(guard), 'storage_failed');
  t.equal(guard.status().state, 'failed');
  await guard.close();
});

t.test('the embedded queue: a byte budget of unprocessed messages, resumed as consumers acknowledge', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-budget-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const q = EmbeddedQueue.open({ dir, consumers: ['indexer', 'accumulator'], maxPendingPublishes: 1000, maxBytes: 4096 });
  let published = 0;
  let refused: unknown = null;
  for (let i = 0; i < 200 && refused === null; i++) {
    try {
      await q.publish([queued(sampleRecord(i))]);
      published += 1;
    } catch (err) {
      refused = err;
    }
  }
  t.ok(published > 3 && refused instanceof DrisError, `refused after ${published} messages`);
  t.match(refused, { code: 'storage_full', headers: { 'Retry-After': '5' } });
  t.equal(refused instanceof DrisError ? httpStatusOf(refused) : null, 503);
  await t.rejects(q.check(), { code: 'storage_full' }, 'the queue probe is down while over budget');

  // One consumer catching up is not enough: the slowest decides.
  const drain = async (consumer: string): Promise<void> => {
    let acked = 0;
    const sub = q.consume({ consumer, maxBatch: 50, maxInFlight: 100, ackWaitMs: 60_000 }, async (ds: readonly Delivery[]) => {
      for (const d of ds) {
        await d.ack();
        acked += 1;
      }
    });
    const deadline = Date.now() + 10_000;
    while (acked < published && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    await sub.stop();
  };
  await drain('indexer');
  await t.rejects(q.publish([queued(sampleRecord(1000))]), { code: 'storage_full' });
  await drain('accumulator');
  await t.resolves(q.publish([queued(sampleRecord(1001))]), 'accepted again once every consumer caught up');
  await t.resolves(q.check());
  await q.close();
});

t.test('the embedded queue asks the guard before every publish', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-q-admit-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let full = false;
  const q = EmbeddedQueue.open({
    dir,
    consumers: ['indexer'],
    maxPendingPublishes: 1000,
    admit: () => {
      if (full) throw new DrisError('storage_full', 'full');
    },
  });
  await q.publish([queued(sampleRecord(1))]);
  full = true;
  await t.rejects(q.publish([queued(sampleRecord(2))]), { code: 'storage_full' });
  t.equal(q.positions().lastSeq, 1, 'nothing was written');
  full = false;
  await q.publish([queued(sampleRecord(3))]);
  t.equal(q.positions().lastSeq, 2);
  await q.close();
});

t.test('configuration: DRIS_QUEUE_MAX_BYTES and DRIS_MIN_FREE_BYTES', async (t) => {
  const d = loadConfig({}, '/srv');
  t.equal(d.queueMaxBytes, 10 * 1024 * MiB);
  t.equal(d.minFreeBytes, 512 * MiB);
  const c = loadConfig({ DRIS_QUEUE_MAX_BYTES: '0', DRIS_MIN_FREE_BYTES: '1048576' }, '/srv');
  t.equal(c.queueMaxBytes, 0);
  t.equal(c.minFreeBytes, MiB);
  t.throws(() => loadConfig({ DRIS_MIN_FREE_BYTES: '-1' }, '/srv'), { code: 'config_invalid' });
  t.throws(() => loadConfig({ DRIS_QUEUE_MAX_BYTES: '10GB' }, '/srv'), { code: 'config_invalid' });
});
