import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { drainPending, Session } from 'chdb';
import { ClickHouseException, ErrorCodes, fromEngineError } from './clickhouse-http-errors.js';
import { OUTPUT_KINDS, type ScannedStatement } from './clickhouse-sql-scan.js';

/**
 * One chDB session driven the way the HTTP bridge needs it: statements one at a time through a
 * bounded queue (a session is single-threaded), query parameters handed to the engine as the raw
 * text the HTTP client sent (the engine parses them exactly as a server parses `param_<name>`),
 * and per-request settings and database applied around the statement, then undone, so nothing
 * leaks from one request into the next.
 *
 * The native calls are chDB's own binding (the same module instance the package loads), because
 * its JavaScript wrapper re-escapes parameter values from JavaScript values, which would change
 * what the client sent. The wrapper also serialises parameterised queries process-wide; this
 * engine does that itself, so it must be the only chDB user of its process (the bridge's own
 * process, see clickhouse-http-bridge-main.ts).
 */

interface NativeResult {
  readonly bytes: Uint8Array;
  readonly elapsed: number;
  /** Rows of the result (chDB's rows_read counts what it returns). */
  readonly rowsRead: number;
  readonly bytesRead: number;
}
interface NativeInsertResult {
  readonly elapsed: number;
  readonly rowsWritten: number;
  readonly bytesWritten: number;
}
interface ChdbNative {
  QueryAsyncConnection(connection: unknown, sql: string, format: string, bound?: Readonly<Record<string, string>>): Promise<NativeResult>;
  InsertRawAsyncConnection(connection: unknown, prefix: string, data: Buffer, countLines: boolean): Promise<NativeInsertResult>;
}

function loadNative(): ChdbNative {
  // A file inside the package, not a bare subpath: the package's exports do not list it, and this
  // resolves to the module instance the package itself uses.
  const packageRequire = createRequire(createRequire(import.meta.url).resolve('chdb'));
  return (packageRequire('./dist/loader.js') as { loadNative(): ChdbNative }).loadNative();
}

/** Settings a request (or an HTTP session) carries, by name, as the text the client sent. */
export type SettingsList = readonly (readonly [string, string])[];

export interface SessionState {
  /** Settings changed by SET statements in this session, re-applied to each of its statements. */
  settings: Map<string, string>;
  /** Database chosen by USE in this session; null for the default. */
  database: string | null;
}

export interface Statement {
  /** The whole statement, or an INSERT up to its FORMAT clause when `data` holds its rows. */
  readonly sql: string;
  readonly data?: Buffer;
  readonly scan: ScannedStatement;
  readonly params: Readonly<Record<string, string>>;
  readonly settings: SettingsList;
  readonly database: string | null;
  /** Output format when the statement names none. */
  readonly format: string;
  readonly session: SessionState | null;
  /** True once the client went away: a read it asked for is not worth running any more. */
  readonly abandoned: () => boolean;
}

export interface Outcome {
  readonly body: Buffer;
  readonly resultRows: number;
  readonly resultBytes: number;
  readonly writtenRows: number;
  readonly writtenBytes: number;
  readonly elapsedNs: number;
}

export interface EngineOptions {
  readonly path: string;
  /** Statements admitted at once, queued and running; more are refused. */
  readonly maxQueries: number;
  /** Deadline of an answer from admission, milliseconds (the engine itself cannot be interrupted). */
  readonly statementTimeoutMs: number;
}

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** chDB changes these defaults of a server; the bridge answers as a server does. */
const SERVER_DEFAULTS = ['implicit_select', 'allow_introspection_functions'];
const EMPTY = Buffer.alloc(0);
const CHANGED_SETTINGS = 'SELECT name, value FROM system.settings WHERE changed';

function settingsOf(jsonLines: string): Map<string, string> {
  const settings = new Map<string, string>();
  for (const line of jsonLines.split('\n')) {
    if (line.length === 0) continue;
    const { name, value } = JSON.parse(line) as { name: string; value: string };
    settings.set(name, value);
  }
  return settings;
}

