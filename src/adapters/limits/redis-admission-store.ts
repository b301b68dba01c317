import { Redis, type Result } from 'ioredis';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger } from '../../util/logger.js';
import type { AdmissionStore, IdempotencyEntry, RateDecision, ReserveOutcome } from '../../domain/limits/ports.js';
import { connectScripted } from '../redis/scripted-redis.js';

const log = componentLogger('redis-admission-store');

// One atomic decision per request: read, compare and count in one script, so concurrent requests
// of one bucket can never overshoot the limit, and a denied request is not counted.
// KEYS[1] window counter; ARGV[1] limit; ARGV[2] ttl ms. Returns { allowed (0|1), count }.
const RATE_TAKE_LUA = `
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
local limit = tonumber(ARGV[1])
if count >= limit then
  return {0, count}
end
count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return {1, count}
`;

// SET NX, and the current holder in the same step when the key is taken (a separate GET could
// find the key already released or expired and report nothing). KEYS[1] key; ARGV[1] entry
// JSON; ARGV[2] ttl ms. Returns nil when reserved, else the stored entry.
const IDEM_RESERVE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return nil
end
return redis.call('GET', KEYS[1])
`;

// Stores the answer unless the key now belongs to another request (a different fingerprint):
// a reservation that outlived its TTL may have been taken by someone else meanwhile.
// KEYS[1] key; ARGV[1] entry JSON; ARGV[2] ttl ms; ARGV[3] fingerprint. Returns 1 when stored.
const IDEM_COMPLETE_LUA = `
local current = redis.call('GET', KEYS[1])
if current then
  local ok, entry = pcall(cjson.decode, current)
  if not ok or type(entry) ~= 'table' or entry.fingerprint ~= ARGV[3] then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

// Compare-and-delete: only the request's own, still pending reservation is removed; never a
// finished answer and never another request's claim. KEYS[1] key; ARGV[1] fingerprint.
const IDEM_RELEASE_LUA = `
local current = redis.call('GET', KEYS[1])
if not current then
  return 0
end
local ok, entry = pcall(cjson.decode, current)
if ok and type(entry) == 'table' and entry.state == 'pending' and entry.fingerprint == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    drisRateTake(key: string, limit: number, ttlMs: number): Result<[number, number], Context>;
    drisIdemReserve(key: string, entryJson: string, ttlMs: number): Result<string | null, Context>;
    drisIdemComplete(key: string, entryJson: string, ttlMs: number, fingerprint: string): Result<number, Context>;
    drisIdemRelease(key: string, fingerprint: string): Result<number, Context>;
  }
}

export interface RedisAdmissionStoreOptions {
  /** `redis://[user:password@]host:port[/db]`; `rediss://` for TLS. */
  readonly url: string;
  /** Overrides a password in the URL. */
  readonly password?: string;
  /** Prefix of every key; default `dris:`. */
  readonly keyPrefix?: string;
  /** Connection timeout, milliseconds; default 3000. */
  readonly connectTimeoutMs?: number;
  /** Longest wait for one command, milliseconds; default 2000. */
  readonly commandTimeoutMs?: number;
}

export const REDIS_ADMISSION_DEFAULTS = {
  keyPrefix: 'dris:',
  connectTimeoutMs: 3000,
  commandTimeoutMs: 2000,
} as const;

// Keeps a window's counter a little past its end so a request stamped just before the boundary
// still finds it; the window index in the key, not the TTL, is what separates windows.
const WINDOW_GRACE_MS = 60_000;

// Server-side conditions that pass on their own (loading a dataset, failover, memory pressure).
const TRANSIENT_REPLY = /^(OOM|LOADING|BUSY|MASTERDOWN|READONLY|CLUSTERDOWN|TRYAGAIN)\b/;

function translate(err: unknown, what: string): DrisError {
  if (err instanceof DrisError) return err;
  if (err instanceof Error) {
    if (err.message === 'Command timed out') return new DrisError('timeout', `Redis ${what} timed out`, { cause: err });
    if (err.name === 'ReplyError' && !TRANSIENT_REPLY.test(err.message)) {
      return new DrisError('internal_error', `Redis ${what} failed`, { cause: err });
    }
  }
  return new DrisError('dependency_unavailable', `Redis ${what} failed`, { cause: err });
}

function parseEntry(raw: string): IdempotencyEntry {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch (err) {
    throw new DrisError('internal_error', 'malformed idempotency entry', { cause: err });
  }
  const v = value as Partial<Record<'state' | 'fingerprint' | 'status' | 'body', unknown>>;
  if (typeof v === 'object' && v !== null && typeof v.fingerprint === 'string') {
    if (v.state === 'pending') return { state: 'pending', fingerprint: v.fingerprint };
    if (v.state === 'done' && typeof v.status === 'number' && typeof v.body === 'string') {
      return { state: 'done', fingerprint: v.fingerprint, status: v.status, body: v.body };
    }
  }
  throw new DrisError('internal_error', 'malformed idempotency entry');
}

