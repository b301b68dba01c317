import { createHash, timingSafeEqual } from 'node:crypto';
import { DrisError } from '../errors/dris-error.js';
import { componentLogger, type Logger } from '../util/logger.js';

/**
 * The admin token check of the administration listener. Both sides are compared as SHA-256
 * digests with timingSafeEqual, so the time taken depends neither on how much of a guess is right
 * nor on the guess's or the token's length. Failed attempts are counted per client address in a
 * window: past the budget every request from that address answers 429 (right token or not, or the
 * budget would not bound guessing) until the window ends. Failures are logged with the address,
 * never with what was sent.
 */

export interface AdminAuthOptions {
  readonly token: string;
  /** Failed attempts allowed per address and window. */
  readonly maxFailures: number;
  /** Length of the counting window, milliseconds (default one minute). */
  readonly windowMs?: number;
  /** Addresses tracked at once; when all are in use, new addresses are refused until some expire. */
  readonly maxAddresses?: number;
  readonly now?: () => number;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
}

interface Failures {
  count: number;
  readonly windowEndsMs: number;
}

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** The token of `Authorization: Bearer <token>`; '' when the header is absent or of another scheme. */
export function bearerToken(authorization: string | undefined): string {
  if (authorization === undefined) return '';
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
  return m?.[1] ?? '';
}

export class AdminAuthenticator {
  readonly #expected: Buffer;
  readonly #failures = new Map<string, Failures>();
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  readonly #now: () => number;
  readonly #log: Logger;

  constructor(private readonly options: AdminAuthOptions) {
    this.#log = options.logger ?? componentLogger('admin-auth');
    this.#expected = digest(options.token);
    this.#windowMs = options.windowMs ?? 60_000;
    this.#maxAddresses = options.maxAddresses ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  /** Returns when the header carries the token; throws 401 admin_unauthorized or 429 otherwise. */
  check(authorization: string | undefined, remoteAddress: string): void {
    const now = this.#now();
    let entry = this.#failures.get(remoteAddress);
    if (entry !== undefined && entry.windowEndsMs <= now) {
      this.#failures.delete(remoteAddress);
      entry = undefined;
    }
    if (entry !== undefined && entry.count >= this.options.maxFailures) throw this.#throttled(entry.windowEndsMs, now);
    // The digest is computed whatever was sent, so a missing header costs what a wrong one does.
    const presented = digest(bearerToken(authorization));
    if (timingSafeEqual(presented, this.#expected)) return;

    if (entry === undefined) {
      if (this.#failures.size >= this.#maxAddresses) this.#expire(now);
      if (this.#failures.size >= this.#maxAddresses) {
        this.#log.warn({ remote: remoteAddress, tracked: this.#failures.size }, 'admin authentication failed; too many addresses failing at once, refusing new ones');
        throw this.#throttled(now + this.#windowMs, now);
      }
      entry = { count: 0, windowEndsMs: now + this.#windowMs };
      this.#failures.set(remoteAddress, entry);
    }
    entry.count += 1;
    const throttled = entry.count >= this.options.maxFailures;
    this.#log.warn(
      { remote: remoteAddress, failures: entry.count, limit: this.options.maxFailures, headerPresent: authorization !== undefined, throttled },
      throttled ? 'admin authentication failed; address throttled until its window ends' : 'admin authentication failed',
    );
    throw new DrisError('admin_unauthorized', 'administration needs the admin token');
  }

  #expire(now: number): void {
    for (const [address, f] of this.#failures) if (f.windowEndsMs <= now) this.#failures.delete(address);
  }

  #throttled(windowEndsMs: number, now: number): DrisError {
    const retryAfter = Math.max(1, Math.ceil((windowEndsMs - now) / 1000));
    return new DrisError('rate_limit_exceeded', 'too many failed admin authentication attempts from this address', {
      extra: { status: 429, retryAfter, resetTime: new Date(windowEndsMs).toISOString() },
      headers: { 'Retry-After': String(retryAfter) },
    });
  }
}
