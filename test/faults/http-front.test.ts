import t, { type Test } from 'tap';
import type { Authenticator, Principal } from '../../src/app/authenticator.js';
import type { RateDecision, RateLimiter } from '../../src/domain/limits/ports.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { Router, type Route } from '../../src/http/router.js';
import { findNativeAddon } from '../../src/adapters/hashing/native-backend.js';
import { UwsHttpServer, type HttpServerOptions } from '../../src/http/uws-server.js';
import { AT_ONCE_MS, GUARD_TESTS, rawRequest } from './raw-http.js';

/**
 * The HTTP front in process, with routes of its own: what one client can hold of it (body
 * budget, in-flight slots, deadlines), that a body is read only for a known caller, and that
 * every 503 says when to come back.
 */

const principal: Principal = { keyId: 'k1', tenantId: 't', clientId: 'c', level: 'standard', tenants: new Set(['t']) };

/** Key `good` is known after a 50 ms look-up; any other key is refused after 400 ms. */
function authenticator(): Authenticator {
  return {
    authenticateNow: () => undefined,
    authenticate: async (key: string | undefined) => {
      await new Promise((r) => setTimeout(r, key === 'good' ? 50 : 400));
      if (key !== 'good') throw new DrisError('invalid_api_key', 'unknown key');
      return principal;
    },
  } as unknown as Authenticator;
}

const limiter: RateLimiter = {
  take: (_b: string, limit: number, _w: number, now: number): Promise<RateDecision> => Promise.resolve({ allowed: true, limit, remaining: limit, resetAtMs: now + 1000 }),
};

interface Harness {
  readonly port: number;
  readonly server: UwsHttpServer;
  readonly handled: string[];
  release(): void;
}

async function start(t: Test, limits: HttpServerOptions['limits'], maxInFlight = 100): Promise<Harness> {
  const handled: string[] = [];
  let release: () => void = () => undefined;
  const routes: Route[] = [
    {
      method: 'POST',
      pattern: '/upload',
      operationId: 'Upload',
      auth: 'apiKey',
      maxBodyBytes: 64 * 1024,
      handle: (ctx) => {
        handled.push(`upload ${ctx.body.length}`);
        return Promise.resolve({ status: 202, body: { bytes: ctx.body.length } });
      },
    },
    { method: 'GET', pattern: '/down', operationId: 'Down', auth: 'none', handle: () => Promise.resolve({ status: 503, body: { status: 'degraded' } }) },
    {
      method: 'GET',
      pattern: '/hold',
      operationId: 'Hold',
      auth: 'none',
      handle: () => new Promise((resolve) => (release = () => resolve({ status: 200, body: {} }))),
    },
    { method: 'GET', pattern: '/ok', operationId: 'Ok', auth: 'none', handle: () => Promise.resolve({ status: 200, body: { ok: true } }) },
  ];
  const server = new UwsHttpServer({
    host: '127.0.0.1',
    port: 0,
    router: new Router(routes),
    authenticator: authenticator(),
    rateLimiter: limiter,
    rateLimits: { standard: 1000, premium: 1000, enterprise: 1000 },
    rateWindowMs: 3_600_000,
    maxInFlight,
    allowSlowHttp: false,
    nativeAddonFile: findNativeAddon(),
    ...(limits === undefined ? {} : { limits }),
  });
  const port = await server.listen();
  t.teardown(() => server.close());
  return { port, server, handled, release: () => release() };
}

const post = (len: number, key = 'good'): string => `POST /upload HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${len}\r\n\r\n`;

void t.test('the native guard is installed', GUARD_TESTS, async (t) => {
  const h = await start(t, undefined);
  t.ok(h.server.guarded, 'build the addon (npm run build:native) to run these tests');
});

void t.test('bodies beyond the shared budget are answered 503 with Retry-After; the first one is served', async (t) => {
  const h = await start(t, { bodyBudgetBytes: 64 * 1024, retryAfterSeconds: 7 });
  const first = rawRequest(h.port, [post(40_000) + 'x'.repeat(30_000), 'x'.repeat(10_000)], { gapMs: 400 });
  await new Promise((r) => setTimeout(r, 200));
  const second = await rawRequest(h.port, [post(40_000) + 'y'.repeat(40_000)]);
  t.equal(second.status, 503);
  t.equal(second.headers['retry-after'], '7');
  t.equal((JSON.parse(second.body) as { error: string }).error, 'overloaded');
  t.ok(second.closed, 'the rest of the body is not read: the connection closes');
  const a = await first;
  t.equal(a.status, 202);
  t.equal(h.server.bufferedBodyBytes, 0, 'every byte of budget given back');
});

