import t from 'tap';
import type { Authenticator } from '../../src/app/authenticator.js';
import type { RateLimiter } from '../../src/domain/limits/ports.js';
import { DrisError } from '../../src/errors/dris-error.js';
import type { Router } from '../../src/http/router.js';
import { UwsHttpServer, type HttpServerOptions } from '../../src/http/uws-server.js';

/** A port already served makes start-up fail instead of sharing the port (uWS's SO_REUSEPORT). */

function server(port: number): UwsHttpServer {
  const options: HttpServerOptions = {
    host: '127.0.0.1',
    port,
    router: {} as Router,
    authenticator: {} as Authenticator,
    rateLimiter: {} as RateLimiter,
    rateLimits: { standard: 1, premium: 1, enterprise: 1 },
    rateWindowMs: 3_600_000,
    adminToken: 'x'.repeat(32),
    maxInFlight: 1,
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
