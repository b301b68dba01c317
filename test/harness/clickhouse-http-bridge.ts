import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { hostname } from 'node:os';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ChdbEngine, type Outcome, type Statement } from './clickhouse-chdb-engine.js';
import { ClickHouseException, exceptionAnswer } from './clickhouse-http-errors.js';
import { authenticate, classifyParams, decodeBody, parseBool, parseMultipart, readBody, urlParams as parseUrlParams, type RequestParams } from './clickhouse-http-request.js';
import { HttpSessions } from './clickhouse-http-sessions.js';
import { OUTPUT_KINDS, READONLY_KINDS, scanStatement } from './clickhouse-sql-scan.js';

/**
 * A test-only server speaking the ClickHouse HTTP interface over one chDB session, for tests and
 * the local fleet on machines where no ClickHouse server can be installed. It implements what
 * @clickhouse/client sends and what the interface's documentation and the server's HTTP handler
 * define:
 *
 * - `POST /` with the query in the body, or in `?query=` with the body appended after a newline
 *   (an INSERT's rows); `GET /?query=` for reads (any method but POST is read-only, READONLY
 *   otherwise); `GET /ping` and `GET /` answer `Ok.`;
 * - `param_<name>` query parameters (also as multipart/form-data fields), handed to the engine as
 *   the text sent; `database` or X-ClickHouse-Database; `default_format` or X-ClickHouse-Format;
 *   `query_id` or X-ClickHouse-Query-Id; `session_id` (see HttpSessions); any other parameter is
 *   a setting for this request only (UNKNOWN_SETTING when the engine has no such setting);
 * - credentials from X-ClickHouse-User/Key, HTTP Basic or `user`/`password`, checked against the
 *   configured users (AUTHENTICATION_FAILED, HTTP 403, as the server answers);
 * - gzip, deflate and br request bodies; gzip, deflate or br answers with
 *   `enable_http_compression=1` and a matching Accept-Encoding;
 * - answers with X-ClickHouse-Query-Id, -Format (queries with output), -Timezone, -Summary and
 *   -Server-Display-Name; errors with the server's status for the code, X-ClickHouse-Exception-Code
 *   and the body `Code: <n>. DB::Exception: <message>. (<NAME>) (version <v>)`;
 * - one statement per request (multi-statements are a SYNTAX_ERROR, as on the server), and the
 *   server's default request limits: fields up to 128 KiB, request lines up to 1 MiB.
 *
 * Where it differs from a server, because one embedded engine is behind it: statements run one at
 * a time (at most `maxQueries` admitted, TOO_MANY_SIMULTANEOUS_QUERIES beyond); answers are
 * buffered whole, as with `wait_end_of_query=1`, so an error never follows partial output and no
 * X-ClickHouse-Progress headers come before it; the summary's read_rows/read_bytes are 0 (the
 * engine reports only what it returns and writes);
 * external tables, the `compress`/`decompress` native compression, roles and zstd bodies are not
 * supported (NOT_IMPLEMENTED / UNKNOWN_ROLE); temporary tables are shared by all sessions.
 */

export interface BridgeOptions {
  /** chDB data directory. */
  readonly path: string;
  readonly host?: string;
  /** 0 picks a free port. */
  readonly port?: number;
  /** user name -> password; default: `default` with an empty password, as a fresh server. */
  readonly users?: ReadonlyMap<string, string>;
  /** X-ClickHouse-Server-Display-Name; default the host name. */
  readonly displayName?: string;
  /** Statements admitted at once (queued and running). Default 256. */
  readonly maxQueries?: number;
  /** Largest request body, bytes. Default 512 MiB. */
  readonly maxBodyBytes?: number;
  /** Answer deadline of a statement from its arrival, ms. Default 120 s. */
  readonly statementTimeoutMs?: number;
  /** Idle keep-alive connections are closed after this long, ms. Default 10 s. */
  readonly keepAliveTimeoutMs?: number;
}

export interface RunningBridge {
  readonly url: string;
  readonly port: number;
  readonly engine: ChdbEngine;
  close(): Promise<void>;
}

