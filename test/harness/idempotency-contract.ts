import type { Test } from 'tap';
import type { IdempotencyStore } from '../../src/domain/limits/ports.js';

/**
 * What every IdempotencyStore must do (embedded and Redis alike): leases owned by a token, one
 * round trip for many claims, answers that are never replaced. `open` gives a fresh, empty store.
 */

const DAY = 86_400_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function idempotencyContract(t: Test, name: string, open: (t: Test) => Promise<IdempotencyStore>): void {
  void t.test(`${name}: 50 concurrent claims of one key, exactly one wins`, async (t) => {
    const store = await open(t);
    const outcomes = await Promise.all(Array.from({ length: 50 }, (_, i) => store.reserveMany([{ key: 'k1', fingerprint: `fp-${i}` }], `tok-${i}`, 10_000)));
    const flat = outcomes.map((o) => o[0]);
    t.equal(flat.filter((o) => o?.reserved).length, 1);
    const w = flat.findIndex((o) => o?.reserved);
    for (const o of flat) if (o !== undefined && !o.reserved) t.same(o.entry, { state: 'pending', fingerprint: `fp-${w}`, token: `tok-${w}` });
  });

  void t.test(`${name}: many keys in one call, outcomes in order`, async (t) => {
    const store = await open(t);
    t.equal(await store.complete('done', { state: 'done', fingerprint: 'f', status: 202, body: '{"a":1}' }, DAY), true);
    t.same(await store.reserveMany([{ key: 'held', fingerprint: 'h' }], 'other', 10_000), [{ reserved: true }]);
    const got = await store.reserveMany(
      [
        { key: 'free-1', fingerprint: 'a' },
        { key: 'done', fingerprint: 'f' },
        { key: 'held', fingerprint: 'h' },
        { key: 'free-2', fingerprint: 'b' },
      ],
      'mine',
      10_000,
    );
    t.same(got, [
      { reserved: true },
      { reserved: false, entry: { state: 'done', fingerprint: 'f', status: 202, body: '{"a":1}' } },
      { reserved: false, entry: { state: 'pending', fingerprint: 'h', token: 'other' } },
      { reserved: true },
    ]);
    t.same(await store.reserveMany([], 'x', 1000), []);
  });

  void t.test(`${name}: a lease ends unless renewed; another request then takes the key over`, async (t) => {
    const store = await open(t);
    t.same(await store.reserveMany([{ key: 'a', fingerprint: 'f' }, { key: 'b', fingerprint: 'f' }], 'owner', 400), [{ reserved: true }, { reserved: true }]);
    // Renewed twice past the first lease's end: only the owner's renewal counts.
    for (let i = 0; i < 3; i++) {
      await sleep(200);
      await store.renew(['a'], 'owner', 400);
      await store.renew(['b'], 'intruder', 400);
    }
    t.same(await store.get('a'), { state: 'pending', fingerprint: 'f', token: 'owner' }, 'the renewed lease is held');
    t.equal(await store.get('b'), null, 'the lease not renewed by its owner ended');
    t.same(await store.reserveMany([{ key: 'b', fingerprint: 'f' }], 'next', 10_000), [{ reserved: true }], 'taken over');
    await store.renew(['b'], 'owner', 10_000);
    t.same(await store.get('b'), { state: 'pending', fingerprint: 'f', token: 'next' }, 'a former owner cannot renew');
  });

  void t.test(`${name}: release frees only the own pending leases; answers are never replaced`, async (t) => {
    const store = await open(t);
    await store.reserveMany([{ key: 'k', fingerprint: 'fa' }], 'ta', DAY);
    await store.release(['k'], 'tb');
    t.same(await store.get('k'), { state: 'pending', fingerprint: 'fa', token: 'ta' }, 'another token releases nothing');
    await store.release(['k'], 'ta');
    t.equal(await store.get('k'), null, 'released');

    await store.reserveMany([{ key: 'k', fingerprint: 'fa' }], 'ta', DAY);
    const done = { state: 'done', fingerprint: 'fa', status: 202, body: '{"recordId":"r1"}' } as const;
    t.equal(await store.complete('k', done, DAY), true);
    t.same(await store.get('k'), done);
    t.same(await store.reserveMany([{ key: 'k', fingerprint: 'fa' }], 'tc', DAY), [{ reserved: false, entry: done }], 'replay finds the answer');
    await store.release(['k'], 'ta');
    t.same(await store.get('k'), done, 'a finished answer is never released');
    t.equal(await store.complete('k', { state: 'done', fingerprint: 'fz', status: 202, body: '{}' }, DAY), false, 'the first answer stays');
    t.same(await store.get('k'), done);

    // A pending lease of another owner gives way to the answer (they share one message id).
    await store.reserveMany([{ key: 'k2', fingerprint: 'fx' }], 'other', DAY);
    t.equal(await store.complete('k2', { state: 'done', fingerprint: 'fx', status: 202, body: '{}' }, DAY), true);
    t.same(await store.get('k2'), { state: 'done', fingerprint: 'fx', status: 202, body: '{}' });

    t.equal(await store.complete('short', { state: 'done', fingerprint: 'f', status: 202, body: '{}' }, 50), true);
    await sleep(120);
    t.equal(await store.get('short'), null, 'an answer expires with its window');
  });
}
