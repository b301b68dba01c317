import { Readable } from 'node:stream';
import { finished } from 'node:stream/promises';
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
  type ErrorLogParams,
  type Logger as ClientLogger,
  type WarnLogParams,
} from '@clickhouse/client';
import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import type { ExecOptions, InsertSettings, SqlParams, SqlRunner } from './sql-runner.js';

/**
 * A ClickHouse server, through @clickhouse/client over HTTP. Same SQL and logic as the embedded
 * engine; values go as `query_params`.
 */

export interface ClickHouseServerOptions {
  /** e.g. `http://127.0.0.1:8123` (CLICKHOUSE_URL). */
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
  /** Per request, milliseconds. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /** Sockets kept open to the server. Default 10. */
  readonly maxOpenConnections?: number;
  readonly logger?: Logger;
}

/**
 * Ingest ids per existence look-up. A server refuses a request field longer than
 * http_max_field_value_size (128 KiB by default, counted URL-encoded): the engine's 5000 ULIDs make
 * ~175 KB, 2000 about 70 KB.
 */
export const SERVER_LOOKUP_CHUNK = 2_000;

/** Socket-level failures: the server is not reachable or went away. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_SOCKET',
]);

/**
 * ClickHouse server error codes (numeric, sent as strings) that mean "not now" or "not us" rather
 * than a wrong statement.
 */
const SERVER_UNAVAILABLE = new Set([
  '202', // TOO_MANY_SIMULTANEOUS_QUERIES
  '203', // NO_FREE_CONNECTION
  '209', // SOCKET_TIMEOUT
  '210', // NETWORK_ERROR
  '241', // MEMORY_LIMIT_EXCEEDED
  '242', // TABLE_IS_READ_ONLY
  '252', // TOO_MANY_PARTS
  '516', // AUTHENTICATION_FAILED
  '999', // KEEPER_EXCEPTION
]);
const SERVER_TIMEOUT = new Set(['159', '160']); // TIMEOUT_EXCEEDED, TOO_SLOW

function errorCodeOf(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : typeof code === 'number' ? String(code) : undefined;
}

export function translateClickHouseError(err: unknown, what: string, keepCause: boolean): DrisError {
  if (err instanceof DrisError) return err;
  let code: DrisErrorCode = 'internal_error';
  const own = errorCodeOf(err);
  const causeCode = errorCodeOf((err as { cause?: unknown } | null)?.cause);
  const message = err instanceof Error ? err.message : '';
  if (own !== undefined && SERVER_TIMEOUT.has(own)) code = 'timeout';
  else if (own !== undefined && SERVER_UNAVAILABLE.has(own)) code = 'dependency_unavailable';
  else if ((own !== undefined && NETWORK_CODES.has(own)) || (causeCode !== undefined && NETWORK_CODES.has(causeCode))) {
    code = 'dependency_unavailable';
  } else if (message === 'Timeout error.') code = 'timeout'; // the client's request_timeout
  else if (/socket hang up/i.test(message)) code = 'dependency_unavailable';
  // An insert's server message can quote the offending row, payload included: keep only codes.
  const cause = keepCause ? err : new Error(`ClickHouse error ${own ?? 'without code'}`);
  return new DrisError(code, `ClickHouse hot index: ${what} failed`, { cause });
}

/**
 * The client's own log lines go to `log` with its message and the error's code only: its
 * arguments and error texts can carry statement text and, for inserts, row data. The client
 * constructs its logger itself, without arguments, hence a class per logger.
 */
function clientLogClass(log: Logger): new () => ClientLogger {
  return class ClientLog implements ClientLogger {
    trace(): void {}
    debug(): void {}
    info(): void {}
    warn({ module, message, err }: WarnLogParams): void {
      log.warn({ module, code: errorCodeOf(err) }, message);
    }
    error({ module, message, err }: ErrorLogParams): void {
      log.warn({ module, code: errorCodeOf(err) ?? errorCodeOf(err.cause) }, message);
    }
  };
}

/** A load balancer drops an HTTP request silent for longer than its idle timeout; 60 s is common. */
const PROGRESS_INTERVAL_MS = 50_000;

/**
 * A client for one statement allowed `timeoutMs` (a migration): the server sends progress headers
 * while it runs, so a proxy in between does not take the long silence for a dead connection.
 */
