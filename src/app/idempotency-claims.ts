import { randomHex } from '../util/random.js';
import type { DoneEntry, IdempotencyClaim, IdempotencyStore } from '../domain/limits/ports.js';
import { componentLogger, type Logger } from '../util/logger.js';

/** What a request learns about one idempotency key it asked for. */
export type ClaimOutcome =
  | { readonly kind: 'owned' }
  | { readonly kind: 'replay'; readonly status: number; readonly body: string }
  | { readonly kind: 'conflict' }
  | { readonly kind: 'in_progress' };

export interface ClaimSettings {
  /** Length of a pending lease; renewed every third of it while the request works. */
  readonly leaseMs: number;
  /** How long a request waits for another one holding the same key with the same request. */
  readonly waitMs: number;
  /** How long a completed answer is kept (the idempotency window). */
  readonly ttlMs: number;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
}

/**
 * The idempotency keys of one request: claimed in one round trip, held as leases renewed while the
 * request works, then completed (durable answer) or released. A request that dies with its process
 * stops renewing, so the key is free again within one lease.
 */
export class RequestClaims {
  private readonly token = randomHex(16);
  /** Keys this request holds a lease on and has neither completed nor released. */
  private readonly held = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private readonly log: Logger;

  constructor(
    private readonly store: IdempotencyStore,
    private readonly settings: ClaimSettings,
  ) {
    this.log = settings.logger ?? componentLogger('idempotency');
  }

  /**
   * Claims every key; a key held by the same request elsewhere is waited for (its answer replayed,
   * or taken over once its lease ends) until waitMs, then reported in progress. A key bound to a
   * different request is a conflict. Outcomes are in the order of `claims`.
   */
  async claim(claims: readonly IdempotencyClaim[]): Promise<ClaimOutcome[]> {
    const out = new Array<ClaimOutcome | undefined>(claims.length);
    let open = claims.map((_, i) => i);
    const deadline = Date.now() + this.settings.waitMs;
    for (let round = 0; open.length > 0; round++) {
      const asked = open.map((i) => claims[i] as IdempotencyClaim);
      const got = await this.store.reserveMany(asked, this.token, this.settings.leaseMs);
      const waiting: number[] = [];
      for (const [j, i] of open.entries()) {
        const r = got[j];
        const c = asked[j] as IdempotencyClaim;
        if (r === undefined) continue;
        if (r.reserved) {
          this.held.add(c.key);
          out[i] = { kind: 'owned' };
        } else if (r.entry.fingerprint !== c.fingerprint) {
          out[i] = { kind: 'conflict' };
        } else if (r.entry.state === 'done') {
          out[i] = { kind: 'replay', status: r.entry.status, body: r.entry.body };
        } else {
          waiting.push(i);
        }
      }
      if (this.held.size > 0) this.keepRenewing();
      open = waiting;
      if (open.length === 0) break;
      if (Date.now() >= deadline) {
        for (const i of open) out[i] = { kind: 'in_progress' };
        break;
      }
      // Short at first (the other request is usually about to finish), then gentler.
      await new Promise((res) => setTimeout(res, Math.min(100, 10 * 2 ** Math.min(round, 4))));
    }
    return out.map((o) => o ?? { kind: 'in_progress' });
  }

  private keepRenewing(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => {
      if (this.held.size === 0) return;
      // A missed renewal only risks a takeover, which the key's message id makes harmless.
      this.store.renew([...this.held], this.token, this.settings.leaseMs).catch((err: unknown) => this.log.warn({ err }, 'idempotency lease renewal failed'));
    }, Math.max(50, Math.floor(this.settings.leaseMs / 3)));
    this.timer.unref();
  }

  /**
   * Stores the answer of a key (held or not: a request answering from a stored duplicate completes
   * the key with the original's answer). A failure is logged, not thrown: the records are durable
   * by now, and a retry finds them through the key's message id; the lease is then let go, so that
   * retry need not wait for it.
   */
  async complete(key: string, entry: DoneEntry): Promise<void> {
    try {
      await this.store.complete(key, entry, this.settings.ttlMs);
      this.held.delete(key);
    } catch (err) {
      this.log.warn({ err }, 'idempotency answer not stored; a retry is answered from the queue');
      await this.release([key]);
    }
  }

  /** Frees leases of keys whose records were not stored (all held ones when `keys` is omitted). */
  async release(keys?: readonly string[]): Promise<void> {
    const list = (keys ?? [...this.held]).filter((k) => this.held.has(k));
    if (list.length === 0) return;
    for (const k of list) this.held.delete(k);
    try {
      await this.store.release(list, this.token);
    } catch (err) {
      // The leases end on their own.
      this.log.warn({ err }, 'idempotency release failed');
    }
  }

  /** Stops renewing; keys still held are released. Always called when the request ends. */
  async end(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.release();
  }
}