function ttlArg(ttlMs: number): number {
  if (!Number.isFinite(ttlMs) || ttlMs < 1) throw new DrisError('internal_error', 'idempotency TTL must be at least 1 ms');
  return Math.ceil(ttlMs);
}

export class RedisAdmissionStore implements AdmissionStore {
  private closePromise: Promise<void> | null = null;

  private constructor(
    private readonly redis: Redis,
    private readonly prefix: string,
  ) {}

  /** Connects and pings; an unreachable Redis fails here, at start, not on the first request. */
  static async connect(options: RedisAdmissionStoreOptions): Promise<RedisAdmissionStore> {
    let connected = false;
    const redis = new Redis(options.url, {
      lazyConnect: true,
      connectTimeout: options.connectTimeoutMs ?? REDIS_ADMISSION_DEFAULTS.connectTimeoutMs,
      commandTimeout: options.commandTimeoutMs ?? REDIS_ADMISSION_DEFAULTS.commandTimeoutMs,
      // A request waiting on an unreachable Redis is worse than a prompt 503: no offline queue, no
      // command retries; reconnection itself goes on in the background.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      enableAutoPipelining: true,
      retryStrategy: (times: number) => (connected ? Math.min(100 * times, 2000) : null),
      connectionName: 'dris',
      ...(options.password !== undefined ? { password: options.password } : {}),
    });
    const scripts = [
      { name: 'drisRateTake', numberOfKeys: 1, lua: RATE_TAKE_LUA },
      { name: 'drisIdemReserve', numberOfKeys: 1, lua: IDEM_RESERVE_LUA },
      { name: 'drisIdemComplete', numberOfKeys: 1, lua: IDEM_COMPLETE_LUA },
      { name: 'drisIdemRelease', numberOfKeys: 1, lua: IDEM_RELEASE_LUA },
    ];
    await connectScripted(redis, scripts, log, (err) => translate(err, 'connect'));
    connected = true;
    return new RedisAdmissionStore(redis, options.keyPrefix ?? REDIS_ADMISSION_DEFAULTS.keyPrefix);
  }

  async take(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    if (!Number.isInteger(windowMs) || windowMs <= 0) throw new DrisError('internal_error', 'rate window must be a positive integer');
    const windowIndex = Math.floor(nowMs / windowMs);
    const resetAtMs = (windowIndex + 1) * windowMs;
    const key = `${this.prefix}rl:${bucket}:${windowIndex}`;
    let reply: [number, number];
    try {
      reply = await this.redis.drisRateTake(key, Math.max(0, Math.floor(limit)), Math.max(1, resetAtMs - nowMs) + WINDOW_GRACE_MS);
    } catch (err) {
      throw translate(err, 'rate limit');
    }
    const [allowed, count] = reply;
    return {
      allowed: allowed === 1,
      limit,
      remaining: allowed === 1 ? Math.max(0, limit - count) : 0,
      resetAtMs,
    };
  }

  async reserve(key: string, fingerprint: string, ttlMs: number): Promise<ReserveOutcome> {
    const entry: IdempotencyEntry = { state: 'pending', fingerprint };
    let existing: string | null;
    try {
      existing = await this.redis.drisIdemReserve(this.idemKey(key), JSON.stringify(entry), ttlArg(ttlMs));
    } catch (err) {
      throw translate(err, 'idempotency reserve');
    }
    return existing === null ? { reserved: true } : { reserved: false, entry: parseEntry(existing) };
  }

  async complete(key: string, entry: IdempotencyEntry & { state: 'done' }, ttlMs: number): Promise<void> {
    const stored: IdempotencyEntry = { state: 'done', fingerprint: entry.fingerprint, status: entry.status, body: entry.body };
    let written: number;
    try {
      written = await this.redis.drisIdemComplete(this.idemKey(key), JSON.stringify(stored), ttlArg(ttlMs), entry.fingerprint);
    } catch (err) {
      throw translate(err, 'idempotency complete');
    }
    if (written !== 1) log.warn('idempotency key taken by another request before completion; answer not stored');
  }

  async release(key: string, fingerprint: string): Promise<void> {
    try {
      await this.redis.drisIdemRelease(this.idemKey(key), fingerprint);
    } catch (err) {
      throw translate(err, 'idempotency release');
    }
  }

  async get(key: string): Promise<IdempotencyEntry | null> {
    let raw: string | null;
    try {
      raw = await this.redis.get(this.idemKey(key));
    } catch (err) {
      throw translate(err, 'idempotency get');
    }
    return raw === null ? null : parseEntry(raw);
  }

  async check(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (err) {
      throw translate(err, 'ping');
    }
  }

  close(): Promise<void> {
    this.closePromise ??= (async () => {
      try {
        await this.redis.quit();
      } catch {
        // Already disconnected: nothing left to flush.
        this.redis.disconnect();
      }
    })();
    return this.closePromise;
  }

  private idemKey(key: string): string {
    return `${this.prefix}idem:${key}`;
  }
}
