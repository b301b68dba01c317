import { timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import { ClickHouseException } from './clickhouse-http-errors.js';

/**
 * Reading a request as the ClickHouse server's HTTP handler reads it: the body (compressed as its
 * Content-Encoding says), `multipart/form-data` fields (how @clickhouse/client sends long query
 * parameters), credentials (X-ClickHouse-User/Key, HTTP Basic, or `user`/`password` parameters,
 * never two of these at once), and which URL parameters are settings rather than the handler's own.
 */

/** Parameters the handler consumes itself; every other one (but `param_*`) is a setting. */
const RESERVED = new Set([
  'query',
  'compress',
  'decompress',
  'user',
  'password',
  'quota_key',
  'query_id',
  'stacktrace',
  'role',
  'buffer_size',
  'wait_end_of_query',
  'session_id',
  'session_timeout',
  'session_check',
  'client_protocol_version',
  'close_session',
  'database',
  'default_format',
]);

/**
 * Settings that shape the HTTP answer, not the query: the bridge applies them itself (the engine
 * behind it has no HTTP side), after checking their values as the engine would.
 */
export const HTTP_SETTINGS: ReadonlySet<string> = new Set([
  'enable_http_compression',
  'http_zlib_compression_level',
  'send_progress_in_http_headers',
  'http_headers_progress_interval_ms',
  'add_http_cors_header',
  'http_response_buffer_size',
  'http_wait_end_of_query',
  'cancel_http_readonly_queries_on_client_close',
  'http_write_exception_in_output_format',
  'http_native_compression_disable_checksumming_on_decompress',
  'http_max_request_param_data_size',
]);

export interface RequestParams {
  /** All parameters in order: the URL's, then multipart fields. */
  readonly all: readonly (readonly [string, string])[];
  get(name: string): string | undefined;
  /** `param_<name>` values by name. */
  readonly bound: Readonly<Record<string, string>>;
  /** Settings for the engine. */
  readonly settings: readonly (readonly [string, string])[];
  /** Settings the bridge applies to the HTTP answer. */
  readonly http: ReadonlyMap<string, string>;
}

export function classifyParams(entries: readonly (readonly [string, string])[], multipart: boolean): RequestParams {
  const byName = new Map<string, string>();
  const bound: Record<string, string> = {};
  const settings: [string, string][] = [];
  const http = new Map<string, string>();
  for (const [name, value] of entries) {
    if (!byName.has(name)) byName.set(name, value);
    // Empty names come from URLs like `?&a=b`; the server skips them.
    if (name.length === 0 || RESERVED.has(name)) continue;
    if (name.startsWith('param_')) bound[name.slice('param_'.length)] = value;
    // With form data, these suffixes name external tables' structure, not settings.
    else if (multipart && /(_format|_types|_structure)$/.test(name)) continue;
    else if (HTTP_SETTINGS.has(name)) http.set(name, value);
    else settings.push([name, value]);
  }
  return { all: entries, get: (name) => byName.get(name), bound, settings, http };
}

/**
 * The server's defaults for a request's fields (http_max_field_name_size,
 * http_max_field_value_size: 128 KiB each, counted on the URL-encoded text), beyond which it
 * refuses the request: a long array of query parameters fails there, not in the engine.
 */
export const MAX_FIELD_BYTES = 128 * 1024;

function fieldTooLong(what: 'name' | 'value'): ClickHouseException {
  return new ClickHouseException('POCO_EXCEPTION', `HTML Form Exception: Field ${what} too long`);
}

/** The URL's parameters, decoded as the server's HTMLForm decodes them, within its field limits. */
export function urlParams(rawQuery: string): [string, string][] {
  const fields: [string, string][] = [];
  if (rawQuery.length === 0) return fields;
  for (const field of rawQuery.split('&')) {
    const eq = field.indexOf('=');
    const name = eq === -1 ? field : field.slice(0, eq);
    const value = eq === -1 ? '' : field.slice(eq + 1);
    if (name.length > MAX_FIELD_BYTES) throw fieldTooLong('name');
    if (value.length > MAX_FIELD_BYTES) throw fieldTooLong('value');
    fields.push([decodeField(name), decodeField(value)]);
  }
  return fields;
}

function decodeField(text: string): string {
  const spaced = text.replace(/\+/g, ' ');
  try {
    return decodeURIComponent(spaced);
  } catch {
    throw new ClickHouseException('BAD_ARGUMENTS', 'Cannot decode a URL parameter');
  }
}

/** `parse<bool>` of the server: 0/1/true/false. */
export function parseBool(name: string, value: string | undefined, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  const v = value.toLowerCase();
  if (v === '1' || v === 'true') return true;
  if (v === '0' || v === 'false') return false;
  throw new ClickHouseException('CANNOT_PARSE_BOOL', `Cannot parse boolean value of ${name}: '${value}'`);
}

/** The whole body, or QUERY_IS_TOO_LARGE beyond `maxBytes` (a limit of this bridge, which buffers). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) throw new ClickHouseException('QUERY_IS_TOO_LARGE', `Request body is larger than ${maxBytes} bytes, the limit of this bridge`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

const gunzip = promisify(zlib.gunzip);
const inflate = promisify(zlib.inflate);
const brotliDecompress = promisify(zlib.brotliDecompress);

export async function decodeBody(body: Buffer, contentEncoding: string | undefined, maxBytes: number): Promise<Buffer> {
  const method = (contentEncoding ?? '').trim().toLowerCase();
  if (method === '' || method === 'none' || method === 'identity' || body.length === 0) return body;
  const limit = { maxOutputLength: maxBytes };
  try {
    if (method === 'gzip' || method === 'x-gzip') return await gunzip(body, limit);
    if (method === 'deflate') return await inflate(body, limit);
    if (method === 'br') return await brotliDecompress(body, limit);
  } catch (err) {
    const name = method === 'br' ? 'CANNOT_DECOMPRESS' : 'ZLIB_INFLATE_FAILED';
    throw new ClickHouseException(name, `Cannot decompress the request body (${method}): ${err instanceof Error ? err.message : String(err)}`);
  }
  if (method === 'zstd' || method === 'xz' || method === 'lz4' || method === 'bz2' || method === 'snappy') {
    throw new ClickHouseException('NOT_IMPLEMENTED', `Content-Encoding ${method} is not supported by this bridge`);
  }
  throw new ClickHouseException('BAD_ARGUMENTS', `Unknown compression method '${method}'. Only 'auto', 'none', 'gzip', 'deflate', 'br', 'xz', 'zstd', 'lz4', 'bz2', 'snappy' are supported as compression methods`);
}

/** Fields of a multipart/form-data body. A part with a filename is an external table. */
export function parseMultipart(body: Buffer, contentType: string): [string, string][] {
  const boundary = /boundary=(?:"([^"]+)"|([^;]+))/i.exec(contentType);
  const mark = boundary?.[1] ?? boundary?.[2]?.trim();
  if (mark === undefined) throw new ClickHouseException('BAD_ARGUMENTS', 'multipart/form-data without a boundary');
  const text = body.toString('utf8');
  const fields: [string, string][] = [];
  for (const part of text.split(`--${mark}`).slice(1)) {
    if (part.startsWith('--')) break;
    const headerEnd = part.indexOf('\r\n\r\n');
    if (headerEnd === -1) continue;
    const head = part.slice(0, headerEnd);
    const name = /name="([^"]*)"/i.exec(head)?.[1];
    if (name === undefined) continue;
    if (/filename=/i.test(head)) throw new ClickHouseException('NOT_IMPLEMENTED', 'External tables (multipart parts with a filename) are not supported by this bridge');
    const value = part.slice(headerEnd + 4).replace(/\r\n$/, '');
    if (Buffer.byteLength(value) > MAX_FIELD_BYTES) throw fieldTooLong('value');
    fields.push([name, value]);
  }
  return fields;
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function multiple(a: string, b: string): ClickHouseException {
  return new ClickHouseException('AUTHENTICATION_FAILED', `Invalid authentication: it is not allowed to use ${a} and ${b} simultaneously`);
}

