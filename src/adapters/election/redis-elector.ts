import { randomBytes } from 'node:crypto';
import { Redis, type Result } from 'ioredis';
import { DrisError } from '../../errors/dris-error.js';
import type { LeaderElector, Leadership } from '../../domain/pipeline/ports.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { connectScripted } from '../redis/scripted-redis.js';

/**
 * Leader election on Redis: the leader holds `<prefix>anchorer:leader` (SET NX PX, its own random
 * token as the value) and renews it every third of the lease; each new term takes the next value
 * of `<prefix>anchorer:epoch` (INCR) in the same script, so epochs follow the order of terms.
 *
 * A leader gives its term up before the lease can lapse on the server: the lease counts from when
 * the acquiring or renewing command was sent, and the term ends locally a guard interval before
 * that deadline unless a renewal succeeded meanwhile. A renewal that finds another token (the key
 * expired and was taken) ends the term at once. Renewals and releases compare the token first,
 * so a process never extends or deletes another's lease.
 */

// KEYS[1] leader key, KEYS[2] epoch counter; ARGV[1] token, ARGV[2] lease ms. The epoch, 0 when taken.
const ACQUIRE_LUA = `
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return redis.call('INCR', KEYS[2])
end
return 0
`;

// KEYS[1] leader key; ARGV[1] token, ARGV[2] lease ms. 1 when renewed, 0 when the lease is not ours.
const RENEW_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

// KEYS[1] leader key; ARGV[1] token. Compare-and-delete.
const RELEASE_LUA = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    drisLeaderAcquire(leaderKey: string, epochKey: string, token: string, leaseMs: number): Result<number, Context>;
    drisLeaderRenew(leaderKey: string, token: string, leaseMs: number): Result<number, Context>;
    drisLeaderRelease(leaderKey: string, token: string): Result<number, Context>;
  }
}

export interface RedisElectorOptions {
  readonly url: string;
  readonly password?: string;
  /** Default `dris:`. */
  readonly keyPrefix?: string;
  /** Lease of a term, milliseconds; a dead leader is replaced within about this long. Default 10 000. */
  readonly leaseMs?: number;
  /** Between renewals; default a third of the lease. */
  readonly renewEveryMs?: number;
  /** Shown in the leader key's logs; default the host's pid and a random suffix. */
  readonly nodeId?: string;
  readonly logger?: Logger;
}

interface Term {
  readonly token: string;
  readonly epoch: number;
  readonly controller: AbortController;
  /** The lease is ours until then, by the local clock (counted from the command's sending). */
  validUntil: number;
  renewTimer: NodeJS.Timeout | null;
  deadlineTimer: NodeJS.Timeout | null;
}

function translate(err: unknown, what: string): DrisError {
  if (err instanceof DrisError) return err;
  if (err instanceof Error && err.message === 'Command timed out') return new DrisError('timeout', `Redis ${what} timed out`, { cause: err });
  return new DrisError('dependency_unavailable', `Redis ${what} failed`, { cause: err });
}

export class RedisElector implements LeaderElector {
  private term: Term | null = null;
  private readonly leaderKey: string;
  private readonly epochKey: string;
  private readonly leaseMs: number;
  private readonly renewEveryMs: number;
  /** Margin kept before the lease's deadline for clock drift and the command's flight time. */
  private readonly guardMs: number;
  private readonly nodeId: string;
  private readonly log: Logger;
  private closed = false;

  private constructor(
    private readonly redis: Redis,
    options: RedisElectorOptions,
  ) {
    const prefix = options.keyPrefix ?? 'dris:';
    this.leaderKey = `${prefix}anchorer:leader`;
    this.epochKey = `${prefix}anchorer:epoch`;
    this.leaseMs = options.leaseMs ?? 10_000;
    if (!Number.isSafeInteger(this.leaseMs) || this.leaseMs < 100) throw new DrisError('config_invalid', 'the leader lease must be at least 100 ms');
    this.renewEveryMs = options.renewEveryMs ?? Math.floor(this.leaseMs / 3);
    this.guardMs = Math.max(20, Math.min(1000, Math.floor(this.leaseMs / 10)));
    this.nodeId = options.nodeId ?? `${process.pid}-${randomBytes(3).toString('hex')}`;
    this.log = options.logger ?? componentLogger('leader-election');
  }

