import type { SessionState } from './clickhouse-chdb-engine.js';
import { ClickHouseException } from './clickhouse-http-errors.js';

/**
 * HTTP sessions (`session_id`) as the server keeps them: per user, expiring `session_timeout`
 * seconds (default 60, at most 3600) after their last request, one request at a time
 * (SESSION_IS_LOCKED otherwise), SESSION_NOT_FOUND with `session_check=1` for an unknown one,
 * ended by `close_session=1`. What a session keeps here is what SET and USE change; temporary
 * tables live in the one engine session and are not private to an HTTP session.
 */

interface Entry {
  readonly state: SessionState;
  timeoutMs: number;
  expiresAt: number;
  busy: boolean;
}

export interface SessionRequest {
  readonly user: string;
  readonly id: string;
  /** `session_timeout` as sent, if sent. */
  readonly timeout: string | undefined;
  readonly check: boolean;
}

const DEFAULT_TIMEOUT_S = 60;
const MAX_TIMEOUT_S = 3600;
/** Bounds memory: a client creating sessions without end is refused past this many. */
const MAX_SESSIONS = 10_000;

export class HttpSessions {
  readonly #entries = new Map<string, Entry>();

  /** Takes the session for one request; release() gives it back. */
  acquire(request: SessionRequest, now = Date.now()): { state: SessionState; release(close: boolean): void } {
    this.#sweep(now);
    const timeoutS = request.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(request.timeout);
    if (request.timeout !== undefined && !/^\d+$/.test(request.timeout)) {
      throw new ClickHouseException('INVALID_SESSION_TIMEOUT', `Invalid session timeout: '${request.timeout}'`);
    }
    if (timeoutS > MAX_TIMEOUT_S) {
      throw new ClickHouseException(
        'INVALID_SESSION_TIMEOUT',
        `Session timeout '${request.timeout ?? ''}' is larger than max_session_timeout: ${MAX_TIMEOUT_S}. Maximum session timeout could be modified in configuration file`,
      );
    }
    const key = `${request.user}\u0000${request.id}`;
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      if (request.check) throw new ClickHouseException('SESSION_NOT_FOUND', `Session ${request.id} not found`);
      if (this.#entries.size >= MAX_SESSIONS) throw new ClickHouseException('TOO_MANY_SIMULTANEOUS_QUERIES', 'Too many sessions');
      entry = { state: { settings: new Map(), database: null }, timeoutMs: 0, expiresAt: 0, busy: false };
      this.#entries.set(key, entry);
    }
    if (entry.busy) throw new ClickHouseException('SESSION_IS_LOCKED', `Session ${request.id} is locked by a concurrent client`);
    entry.busy = true;
    entry.timeoutMs = timeoutS * 1000;
    const held = entry;
    return {
      state: held.state,
      release: (close: boolean) => {
        held.busy = false;
        held.expiresAt = Date.now() + held.timeoutMs;
        if (close) this.#entries.delete(key);
      },
    };
  }

  get size(): number {
    return this.#entries.size;
  }

  #sweep(now: number): void {
    for (const [key, entry] of this.#entries) if (!entry.busy && entry.expiresAt <= now) this.#entries.delete(key);
  }
}
