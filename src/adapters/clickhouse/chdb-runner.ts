import { mkdirSync } from 'node:fs';
import { drainPending, Session, type RawInsertParams } from 'chdb';
import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';
import { bindLiterals } from './sql-literals.js';
import type { ExecOptions, InsertSettings, SqlParams, SqlRunner } from './sql-runner.js';

/**
 * The embedded engine: ClickHouse in-process through chDB, persisted in a directory. Only the
 * asynchronous chDB calls are used; the synchronous ones block the event loop for the whole query.
 *
 * chDB binds one data directory per process: every component that wants the embedded engine
 * must share this runner's directory (a second Session on the same path shares the engine). And
 * one process per directory: another process cannot open it while this one holds it (the engine
 * locks `<path>/status`), so tools such as the key CLI must go through the running service.
 */

/** A query or insert still running after this long is reported as 'timeout', unless told otherwise. */
const DEFAULT_CHDB_TIMEOUT_MS = 30_000;
/**
 * Sessions for SELECTs beside the one for writes. One keeps reads from queueing behind inserts:
 * in the pipeline bench at 7 000 records/s offered, 202 → Anchored p50 1.2-2.0 s against
 * 2.6-5.7 s and p99 2.8-3.5 s against 4.3-8.1 s; at 10 000 offered, 6 287 anchored/s against
 * 5 366; bulk ingest on the embedded default, 17 300-17 500 records/s against 11 900-13 600.
 * Two, for look-ups side by side, bought nothing on two cores: each query carried fewer
 * keys for the same fixed cost (a third more of the pool's CPU per verification) and
 * verifications/s stayed within the noise. A second session for inserts did not help either.
 */
const DEFAULT_READERS = 1;

/**
 * Settings of the session, set once when it opens. Results are formatted on the statement's own
 * thread: the engine's parallel formatting allocated about 13 MB and started threads for every
 * statement, a look-up of a few rows included, and a look-up of 36 keys cost 7 % more CPU with it
 * (6.1 against 5.6 ms). The answers here are at most a page of rows.
 */
const SESSION_SETTINGS = 'SET output_format_parallel_formatting = 0';

/** Each non-empty line of a result's text, as `each` reads it. */
function eachLine<T>(text: string, each: (line: string) => T): T[] {
  const out: T[] = [];
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    if (end > start) out.push(each(text.slice(start, end)));
    start = end + 1;
  }
  return out;
}

/** The chDB error codes that mean the engine is unusable rather than the statement wrong. */
const UNAVAILABLE = new Set(['CHDB_CONNECTION', 'CHDB_CLOSED', 'CHDB_PLATFORM_UNSUPPORTED', 'CHDB_BINARY_VERSION_MISMATCH']);

/** chDB errors are typed by a string `code`; `clickhouseCode` is ClickHouse's own number. */
export function translateChdbError(err: unknown, what: string, keepCause: boolean): DrisError {
  if (err instanceof DrisError) return err;
  const e = err as { code?: unknown; clickhouseCode?: unknown } | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  const clickhouseCode = typeof e?.clickhouseCode === 'number' ? e.clickhouseCode : undefined;
  let drisCode: DrisErrorCode = 'internal_error';
  if (code === 'CHDB_TIMEOUT' || code === 'CHDB_ABORT' || clickhouseCode === 159) drisCode = 'timeout';
  else if (code !== undefined && UNAVAILABLE.has(code)) drisCode = 'dependency_unavailable';
  // An insert's engine message can quote the offending row, payload included: keep only codes.
  const cause = keepCause ? err : new Error(`chdb ${code ?? 'error'} (ClickHouse code ${String(clickhouseCode ?? 'none')})`);
  return new DrisError(drisCode, `embedded hot index: ${what} failed`, { cause });
}

/**
 * A session runs its statements one at a time. Statements with parameters run one at a time
 * process-wide too, whatever their session: the binding's parameter state is shared (chDB
 * serializes them on one chain). So SELECTs go to reader sessions of their own, with their
 * parameters bound here as literals (sql-literals.ts), and run beside each other and beside the
 * writes, which keep the first session and the engine's own binding. Each session is one more
 * connection to the same engine and data: a reader sees every write that has returned.
 */
export class ChdbSqlRunner implements SqlRunner {
  /** The readers, or the one session when there are none. */
  readonly parallelQueries: number;
  /**
   * The engine's version is the package's, pinned: its older query analyzer plans a look-up of a
   * few granules in about 0.6 ms less (of 4 for 23 records), and look-ups are most of what this
   * one-at-a-time engine does while verifications run.
   */
  readonly pointReadSettings = 'enable_analyzer = 0';
  /** In this process: its parts are files under the data directory. */
  readonly localFiles = true;
  readonly #session: Session;
  readonly #readers: readonly Session[];
  /** Statements in flight on each reader, to send the next to the least busy. */
  readonly #readerLoad: number[];
  readonly #timeoutMs: number;
  /** The session's settings being set (SESSION_SETTINGS); null once they are. */
  #settingUp: Promise<void> | null;
  #closed = false;

