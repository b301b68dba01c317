import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { LookupBatcher, type LookupBatcherOptions } from '../../src/adapters/clickhouse/lookup-batcher.js';

/** A batcher whose queries answer each key doubled, recording the keys of every query sent. */
function batcher(options: Partial<LookupBatcherOptions> = {}): { b: LookupBatcher<number, number>; sent: number[][] } {
  const sent: number[][] = [];
  const b = new LookupBatcher<number, number>({ maxBatch: 4, maxPending: 64, parallel: 1, ...options }, (keys) => {
    sent.push([...keys]);
    return Promise.resolve(keys.map((k) => k * 2));
  });
  return { b, sent };
}

void t.test('an idle batcher not under load sends a look-up at once', async (t) => {
  const { b, sent } = batcher({ gatherMs: 50 });
  const answer = b.lookup(1);
  t.same(sent, [[1]], 'sent before lookup() returned');
  t.equal(await answer, 2);
});

// The tests share two cores with other suites: "under load" is a recentMs no scheduling delay
// reaches, and "not under load" a wait far past it, so no assertion hangs on a timer's precision.
const LOADED = { recentMs: 60_000 } as const;

void t.test('under load, a look-up finding the batcher idle waits gatherMs for others to join it', async (t) => {
  const { b, sent } = batcher({ ...LOADED, gatherMs: 10_000, maxBatch: 8 });
  t.equal(await b.lookup(1), 2);
  // The query just ended: the next look-ups are a wave, gathered into one query.
  const wave = [b.lookup(2), b.lookup(3)];
  t.same(sent, [[1]], 'nothing sent at once');
  await new Promise<void>((r) => setImmediate(r));
  wave.push(b.lookup(4));
  t.same(sent, [[1]], 'still gathering a turn of the event loop later');
  const timed = batcher({ ...LOADED, gatherMs: 20 });
  await timed.b.lookup(1);
  t.same(await Promise.all([timed.b.lookup(2), timed.b.lookup(3)]), [4, 6]);
  t.same(timed.sent, [[1], [2, 3]], 'sent together when gatherMs ran out');
  t.equal(timed.b.queries, 2);
  t.same(sent, [[1]], 'the other batcher still gathers');
  wave.push(b.lookup(5), b.lookup(6), b.lookup(7), b.lookup(8), b.lookup(9));
  t.same(await Promise.all(wave), [4, 6, 8, 10, 12, 14, 16, 18]);
  t.same(sent, [[1], [2, 3, 4, 5, 6, 7, 8, 9]], 'one query for the wave, sent when it filled');
});

void t.test('a gathering that reaches maxBatch is sent at once', async (t) => {
  const { b, sent } = batcher({ ...LOADED, gatherMs: 10_000 });
  await b.lookup(1);
  const wave = [b.lookup(2), b.lookup(3), b.lookup(4)];
  t.same(sent, [[1]]);
  wave.push(b.lookup(5));
  t.same(sent, [[1], [2, 3, 4, 5]], 'the full batch did not wait');
  t.same(await Promise.all(wave), [4, 6, 8, 10]);
});

void t.test('without gatherMs, or once the load has passed, nothing waits', async (t) => {
  const plain = batcher({ recentMs: 60_000 });
  await plain.b.lookup(1);
  void plain.b.lookup(2);
  t.same(plain.sent, [[1], [2]], 'gatherMs 0');
  const quiet = batcher({ gatherMs: 10_000, recentMs: 20 });
  await quiet.b.lookup(1);
  await sleep(40);
  void quiet.b.lookup(2);
  t.same(quiet.sent, [[1], [2]], 'the last query ended long enough ago');
});

void t.test('look-ups arriving while a query runs go out together when it ends', async (t) => {
  const sent: number[][] = [];
  let release: (() => void) | undefined;
  const b = new LookupBatcher<number, number>({ maxBatch: 8, maxPending: 64, parallel: 1, gatherMs: 10_000, recentMs: 60_000 }, async (keys) => {
    sent.push([...keys]);
    if (sent.length === 1) await new Promise<void>((r) => (release = r));
    return keys;
  });
  const first = b.lookup(1);
  const queued = [b.lookup(2), b.lookup(3)];
  t.same(sent, [[1]]);
  release?.();
  t.same(await Promise.all([first, ...queued]), [1, 2, 3]);
  t.same(sent, [[1], [2, 3]], 'sent when the running query ended, without a gathering wait');
});

void t.test('a failed query fails its look-ups only', async (t) => {
  let calls = 0;
  const b = new LookupBatcher<number, number>({ maxBatch: 4, maxPending: 64, parallel: 1, gatherMs: 1 }, (keys) => {
    calls += 1;
    return calls === 1 ? Promise.reject(new Error('engine down')) : Promise.resolve(keys);
  });
  await t.rejects(b.lookup(1));
  t.same(await Promise.all([b.lookup(2), b.lookup(3)]), [2, 3]);
});

void t.test('the next query is sent before the callers of the last one go on', async (t) => {
  const sent: number[][] = [];
  let release: (() => void) | undefined;
  // As the chDB binding does, the query leaves a turn of the microtask queue after it is asked for.
  const b = new LookupBatcher<number, number>({ maxBatch: 8, maxPending: 64, parallel: 1 }, async (keys) => {
    await Promise.resolve();
    sent.push([...keys]);
    if (sent.length === 1) await new Promise<void>((r) => (release = r));
    return keys;
  });
  const seenByFirstCaller = b.lookup(1).then(() => sent.length);
  const queued = b.lookup(2);
  await Promise.resolve();
  release?.();
  t.equal(await seenByFirstCaller, 2, 'the query of the waiting look-up was already sent');
  t.equal(await queued, 2);
});
