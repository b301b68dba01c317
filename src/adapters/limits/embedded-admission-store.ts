import { closeSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync } from 'node:fs';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import type { AdmissionStore, DoneEntry, IdempotencyClaim, IdempotencyEntry, RateDecision, ReserveOutcome } from '../../domain/limits/ports.js';
import { SegmentLog } from '../storage/segment-log.js';
import { componentLogger, type Logger } from '../../util/logger.js';

/**
 * Rate limits and idempotency keys for the one-process embedded default. Counters live in memory
 * (a restart forgives the current window, as a Redis failover would). Pending reservations live in
 * memory only: a crash frees them at once, which is what their lease would do a few seconds later.
 * Completed entries are appended to a durable log and become visible only once the append is
 * durable, so no answer is ever replayed that a crash could take back.
 *
 * The log is rewritten with live entries only at start and hourly, crash-safely: the new
 * generation is written in full under a temporary name, made durable, then switched to by a rename
 * (the directory fsynced); completions arriving meanwhile go to the old generation and are copied
 * into the new one before the switch. Start-up takes the newest complete generation.
 */

export interface EmbeddedAdmissionOptions {
  readonly dir: string;
  /** How often expired entries are dropped from memory and disk, milliseconds. */
  readonly compactEveryMs?: number;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
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

const GENERATION = /^gen-(\d+)$/;
const TEMPORARY = /^gen-\d+\.tmp$/;

function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class EmbeddedAdmissionStore implements AdmissionStore {
  private readonly windows = new Map<string, Window>();
  private readonly entries = new Map<string, Stored>();
  private log: SegmentLog;
  private generation: number;
  private readonly timer: NodeJS.Timeout;
  private compacting: Promise<void> | null = null;
  /** Lines appended while a compaction writes the next generation; copied into it before the switch. */
  private meanwhile: Buffer[] | null = null;
  /** Set while the compaction switches generations; appends wait for it. */
  private switching: Promise<void> | null = null;
  private readonly logger: Logger;

  private constructor(private readonly options: EmbeddedAdmissionOptions) {
    this.logger = options.logger ?? componentLogger('embedded-admission');
    mkdirSync(options.dir, { recursive: true });
    const names = readdirSync(options.dir);
    // A generation still under its temporary name was never switched to: the one before it holds everything.
    for (const name of names) if (TEMPORARY.test(name)) rmSync(path.join(options.dir, name), { recursive: true, force: true });
    const gens = names
      .map((d) => GENERATION.exec(d))
      .filter((m): m is RegExpExecArray => m !== null)
      .map((m) => Number(m[1]))
      .sort((a, b) => a - b);
    this.generation = gens.at(-1) ?? 0;
    // Older generations are left over from a crash after a switch and before their removal.
    for (const g of gens.slice(0, -1)) rmSync(this.genDir(g), { recursive: true, force: true });
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
        if (line.e === null || line.x <= now) {
          this.entries.delete(line.k);
          continue;
        }
        // The first answer stored for a key is the one every replay gives.
        if (this.entries.get(line.k)?.entry.state !== 'done') this.entries.set(line.k, { entry: line.e, expiresAtMs: line.x });
      }
    }
  }

  private compactInBackground(): void {
    this.compact().catch((err: unknown) => this.logger.error({ err }, 'idempotency compaction failed'));
  }

  /** Writes live entries into a new generation, switches to it atomically, then drops the old one. */
  private compact(): Promise<void> {
    if (this.compacting !== null) return this.compacting;
    this.compacting = this.rewrite().finally(() => {
      this.compacting = null;
      this.meanwhile = null;
    });
    return this.compacting;
  }

  private async rewrite(): Promise<void> {
    const now = Date.now();
    for (const [k, s] of this.entries) if (s.expiresAtMs <= now) this.entries.delete(k);
    for (const [k, w] of this.windows) if (w.count === 0) this.windows.delete(k);
    const oldGen = this.generation;
    const nextGen = oldGen + 1;
    const tmpDir = `${this.genDir(nextGen)}.tmp`;
    rmSync(tmpDir, { recursive: true, force: true });
    this.meanwhile = [];
    let next = SegmentLog.open(tmpDir);
    try {
      const writes: Promise<number>[] = [];
      for (const [k, s] of this.entries) {
        if (s.entry.state === 'done') writes.push(next.append(lineOf(k, s.entry, s.expiresAtMs)));
      }
      await Promise.all(writes);
      await this.copyMeanwhile(next);
      // From here appends wait: the switch is a few file-system calls.
      let open!: () => void;
      this.switching = new Promise<void>((resolve) => (open = resolve));
      try {
        await this.copyMeanwhile(next);
        await next.close();
        renameSync(tmpDir, this.genDir(nextGen));
        fsyncDir(this.options.dir);
        next = SegmentLog.open(this.genDir(nextGen));
        const old = this.log;
        this.log = next;
        this.generation = nextGen;
        this.meanwhile = null;
        await old.close();
      } finally {
        this.switching = null;
        open();
      }
    } catch (err) {
      await next.close().catch(() => undefined);
      rmSync(tmpDir, { recursive: true, force: true });
      throw err;
    }
    rmSync(this.genDir(oldGen), { recursive: true, force: true });
    fsyncDir(this.options.dir);
  }

  private async copyMeanwhile(next: SegmentLog): Promise<void> {
    while (this.meanwhile !== null && this.meanwhile.length > 0) {
      const lines = this.meanwhile.splice(0);
      await Promise.all(lines.map((l) => next.append(l)));
    }
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

  reserveMany(claims: readonly IdempotencyClaim[], token: string, leaseMs: number): Promise<ReserveOutcome[]> {
    const expiresAtMs = Date.now() + leaseMs;
    return Promise.resolve(
      claims.map((c): ReserveOutcome => {
        const s = this.live(c.key);
        if (s !== undefined) return { reserved: false, entry: s.entry };
        this.entries.set(c.key, { entry: { state: 'pending', fingerprint: c.fingerprint, token }, expiresAtMs });
        return { reserved: true };
      }),
    );
  }

  renew(keys: readonly string[], token: string, leaseMs: number): Promise<void> {
    const expiresAtMs = Date.now() + leaseMs;
    for (const key of keys) {
      const s = this.live(key);
      if (s?.entry.state === 'pending' && s.entry.token === token) s.expiresAtMs = expiresAtMs;
    }
    return Promise.resolve();
  }

  async complete(key: string, entry: DoneEntry, ttlMs: number): Promise<boolean> {
    if (this.live(key)?.entry.state === 'done') return false;
    const expiresAtMs = Date.now() + ttlMs;
    const done: DoneEntry = { state: 'done', fingerprint: entry.fingerprint, status: entry.status, body: entry.body };
    const line = lineOf(key, done, expiresAtMs);
    try {
      while (this.switching !== null) await this.switching;
      this.meanwhile?.push(line);
      await this.log.append(line);
    } catch (err) {
      throw err instanceof DrisError ? err : new DrisError('dependency_unavailable', 'idempotency store write failed', { cause: err });
    }
    // Visible only now that it is durable; the first answer stored stays.
    if (this.live(key)?.entry.state === 'done') return false;
    this.entries.set(key, { entry: done, expiresAtMs });
    return true;
  }

  release(keys: readonly string[], token: string): Promise<void> {
    for (const key of keys) {
      const s = this.entries.get(key);
      if (s?.entry.state === 'pending' && s.entry.token === token) this.entries.delete(key);
    }
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
    if (this.compacting !== null) await this.compacting.catch(() => undefined);
    await this.log.close();
  }
}

function lineOf(k: string, e: IdempotencyEntry, x: number): Buffer {
  return Buffer.from(JSON.stringify({ k, e, x } satisfies LogLine));
}
