import t from 'tap';
import { decodeHistogram, encodeHistogram, mergeEncoded, newHistogram, percentileCurve, recordUs, summarize } from '../../bench/lib/histogram.js';
import { judge, kneeOf, roundRate, runSweep, type Measured } from '../../bench/lib/sweep.js';

t.test('percentiles of a known distribution within the histogram precision', (t) => {
  const h = newHistogram();
  // 1 .. 10 000 µs once each.
  for (let us = 1; us <= 10_000; us++) recordUs(h, us);
  const s = summarize(h);
  t.equal(s.count, 10_000);
  const near = (got: number, want: number, what: string): void => {
    t.ok(Math.abs(got - want) <= want * 0.002 + 0.001, `${what}: ${got} ms ~ ${want} ms`);
  };
  near(s.p50, 5, 'p50');
  near(s.p90, 9, 'p90');
  near(s.p99, 9.9, 'p99');
  near(s.p999, 9.99, 'p99.9');
  near(s.max, 10, 'max');
  near(s.mean, 5.0005, 'mean');
  t.equal(s.unit, 'ms');
  t.end();
});

t.test('an empty histogram summarises to zeros, not NaN', (t) => {
  t.same(summarize(newHistogram()), { count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0, unit: 'ms' });
  t.same(percentileCurve(newHistogram()), []);
  t.end();
});

t.test('encoded histograms round-trip and merge without losing counts or the tail', (t) => {
  const a = newHistogram();
  const b = newHistogram();
  for (let i = 0; i < 1000; i++) recordUs(a, 1000);
  recordUs(b, 250_000);
  const back = decodeHistogram(encodeHistogram(a));
  t.equal(back.totalCount, 1000);
  const m = summarize(mergeEncoded([encodeHistogram(a), encodeHistogram(b), '']));
  t.equal(m.count, 1001);
  t.ok(Math.abs(m.max - 250) < 0.2, `max ${m.max}`);
  t.ok(Math.abs(m.p99 - 1) < 0.01, `p99 ${m.p99}`);
  t.end();
});

t.test('the percentile curve rises and ends at the maximum', (t) => {
  const h = newHistogram();
  for (let i = 1; i <= 5000; i++) recordUs(h, i * 3);
  const c = percentileCurve(h);
  t.ok(c.length > 10);
  for (let i = 1; i < c.length; i++) t.ok((c[i]?.ms ?? 0) >= (c[i - 1]?.ms ?? 0), `point ${i} not below the one before`);
  t.equal(c.at(-1)?.percentile, 100);
  t.equal(c.at(-1)?.ms, summarize(h).max);
  t.end();
});

t.test('a sweep point passes only within the bound, keeping up, without failures', (t) => {
  const ok: Measured = { offered: 1000, achieved: 990, p50: 2, p99: 20, failed: 0, requests: 10_000 };
  t.equal(judge(ok, 50).pass, true);
  t.equal(judge({ ...ok, p99: 60 }, 50).pass, false);
  t.equal(judge({ ...ok, achieved: 900 }, 50).pass, false);
  t.equal(judge({ ...ok, failed: 11 }, 50).pass, false);
  t.equal(judge({ ...ok, failed: 10 }, 50).pass, true, '0.1 % of requests is tolerated');
  t.match(judge({ ...ok, p99: 60, achieved: 10 }, 50).reason, /p99 60 ms > 50 ms; achieved 10/);
  t.end();
});

t.test('the knee is the highest pass below the first failure', (t) => {
  const p = (offered: number, pass: boolean) => ({ offered, achieved: offered, p50: 1, p99: 1, failed: 0, pass, reason: pass ? null : 'x' });
  t.same(kneeOf([p(100, true), p(200, true), p(400, false), p(800, true)]), { knee: 200, firstFail: 400 });
  t.same(kneeOf([p(100, false)]), { knee: null, firstFail: 100 });
  t.same(kneeOf([p(100, true), p(300, true)]), { knee: 300, firstFail: null });
  t.end();
});

t.test('an automatic sweep doubles until a failure, then bisects towards the knee', async (t) => {
  // A service whose p99 crosses 50 ms at 3000 records/s.
  const tried: number[] = [];
  const r = await runSweep({ from: 500, factor: 2, maxSteps: 8, refine: 3, boundMs: 50 }, async (rate) => {
    tried.push(rate);
    return { offered: rate, achieved: Math.min(rate, 3500), p50: 1, p99: rate < 3000 ? 10 : 500, failed: 0, requests: rate * 10 };
  });
  t.same(tried.slice(0, 4), [500, 1000, 2000, 4000]);
  t.same(tried.slice(4), [3000, 2500, 2800]);
  t.equal(r.knee, 2800);
  t.equal(r.firstFail, 3000);
  t.end();
});

t.test('an automatic sweep whose first rate fails searches downwards; listed rates run in order', async (t) => {
  const down = await runSweep({ from: 1000, factor: 2, maxSteps: 5, refine: 0, boundMs: 50 }, async (rate) => ({ offered: rate, achieved: rate, p50: 1, p99: rate > 200 ? 99 : 5, failed: 0, requests: 100 }));
  t.same(down.points.map((p) => p.offered), [1000, 500, 250, 130]);
  t.equal(down.knee, 130);
  const listed = await runSweep({ rates: [300, 100, 200], from: 1, factor: 2, maxSteps: 5, refine: 2, boundMs: 50 }, async (rate) => ({ offered: rate, achieved: rate, p50: 1, p99: 1, failed: 0, requests: 100 }));
  t.same(listed.points.map((p) => p.offered), [100, 200, 300]);
  t.equal(listed.knee, 300);
  t.equal(roundRate(1234), 1200);
  t.equal(roundRate(87), 87);
  t.end();
});
