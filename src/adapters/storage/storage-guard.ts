import fs from 'node:fs/promises';
import type { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { RETRY_AFTER_FULL_S, storageError } from './storage-faults.js';

/**
 * Watches the file system of the data directory, so that ingestion stops with an honest 503
 * before a write can fail, and starts again by itself once there is room:
 * - free space below `minFreeBytes` (statfs, refreshed every `refreshMs`) refuses new records;
 * - a write that met ENOSPC refuses them too, until the free space has grown by a margin (the
 *   statfs figure alone can say "room" while the disk, or a quota, does not), or, failing that,
 *   for `retryFullAfterMs`: then writes are tried again (a failing one costs only its cut-back);
 * - a fatal storage fault refuses them until the process restarts.
 * It is also the `storage` probe of the health report.
 */

export interface StorageGuardOptions {
  readonly dir: string;
  /** Free bytes below which new records are refused; 0 leaves only ENOSPC itself. */
  readonly minFreeBytes: number;
  /** How often the free space is read, milliseconds. */
  readonly refreshMs?: number;
  /** After an ENOSPC with no room coming back, how long until writes are tried again, milliseconds. */
  readonly retryFullAfterMs?: number;
  readonly now?: () => number;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
  readonly statfs?: (dir: string) => Promise<number>;
}

export interface StorageStatus {
  readonly state: 'ok' | 'full' | 'failed';
  readonly freeBytes: number | null;
  readonly minFreeBytes: number;
}

const MiB = 1024 * 1024;

async function freeBytesOf(dir: string): Promise<number> {
  const s = await fs.statfs(dir);
  return s.bavail * s.bsize;
}

export class StorageGuard {
  private readonly logger: Logger;
  private readonly statfs: (dir: string) => Promise<number>;
  private free: number | null = null;
  /** An ENOSPC was met and the free space has not been read since. */
  private fullPending = false;
  /** Free bytes read right after the last ENOSPC; cleared once the free space has grown past it. */
  private fullAt: number | null = null;
  private fullSinceMs = 0;
  private readonly now: () => number;
  private fatal: DrisError | null = null;
  private refreshing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private refused = false;

  private constructor(private readonly options: StorageGuardOptions) {
    this.logger = options.logger ?? componentLogger('storage');
    this.statfs = options.statfs ?? freeBytesOf;
    this.now = options.now ?? Date.now;
  }

  static async start(options: StorageGuardOptions): Promise<StorageGuard> {
    const guard = new StorageGuard(options);
    await guard.refresh();
    guard.timer = setInterval(() => void guard.refresh(), options.refreshMs ?? 1000);
    guard.timer.unref();
    return guard;
  }

  /** Room that must come back after an ENOSPC before writes are tried again. */
  private get margin(): number {
    return Math.max(4 * MiB, this.options.minFreeBytes);
  }

  /** Reads the free space now; never rejects (a failed read keeps the last figure). */
  refresh(): Promise<void> {
    this.refreshing ??= (async () => {
      try {
        const pending = this.fullPending;
        const free = await this.statfs(this.options.dir);
        this.free = free;
        if (pending) {
          this.fullPending = false;
          this.fullAt = free;
        } else if (this.fullAt !== null && (free >= this.fullAt + this.margin || this.now() - this.fullSinceMs >= (this.options.retryFullAfterMs ?? 10_000))) {
          this.fullAt = null;
        }
      } catch (err) {
        this.logger.warn({ err }, 'reading the free space of the data directory failed');
      } finally {
        this.refreshing = null;
        this.logTransition();
      }
    })();
    return this.refreshing;
  }

  /** A write met ENOSPC (or EDQUOT). */
  noteFull(): void {
    this.fullPending = true;
    this.fullSinceMs = this.now();
    this.logTransition();
    void this.refresh();
  }

  /** A log failed for good: nothing is accepted until a restart. */
  noteFatal(err: DrisError): void {
    this.fatal ??= err;
    this.logTransition();
  }

  /** Why new records must be refused now, or null. */
  refusal(): DrisError | null {
    if (this.fatal !== null) return this.fatal;
    const floor = this.options.minFreeBytes;
    if (this.free !== null && this.free < floor) {
      return storageError('storage_full', `the data directory has ${this.free} bytes free, below the floor of ${floor}; retry later`, RETRY_AFTER_FULL_S);
    }
    if (this.fullPending || this.fullAt !== null) return storageError('storage_full', 'the data directory ran out of space; retry later', RETRY_AFTER_FULL_S);
    return null;
  }

  /** Throws the refusal, if any: asked before every publish. */
  admit(): void {
    const why = this.refusal();
    if (why !== null) throw why;
  }

  /** The health probe: rejects while records are refused. */
  check(): Promise<void> {
    const why = this.refusal();
    return why === null ? Promise.resolve() : Promise.reject(why);
  }

  status(): StorageStatus {
    const why = this.refusal();
    return { state: why === null ? 'ok' : why.code === 'storage_full' ? 'full' : 'failed', freeBytes: this.free, minFreeBytes: this.options.minFreeBytes };
  }

  private logTransition(): void {
    const refused = this.refusal() !== null;
    if (refused === this.refused) return;
    this.refused = refused;
    if (refused) this.logger.error({ ...this.status() }, 'storage: new records are refused (503) until there is room or a restart');
    else this.logger.info({ ...this.status() }, 'storage: there is room again; new records are accepted');
  }

  async close(): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    await this.refreshing;
  }
}