void t.test('every 503 carries Retry-After: a route answering 503, and the in-flight bound', async (t) => {
  const h = await start(t, { retryAfterSeconds: 3 }, 1);
  const down = await rawRequest(h.port, 'GET /down HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(down.status, 503);
  t.equal(down.headers['retry-after'], '3');
  const held = rawRequest(h.port, 'GET /hold HTTP/1.1\r\nHost: x\r\n\r\n');
  await new Promise((r) => setTimeout(r, 100));
  const full = await rawRequest(h.port, 'GET /ok HTTP/1.1\r\nHost: x\r\n\r\n');
  t.equal(full.status, 503);
  t.equal(full.headers['retry-after'], '3');
  t.equal((JSON.parse(full.body) as { error: string }).error, 'overloaded');
  t.notOk(full.closed, 'no body was pending: the connection stays open');
  h.release();
  t.equal((await held).status, 200);
  t.equal((await rawRequest(h.port, 'GET /ok HTTP/1.1\r\nHost: x\r\n\r\n')).status, 200, 'the slot came back');
});

void t.test('a slow body is cut at the body deadline with 408, and its slot comes back', async (t) => {
  const h = await start(t, { bodyTimeoutMs: 300 }, 1);
  await rawRequest(h.port, [post(100) + 'x'.repeat(10)]); // the key is looked up (and cached) once
  const slow = await rawRequest(h.port, [post(100), 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'], { gapMs: 150, timeoutMs: 3000 });
  t.equal(slow.status, 408);
  t.equal((JSON.parse(slow.body) as { error: string }).error, 'request_timeout');
  t.ok(slow.answeredMs >= 250 && slow.answeredMs < 1500, `answered after ${slow.answeredMs} ms`);
  t.ok(slow.closed);
  const after = await rawRequest(h.port, [post(2) + '{}']);
  t.equal(after.status, 202, 'the in-flight slot of the cut request is free');
  t.equal(h.server.bufferedBodyBytes, 0);
});

void t.test('a declared length over the route limit is answered 413 before any body byte', async (t) => {
  const h = await start(t, undefined);
  const r = await rawRequest(h.port, [post(65 * 1024)], { timeoutMs: 2000 });
  t.equal(r.status, 413);
  const body = JSON.parse(r.body) as { error: string; limitBytes: number };
  t.equal(body.error, 'payload_too_large');
  t.equal(body.limitBytes, 64 * 1024);
  t.ok(r.answeredMs < AT_ONCE_MS, `answered in ${r.answeredMs} ms`);
  t.ok(r.closed);
  t.same(h.handled, []);
});

void t.test('an unknown key is refused 401 without the body being read', async (t) => {
  const h = await start(t, undefined);
  // A chunked body that never ends: only the 401 and the close can stop the client.
  const head = 'POST /upload HTTP/1.1\r\nHost: x\r\nX-API-Key: bad\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n';
  const chunk = Buffer.from(`4000\r\n${'z'.repeat(0x4000)}\r\n`);
  const r = await rawRequest(h.port, [head], { stream: chunk, timeoutMs: 5000 });
  t.equal(r.status, 401);
  t.equal((JSON.parse(r.body) as { error: string }).error, 'invalid_api_key');
  t.ok(r.closed);
  // Unpaused, uWS reads a loopback stream at hundreds of MB/s; paused, only the socket buffers fill.
  t.ok(r.sent < 12 * 1024 * 1024, `${r.sent} bytes sent before the close: socket buffers, not the body`);
  t.same(h.handled, []);
  t.equal(h.server.bufferedBodyBytes, 0);
});

void t.test('a known key looked up in the store: the paused body is read afterwards', async (t) => {
  const h = await start(t, undefined);
  const r = await rawRequest(h.port, [post(20_000) + 'x'.repeat(5000), 'x'.repeat(15_000)], { gapMs: 20 });
  t.equal(r.status, 202);
  t.same(h.handled, ['upload 20000']);
});

void t.test('two servers in one process (an admin listener beside the API) each answer their refusals', GUARD_TESTS, async (t) => {
  const a = await start(t, { maxHeaderFields: 10 });
  const b = await start(t, { maxHeaderFields: 20 });
  const fields = (n: number): string => Array.from({ length: n }, (_, i) => `x-${i}: ${i}\r\n`).join('');
  for (const [h, name] of [[a, 'first'], [b, 'second']] as const) {
    const bad = await rawRequest(h.port, 'GET /ok HTTP/1.1\r\nHost: x\r\nX A: 1\r\n\r\n');
    t.equal(bad.status, 400, `${name}: refused`);
    t.equal((JSON.parse(bad.body) as { error: string }).error, 'malformed_request', `${name}: by its own front`);
  }
  t.equal((await rawRequest(a.port, `GET /ok HTTP/1.1\r\nHost: x\r\n${fields(14)}\r\n`)).status, 431, 'the first keeps its own limit');
  t.equal((await rawRequest(b.port, `GET /ok HTTP/1.1\r\nHost: x\r\n${fields(14)}\r\n`)).status, 200, 'the second its own');
});
