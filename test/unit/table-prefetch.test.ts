import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import type { SqlRunner } from '../../src/adapters/clickhouse/sql-runner.js';
import { prefetchTable, type ReadAhead } from '../../src/adapters/clickhouse/table-prefetch.js';

/**
 * A table read ahead into the page cache: the parts the engine names, newest first, each part's
 * smallest files first, in steps, within the budget; parts merged away meanwhile skipped; nothing
 * where the engine's files are not on this machine.
 */

const root = mkdtempSync(path.join(tmpdir(), 'dris-table-prefetch-'));
t.teardown(() => rmSync(root, { recursive: true, force: true }));

/** A part directory with files of these sizes. */
function part(name: string, files: Record<string, number>): string {
  const dir = path.join(root, name);
  mkdirSync(dir, { recursive: true });
  for (const [f, size] of Object.entries(files)) writeFileSync(path.join(dir, f), Buffer.alloc(size, 1));
  return dir;
}

const newest = part('all_2_2_0', { 'data.bin': 5000, 'primary.cidx': 100, 'data.cmrk4': 300 });
const older = part('all_1_1_0', { 'data.bin': 2000, 'checksums.txt': 50 });

function runner(localFiles: boolean | undefined, parts: { path: string; bytes: number }[]): SqlRunner & { queries: number } {
  const r = {
    parallelQueries: 1,
    queries: 0,
    ...(localFiles === undefined ? {} : { localFiles }),
    query<T>(): Promise<T[]> {
      r.queries += 1;
      return Promise.resolve(parts as T[]);
    },
    queryValues: () => Promise.resolve([]),
    exec: () => Promise.resolve(),
    insertJsonEachRow: () => Promise.resolve(),
    insertJsonLines: () => Promise.resolve(),
    insertCompactLines: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return r;
}

const both = [
  { path: newest, bytes: 5400 },
  { path: older, bytes: 2050 },
];

function recorder(): { read: ReadAhead; asked: [string, number, number][] } {
  const asked: [string, number, number][] = [];
  return {
    asked,
    read: (file, offset, length) => {
      asked.push([path.relative(root, file), offset, length]);
      return Promise.resolve();
    },
  };
}

t.test('newest part first, its smallest files first, each in steps', async (t) => {
  const { read, asked } = recorder();
  const r = await prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1 << 20, stepBytes: 2048 }, read);
  t.same(asked, [
    ['all_2_2_0/primary.cidx', 0, 100],
    ['all_2_2_0/data.cmrk4', 0, 300],
    ['all_2_2_0/data.bin', 0, 2048],
    ['all_2_2_0/data.bin', 2048, 2048],
    ['all_2_2_0/data.bin', 4096, 904],
    ['all_1_1_0/checksums.txt', 0, 50],
    ['all_1_1_0/data.bin', 0, 2000],
  ]);
  t.match(r, { bytes: 7450, tableBytes: 7450, files: 5 });
  t.ok(r.method === 'fadvise' || r.method === 'read');
});

t.test('no byte past the budget, cut inside a file', async (t) => {
  const { read, asked } = recorder();
  const r = await prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1000, stepBytes: 4096 }, read);
  t.same(asked, [
    ['all_2_2_0/primary.cidx', 0, 100],
    ['all_2_2_0/data.cmrk4', 0, 300],
    ['all_2_2_0/data.bin', 0, 600],
  ]);
  t.match(r, { bytes: 1000, files: 3 });
  const none = recorder();
  t.match(await prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 0 }, none.read), { bytes: 0, files: 0 });
  t.same(none.asked, []);
});

t.test('a stop ends it between two steps', async (t) => {
  const stop = new AbortController();
  const asked: number[] = [];
  const read: ReadAhead = (_file, offset) => {
    asked.push(offset);
    if (asked.length === 3) stop.abort();
    return Promise.resolve();
  };
  const r = await prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1 << 20, stepBytes: 1024, signal: stop.signal }, read);
  t.equal(asked.length, 3);
  t.equal(r.bytes, 100 + 300 + 1024);
});

t.test('a part merged away meanwhile is skipped; a file removed under a step too; another failure is thrown', async (t) => {
  const gone = { path: path.join(root, 'all_0_0_0'), bytes: 999 };
  const { read, asked } = recorder();
  const r = await prefetchTable(runner(true, [gone, ...both]), 'dris', 'record_evidence', { maxBytes: 1 << 20 }, read);
  t.equal(asked.length, 5, 'the parts that exist are read');
  t.equal(r.bytes, 7450);
  const enoent: ReadAhead = (file) => (file.endsWith('data.bin') ? Promise.reject(Object.assign(new Error('gone'), { code: 'ENOENT' })) : Promise.resolve());
  t.match(await prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1 << 20 }, enoent), { bytes: 450, files: 3 });
  const eio: ReadAhead = () => Promise.reject(Object.assign(new Error('disk'), { code: 'EIO' }));
  await t.rejects(prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1 << 20 }, eio), { code: 'EIO' });
});

t.test('a step past its deadline fails the read-ahead with timeout', async (t) => {
  const hung: ReadAhead = () => new Promise(() => undefined);
  await t.rejects(prefetchTable(runner(true, both), 'dris', 'record_evidence', { maxBytes: 1 << 20, stepTimeoutMs: 20 }, hung), { code: 'timeout' });
});

t.test('an engine whose files are not on this machine is not asked, nothing is read', async (t) => {
  for (const local of [false, undefined]) {
    const r = runner(local, both);
    const { read, asked } = recorder();
    t.same(await prefetchTable(r, 'dris', 'record_evidence', { maxBytes: 1 << 20 }, read), { bytes: 0, tableBytes: 0, files: 0, method: null });
    t.equal(r.queries, 0);
    t.same(asked, []);
  }
});
