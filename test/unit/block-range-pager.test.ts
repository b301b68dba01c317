import type { Log } from 'ethers';
import t from 'tap';
import { BlockRangePager, isRangeRefusal } from '../../src/adapters/chain/block-range-pager.js';

/** A provider that refuses a log query wider than `cap` blocks, as public providers do. */
function provider(cap: number, eventsAt: readonly number[]) {
  const calls: [number, number][] = [];
  const fetch = (from: number, to: number): Promise<Log[]> => {
    calls.push([from, to]);
    if (to - from + 1 > cap) {
      return Promise.reject(Object.assign(new Error('could not coalesce error'), { error: { code: -32602, message: `query exceeds max block range ${cap}` } }));
    }
    return Promise.resolve(eventsAt.filter((b) => b >= from && b <= to).map((blockNumber) => ({ blockNumber }) as unknown as Log));
  };
  return { calls, fetch };
}

void t.test('a page refused for its size is split, and the smaller size kept; nothing is skipped', async (t) => {
  const p = provider(2_000, [100, 7_500, 19_999]);
  const pager = new BlockRangePager(10_000);
  const seen: number[] = [];
  const done = await pager.scan(0, 19_999, 'oldest', p.fetch, (logs) => {
    seen.push(...logs.map((l) => l.blockNumber));
    return false;
  });
  t.equal(done, false, 'covered the whole range without a match ending it');
  t.same(seen, [100, 7_500, 19_999], 'every event found, in order');
  t.ok(
    p.calls.every(([from, to]) => to >= from),
    'no empty page',
  );
  t.ok(pager.blocks <= 2_000, `the page size came down to the cap (${pager.blocks})`);
  const served = p.calls.filter(([from, to]) => to - from + 1 <= 2_000);
  t.equal(served.reduce((n, [from, to]) => n + (to - from + 1), 0), 20_000, 'the served pages cover the range exactly once');
});

void t.test('newest first: the search from the head ends at the first match', async (t) => {
  const p = provider(10_000, [5, 45_000]);
  const pager = new BlockRangePager(10_000);
  let found: number | null = null;
  const done = await pager.scan(0, 49_999, 'newest', p.fetch, (logs) => {
    found = logs.at(-1)?.blockNumber ?? null;
    return found !== null;
  });
  t.equal(done, true);
  t.equal(found, 45_000);
  t.same(p.calls, [[40_000, 49_999]], 'one page read');
});

void t.test('other failures and refusals of a single block are thrown as they are', async (t) => {
  const pager = new BlockRangePager(100);
  const down = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  await t.rejects(pager.scan(0, 500, 'oldest', () => Promise.reject(down), () => false), down);
  const always = Object.assign(new Error('x'), { error: { code: -32005, message: 'limit exceeded' } });
  let calls = 0;
  await t.rejects(
    pager.scan(0, 500, 'oldest', () => {
      calls += 1;
      return Promise.reject(always);
    }, () => false),
    always,
  );
  t.ok(calls <= 9, `split down to one block, then given up (${calls} calls)`);
});

void t.test('what counts as a refusal for size', async (t) => {
  t.ok(isRangeRefusal({ error: { code: -32005, message: 'query returned more than 10000 results' } }));
  t.ok(isRangeRefusal(new Error('Log response size exceeded. You can make eth_getLogs requests with up to a 2K block range')));
  t.ok(isRangeRefusal({ info: { error: { code: -32000, message: 'block range is too wide' } } }));
  t.notOk(isRangeRefusal(new Error('rate limit exceeded')), 'a rate limit is not fixed by a smaller page');
  t.notOk(isRangeRefusal(new Error('execution reverted')));
});
