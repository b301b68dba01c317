import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import type { AdmissionStore, IdempotencyEntry, RateDecision, ReserveOutcome } from '../../domain/limits/ports.js';
import { SegmentLog } from '../queue/segment-log.js';
import { componentLogger } from '../../util/logger.js';

/**
 * Rate limits and idempotency keys for the one-process embedded default. Counters live in memory
 * (a restart forgives the current window, as a Redis failover would). Completed idempotency
 * entries are written to a durable log before the answer leaves, so a replay after a crash still
 * returns the original answer; the log is rewritten with only live entries at start and hourly.
 */

export interface EmbeddedAdmissionOptions {
  readonly dir: string;
  /** How often expired entries are dropped from memory and disk, milliseconds. */
  readonly compactEveryMs?: number;
}

interface Stored {
  entry: IdempotencyEntry;
  expiresAtMs: number;
}

interface Window {
  index: number;
  count: number;
}

interface LogLine {
  readonly k: string;
  readonly e: IdempotencyEntry | null;
  readonly x: number;
}

export class EmbeddedAdmissionStore implements AdmissionStore {
  private readonly windows = new Map<string, Window>();
  private readonly entries = new Map<string, Stored>();
  private log: SegmentLog;
  private generation: number;
  private readonly timer: NodeJS.Timeout;
  private compacting: Promise<void> | null = null;
  private readonly logger = componentLogger('embedded-admission');

  private constructor(private readonly options: EmbeddedAdmissionOptions) {
    mkdirSync(options.dir, { recursive: true });
    const gens = readdirSync(options.dir)
      .filter((d) => /^gen-\d+$/.test(d))
      .map((d) => Number(d.slice(4)))
      .sort((a, b) => a - b);
    this.generation = gens.at(-1) ?? 0;
    this.log = SegmentLog.open(this.genDir(this.generation));
    const every = options.compactEveryMs ?? 3_600_000;
    this.timer = setInterval(() => {
      this.compactInBackground();
    }, every);
    this.timer.unref();
  }

  static async open(options: EmbeddedAdmissionOptions): Promise<EmbeddedAdmissionStore> {
    const store = new EmbeddedAdmissionStore(options);
    await store.load();
    await store.compact();
    return store;
  }

  private genDir(gen: number): string {
    return path.join(this.options.dir, `gen-${gen}`);
  }

  private async load(): Promise<void> {
    const now = Date.now();
    let from = this.log.firstSeq;
    for (;;) {
      const batch = await this.log.read(from, 10_000);
      if (batch.length === 0) break;
      for (const { seq, payload } of batch) {
        from = seq + 1;
        const line = JSON.parse(payload.toString('utf8')) as LogLine;
        if (line.e === null || line.x <= now) this.entries.delete(line.k);
        else this.entries.set(line.k, { entry: line.e, expiresAtMs: line.x });
      }
    }
  }

  private compactInBackground(): void {
    this.compact().catch((err: unknown) => this.logger.error({ err }, 'idempotency compaction failed'));
  }

  /** Writes live entries into a new generation, then drops the old one. */
  private async compact(): Promise<void> {
    if (this.compacting !== null) return this.compacting;
    const run = async (): Promise<void> => {
      const now = Date.now();
      for (const [k, s] of this.entries) if (s.expiresAtMs <= now) this.entries.delete(k);
      for (const [k, w] of this.windows) if (w.count === 0) this.windows.delete(k);
      const old = this.log;
      const oldGen = this.generation;
      const next = SegmentLog.open(this.genDir(oldGen + 1));
      const writes: Promise<number>[] = [];
      for (const [k, s] of this.entries) {
        if (s.entry.state === 'done') writes.push(next.append(Buffer.from(JSON.stringify({ k, e: s.entry, x: s.expiresAtMs } satisfies LogLine))));
      }
      await Promise.all(writes);
      this.log = next;
      this.generation = oldGen + 1;
      await old.close();
      rmSync(this.genDir(oldGen), { recursive: true, force: true });
    };
    this.compacting = run().finally(() => {
      this.compacting = null;
    });
    return this.compacting;
  }

  take(bucket: string, limit: number, windowMs: number, nowMs: number): Promise<RateDecision> {
    return Promise.resolve(this.takeNow(bucket, limit, windowMs, nowMs));
  }

  takeNow(bucket: string, limit: number, windowMs: number, nowMs: number): RateDecision {
    const index = Math.floor(nowMs / windowMs);
    const resetAtMs = (index + 1) * windowMs;
    let w = this.windows.get(bucket);
    if (w === undefined || w.index !== index) {
      w = { index, count: 0 };
      this.windows.set(bucket, w);
    }
    if (w.count >= limit) return { allowed: false, limit, remaining: 0, resetAtMs };
    w.count += 1;
    return { allowed: true, limit, remaining: limit - w.count, resetAtMs };
  }

  private live(key: string): Stored | undefined {
    const s = this.entries.get(key);
    if (s !== undefined && s.expiresAtMs <= Date.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return s;
  }

  reserve(key: string, fingerprint: string, ttlMs: number): Promise<ReserveOutcome> {
    const s = this.live(key);
    if (s !== undefined) return Promise.resolve({ reserved: false, entry: s.entry });
    this.entries.set(key, { entry: { state: 'pending', fingerprint }, expiresAtMs: Date.now() + ttlMs });
    return Promise.resolve({ reserved: true });
  }

  async complete(key: string, entry: IdempotencyEntry & { state: 'done' }, ttlMs: number): Promise<void> {
    const expiresAtMs = Date.now() + ttlMs;
    this.entries.set(key, { entry, expiresAtMs });
    try {
      await this.log.append(Buffer.from(JSON.stringify({ k: key, e: entry, x: expiresAtMs } satisfies LogLine)));
    } catch (err) {
      throw err instanceof DrisError ? err : new DrisError('dependency_unavailable', 'idempotency store write failed', { cause: err });
    }
  }

  release(key: string, fingerprint: string): Promise<void> {
    const s = this.entries.get(key);
    if (s !== undefined && s.entry.state === 'pending' && s.entry.fingerprint === fingerprint) this.entries.delete(key);
    return Promise.resolve();
  }

  get(key: string): Promise<IdempotencyEntry | null> {
    return Promise.resolve(this.live(key)?.entry ?? null);
  }

  check(): Promise<void> {
    return Promise.resolve();
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    if (this.compacting !== null) await this.compacting;
    await this.log.close();
  }
}