  /** Connects and pings: an unreachable Redis fails at start. */
  static async connect(options: RedisElectorOptions): Promise<RedisElector> {
    const leaseMs = options.leaseMs ?? 10_000;
    const redis = new Redis(options.url, {
      lazyConnect: true,
      connectTimeout: 3000,
      // A command slower than a third of the lease is as good as a failed one: the term must not
      // hang on it past its deadline.
      commandTimeout: Math.max(50, Math.floor(leaseMs / 3)),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      retryStrategy: (times: number) => Math.min(100 * times, 2000),
      connectionName: 'dris-leader',
      ...(options.password !== undefined ? { password: options.password } : {}),
    });
    const scripts = [
      { name: 'drisLeaderAcquire', numberOfKeys: 2, lua: ACQUIRE_LUA },
      { name: 'drisLeaderRenew', numberOfKeys: 1, lua: RENEW_LUA },
      { name: 'drisLeaderRelease', numberOfKeys: 1, lua: RELEASE_LUA },
    ];
    await connectScripted(redis, scripts, options.logger ?? componentLogger('leader-election'), (err) => translate(err, 'connect'));
    return new RedisElector(redis, options);
  }

  get id(): string {
    return this.nodeId;
  }

  async tryAcquire(): Promise<Leadership | null> {
    if (this.closed) throw new DrisError('dependency_unavailable', 'the elector is closed');
    if (this.term !== null) return { epoch: this.term.epoch, lost: this.term.controller.signal };
    const token = `${this.nodeId}:${randomBytes(8).toString('hex')}`;
    const sentAt = Date.now();
    let epoch: number;
    try {
      epoch = await this.redis.drisLeaderAcquire(this.leaderKey, this.epochKey, token, this.leaseMs);
    } catch (err) {
      throw translate(err, 'leader acquire');
    }
    if (epoch === 0) return null;
    const term: Term = { token, epoch, controller: new AbortController(), validUntil: sentAt + this.leaseMs, renewTimer: null, deadlineTimer: null };
    this.term = term;
    this.armDeadline(term);
    this.scheduleRenew(term);
    this.log.info({ epoch, nodeId: this.nodeId, leaseMs: this.leaseMs }, 'leader: term started');
    return { epoch, lost: term.controller.signal };
  }

  async resign(): Promise<void> {
    const term = this.term;
    if (term === null) return;
    this.end(term, 'resigned');
    try {
      await this.redis.drisLeaderRelease(this.leaderKey, term.token);
    } catch (err) {
      // The lease then lapses on its own.
      this.log.warn({ code: translate(err, 'leader release').code }, 'leader: could not release the lease; it will expire');
    }
  }

  async check(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (err) {
      throw translate(err, 'ping');
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    await this.resign();
    this.closed = true;
    try {
      await this.redis.quit();
    } catch {
      this.redis.disconnect();
    }
  }

  private scheduleRenew(term: Term): void {
    term.renewTimer = setTimeout(() => {
      term.renewTimer = null;
      this.renew(term).catch((err: unknown) => this.log.error({ err }, 'leader: renewal failed unexpectedly'));
    }, this.renewEveryMs);
    term.renewTimer.unref();
  }

  private async renew(term: Term): Promise<void> {
    if (this.term !== term) return;
    const sentAt = Date.now();
    let renewed: number;
    try {
      renewed = await this.redis.drisLeaderRenew(this.leaderKey, term.token, this.leaseMs);
    } catch (err) {
      // Not lost yet: the deadline timer ends the term if no renewal succeeds in time.
      this.log.warn({ epoch: term.epoch, code: translate(err, 'leader renew').code, msLeft: term.validUntil - Date.now() }, 'leader: renewal failed');
      if (this.term === term) this.scheduleRenew(term);
      return;
    }
    if (this.term !== term) return;
    if (renewed !== 1) {
      this.end(term, 'the lease is held by another process');
      return;
    }
    term.validUntil = sentAt + this.leaseMs;
    this.armDeadline(term);
    this.scheduleRenew(term);
  }

  private armDeadline(term: Term): void {
    if (term.deadlineTimer !== null) clearTimeout(term.deadlineTimer);
    term.deadlineTimer = setTimeout(() => this.end(term, 'the lease was not renewed in time'), Math.max(0, term.validUntil - this.guardMs - Date.now()));
    term.deadlineTimer.unref();
  }

  private end(term: Term, why: string): void {
    if (this.term !== term) return;
    this.term = null;
    if (term.renewTimer !== null) clearTimeout(term.renewTimer);
    if (term.deadlineTimer !== null) clearTimeout(term.deadlineTimer);
    if (why === 'resigned') this.log.info({ epoch: term.epoch }, 'leader: term ended (resigned)');
    else this.log.warn({ epoch: term.epoch, why }, 'leader: term lost');
    term.controller.abort(new DrisError('invalid_state', `leadership lost: ${why}`, { extra: { epoch: term.epoch } }));
  }
}
