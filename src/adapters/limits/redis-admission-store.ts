import { Redis, type Result } from 'ioredis';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import type { AdmissionStore, DoneEntry, IdempotencyClaim, IdempotencyEntry, RateDecision, ReserveOutcome } from '../../domain/limits/ports.js';
import { connectScripted } from '../redis/scripted-redis.js';


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

// Every claim of a request in one step: SET NX PX for each key, or the current holder when it is
// taken (a separate GET could find the key already released or expired and report nothing).
// KEYS the keys; ARGV[1] lease ms; ARGV[1 + i] the pending entry JSON of KEYS[i]. Returns, per
// key, 1 when reserved, else the stored entry.
const IDEM_RESERVE_MANY_LUA = `
local out = {}
for i, key in ipairs(KEYS) do
  if redis.call('SET', key, ARGV[i + 1], 'NX', 'PX', ARGV[1]) then
    out[i] = 1
  else
    out[i] = redis.call('GET', key) or 1
  end
end
return out
`;

// Extends the leases a request still owns. KEYS the keys; ARGV[1] token; ARGV[2] lease ms.
const IDEM_RENEW_LUA = `
for _, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if current then
    local ok, entry = pcall(cjson.decode, current)
    if ok and type(entry) == 'table' and entry.state == 'pending' and entry.token == ARGV[1] then
      redis.call('PEXPIRE', key, ARGV[2])
    end
  end
end
return 0
`;

// Stores the answer unless an answer is already stored: the first one stays for the whole window.
// A pending lease of any owner gives way, since every owner publishes under the key's one message
// id and ends with the same records. KEYS[1] key; ARGV[1] entry JSON; ARGV[2] ttl ms.
// Returns 1 when stored.
const IDEM_COMPLETE_LUA = `
local current = redis.call('GET', KEYS[1])
if current then
  local ok, entry = pcall(cjson.decode, current)
  if ok and type(entry) == 'table' and entry.state == 'done' then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
`;

// Compare-and-delete: only the request's own, still pending leases are removed; never a finished
// answer and never another request's claim. KEYS the keys; ARGV[1] token.
const IDEM_RELEASE_LUA = `
local n = 0
for _, key in ipairs(KEYS) do
  local current = redis.call('GET', key)
  if current then
    local ok, entry = pcall(cjson.decode, current)
    if ok and type(entry) == 'table' and entry.state == 'pending' and entry.token == ARGV[1] then
      n = n + redis.call('DEL', key)
    end
  end
end
return n
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    drisRateTake(key: string, limit: number, ttlMs: number): Result<[number, number], Context>;
    drisIdemReserveMany(numKeys: number, ...keysAndArgs: (string | number)[]): Result<(number | string)[], Context>;
    drisIdemRenew(numKeys: number, ...keysAndArgs: (string | number)[]): Result<number, Context>;
    drisIdemComplete(key: string, entryJson: string, ttlMs: number): Result<number, Context>;
    drisIdemRelease(numKeys: number, ...keysAndArgs: string[]): Result<number, Context>;
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
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
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
  const v = value as Partial<Record<'state' | 'fingerprint' | 'status' | 'body' | 'token', unknown>>;
  if (typeof v === 'object' && v !== null && typeof v.fingerprint === 'string') {
    // Entries written before leases had no token: nobody can renew or release them, they expire.
    if (v.state === 'pending') return { state: 'pending', fingerprint: v.fingerprint, token: typeof v.token === 'string' ? v.token : '' };
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
      // Scripts over a variable number of keys take it as their first argument.
      { name: 'drisIdemReserveMany', lua: IDEM_RESERVE_MANY_LUA },
      { name: 'drisIdemRenew', lua: IDEM_RENEW_LUA },
      { name: 'drisIdemComplete', numberOfKeys: 1, lua: IDEM_COMPLETE_LUA },
      { name: 'drisIdemRelease', lua: IDEM_RELEASE_LUA },
    ];
    await connectScripted(redis, scripts, options.logger ?? componentLogger('redis-admission-store'), (err) => translate(err, 'connect'));
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

  async reserveMany(claims: readonly IdempotencyClaim[], token: string, leaseMs: number): Promise<ReserveOutcome[]> {
    if (claims.length === 0) return [];
    const keys = claims.map((c) => this.idemKey(c.key));
    const entries = claims.map((c) => JSON.stringify({ state: 'pending', fingerprint: c.fingerprint, token } satisfies IdempotencyEntry));
    let reply: (number | string)[];
    try {
      reply = await this.redis.drisIdemReserveMany(keys.length, ...keys, ttlArg(leaseMs), ...entries);
    } catch (err) {
      throw translate(err, 'idempotency reserve');
    }
    return claims.map((_, i): ReserveOutcome => {
      const r = reply[i];
      return typeof r === 'string' ? { reserved: false, entry: parseEntry(r) } : { reserved: true };
    });
  }

  async renew(keys: readonly string[], token: string, leaseMs: number): Promise<void> {
    if (keys.length === 0) return;
    try {
      await this.redis.drisIdemRenew(keys.length, ...keys.map((k) => this.idemKey(k)), token, ttlArg(leaseMs));
    } catch (err) {
      throw translate(err, 'idempotency renew');
    }
  }

  async complete(key: string, entry: DoneEntry, ttlMs: number): Promise<boolean> {
    const stored: IdempotencyEntry = { state: 'done', fingerprint: entry.fingerprint, status: entry.status, body: entry.body };
    let written: number;
    try {
      written = await this.redis.drisIdemComplete(this.idemKey(key), JSON.stringify(stored), ttlArg(ttlMs));
    } catch (err) {
      throw translate(err, 'idempotency complete');
    }
    return written === 1;
  }

  async release(keys: readonly string[], token: string): Promise<void> {
    if (keys.length === 0) return;
    try {
      await this.redis.drisIdemRelease(keys.length, ...keys.map((k) => this.idemKey(k)), token);
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