function literal(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

function identifier(name: string): string {
  return `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``;
}

export class ChdbEngine {
  readonly version: string;
  readonly timezone: string;
  readonly codes: ErrorCodes;
  readonly #native: ChdbNative;
  readonly #session: Session;
  readonly #options: EngineOptions;
  /** Settings chDB itself changes from their defaults, restored to these values rather than DEFAULT. */
  readonly #baseline: ReadonlyMap<string, string>;
  #tail: Promise<void> = Promise.resolve();
  #admitted = 0;
  #closed = false;

  private constructor(native: ChdbNative, session: Session, options: EngineOptions, facts: { version: string; timezone: string; codes: ErrorCodes; baseline: Map<string, string> }) {
    this.#native = native;
    this.#session = session;
    this.#options = options;
    this.version = facts.version;
    this.timezone = facts.timezone;
    this.codes = facts.codes;
    this.#baseline = facts.baseline;
  }

  static async open(options: EngineOptions): Promise<ChdbEngine> {
    mkdirSync(options.path, { recursive: true });
    const native = loadNative();
    const session = new Session(options.path);
    const text = async (sql: string, format = 'TabSeparated'): Promise<string> =>
      new TextDecoder().decode((await native.QueryAsyncConnection(session.connection, sql, format)).bytes);
    try {
      await text(`SET ${SERVER_DEFAULTS.map((n) => `${n} = DEFAULT`).join(', ')}`);
      const [version = '', timezone = ''] = (await text('SELECT version(), timezone()')).trim().split('\t');
      const codes = (await text("SELECT number, errorCodeToName(number) AS name FROM numbers(5000) WHERE name != ''"))
        .trim()
        .split('\n')
        .map((line): [number, string] => {
          const [code = '', name = ''] = line.split('\t');
          return [Number(code), name];
        });
      const baseline = settingsOf(await text(CHANGED_SETTINGS, 'JSONEachRow'));
      return new ChdbEngine(native, session, options, { version, timezone, codes: new ErrorCodes(codes), baseline });
    } catch (err) {
      session.close();
      await drainPending();
      throw err;
    }
  }

  /** Statements admitted and not yet answered by the engine. */
  get admitted(): number {
    return this.#admitted;
  }

  /**
   * Runs one statement after those admitted before it. Refused at once when maxQueries are
   * admitted; answered with TIMEOUT_EXCEEDED once the deadline passes, while the statement still
   * runs to its end in its turn (as a server that started it would).
   */
  run(statement: Statement): Promise<Outcome> {
    if (this.#closed) return Promise.reject(new ClickHouseException('ABORTED', 'The bridge is shutting down'));
    if (this.#admitted >= this.#options.maxQueries) {
      return Promise.reject(new ClickHouseException('TOO_MANY_SIMULTANEOUS_QUERIES', `Too many simultaneous queries. Maximum: ${this.#options.maxQueries}`));
    }
    this.#admitted += 1;
    const started = Date.now();
    const done = this.#tail.then(() => this.#execute(statement));
    this.#tail = done.then(
      () => undefined,
      () => undefined,
    );
    void this.#tail.then(() => (this.#admitted -= 1));
    const limit = this.#options.statementTimeoutMs;
    return new Promise<Outcome>((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new ClickHouseException('TIMEOUT_EXCEEDED', `Timeout exceeded: elapsed ${Date.now() - started} ms, maximum: ${limit} ms`));
      }, limit);
      done.then(
        (outcome) => {
          clearTimeout(timer);
          resolve(outcome);
        },
        (err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }

  /**
   * Waits for the statements admitted so far (at most `graceMs`), then lets go of the data
   * directory. An engine still busy after that is left as it is: closing a session under a running
   * statement aborts the engine, and the process is about to exit anyway.
   */
  async close(graceMs = 30_000): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    let timer: NodeJS.Timeout | undefined;
    const drained = await Promise.race([
      this.#tail.then(() => true),
      new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (!drained) throw new Error(`the engine is still running a statement after ${graceMs} ms; its session is left open`);
    this.#session.close();
    await drainPending();
  }

  async #execute(statement: Statement): Promise<Outcome> {
    if (statement.abandoned() && OUTPUT_KINDS.has(statement.scan.kind)) {
      return { body: EMPTY, resultRows: 0, resultBytes: 0, writtenRows: 0, writtenBytes: 0, elapsedNs: 0 };
    }
    const settings = new Map<string, string>(statement.session?.settings ?? []);
    for (const [name, value] of statement.settings) settings.set(name, value);
    const database = statement.database ?? statement.session?.database ?? null;
    const changesDatabase = statement.scan.kind === 'USE';
    const changesSettings = statement.scan.kind === 'SET';
    try {
      if (settings.size > 0) await this.#set(settings);
      if (database !== null) await this.#sql(`USE ${identifier(database)}`);
      const outcome = await this.#statement(statement);
      if (statement.session !== null && changesDatabase) statement.session.database = (await this.#text('SELECT currentDatabase()')).trim();
      if (statement.session !== null && changesSettings) {
        // Settings of the request itself do not outlive it, in a session or not.
        const kept = await this.#changedSettings();
        for (const [name] of statement.settings) kept.delete(name);
        statement.session.settings = kept;
      }
      return outcome;
    } finally {
      if (database !== null || changesDatabase) await this.#sql('USE default');
      if (changesSettings) await this.#restore([...(await this.#changedSettings()).keys()]);
      else if (settings.size > 0) await this.#restore([...settings.keys()]);
    }
  }

  async #statement(statement: Statement): Promise<Outcome> {
    const connection = this.#session.connection;
    try {
      if (statement.data !== undefined) {
        const r = await this.#native.InsertRawAsyncConnection(connection, statement.sql, statement.data, true);
        return { body: EMPTY, resultRows: 0, resultBytes: 0, writtenRows: r.rowsWritten, writtenBytes: r.bytesWritten, elapsedNs: Math.round(r.elapsed * 1e9) };
      }
      const bound = Object.keys(statement.params).length > 0 ? statement.params : undefined;
      const r = await this.#native.QueryAsyncConnection(connection, statement.sql, statement.format, bound);
      const body = Buffer.from(r.bytes.buffer, r.bytes.byteOffset, r.bytes.byteLength);
      return { body, resultRows: r.rowsRead, resultBytes: r.bytesRead, writtenRows: 0, writtenBytes: 0, elapsedNs: Math.round(r.elapsed * 1e9) };
    } catch (err) {
      throw fromEngineError(err);
    }
  }

  async #set(settings: ReadonlyMap<string, string>): Promise<void> {
    for (const name of settings.keys()) {
      if (!SETTING_NAME.test(name)) throw new ClickHouseException('UNKNOWN_SETTING', `Unknown setting '${name}'`);
    }
    await this.#sql(`SET ${[...settings].map(([name, value]) => `${name} = ${literal(value)}`).join(', ')}`);
  }

  /** Back to the engine's own values: chDB's where it changes them, the defaults otherwise. */
  async #restore(names: readonly string[]): Promise<void> {
    const valid = names.filter((n) => SETTING_NAME.test(n));
    if (valid.length === 0) return;
    await this.#sql(`SET ${valid.map((n) => (this.#baseline.has(n) ? `${n} = ${literal(this.#baseline.get(n) ?? '')}` : `${n} = DEFAULT`)).join(', ')}`);
  }

  /** Settings that differ from the engine's own values now. */
  async #changedSettings(): Promise<Map<string, string>> {
    const changed = settingsOf(await this.#text(CHANGED_SETTINGS, 'JSONEachRow'));
    for (const [name, value] of this.#baseline) if (changed.get(name) === value) changed.delete(name);
    return changed;
  }

  async #sql(sql: string): Promise<void> {
    await this.#text(sql);
  }

  async #text(sql: string, format = 'TabSeparated'): Promise<string> {
    try {
      return new TextDecoder().decode((await this.#native.QueryAsyncConnection(this.#session.connection, sql, format)).bytes);
    } catch (err) {
      throw fromEngineError(err);
    }
  }
}
