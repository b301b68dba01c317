import t from 'tap';
import { TtlCache } from '../../src/util/ttl-cache.js';

/** A load that resolves only when told to, counting its calls. */
function gatedLoader<V>(): { load: () => Promise<V>; calls: () => number; release: (v: V) => void; fail: (err: Error) => void } {
  let calls = 0;
  const pending: { resolve: (v: V) => void; reject: (e: Error) => void }[] = [];
  return {
    load: () => {
      calls += 1;
      return new Promise<V>((resolve, reject) => pending.push({ resolve, reject }));
    },
    calls: () => calls,
    release: (v) => pending.shift()?.resolve(v),
    fail: (err) => pending.shift()?.reject(err),
  };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

t.test('concurrent misses share one load; a hit is served until it expires', async (t) => {
  let now = 1_000;
  const cache = new TtlCache<string, number>(100, 10, { now: () => now });
  const l = gatedLoader<number>();
  const a = cache.get('k', l.load);
  const b = cache.get('k', l.load);
  l.release(1);
  t.same(await Promise.all([a, b]), [1, 1]);
  t.equal(l.calls(), 1);
  now += 99;
  t.equal(await cache.get('k', l.load), 1);
  t.equal(l.calls(), 1, 'no refresh without refreshWithinMs');
  now += 1;
  const c = cache.get('k', l.load);
  t.equal(l.calls(), 2, 'an expired value is loaded again');
  l.release(2);
  t.equal(await c, 2);
});

t.test('refreshWithinMs: a hit near its end is answered at once and loaded again behind it', async (t) => {
  let now = 0;
  const cache = new TtlCache<string, number>(100, 10, { now: () => now, refreshWithinMs: 50 });
  const l = gatedLoader<number>();
  const first = cache.get('k', l.load);
  l.release(1);
  t.equal(await first, 1);

  now = 49;
  t.equal(await cache.get('k', l.load), 1);
  t.equal(l.calls(), 1, 'no refresh in the first half of the life');

  now = 60;
  t.equal(await cache.get('k', l.load), 1, 'answered from the cache while the refresh runs');
  t.equal(await cache.get('k', l.load), 1);
  t.equal(l.calls(), 2, 'one refresh at a time');
  l.release(2);
  await tick();
  t.equal(await cache.get('k', l.load), 2, 'the refreshed value replaces the old one');

  // Never past the value's own life: a refresh still running when it expires is waited for.
  now = 60 + 60;
  const waited = cache.get('k', l.load);
  t.equal(l.calls(), 3);
  now = 60 + 100;
  const expired = cache.get('k', l.load);
  t.equal(l.calls(), 3, 'the expired key waits for the refresh in flight');
  l.release(3);
  t.same(await Promise.all([waited, expired]), [2, 3]);
});

t.test('a failed refresh keeps the hit until it expires; the next load reports the failure', async (t) => {
  let now = 0;
  const cache = new TtlCache<string, number>(100, 10, { now: () => now, refreshWithinMs: 50 });
  const l = gatedLoader<number>();
  const first = cache.get('k', l.load);
  l.release(1);
  await first;
  now = 70;
  t.equal(await cache.get('k', l.load), 1);
  l.fail(new Error('node down'));
  await tick();
  t.equal(await cache.get('k', l.load), 1, 'still served: 30 ms of its life left');
  t.equal(l.calls(), 3, 'and refreshed again');
  l.fail(new Error('node down'));
  await tick();
  now = 100;
  const after = cache.get('k', l.load);
  l.fail(new Error('node down'));
  await t.rejects(after, { message: 'node down' });
});

t.test('a refreshed value that is not to be kept drops the old one', async (t) => {
  let now = 0;
  const cache = new TtlCache<string, string>(100, 10, { now: () => now, refreshWithinMs: 50 });
  const l = gatedLoader<string>();
  const ttl = (v: string): number => (v === 'anchored' ? 100 : 0);
  const first = cache.get('k', l.load, ttl);
  l.release('anchored');
  await first;
  now = 60;
  t.equal(await cache.get('k', l.load, ttl), 'anchored');
  l.release('pending');
  await tick();
  const next = cache.get('k', l.load, ttl);
  t.equal(l.calls(), 3, 'read again: the refresh found a value not to be reused');
  l.release('pending');
  t.equal(await next, 'pending');
});

t.test('the oldest entry goes first when the cache is full', async (t) => {
  const cache = new TtlCache<number, number>(1000, 2);
  let loads = 0;
  const load = (v: number) => () => {
    loads += 1;
    return Promise.resolve(v);
  };
  await cache.get(1, load(1));
  await cache.get(2, load(2));
  await cache.get(3, load(3));
  t.equal(loads, 3);
  await cache.get(3, load(3));
  await cache.get(2, load(2));
  t.equal(loads, 3);
  await cache.get(1, load(1));
  t.equal(loads, 4, 'the first key was dropped');
});

t.test('set keeps a value read elsewhere, unless the key holds a live value or is being loaded', async (t) => {
  let now = 1_000;
  const cache = new TtlCache<string, number>(100, 2, { now: () => now });
  const never = (): Promise<number> => Promise.reject(new Error('not loaded'));
  cache.set('a', 1);
  t.equal(await cache.get('a', never), 1, 'kept as if loaded');
  cache.set('a', 2);
  t.equal(await cache.get('a', never), 1, 'a live value is at least as recent');
  now += 100;
  cache.set('a', 3);
  t.equal(await cache.get('a', never), 3, 'an expired value is replaced');
  const l = gatedLoader<number>();
  const loading = cache.get('b', l.load);
  cache.set('b', 9);
  l.release(4);
  t.equal(await loading, 4);
  t.equal(await cache.get('b', never), 4, 'a load under way wins');
  cache.set('c', 5, 0);
  await t.rejects(cache.get('c', never), 'a time to live of 0 keeps nothing');
  cache.set('d', 6);
  await t.rejects(cache.get('a', never), 'the oldest goes past maxEntries');
});
