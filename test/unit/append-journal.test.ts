import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { AppendJournal } from '../../src/adapters/clickhouse/append-journal.js';
import type { SqlParams, SqlRunner } from '../../src/adapters/clickhouse/sql-runner.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

/** A runner whose tables are arrays; inserts can be made to fail or to wait. */
class TableRunner implements SqlRunner {
  readonly parallelQueries = 1;
  readonly tables = new Map<string, object[]>();
  inserts = 0;
  failing = false;
  gate: Promise<void> | null = null;
  exec(_sql: string, _params?: SqlParams): Promise<void> {
    return Promise.resolve();
  }
  query<T>(): Promise<T[]> {
    return Promise.resolve([]);
  }
  queryValues(): Promise<string[]> {
    return Promise.resolve([]);
  }
  insertJsonEachRow(): Promise<void> {
    return Promise.reject(new Error('the journal inserts lines'));
  }
  insertCompactLines(): Promise<void> {
    return Promise.reject(new Error('the journal inserts JSONEachRow lines'));
  }
  async insertJsonLines(table: string, lines: Buffer): Promise<void> {
    if (this.gate !== null) await this.gate;
    if (this.failing) throw new DrisError('dependency_unavailable', 'engine down');
    this.inserts += 1;
    const rows = lines.toString('utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as object);
    this.tables.set(table, [...(this.tables.get(table) ?? []), ...rows]);
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
  rows(table: string): object[] {
    return this.tables.get(table) ?? [];
  }
}

function dir(t: Test): string {
  const d = mkdtempSync(join(tmpdir(), 'dris-journal-'));
  t.teardown(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

t.test('appends are durable at once and reach their tables in few large inserts', async (t) => {
  const runner = new TableRunner();
  const journal = AppendJournal.open(dir(t), runner, { copyDelayMs: 50 });
  const history = journal.sink('db.verifications');
  const audit = journal.sink('db.audit_events');
  await Promise.all(Array.from({ length: 200 }, (_, i) => Promise.all([history.append([{ id: `v${i}` }]), audit.append([{ id: `a${i}` }, { id: `b${i}` }])])));
  t.equal(runner.inserts, 0, 'answered before any insert');
  await history.settled();
  t.equal(runner.rows('db.verifications').length, 200);
  t.equal(runner.rows('db.audit_events').length, 400);
  t.ok(runner.inserts <= 4, `inserts: ${runner.inserts}`);
  t.same(runner.rows('db.audit_events').slice(0, 2), [{ id: 'a0' }, { id: 'b0' }], 'in append order');
  await journal.close();
});

t.test('settled() copies at once: a reader sees what was appended before it asked', async (t) => {
  const runner = new TableRunner();
  const journal = AppendJournal.open(dir(t), runner, { copyDelayMs: 60_000 });
  const sink = journal.sink('db.t');
  await sink.append([{ n: 1 }]);
  const started = Date.now();
  await sink.settled();
  t.ok(Date.now() - started < 5_000, 'not after the copy delay');
  t.same(runner.rows('db.t'), [{ n: 1 }]);
  await sink.settled();
  t.equal(runner.inserts, 1, 'nothing more to copy');
  await journal.close();
});

t.test('a failed copy is retried; readers wait for it', async (t) => {
  const runner = new TableRunner();
  const journal = AppendJournal.open(dir(t), runner, { copyDelayMs: 10, retryMs: 20 });
  runner.failing = true;
  await journal.append('db.t', [{ n: 1 }]);
  let settled = false;
  const reader = journal.flush().then(() => {
    settled = true;
  });
  await sleep(80);
  t.notOk(settled, 'not settled while the engine fails');
  t.equal(journal.backlog, 1);
  runner.failing = false;
  await reader;
  t.same(runner.rows('db.t'), [{ n: 1 }]);
  t.equal(journal.backlog, 0);
  await journal.close();
});

t.test('a restart copies what the journal holds past its last recorded copy', async (t) => {
  const d = dir(t);
  const first = new TableRunner();
  const journal = AppendJournal.open(d, first, { copyDelayMs: 10 });
  await journal.append('db.t', [{ n: 1 }]);
  await journal.flush();
  // The engine stops taking inserts, then the process stops (its close gives up after retries).
  first.failing = true;
  await journal.append('db.t', [{ n: 2 }, { n: 3 }]);
  await journal.append('db.u', [{ n: 4 }]);
  await journal.close();
  t.same(first.rows('db.t'), [{ n: 1 }]);

  const second = new TableRunner();
  const reopened = AppendJournal.open(d, second, { copyDelayMs: 10 });
  await reopened.flush();
  t.same(second.rows('db.t'), [{ n: 2 }, { n: 3 }], 'only what was not copied before');
  t.same(second.rows('db.u'), [{ n: 4 }]);
  await reopened.close();
  t.ok(readdirSync(d).includes('copied'));
});

t.test('with tableDirs, copies are visible at once and leave the journal only once flushed to disk', async (t) => {
  const d = dir(t);
  const first = new TableRunner();
  const flushed: string[][] = [];
  let failing = true;
  const flush = (dirs: readonly string[]): Promise<void> => {
    flushed.push([...dirs]);
    return failing ? Promise.reject(new Error('sync failed')) : Promise.resolve();
  };
  const journal = AppendJournal.open(d, first, { copyDelayMs: 10, tableDirs: ['/engine'], flushDelayMs: 20, flush });
  await journal.append('db.t', [{ n: 1 }]);
  await journal.flush();
  t.same(first.rows('db.t'), [{ n: 1 }], 'readable before any flush');
  t.same(flushed, [], 'the flush waits flushDelayMs');
  await sleep(60);
  t.same(flushed, [['/engine']]);
  // Every flush fails, at close too: the process stops with the row copied but not known durable.
  await journal.close();
  t.ok(flushed.length >= 2, 'close tries once more');

  // The next start copies it again (readers collapse the duplicate by id), and this time the
  // flush succeeds, after which the journal lets go of it.
  failing = false;
  const second = new TableRunner();
  const reopened = AppendJournal.open(d, second, { copyDelayMs: 10, tableDirs: ['/engine'], flushDelayMs: 20, flush });
  await reopened.flush();
  t.same(second.rows('db.t'), [{ n: 1 }]);
  await reopened.close();

  const third = new TableRunner();
  const again = AppendJournal.open(d, third, { copyDelayMs: 10, tableDirs: ['/engine'], flushDelayMs: 20, flush });
  await again.flush();
  t.same(third.rows('db.t'), [], 'nothing left to copy');
  await again.close();
});

t.test('close copies what is left; a closed journal refuses appends', async (t) => {
  const runner = new TableRunner();
  const journal = AppendJournal.open(dir(t), runner, { copyDelayMs: 60_000 });
  await journal.append('db.t', [{ n: 1 }]);
  await journal.close();
  t.same(runner.rows('db.t'), [{ n: 1 }]);
  await t.rejects(journal.append('db.t', [{ n: 2 }]), { code: 'dependency_unavailable' });
});

t.test('the backlog is bounded', async (t) => {
  const runner = new TableRunner();
  let open: () => void = () => undefined;
  runner.gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const journal = AppendJournal.open(dir(t), runner, { copyDelayMs: 0, maxBacklog: 3 });
  for (let i = 0; i < 3; i++) await journal.append('db.t', [{ n: i }]);
  await t.rejects(journal.append('db.t', [{ n: 9 }]), { code: 'overloaded' });
  open();
  runner.gate = null;
  await journal.flush();
  await journal.append('db.t', [{ n: 3 }]);
  await journal.flush();
  t.same(runner.rows('db.t').map((r) => (r as { n: number }).n), [0, 1, 2, 3]);
  await journal.close();
});
