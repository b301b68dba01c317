import { readFileSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { SegmentLog } from '../storage/segment-log.js';
import { fileSystemSyncMethod, syncFileSystems } from './file-system-sync.js';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';
import type { SqlRunner } from './sql-runner.js';

/**
 * Where the rows of an append-only table (the verification history, the audit trail) go. An
 * append resolves once its rows are durable; `settled` once every row appended before the call
 * can be read from the table, so a reader that awaits it first sees its own writes.
 */
export interface AppendSink {
  append(rows: readonly object[]): Promise<void>;
  settled(): Promise<void>;
  close(): Promise<void>;
}

/** Straight into the table: group-committed inserts, each durable (fsync) when it returns. */
export class InsertSink implements AppendSink {
  readonly #commit: GroupCommit<object>;

  constructor(name: string, options: GroupCommitOptions, write: (rows: object[]) => Promise<void>) {
    this.#commit = new GroupCommit<object>(name, options, write);
  }

  append(rows: readonly object[]): Promise<void> {
    return this.#commit.submit(rows);
  }

  settled(): Promise<void> {
    // An append resolves only once its insert has returned.
    return Promise.resolve();
  }

  close(): Promise<void> {
    return this.#commit.close();
  }
}

export interface AppendJournalOptions {
  /** Longest an appended row waits before a copy starts, unless a reader asks for it. Default 250 ms. */
  readonly copyDelayMs?: number;
  /** Most log entries copied by one round (one insert per table). Default 20 000. */
  readonly copyEntries?: number;
  /** Entries appended and not copied yet beyond which append() fails with 'overloaded'. Default 500 000. */
  readonly maxBacklog?: number;
  /** Wait after a failed copy before the next attempt. Default 1 s. */
  readonly retryMs?: number;
  /**
   * Where the tables' files live, when their inserts are not flushed to disk (fsync_after_insert
   * = 0): the journal keeps copied rows until a flush of these file systems (`flush`) has made
   * them durable there. Unset: every insert is durable when it returns.
   */
  readonly tableDirs?: readonly string[];
  /** Longest copied rows wait for that flush. Default 1 s. */
  readonly flushDelayMs?: number;
  /** Flushes the file systems of `tableDirs` to disk. Default `sync -f` (see file-system-sync.ts). */
  readonly flush?: (dirs: readonly string[]) => Promise<void>;
  readonly logger?: Logger;
}

/** Name of the file holding the last log sequence known to be in the tables, on disk. */
const COPIED_FILE = 'copied';

/**
 * Durable appends for the embedded engine, through a local journal: rows are made durable in a
 * segment log first (one writev and one fdatasync per group of appends) and copied into their
 * tables behind the answers, a few large inserts a second. Each chDB insert costs milliseconds of
 * CPU, an fsync of a dozen files and a part to merge, so an insert per verification wave was most
 * of the engine's work; a log append costs a share of one disk flush.
 *
 * The journal lives in the data directory beside the engine's files, so it is as durable as
 * they are. A restart copies what the log holds past the last copy recorded; rows copied twice
 * (a crash between an insert and its record) are collapsed by the readers with LIMIT 1 BY id,
 * as a retried insert's would be. One process owns a journal (the data directory's lock).
 *
 * With `tableDirs`, the tables' inserts skip their own fsyncs (a dozen files each, inside the
 * engine, where every other query waits behind them): a copy is visible at once, but the log
 * keeps it, and the record of the last copy stays behind it, until a flush of the tables' file
 * system, outside the engine, has made it durable. A machine that fails before that flush copies
 * those rows again at the next start.
 */
export class AppendJournal {
  readonly #log: SegmentLog;
  readonly #dir: string;
  readonly #runner: SqlRunner;
  readonly #copyDelayMs: number;
  readonly #copyEntries: number;
  readonly #maxBacklog: number;
  readonly #retryMs: number;
  readonly #logger: Logger;
  /** Every entry up to this sequence is in its table. */
  #copied: number;
  /** Every entry up to this sequence is in its table and on disk there. */
  #durable: number;
  readonly #tableDirs: readonly string[] | null;
  readonly #flushDelayMs: number;
  readonly #flush: (dirs: readonly string[]) => Promise<void>;
  #flushing: Promise<void> | null = null;
  /** Set while a flush waits for flushDelayMs: what starts it at once (close). */
  #flushNow: (() => void) | null = null;
  #closed = false;
  #loop: Promise<void> | null = null;
  /** Readers (flush) or close() wait: copy now rather than after copyDelayMs. */
  #urgent = false;
  /** Set while the copier sleeps: what wakes it early. */
  #sleeping: { readonly wakeOnAppend: boolean; readonly wake: () => void } | null = null;
  #waiters: Waiter[] = [];
  #failures = 0;

  private constructor(dir: string, runner: SqlRunner, options: AppendJournalOptions) {
    this.#dir = dir;
    this.#logger = options.logger ?? componentLogger('index-journal');
    this.#log = SegmentLog.open(dir, { logger: this.#logger.child({ component: 'segment-log' }) });
    this.#runner = runner;
    this.#copyDelayMs = options.copyDelayMs ?? 250;
    this.#copyEntries = options.copyEntries ?? 20_000;
    this.#maxBacklog = options.maxBacklog ?? 500_000;
    this.#retryMs = options.retryMs ?? 1000;
    this.#copied = Math.max(readCopied(dir), this.#log.firstSeq - 1);
    this.#durable = this.#copied;
    this.#tableDirs = options.tableDirs ?? null;
    this.#flushDelayMs = options.flushDelayMs ?? 1000;
    this.#flush = options.flush ?? ((dirs) => syncFileSystems(dirs));
    if (this.#tableDirs !== null && options.flush === undefined) this.#logger.info({ method: fileSystemSyncMethod() }, 'index tables are flushed by file system');
  }

  /** Opens the journal in `dir` (created when missing) and starts copying what it holds. */
  static open(dir: string, runner: SqlRunner, options: AppendJournalOptions = {}): AppendJournal {
    const journal = new AppendJournal(dir, runner, options);
    journal.#loop = journal.#run();
    return journal;
  }

  /** A sink appending to `table` (database-qualified) through this journal. */
  sink(table: string): AppendSink {
    return {
      append: (rows) => this.append(table, rows),
      settled: () => this.flush(),
      // The journal is closed by its owner, after every sink's writers.
      close: () => Promise.resolve(),
    };
  }

  /** Entries appended and not yet copied. */
  get backlog(): number {
    return this.#log.lastSeq - this.#copied;
  }

  async append(table: string, rows: readonly object[]): Promise<void> {
    if (this.#closed) throw new DrisError('dependency_unavailable', 'the index journal is closed');
    if (rows.length === 0) return;
    if (this.backlog >= this.#maxBacklog) {
      throw new DrisError('overloaded', 'the index journal is too far ahead of the index', { extra: { retryAfter: 1 } });
    }
    let text = `${table}\n`;
    for (const row of rows) text += JSON.stringify(row) + '\n';
    try {
      await this.#log.append(Buffer.from(text, 'utf8'));
    } catch (err) {
      throw err instanceof DrisError ? err : new DrisError('dependency_unavailable', 'the index journal could not be written', { cause: err });
    }
    this.#kick(false);
  }

  /** Resolves once everything appended before the call is in its table. */
  flush(): Promise<void> {
    const seq = this.#log.lastSeq;
    if (this.#copied >= seq) return Promise.resolve();
    if (this.#loop === null) return Promise.reject(new DrisError('dependency_unavailable', 'the index journal is closed'));
    return new Promise<void>((resolve, reject) => {
      this.#waiters.push({ seq, resolve, reject });
      this.#kick(true);
    });
  }

  /** Copies what is left (unless the engine keeps failing), then closes the log. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#kick(true);
    await this.#loop;
    this.#loop = null;
    this.#flushNow?.();
    await this.#flushing;
    // What is not known durable stays in the journal and is copied again at the next start.
    if (this.#durable < this.#copied) await this.#tryMakeDurable();
    this.#rejectWaiters(new DrisError('dependency_unavailable', 'the index journal is closed'));
    await this.#log.close();
  }

  #kick(urgent: boolean): void {
    if (urgent) this.#urgent = true;
    const s = this.#sleeping;
    if (s !== null && (urgent || s.wakeOnAppend)) s.wake();
  }

  /** Sleeps `ms` (until kicked when undefined); an urgent kick always wakes it. */
  #sleep(ms: number | undefined, wakeOnAppend: boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = ms === undefined ? null : setTimeout(() => wake(), ms);
      const wake = (): void => {
        if (timer !== null) clearTimeout(timer);
        this.#sleeping = null;
        resolve();
      };
      this.#sleeping = { wakeOnAppend, wake };
    });
  }

  /** Never rejects: a failed copy is logged and tried again. */
  async #run(): Promise<void> {
    for (;;) {
      if (this.#copied >= this.#log.lastSeq) {
        this.#settle();
        if (this.#closed) return;
        this.#urgent = false;
        await this.#sleep(undefined, true);
        continue;
      }
      // Rows gather for a while, unless a reader or close() waits for them.
      if (!this.#urgent) await this.#sleep(this.#copyDelayMs, false);
      this.#urgent = false;
      try {
        await this.#copyOnce();
        this.#failures = 0;
        this.#settle();
      } catch (err) {
        this.#failures += 1;
        this.#logger.warn({ code: err instanceof DrisError ? err.code : undefined, failures: this.#failures, backlog: this.backlog }, 'copying the index journal failed; will retry');
        if (this.#closed && this.#failures >= 3) {
          // What is left stays in the journal for the next start.
          this.#rejectWaiters(err);
          return;
        }
        await this.#sleep(this.#retryMs, false);
      }
    }
  }

  async #copyOnce(): Promise<void> {
    const entries = await this.#log.read(this.#copied + 1, this.#copyEntries);
    const last = entries.at(-1);
    if (last === undefined) return;
    const byTable = new Map<string, Buffer[]>();
    for (const e of entries) {
      const nl = e.payload.indexOf(0x0a);
      const table = e.payload.toString('utf8', 0, nl);
      const bodies = byTable.get(table) ?? [];
      bodies.push(e.payload.subarray(nl + 1));
      byTable.set(table, bodies);
    }
    await Promise.all([...byTable].map(([table, bodies]) => this.#runner.insertJsonLines(table, Buffer.concat(bodies))));
    this.#copied = last.seq;
    if (this.#tableDirs === null) await this.#recordDurable(last.seq);
    else this.#flushing ??= this.#flushLater();
  }

  /** After flushDelayMs, flushes the tables' file systems and lets go of what that made durable. */
  async #flushLater(): Promise<void> {
    for (;;) {
      if (!this.#closed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => this.#flushNow?.(), this.#flushDelayMs);
          this.#flushNow = () => {
            clearTimeout(timer);
            this.#flushNow = null;
            resolve();
          };
        });
      }
      // On failure the rows stay in the log; the next copy, or close(), tries again.
      if (!(await this.#tryMakeDurable())) break;
      // Copies made while the flush ran wait for the next one.
      if (this.#closed || this.#durable >= this.#copied) break;
    }
    this.#flushing = null;
  }

  /** Flushes the tables' file systems, then lets go of what was copied before; false when the flush failed. */
  async #tryMakeDurable(): Promise<boolean> {
    const seq = this.#copied;
    try {
      if (this.#tableDirs !== null) await this.#flush(this.#tableDirs);
    } catch (err) {
      this.#logger.warn({ err }, 'flushing the index tables to disk failed; the journal keeps their rows');
      return false;
    }
    await this.#recordDurable(seq);
    return true;
  }

  /** Entries up to `seq` are durable in their tables: the log lets go of them. */
  async #recordDurable(seq: number): Promise<void> {
    if (seq <= this.#durable) return;
    this.#durable = seq;
    this.#log.truncateBefore(seq + 1);
    try {
      // Not flushed to disk: a lost record only makes the next start copy some rows again.
      const tmp = path.join(this.#dir, `${COPIED_FILE}.tmp`);
      await writeFile(tmp, `${seq}\n`);
      await rename(tmp, path.join(this.#dir, COPIED_FILE));
    } catch (err) {
      this.#logger.warn({ err }, 'recording the index journal position failed');
    }
  }

  #settle(): void {
    const still: Waiter[] = [];
    for (const w of this.#waiters) {
      if (w.seq <= this.#copied) w.resolve();
      else still.push(w);
    }
    this.#waiters = still;
  }

  #rejectWaiters(err: unknown): void {
    for (const w of this.#waiters.splice(0)) w.reject(err);
  }
}

interface Waiter {
  readonly seq: number;
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

function readCopied(dir: string): number {
  try {
    const n = Number(readFileSync(path.join(dir, COPIED_FILE), 'utf8').trim());
    return Number.isSafeInteger(n) && n >= 0 ? n : 0;
  } catch {
    return 0;
  }
}
