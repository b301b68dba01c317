import { AdminAuthenticator } from '../app/admin-auth.js';
import type { Authenticator } from '../app/authenticator.js';
import type { EvidenceAccess } from '../app/evidence-access.js';
import type { HealthMonitor } from '../app/health.js';
import type { KeyAdmin } from '../app/key-admin.js';
import type { AuditLog } from '../domain/audit/ports.js';
import type { RateLimiter } from '../domain/limits/ports.js';
import type { AccessLevel } from '../domain/keys/types.js';
import { createAdminServices } from '../app/api-services.js';
import { componentLogger, type Logger } from '../util/logger.js';
import { routesOf } from './route-table.js';
import { Router } from './router.js';
import { UwsHttpServer } from './uws-server.js';

/**
 * The administration listener: key and retrieval-policy administration and the detailed health
 * report, on an address and port of their own (loopback by default), so the public port answers
 * 404 for every admin path and no firewall rule is what protects key minting. A second server
 * instance with its own router; the HTTP rules (limits, error bodies) are the public one's.
 */

export interface AdminListenerOptions {
  readonly host: string;
  readonly port: number;
  readonly token: string;
  /** Failed token attempts per client address and minute before 429. */
  readonly maxFailures: number;
  readonly allowSlowHttp: boolean;
  readonly keys: KeyAdmin;
  readonly health: HealthMonitor;
  readonly audit: AuditLog;
  readonly policies: EvidenceAccess;
  /** The public listener's, so a key revoked here stops working there at once. */
  readonly authenticator: Authenticator;
  readonly rateLimiter: RateLimiter;
  readonly rateLimits: Readonly<Record<AccessLevel, number>>;
  readonly rateWindowMs: number;
  /** The `main` component logger by default. */
  readonly logger?: Logger;
  /** The native addon holding the request-framing guard (see HttpServerOptions). */
  readonly nativeAddonFile?: string | undefined;
}

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/i;

export interface AdminListener {
  readonly port: number;
  close(): void;
  /** Graceful stop: no new connection; answers close theirs (UwsHttpServer.stopAccepting). */
  stopAccepting(): void;
  /** Resolves true once no request is in flight, false at the deadline. */
  drained(deadlineAtMs: number): Promise<boolean>;
}

/** Resolves once bound; logs `admin listening` with the port (useful with port 0). */
export async function startAdminListener(o: AdminListenerOptions): Promise<AdminListener> {
  const server = new UwsHttpServer({
    host: o.host,
    port: o.port,
    router: new Router(
      routesOf(
        'admin',
        { admin: createAdminServices({ keys: o.keys, health: o.health, audit: o.audit, policies: o.policies, onKeyChanged: (keyId) => o.authenticator.invalidate(keyId) }) },
        // Each admin route bounds its own body.
        { record: 0, bulk: 0 },
      ),
    ),
    authenticator: o.authenticator,
    rateLimiter: o.rateLimiter,
    rateLimits: o.rateLimits,
    rateWindowMs: o.rateWindowMs,
    adminAuth: new AdminAuthenticator({ token: o.token, maxFailures: o.maxFailures }),
    // Operators, not traffic: a small bound is plenty.
    maxInFlight: 256,
    allowSlowHttp: o.allowSlowHttp,
    nativeAddonFile: o.nativeAddonFile,
  });
  const port = await server.listen();
  const log = o.logger ?? componentLogger('main');
  log.info({ host: o.host, port }, 'admin listening');
  if (!LOOPBACK.test(o.host)) log.warn({ host: o.host }, 'the administration listener is not on loopback: keep its port off public networks');
  return { port, close: () => server.close(), stopAccepting: () => server.stopAccepting(), drained: (deadlineAtMs) => server.drained(deadlineAtMs) };
}
