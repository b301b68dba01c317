import t from 'tap';
import type { Authenticator } from '../../src/app/authenticator.js';
import type { RateLimiter } from '../../src/domain/limits/ports.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { Router, type Route } from '../../src/http/router.js';
import { UwsHttpServer, type HttpServerOptions } from '../../src/http/uws-server.js';

/**
 * The HTTP front's own behaviour: a port already served makes start-up fail instead of sharing the
 * port (uWS's SO_REUSEPORT); HEAD is answered by GET routes with headers only.
 */

function server(port: number, router: Router = new Router([])): UwsHttpServer {
  const options: HttpServerOptions = {
    host: '127.0.0.1',
    port,
    router,
    authenticator: {} as Authenticator,
    rateLimiter: {} as RateLimiter,
    rateLimits: { standard: 1, premium: 1, enterprise: 1 },
    rateWindowMs: 3_600_000,
    maxInFlight: 8,
    allowSlowHttp: false,
  };
  return new UwsHttpServer(options);
}

void t.test('a second server on a taken port fails to listen', async (t) => {
  const first = server(0);
  const port = await first.listen();
  t.teardown(() => first.close());
  t.ok(port > 0);
  const second = server(port);
  const err = await second.listen().then(
    () => null,
    (e: unknown) => e,
  );
  second.close();
  t.ok(err instanceof DrisError);
  t.equal((err as DrisError).code, 'config_invalid');
});

void t.test('HEAD answers a GET route with its headers and length, without the body', async (t) => {
  const json = { hello: 'wörld', n: [1, 2, 3] };
  const bytes = Buffer.from([0, 1, 2, 3, 4, 5, 6]);
  const routes: Route[] = [
    { method: 'GET', pattern: '/json', operationId: 'Json', auth: 'none', handle: () => Promise.resolve({ status: 200, body: json }) },
    { method: 'GET', pattern: '/raw', operationId: 'Raw', auth: 'none', handle: () => Promise.resolve({ status: 200, body: bytes, contentType: 'application/vnd.ipld.raw' }) },
    { method: 'POST', pattern: '/post', operationId: 'Post', auth: 'none', maxBodyBytes: 10, handle: () => Promise.resolve({ status: 202, body: {} }) },
  ];
  const s = server(0, new Router(routes));
  const port = await s.listen();
  t.teardown(() => s.close());
  const url = (p: string): string => `http://127.0.0.1:${port}${p}`;

  const get = await fetch(url('/json'));
  const getBody = await get.text();
  const head = await fetch(url('/json'), { method: 'HEAD' });
  t.equal(head.status, 200);
  t.equal(await head.text(), '');
  t.equal(head.headers.get('content-length'), String(Buffer.byteLength(getBody)));
  t.equal(head.headers.get('content-type'), 'application/json');
  t.ok(head.headers.get('x-correlation-id'));

  const raw = await fetch(url('/raw'), { method: 'HEAD' });
  t.equal(raw.status, 200);
  t.equal(raw.headers.get('content-length'), String(bytes.length));
  t.equal(raw.headers.get('content-type'), 'application/vnd.ipld.raw');

  const notAllowed = await fetch(url('/post'), { method: 'HEAD' });
  t.equal(notAllowed.status, 405);
  t.equal(await notAllowed.text(), '');
  t.equal(notAllowed.headers.get('allow'), 'POST');
  const postOnGet = await fetch(url('/json'), { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } });
  t.equal(postOnGet.status, 405);
  t.equal(postOnGet.headers.get('allow'), 'GET, HEAD');
  t.equal(((await postOnGet.json()) as { error: string }).error, 'method_not_allowed');
  t.equal((await fetch(url('/nowhere'), { method: 'HEAD' })).status, 404);
});
