import t from 'tap';
import { request, startService, type ServiceHandle } from '../harness/service.js';
import { AT_ONCE_MS, GUARD_TESTS, rawRequest } from './raw-http.js';

/**
 * Malformed HTTP on raw sockets against the started service: every request gets an answer at
 * once (refused with the error body, or served), nothing hangs, nothing crashes, and the service
 * answers normally afterwards.
 */

interface ErrBody {
  error: string;
  message: string;
  details: string[];
  limitBytes?: number;
}

let svc: ServiceHandle;

t.before(async () => {
  svc = await startService({ env: { DRIS_HTTP_HEAD_TIMEOUT_MS: '1000' } });
});
t.teardown(async () => {
  await svc.dispose();
});

const record = JSON.stringify({ tenantId: 'default', database: 'd', collection: 'c', recordId: 'r1', recordPayload: { a: 1 } });
const ingest = (key: string, extra = ''): string =>
  `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\n${extra}Content-Length: ${Buffer.byteLength(record)}\r\n\r\n${record}`;

interface Case {
  readonly name: string;
  readonly raw: () => string;
  readonly status: number;
  readonly error: string;
}

const manyFields = (): string => Array.from({ length: 60 }, (_, i) => `x-f${i}: ${i}\r\n`).join('');

const CASES: readonly Case[] = [
  {
    name: 'Content-Length and Transfer-Encoding',
    raw: () => `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.bootstrapKey}\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`,
    status: 400,
    error: 'malformed_request',
  },
  {
    name: 'duplicate differing Content-Length',
    raw: () => `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello`,
    status: 400,
    error: 'malformed_request',
  },
  { name: 'obsolete line folding', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n  folded\r\n\r\n`, status: 400, error: 'malformed_request' },
  { name: 'a space before the colon', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\nX-A : 1\r\n\r\n`, status: 400, error: 'malformed_request' },
  { name: 'a NUL in a value', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n`, status: 400, error: 'malformed_request' },
  { name: 'bare LF line ends', raw: () => `GET /swagger/openapi.json HTTP/1.1\nHost: x\n\n`, status: 400, error: 'malformed_request' },
  { name: 'no Host', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nAccept: */*\r\n\r\n`, status: 400, error: 'malformed_request' },
  { name: 'headers of 20 KiB', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n`, status: 431, error: 'headers_too_large' },
  { name: '60 header fields', raw: () => `GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\n${manyFields()}\r\n`, status: 431, error: 'headers_too_large' },
  {
    name: '50 MB declared body',
    raw: () => `POST /api/v1/records/bulk HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.bootstrapKey}\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n{"items":[`,
    status: 413,
    error: 'payload_too_large',
  },
  {
    name: '2 MiB declared on the single-record route (1 MiB)',
    raw: () => `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.bootstrapKey}\r\nContent-Type: application/json\r\nContent-Length: 2097152\r\n\r\n{`,
    status: 413,
    error: 'payload_too_large',
  },
  { name: 'unknown method QUERY', raw: () => `QUERY /api/v1/records HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n`, status: 501, error: 'method_not_implemented' },
  { name: 'HTTP/2.0 request line', raw: () => `GET / HTTP/2.0\r\nHost: x\r\n\r\n`, status: 505, error: 'http_version_not_supported' },
  { name: 'transfer coding other than chunked', raw: () => `POST /api/v1/records HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n`, status: 501, error: 'method_not_implemented' },
];

void t.test('every malformed request is refused at once with the error body, and the connection closes', GUARD_TESTS, async (t) => {
  t.equal((await rawRequest(svc.port, 'GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n')).status, 200, 'warm-up');
  for (const c of CASES) {
    // Refused connections linger up to 300 ms of silence (a client may still be sending).
    const r = await rawRequest(svc.port, c.raw(), { timeoutMs: 3000, closeWaitMs: 1500 });
    t.equal(r.status, c.status, c.name);
    const body = JSON.parse(r.body || '{}') as ErrBody;
    t.equal(body.error, c.error, `${c.name}: error code`);
    t.type(body.message, 'string', `${c.name}: message`);
    t.ok(Array.isArray(body.details) && body.details.length > 0 && body.details.every((d) => typeof d === 'string'), `${c.name}: details`);
    t.ok(r.answeredMs >= 0 && r.answeredMs < AT_ONCE_MS, `${c.name}: answered in ${r.answeredMs} ms`);
    t.ok(r.closed, `${c.name}: connection closed`);
    t.ok(r.headers['x-correlation-id'], `${c.name}: correlation id`);
  }
  const big = await rawRequest(svc.port, CASES.find((c) => c.name.startsWith('2 MiB'))?.raw() ?? '', { timeoutMs: 2000 });
  t.equal((JSON.parse(big.body) as ErrBody).limitBytes, 1024 * 1024, 'the route limit is named');
});

void t.test('a client still sending an oversized body reads its 413, then the connection closes', GUARD_TESTS, async (t) => {
  const head = `POST /api/v1/records/bulk HTTP/1.1\r\nHost: x\r\nX-API-Key: ${svc.bootstrapKey}\r\nContent-Type: application/json\r\nContent-Length: 52428800\r\n\r\n`;
  const r = await rawRequest(svc.port, [head], { stream: Buffer.alloc(64 * 1024, 0x20), timeoutMs: 5000, closeWaitMs: 3000 });
  t.equal(r.status, 413);
  t.ok(r.answeredMs < AT_ONCE_MS, `answered in ${r.answeredMs} ms`);
  t.ok(r.closed, `closed after ${r.sent} bytes sent`);
  t.ok(r.sent < 52428800, 'before the declared body was out');
});

void t.test('legal header names uWS cannot parse (a_b, x.y) are served normally', GUARD_TESTS, async (t) => {
  const r = await rawRequest(svc.port, ingest(svc.bootstrapKey, 'x_request_id: 1\r\nx.trace: 2\r\n'), { timeoutMs: 2000 });
  t.equal(r.status, 202, r.body);
  t.ok(r.answeredMs < 2000);
  t.notOk(r.closed, 'kept alive');
  const doc = await rawRequest(svc.port, 'GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\na_b: 1\r\n\r\n', { timeoutMs: 2000 });
  t.equal(doc.status, 200);
  t.ok(doc.answeredMs < AT_ONCE_MS, `answered in ${doc.answeredMs} ms`);
  const old = await rawRequest(svc.port, 'GET /swagger/openapi.json HTTP/1.0\r\n\r\n', { timeoutMs: 2000 });
  t.equal(old.status, 200, 'HTTP/1.0 without Host');
  t.ok(old.closed, 'and closed after the answer');
});

void t.test('a head that never completes is answered 408 at the head deadline', GUARD_TESTS, async (t) => {
  const pieces = ['GET /swagger/openapi.json HTTP/1.1\r\nHost: x\r\nX-Slow: ', ...Array.from({ length: 30 }, () => 'a')];
  const r = await rawRequest(svc.port, pieces, { gapMs: 100, timeoutMs: 5000, closeWaitMs: 2500 });
  t.equal(r.status, 408);
  t.equal((JSON.parse(r.body) as ErrBody).error, 'request_timeout');
  t.ok(r.answeredMs >= 900 && r.answeredMs < 2500, `answered after ${r.answeredMs} ms (deadline 1000 ms)`);
  t.ok(r.closed);
});

void t.test('the service is up and answers normally afterwards', async (t) => {
  const health = await request(svc, 'GET', '/api/Admin/health');
  t.equal(health.status, 200);
  const ok = await request(svc, 'POST', '/api/v1/records', { key: svc.bootstrapKey, raw: record });
  t.equal(ok.status, 202);
  t.notOk(svc.logs.some((l) => /"level":(50|60)/.test(l) && /uncaught|fatal/i.test(l)), 'no fatal log');
});
