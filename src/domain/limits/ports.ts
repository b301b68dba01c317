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

/** What an idempotency key holds. */
export type IdempotencyEntry =
  | { readonly state: 'pending'; readonly fingerprint: string }
  | { readonly state: 'done'; readonly fingerprint: string; readonly status: number; readonly body: string };

export type ReserveOutcome = { readonly reserved: true } | { readonly reserved: false; readonly entry: IdempotencyEntry };

export interface IdempotencyStore {
  /** Atomically claims `key` for a request with `fingerprint` (SET NX); else returns what holds it. */
  reserve(key: string, fingerprint: string, ttlMs: number): Promise<ReserveOutcome>;
  /** Records the answer of the request that reserved `key`, kept for ttlMs. */
  complete(key: string, entry: IdempotencyEntry & { state: 'done' }, ttlMs: number): Promise<void>;
  /** Frees a reservation whose request failed before it was accepted. */
  release(key: string, fingerprint: string): Promise<void>;
  get(key: string): Promise<IdempotencyEntry | null>;
}

export interface AdmissionStore extends RateLimiter, IdempotencyStore {
  check(): Promise<void>;
  close(): Promise<void>;
}
