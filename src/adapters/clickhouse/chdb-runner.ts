import { mkdirSync } from 'node:fs';
import { drainPending, Session } from 'chdb';
import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';
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
 * Settings of the session, set once when it opens. Results are formatted on the statement's own
 * thread: the engine's parallel formatting allocated about 13 MB and started threads for every
 * statement, a look-up of a few rows included, and a look-up of 36 keys cost 7 % more CPU with it
 * (6.1 against 5.6 ms). The answers here are at most a page of rows.
 */
const SESSION_SETTINGS = 'SET output_format_parallel_formatting = 0';

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

export class ChdbSqlRunner implements SqlRunner {
  /** The chDB binding runs parameterized queries one at a time, process-wide. */
  readonly parallelQueries = 1;
  /**
   * The engine's version is the package's, pinned: its older query analyzer plans a look-up of a
   * few granules in about 0.6 ms less (of 4 for 23 records), and look-ups are most of what this
   * one-at-a-time engine does while verifications run.
   */
  readonly pointReadSettings = 'enable_analyzer = 0';
  /** In this process: its parts are files under the data directory. */
  readonly localFiles = true;
  readonly #session: Session;
  readonly #timeoutMs: number;
  /** The session's settings being set (SESSION_SETTINGS); null once they are. */
  #settingUp: Promise<void> | null;
  #closed = false;

  constructor(path: string, timeoutMs = DEFAULT_CHDB_TIMEOUT_MS) {
    this.#timeoutMs = timeoutMs;
    try {
      mkdirSync(path, { recursive: true });
      this.#session = new Session(path);
    } catch (err) {
      throw new DrisError('dependency_unavailable', 'embedded hot index: cannot open its data directory', { cause: err });
    }
    const settingUp = this.#session.queryAsync(SESSION_SETTINGS, { format: 'CSV', timeout: timeoutMs }).then(() => {
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
    const text = await this.#run(sql, params, 'JSONEachRow', this.#timeoutMs);
    const rows: T[] = [];
    let start = 0;
    while (start < text.length) {
      let end = text.indexOf('\n', start);
      if (end === -1) end = text.length;
      if (end > start) rows.push(JSON.parse(text.slice(start, end)) as T);
      start = end + 1;
    }
    return rows;
  }

  async insertJsonEachRow(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    let body = '';
    for (const row of rows) body += JSON.stringify(row) + '\n';
    await this.insertJsonLines(table, Buffer.from(body, 'utf8'));
  }

  async insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    this.#assertOpen();
    if (this.#settingUp !== null) await this.#ready();
    try {
      await this.#session.insert({ table, values: lines, format: 'JSONEachRow', timeout: this.#timeoutMs, ...(settings === undefined ? {} : { settings }) });
    } catch (err) {
      throw translateChdbError(err, 'insert', false);
    }
  }

  async insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    this.#assertOpen();
    if (this.#settingUp !== null) await this.#ready();
    try {
      await this.#session.insert({ table, columns: [...columns], values: lines, format: 'JSONCompactEachRow', timeout: this.#timeoutMs, ...(settings === undefined ? {} : { settings }) });
    } catch (err) {
      throw translateChdbError(err, 'insert', false);
    }
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#session.close();
    // close() can return before the engine lets go of the directory; wait until it has, so the
    // process (or a test) may open it again.
    await drainPending();
  }

  async #run(sql: string, params: SqlParams | undefined, format: string, timeout: number): Promise<string> {
    this.#assertOpen();
    if (this.#settingUp !== null) await this.#ready();
    try {
      const result =
        params === undefined
          ? await this.#session.queryAsync(sql, { format, timeout })
          : await this.#session.queryBindAsync(sql, params, { format, timeout });
      return result.text();
    } catch (err) {
      throw translateChdbError(err, 'query', true);
    }
  }

  #assertOpen(): void {
    if (this.#closed) throw new DrisError('dependency_unavailable', 'embedded hot index is closed');
  }
}