/** The authenticated user name, or AUTHENTICATION_FAILED. */
export function authenticate(headers: IncomingHttpHeaders, params: RequestParams, users: ReadonlyMap<string, string>): string {
  const header = (name: string): string => {
    const v = headers[name];
    return Array.isArray(v) ? (v[0] ?? '') : (v ?? '');
  };
  let user = header('x-clickhouse-user');
  let password = header('x-clickhouse-key');
  const hasHeaders = user !== '' || password !== '';
  const authorization = header('authorization');
  const hasParams = params.get('user') !== undefined || params.get('password') !== undefined;
  if (hasHeaders) {
    if (user === '') throw new ClickHouseException('AUTHENTICATION_FAILED', 'Got an empty user name from X-ClickHouse HTTP headers');
    if (authorization !== '') throw multiple('X-ClickHouse HTTP headers', 'Authorization HTTP header');
    if (hasParams) throw multiple('X-ClickHouse HTTP headers', 'authentication via parameters');
  } else if (authorization !== '') {
    if (hasParams) throw multiple('Authorization HTTP header', 'authentication via parameters');
    const [scheme = '', info = ''] = authorization.split(/\s+/, 2);
    if (scheme.toLowerCase() !== 'basic') throw new ClickHouseException('AUTHENTICATION_FAILED', `Invalid authentication: '${scheme}' HTTP Authorization scheme is not supported`);
    const decoded = Buffer.from(info, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    user = colon === -1 ? decoded : decoded.slice(0, colon);
    password = colon === -1 ? '' : decoded.slice(colon + 1);
    if (user === '') throw new ClickHouseException('AUTHENTICATION_FAILED', 'Got an empty user name from Authorization HTTP header');
  } else {
    user = params.get('user') ?? 'default';
    password = params.get('password') ?? '';
    if (user === '') throw new ClickHouseException('AUTHENTICATION_FAILED', 'Got an empty user name from authentication via parameters');
  }
  const expected = users.get(user);
  if (expected === undefined || !sameSecret(expected, password)) {
    throw new ClickHouseException('AUTHENTICATION_FAILED', `${user}: Authentication failed: password is incorrect, or there is no user with such name`);
  }
  return user;
}