const CONTENT_TYPES: readonly [RegExp, string][] = [
  [/^(JSONEachRow|JSONStringsEachRow|JSONLines|NDJSON)$/i, 'application/x-ndjson; charset=UTF-8'],
  [/^JSON/i, 'application/json; charset=UTF-8'],
  [/^(TabSeparated|TSV)/i, 'text/tab-separated-values; charset=UTF-8'],
  [/^CSVWithNames/i, 'text/csv; charset=UTF-8; header=present'],
  [/^CSV/i, 'text/csv; charset=UTF-8; header=absent'],
  [/^XML$/i, 'application/xml; charset=UTF-8'],
  [/^(RowBinary|Native|Parquet|Arrow|ORC|Avro|Protobuf|MsgPack|CapnProto)/i, 'application/octet-stream'],
];
const TEXT = 'text/plain; charset=UTF-8';

function contentTypeOf(format: string): string {
  for (const [pattern, type] of CONTENT_TYPES) if (pattern.test(format)) return type;
  return TEXT;
}

const compressors = {
  gzip: promisify(zlib.gzip),
  deflate: promisify(zlib.deflate),
  br: promisify(zlib.brotliCompress),
} as const;
type Codec = keyof typeof compressors;

/** The codec of the answer, when the request enables compression and accepts one we have. */
function chooseCodec(acceptEncoding: string | undefined, params: RequestParams): Codec | null {
  if (!parseBool('enable_http_compression', params.http.get('enable_http_compression'), false)) return null;
  const accepted = (acceptEncoding ?? '').toLowerCase();
  for (const codec of ['gzip', 'deflate', 'br'] as const) if (accepted.includes(codec)) return codec;
  return null;
}

async function compress(body: Buffer, codec: Codec | null, params: RequestParams): Promise<Buffer> {
  if (codec === null) return body;
  if (codec === 'br') return compressors.br(body);
  const level = Number(params.http.get('http_zlib_compression_level') ?? '3');
  return compressors[codec](body, { level: Number.isInteger(level) && level >= 1 && level <= 9 ? level : 3 });
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Header values the client sent back unchanged; Node refuses control characters in them. */
function safeHeader(value: string): string {
  return value.replace(/[^\t\x20-\x7e\x80-\xff]/g, '?');
}

export async function startClickHouseHttpBridge(options: BridgeOptions): Promise<RunningBridge> {
  const engine = await ChdbEngine.open({ path: options.path, maxQueries: options.maxQueries ?? 256, statementTimeoutMs: options.statementTimeoutMs ?? 120_000 });
  const bridge = new Bridge(engine, options);
  // Request lines up to the server's http_max_uri_size (1 MiB); Node's default is 16 KiB.
  const server = createServer({ maxHeaderSize: 1024 * 1024 + 64 * 1024 }, (req, res) => {
    void bridge.handle(req, res);
  });
  server.keepAliveTimeout = options.keepAliveTimeoutMs ?? 10_000;
  server.requestTimeout = 300_000;
  server.headersTimeout = 60_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
    });
  } catch (err) {
    await engine.close();
    throw err;
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://${options.host ?? '127.0.0.1'}:${port}`,
    port,
    engine,
    close: () => closeServer(server, engine),
  };
}

async function closeServer(server: Server, engine: ChdbEngine): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  // Requests in flight finish (their statements are in the engine's queue); then the engine closes.
  const deadline = setTimeout(() => server.closeAllConnections(), 30_000);
  await closed;
  clearTimeout(deadline);
  await engine.close();
}

class Bridge {
  readonly #engine: ChdbEngine;
  readonly #users: ReadonlyMap<string, string>;
  readonly #displayName: string;
  readonly #maxBodyBytes: number;
  readonly #sessions = new HttpSessions();
  readonly #running = new Set<string>();

