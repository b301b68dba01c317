/** Ports for request admission: rate limits and idempotency keys. */

export interface RateDecision {
  readonly allowed: boolean;
  /** Requests allowed per window. */
  readonly limit: number;
  /** Requests left in the window after this one. */
  readonly remaining: number;
  /** End of the current window, epoch milliseconds. */
  readonly resetAtMs: number;
}

export interface RateLimiter {
  /**
   * Counts one request of `bucket` against `limit` per fixed window of windowMs aligned to the
   * epoch; a denied request is not counted. One atomic decision per call.
   */
  take(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision>;
  /** take(), answered at once: present when the limiter keeps its counters in this process. */
  takeNow?(bucket: string, limit: number, windowMs: number, nowMs: number): RateDecision;
}

/**
 * What an idempotency key holds. A pending entry is a short lease owned by one request (its token)
 * and renewed while that request works: a request that dies with its process lets the key go
 * within one lease. A done entry holds the answer for the whole idempotency window.
 */
export type IdempotencyEntry =
  | { readonly state: 'pending'; readonly fingerprint: string; readonly token: string }
  | { readonly state: 'done'; readonly fingerprint: string; readonly status: number; readonly body: string };

export type DoneEntry = IdempotencyEntry & { readonly state: 'done' };

export type ReserveOutcome = { readonly reserved: true } | { readonly reserved: false; readonly entry: IdempotencyEntry };

/** One key a request wants to own, with what it is bound to. */
export interface IdempotencyClaim {
  readonly key: string;
  readonly fingerprint: string;
}

export interface IdempotencyStore {
  /**
   * Atomically claims each key not held by anyone (SET NX) as a pending lease of leaseMs owned by
   * `token`; for a held key, returns what holds it. All claims in one round trip; the outcomes are
   * in the order of `claims`.
   */
  reserveMany(claims: readonly IdempotencyClaim[], token: string, leaseMs: number): Promise<ReserveOutcome[]>;
  /** Extends the leases `token` still owns among `keys` to leaseMs from now; others are left alone. */
  renew(keys: readonly string[], token: string, leaseMs: number): Promise<void>;
  /**
   * Stores the answer for ttlMs, once it is durable; only where the key is free or pending for the
   * same fingerprint (whoever owns the lease: every owner of one fingerprint publishes under one
   * message id and ends with the same records). A done entry is never replaced. True when stored.
   */
  complete(key: string, entry: DoneEntry, ttlMs: number): Promise<boolean>;
  /** Frees the pending leases `token` owns among `keys` (a request that failed before storing). */
  release(keys: readonly string[], token: string): Promise<void>;
  get(key: string): Promise<IdempotencyEntry | null>;
}

export interface AdmissionStore extends RateLimiter, IdempotencyStore {
  check(): Promise<void>;
  close(): Promise<void>;
}
