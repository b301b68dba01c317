import t from 'tap';
import { counterTotal, parseStatements, statementCosts } from '../../bench/lib/index-statements.js';
import { groupOf, MAIN_THREAD, NODE_THREADS, readThreads, threadCosts } from '../../bench/lib/thread-cpu.js';
import { breakdownOf, formatBreakdown } from '../../bench/lib/where-time-went.js';

const EXPOSITION = [
  '# HELP dris_index_query_duration_seconds Hot index query latency, by query, seconds.',
  '# TYPE dris_index_query_duration_seconds histogram',
  'dris_index_query_duration_seconds_bucket{le="0.005",query="batches"} 3',
  'dris_index_query_duration_seconds_sum{query="batches"} 1.5',
  'dris_index_query_duration_seconds_count{query="batches"} 10',
  'dris_index_query_duration_seconds_sum{query="insert_records"} 4',
  'dris_index_query_duration_seconds_count{query="insert_records"} 8',
  'dris_index_query_duration_seconds_sum{query="api_keys"} 0.5',
  'dris_index_query_duration_seconds_count{query="api_keys"} 2',
  'dris_other_seconds_sum{query="batches"} 99',
  'dris_records_accepted_total{kind="bulk"} 5000',
].join('\n');

t.test('statement totals are read from the histogram series only', (t) => {
  const r = parseStatements(EXPOSITION);
  t.same(Object.fromEntries(r), { batches: { seconds: 1.5, count: 10 }, insert_records: { seconds: 4, count: 8 }, api_keys: { seconds: 0.5, count: 2 } });
  t.equal(parseStatements('').size, 0);
  t.end();
});

t.test('statement costs are the differences between readings, most time first', (t) => {
  const before = parseStatements(EXPOSITION);
  const after = new Map([
    ['batches', { seconds: 3.5, count: 30 }],
    ['insert_records', { seconds: 10, count: 20 }],
    // Not run between the readings: left out.
    ['api_keys', { seconds: 0.5, count: 2 }],
    // New between the readings: counted whole.
    ['snapshots', { seconds: 2, count: 4 }],
  ]);
  const costs = statementCosts(before, after);
  t.same(
    costs.map((c) => [c.statement, c.count, c.seconds, c.meanMs]),
    [
      ['insert_records', 12, 6, 500],
      ['batches', 20, 2, 100],
      ['snapshots', 4, 2, 500],
    ],
  );
  t.same(
    costs.map((c) => c.share),
    [60, 20, 20],
  );
  t.end();
});

t.test('threads are grouped: the process itself is the main thread, node-named ones together, others by name', (t) => {
  t.equal(groupOf(100, 100, 'node'), MAIN_THREAD);
  t.equal(groupOf(100, 101, 'node'), NODE_THREADS);
  t.equal(groupOf(100, 102, 'MergeMutate'), 'MergeMutate');
  t.end();
});

t.test('thread costs per 1000 records, largest first, never negative', (t) => {
  const before = new Map([
    [MAIN_THREAD, 10],
    ['MergeMutate', 5],
    // A thread that ended between the readings: its group shrinks, it does not go negative.
    ['ThreadPool', 4],
  ]);
  const after = new Map([
    [MAIN_THREAD, 12],
    ['MergeMutate', 11],
    ['ThreadPool', 3],
    [NODE_THREADS, 2],
  ]);
  const costs = threadCosts(before, after, 20_000);
  t.same(
    costs.map((c) => [c.group, c.cpuSec, c.msPer1000, c.share]),
    [
      ['MergeMutate', 6, 300, 60],
      [MAIN_THREAD, 2, 100, 20],
      [NODE_THREADS, 2, 100, 20],
    ],
  );
  t.same(
    threadCosts(before, after, 0).map((c) => c.msPer1000),
    [0, 0, 0],
  );
  t.end();
});

t.test("a process's own threads are read from /proc", { skip: process.platform !== 'linux' && 'reads /proc' }, (t) => {
  const before = readThreads(process.pid);
  const spun = (): number => (after.get(MAIN_THREAD) ?? 0) - (before.get(MAIN_THREAD) ?? 0);
  // Spins until /proc counts 200 ms more of the main thread's CPU: on a busy machine that takes
  // longer than 200 ms of wall time, so the bound is wide, and only a reader that sees nothing fails.
  let after = before;
  for (const deadline = Date.now() + 10_000; Date.now() < deadline && spun() < 0.2; ) {
    const spin = Date.now() + 50;
    while (Date.now() < spin);
    after = readThreads(process.pid);
  }
  t.ok(spun() >= 0.2, 'the main thread spun 200 ms of CPU');
  t.ok(after.has(NODE_THREADS), "node-named threads (libuv's pool, V8's helpers) are seen");
  t.equal(readThreads(2 ** 22 + 12_345).size, 0, 'no such process: empty');
  t.end();
});

t.test('the breakdown prints both tables under the title, and nothing when nothing was read', (t) => {
  const b = breakdownOf({ threads: new Map([[MAIN_THREAD, 1]]), statements: new Map(), units: 0 }, { threads: new Map([[MAIN_THREAD, 3]]), statements: parseStatements(EXPOSITION), units: 0 }, 10_000);
  const text = formatBreakdown('step', b);
  t.match(text, /^step: the service's CPU by thread/);
  t.match(text, /main \(JavaScript, event loop\)\s+2\.00\s+200/);
  t.match(text, /insert_records\s+8\s+4\.00\s+500/);
  t.equal(formatBreakdown('step', { threads: [], statements: [] }), '');
  t.end();
});

t.test("a counter's series are summed, and without records the breakdown is per 1000 of what it counted", (t) => {
  const text = ['dris_verifications_total{outcome="pass"} 700', 'dris_verifications_total{outcome="fail"} 300', 'dris_verifications_totalx 5', 'dris_records_accepted_total 9'].join('\n');
  t.equal(counterTotal(text, 'dris_verifications_total'), 1000);
  t.equal(counterTotal(text, 'dris_records_accepted_total'), 9);
  t.equal(counterTotal('', 'dris_verifications_total'), 0);
  const b = breakdownOf({ threads: new Map([[MAIN_THREAD, 1]]), statements: new Map(), units: 1000 }, { threads: new Map([[MAIN_THREAD, 2]]), statements: new Map(), units: 5000 });
  t.same(
    b.threads.map((c) => c.msPer1000),
    [250],
  );
  t.match(formatBreakdown('verify', b, 'verifications'), /ms\/1000 verifications/);
  t.end();
});