  constructor(engine: ChdbEngine, options: BridgeOptions) {
    this.#engine = engine;
    this.#users = options.users ?? new Map([['default', '']]);
    this.#displayName = options.displayName ?? hostname();
    this.#maxBodyBytes = options.maxBodyBytes ?? 512 * 1024 * 1024;
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://bridge');
    const method = req.method ?? 'GET';
    if (url.pathname === '/ping' || url.pathname === '/replicas_status' || (url.pathname === '/' && url.search === '' && (method === 'GET' || method === 'HEAD'))) {
      req.resume();
      res.writeHead(200, { 'Content-Type': 'text/html; charset=UTF-8' }).end('Ok.\n');
      return;
    }
    if (url.pathname !== '/') {
      req.resume();
      res.writeHead(404, { 'Content-Type': TEXT }).end(`There is no handle ${url.pathname}\n\nUse / or /ping for health checks.\nOr /replicas_status for more sophisticated health checks.\n\nSend queries from your program with POST method or GET /?query=...\n`);
      return;
    }
    let gone = false;
    res.once('close', () => {
      if (!res.writableFinished) gone = true;
    });
    let codec: Codec | null = null;
    let params: RequestParams | null = null;
    let release: ((close: boolean) => void) | null = null;
    let closeSession = false;
    let queryId: string | null = null;
    try {
      if (method === 'POST' && req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
        throw new ClickHouseException('HTTP_LENGTH_REQUIRED', 'The Transfer-Encoding is not chunked and there is no Content-Length header for POST request');
      }
      const raw = await readBody(req, this.#maxBodyBytes);
      const urlParams = parseUrlParams(url.search.slice(1));
      params = classifyParams(urlParams, false);
      const user = authenticate(req.headers, params, this.#users);
      const sessionId = params.get('session_id');
      closeSession = parseBool('close_session', params.get('close_session'), false);
      const session =
        sessionId === undefined
          ? null
          : this.#sessions.acquire({ user, id: sessionId, timeout: params.get('session_timeout'), check: params.get('session_check') === '1' });
      release = session?.release ?? null;
      codec = chooseCodec(header(req, 'accept-encoding'), params);
      let body = await decodeBody(raw, header(req, 'content-encoding'), this.#maxBodyBytes);
      const multipart = (header(req, 'content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
      if (multipart) {
        params = classifyParams([...urlParams, ...parseMultipart(body, header(req, 'content-type') ?? '')], true);
        body = Buffer.alloc(0);
      }
      queryId = params.get('query_id') ?? header(req, 'x-clickhouse-query-id') ?? randomUUID();
      if (this.#running.has(queryId)) throw new ClickHouseException('QUERY_WITH_SAME_ID_IS_ALREADY_RUNNING', `Query with id = ${queryId} is already running`);
      this.#running.add(queryId);
      const statement = this.#statement(req, params, body, session?.state ?? null, () => gone);
      const outcome = await this.#engine.run(statement);
      await this.#answer(res, { outcome, queryId, codec, params, statement, origin: header(req, 'origin') });
    } catch (err) {
      await this.#fail(res, err, codec, params).catch(() => res.destroy());
    } finally {
      if (queryId !== null) this.#running.delete(queryId);
      release?.(closeSession);
    }
  }

  #statement(req: IncomingMessage, params: RequestParams, body: Buffer, session: Statement['session'], abandoned: () => boolean): Statement {
    for (const name of ['compress', 'decompress']) {
      if (parseBool(name, params.get(name), false)) throw new ClickHouseException('NOT_IMPLEMENTED', `The '${name}' parameter (native compression) is not supported by this bridge`);
    }
    parseBool('wait_end_of_query', params.get('wait_end_of_query'), false);
    const role = params.get('role');
    if (role !== undefined) throw new ClickHouseException('UNKNOWN_ROLE', `There is no role \`${role}\` in user directories`);
    const urlQuery = params.get('query') ?? '';
    const inUrl = scanStatement(urlQuery);
    // The rows of an `INSERT ... FORMAT <f>` in the URL go to the engine as bytes, untouched.
    const rawInsert =
      inUrl.kind === 'INSERT' && inUrl.dataAt !== -1 && urlQuery.slice(inUrl.dataAt).trim() === '' && inUrl.format !== null && body.length > 0 && Object.keys(params.bound).length === 0;
    const sql = rawInsert ? urlQuery : urlQuery.length > 0 && body.length > 0 ? `${urlQuery}\n${body.toString('utf8')}` : urlQuery.length > 0 ? urlQuery : body.toString('utf8');
    const scan = rawInsert ? inUrl : scanStatement(sql);
    if (scan.kind === '') throw new ClickHouseException('SYNTAX_ERROR', 'Empty query');
    if (scan.secondStatementAt !== -1) {
      throw new ClickHouseException('SYNTAX_ERROR', `Syntax error (Multi-statements are not allowed): failed at position ${scan.secondStatementAt + 1}: ${sql.slice(scan.secondStatementAt, scan.secondStatementAt + 40)}`);
    }
    if (req.method !== 'POST' && !READONLY_KINDS.has(scan.kind)) {
      throw new ClickHouseException('READONLY', 'Cannot execute query in readonly mode. For queries over HTTP, method GET implies readonly. You should use method POST for modifying queries');
    }
    const database = header(req, 'x-clickhouse-database') ?? params.get('database') ?? null;
    const format = header(req, 'x-clickhouse-format') ?? params.get('default_format') ?? 'TabSeparated';
    return {
      sql,
      ...(rawInsert ? { data: body } : {}),
      scan,
      params: params.bound,
      settings: params.settings,
      database: database === '' ? null : database,
      format: format === '' ? 'TabSeparated' : format,
      session,
      abandoned,
    };
  }

  async #answer(res: ServerResponse, a: { outcome: Outcome; queryId: string; codec: Codec | null; params: RequestParams; statement: Statement; origin: string | undefined }): Promise<void> {
    const { outcome, statement } = a;
    const format = OUTPUT_KINDS.has(statement.scan.kind) ? (statement.scan.format ?? statement.format) : null;
    const headers: Record<string, string> = {
      'Content-Type': format === null ? TEXT : contentTypeOf(format),
      'X-ClickHouse-Server-Display-Name': this.#displayName,
      'X-ClickHouse-Query-Id': safeHeader(a.queryId),
      ...(format === null ? {} : { 'X-ClickHouse-Format': safeHeader(format) }),
      'X-ClickHouse-Timezone': this.#engine.timezone,
      'X-ClickHouse-Summary': summary(outcome),
      ...(a.codec === null ? {} : { 'Content-Encoding': a.codec }),
      ...(parseBool('add_http_cors_header', a.params.http.get('add_http_cors_header'), false) && a.origin !== undefined ? { 'Access-Control-Allow-Origin': '*' } : {}),
    };
    const body = await compress(outcome.body, a.codec, a.params);
    if (!res.destroyed) res.writeHead(200, headers).end(body);
  }

  async #fail(res: ServerResponse, err: unknown, codec: Codec | null, params: RequestParams | null): Promise<void> {
    const answer = exceptionAnswer(err, this.#engine.codes, this.#engine.version);
    const headers: Record<string, string> = {
      'Content-Type': TEXT,
      'X-ClickHouse-Server-Display-Name': this.#displayName,
      'X-ClickHouse-Exception-Code': String(answer.code),
      ...(codec === null ? {} : { 'Content-Encoding': codec }),
    };
    const body = params === null ? Buffer.from(answer.text) : await compress(Buffer.from(answer.text), codec, params);
    if (!res.destroyed && !res.headersSent) res.writeHead(answer.status, headers).end(body);
  }
}

/** X-ClickHouse-Summary: numbers as strings, as the server writes them. */
function summary(o: Outcome): string {
  return JSON.stringify({
    read_rows: '0',
    read_bytes: '0',
    written_rows: String(o.writtenRows),
    written_bytes: String(o.writtenBytes),
    total_rows_to_read: '0',
    result_rows: String(o.resultRows),
    result_bytes: String(o.resultBytes),
    elapsed_ns: String(o.elapsedNs),
  });
}