  /** `readers`: sessions for SELECTs beside the first (0: everything on one session). */
  constructor(path: string, timeoutMs = DEFAULT_CHDB_TIMEOUT_MS, readers = DEFAULT_READERS) {
    if (!(Number.isSafeInteger(readers) && readers >= 0)) throw new TypeError('ChdbSqlRunner needs readers >= 0');
    this.#timeoutMs = timeoutMs;
    const sessions: Session[] = [];
    try {
      mkdirSync(path, { recursive: true });
      for (let i = 0; i <= readers; i++) sessions.push(new Session(path));
    } catch (err) {
      for (const s of sessions) s.close();
      throw new DrisError('dependency_unavailable', 'embedded hot index: cannot open its data directory', { cause: err });
    }
    this.#session = sessions[0] as Session;
    this.#readers = sessions.slice(1);
    this.#readerLoad = this.#readers.map(() => 0);
    this.parallelQueries = Math.max(1, readers);
    const setUp = sessions.map((s) => s.queryAsync(SESSION_SETTINGS, { format: 'CSV', timeout: timeoutMs }));
    const settingUp = Promise.all(setUp).then(() => {
      this.#settingUp = null;
    });
    // A failure is the first statement's to report; until one runs, it is not unhandled.
    settingUp.catch(() => undefined);
    this.#settingUp = settingUp;
  }

  /**
   * Resolves once the session's settings are set; rejects, translated, when they could not be.
   * Statements call it only while `#settingUp` is set: afterwards they take no extra turn for it.
   */
  async #ready(): Promise<void> {
    try {
      await this.#settingUp;
    } catch (err) {
      throw translateChdbError(err, 'session set-up', true);
    }
  }

  async exec(sql: string, params?: SqlParams, options?: ExecOptions): Promise<void> {
    await this.#run(sql, params, 'CSV', options?.timeoutMs ?? this.#timeoutMs);
  }

  async query<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return eachLine(await this.#select(sql, params, 'JSONEachRow'), (line) => JSON.parse(line) as T);
  }

  async queryValues(sql: string, params?: SqlParams): Promise<string[]> {
    return eachLine(await this.#select(sql, params, 'TSVRaw'), (line) => line);
  }

  async insertJsonEachRow(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    let body = '';
    for (const row of rows) body += JSON.stringify(row) + '\n';
    await this.insertJsonLines(table, Buffer.from(body, 'utf8'));
  }

  async insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    await this.#insert({ table, values: lines, format: 'JSONEachRow' }, settings);
  }

  async insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    await this.#insert({ table, columns: [...columns], values: lines, format: 'JSONCompactEachRow' }, settings);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const r of this.#readers) r.close();
    this.#session.close();
    // close() can return before the engine lets go of the directory; wait until it has, so the
    // process (or a test) may open it again.
    await drainPending();
  }

  /** An insert on the write session; an engine error is reported by code only (it may quote a row). */
  async #insert(what: Omit<RawInsertParams, 'settings' | 'timeout'>, settings: InsertSettings | undefined): Promise<void> {
    this.#assertOpen();
    if (this.#settingUp !== null) await this.#ready();
    try {
      await this.#session.insert({ ...what, timeout: this.#timeoutMs, ...(settings === undefined ? {} : { settings: { ...settings } }) });
    } catch (err) {
      throw translateChdbError(err, 'insert', false);
    }
  }

  /** A statement on the write session, its parameters bound by the engine. */
  #run(sql: string, params: SqlParams | undefined, format: string, timeout: number): Promise<string> {
    return this.#statement(this.#session, sql, params, { format, timeout }, true);
  }

  /** A SELECT, on a reader when there are any. */
  #select(sql: string, params: SqlParams | undefined, format: 'JSONEachRow' | 'TSVRaw'): Promise<string> {
    return this.#readers.length === 0 ? this.#run(sql, params, format, this.#timeoutMs) : this.#read(sql, params, format);
  }

  /** A SELECT on the least busy reader, its parameters bound as literals. */
  async #read(sql: string, params: SqlParams | undefined, format: string): Promise<string> {
    let at = 0;
    for (let i = 1; i < this.#readerLoad.length; i++) if ((this.#readerLoad[i] as number) < (this.#readerLoad[at] as number)) at = i;
    this.#readerLoad[at] = (this.#readerLoad[at] as number) + 1;
    try {
      // The engine's message may quote the statement, which then carries the values themselves.
      return await this.#statement(this.#readers[at] as Session, params === undefined ? sql : bindLiterals(sql, params), undefined, { format, timeout: this.#timeoutMs }, params === undefined);
    } finally {
      this.#readerLoad[at] = (this.#readerLoad[at] as number) - 1;
    }
  }

  /** One statement on `session`, its errors translated; `keepCause`: the engine's message may be kept. */
  async #statement(session: Session, sql: string, params: SqlParams | undefined, options: { format: string; timeout: number }, keepCause: boolean): Promise<string> {
    this.#assertOpen();
    if (this.#settingUp !== null) await this.#ready();
    try {
      const result = params === undefined ? await session.queryAsync(sql, options) : await session.queryBindAsync(sql, params, options);
      return result.text();
    } catch (err) {
      throw translateChdbError(err, 'query', keepCause);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new DrisError('dependency_unavailable', 'embedded hot index is closed');
  }
}