function longStatementConfig(base: ClickHouseClientConfigOptions, timeoutMs: number): ClickHouseClientConfigOptions {
  return {
    ...base,
    request_timeout: timeoutMs,
    max_open_connections: 1,
    clickhouse_settings: { ...base.clickhouse_settings, send_progress_in_http_headers: 1, http_headers_progress_interval_ms: String(PROGRESS_INTERVAL_MS) },
  };
}

export class ClickHouseClientRunner implements SqlRunner {
  readonly parallelQueries: number;
  readonly #config: ClickHouseClientConfigOptions;
  readonly #client: ClickHouseClient;

  constructor(options: ClickHouseServerOptions) {
    // No `database` here: the client would send it with every request, and requests fail while
    // the database does not exist yet, migrate() included. Statements name their database.
    this.#config = {
      url: options.url,
      ...(options.username === undefined ? {} : { username: options.username }),
      ...(options.password === undefined ? {} : { password: options.password }),
      request_timeout: options.requestTimeoutMs ?? 30_000,
      max_open_connections: options.maxOpenConnections ?? 10,
      // Parameters longer than 4 KiB (arrays of ids) go in a multipart body rather than the URL,
      // which proxies in front of a server may cap far below the server's own 1 MiB.
      use_multipart_params_auto: true,
      application: 'dris',
      log: { LoggerClass: clientLogClass(options.logger ?? componentLogger('clickhouse-client')), level: ClickHouseLogLevel.WARN },
    };
    this.#client = createClient(this.#config);
    // Half the sockets: inserts and other reads keep theirs.
    this.parallelQueries = Math.max(1, Math.floor((options.maxOpenConnections ?? 10) / 2));
  }

  async exec(sql: string, params?: SqlParams, options?: ExecOptions): Promise<void> {
    // The client's limit is one for all its requests: a statement allowed longer gets a client of
    // its own (migrations only, a few per start).
    const own = options?.timeoutMs === undefined ? null : createClient(longStatementConfig(this.#config, options.timeoutMs));
    try {
      await (own ?? this.#client).command({ query: sql, ...(params === undefined ? {} : { query_params: params }) });
    } catch (err) {
      throw translateClickHouseError(err, 'statement', true);
    } finally {
      await own?.close();
    }
  }

  async query<T>(sql: string, params?: SqlParams): Promise<T[]> {
    try {
      const result = await this.#client.query({
        query: sql,
        format: 'JSONEachRow',
        ...(params === undefined ? {} : { query_params: params }),
      });
      return await result.json<T>();
    } catch (err) {
      throw translateClickHouseError(err, 'query', true);
    }
  }

  async queryValues(sql: string, params?: SqlParams): Promise<string[]> {
    try {
      const result = await this.#client.query({
        query: sql,
        format: 'TabSeparatedRaw',
        ...(params === undefined ? {} : { query_params: params }),
      });
      return (await result.text()).split('\n').filter((line) => line.length > 0);
    } catch (err) {
      throw translateClickHouseError(err, 'query', true);
    }
  }

  async insertJsonEachRow(table: string, rows: readonly object[]): Promise<void> {
    if (rows.length === 0) return;
    try {
      await this.#client.insert({ table, values: rows, format: 'JSONEachRow' });
    } catch (err) {
      throw translateClickHouseError(err, 'insert', false);
    }
  }

  async insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    try {
      // insert() takes JSONEachRow only as objects (it refuses a byte stream); exec() sends the
      // bytes as the body of the INSERT unchanged.
      const result = await this.#client.exec({
        query: `INSERT INTO ${table} FORMAT JSONEachRow`,
        values: Readable.from([lines], { objectMode: false }),
        ...(settings === undefined ? {} : { clickhouse_settings: settings }),
      });
      await finished(result.stream.resume());
    } catch (err) {
      throw translateClickHouseError(err, 'insert', false);
    }
  }

  async insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void> {
    if (lines.length === 0) return;
    try {
      const result = await this.#client.exec({
        query: `INSERT INTO ${table} (${columns.join(', ')}) FORMAT JSONCompactEachRow`,
        values: Readable.from([lines], { objectMode: false }),
        ...(settings === undefined ? {} : { clickhouse_settings: settings }),
      });
      await finished(result.stream.resume());
    } catch (err) {
      throw translateClickHouseError(err, 'insert', false);
    }
  }

  async close(): Promise<void> {
    await this.#client.close();
  }
}
