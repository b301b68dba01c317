import type { FieldError } from '../errors/dris-error.js';

/**
 * Limits of the HTTP front (DRIS_HTTP_*), read with the rest of the configuration in config.ts.
 * Every one bounds what a single client can hold of the service: see docs/operations.md.
 */
export interface HttpConfig {
  /** Request line plus header fields, bytes; a larger head is answered 431. */
  readonly maxHeaderBytes: number;
  /** Header field lines per request; more are answered 431 (uWebSockets.js 20.30 parses 48 at most). */
  readonly maxHeaderFields: number;
  /** A request head not complete this long after its first byte is answered 408, milliseconds. */
  readonly headTimeoutMs: number;
  /** A body not complete this long after its head is answered 408, milliseconds. */
  readonly bodyTimeoutMs: number;
  /** Bytes of request bodies buffered at once, all requests together; beyond it 503. */
  readonly bodyBudgetBytes: number;
  /** Requests being handled at once; beyond it 503. */
  readonly maxInFlight: number;
  /** The Retry-After of a 503 that names no wait of its own, seconds. */
  readonly retryAfterSeconds: number;
}

export const HTTP_DEFAULTS: HttpConfig = {
  maxHeaderBytes: 16 * 1024,
  maxHeaderFields: 48,
  headTimeoutMs: 5000,
  bodyTimeoutMs: 30_000,
  bodyBudgetBytes: 256 * 1024 * 1024,
  maxInFlight: 10_000,
  retryAfterSeconds: 1,
};

export interface IntReader {
  readonly problems: FieldError[];
  int(name: string, def: number, min: number, max: number): number;
}

/** `largestBodyBytes`: the largest body a route accepts, which the body budget must hold. */
export function readHttpConfig(r: IntReader, largestBodyBytes: number): HttpConfig {
  const d = HTTP_DEFAULTS;
  const cfg: HttpConfig = {
    maxHeaderBytes: r.int('DRIS_HTTP_MAX_HEADER_BYTES', d.maxHeaderBytes, 1024, 64 * 1024),
    maxHeaderFields: r.int('DRIS_HTTP_MAX_HEADER_FIELDS', d.maxHeaderFields, 8, 48),
    // uWS closes a connection without a word when no head arrived for about 10 s: the head
    // deadline must fall before that for a slow head to get its 408.
    headTimeoutMs: r.int('DRIS_HTTP_HEAD_TIMEOUT_MS', d.headTimeoutMs, 100, 8000),
    bodyTimeoutMs: r.int('DRIS_HTTP_BODY_TIMEOUT_MS', d.bodyTimeoutMs, 100, 3_600_000),
    bodyBudgetBytes: r.int('DRIS_HTTP_BODY_BUDGET_BYTES', Math.max(d.bodyBudgetBytes, largestBodyBytes), 1024, 64 * 1024 * 1024 * 1024),
    maxInFlight: r.int('DRIS_HTTP_MAX_IN_FLIGHT', d.maxInFlight, 1, 1_000_000),
    retryAfterSeconds: r.int('DRIS_RETRY_AFTER_SECONDS', d.retryAfterSeconds, 1, 3600),
  };
  if (cfg.bodyBudgetBytes < largestBodyBytes) {
    r.problems.push({ path: 'DRIS_HTTP_BODY_BUDGET_BYTES', code: 'out_of_range', message: `must hold the largest accepted body (${largestBodyBytes} bytes)` });
  }
  return cfg;
}
