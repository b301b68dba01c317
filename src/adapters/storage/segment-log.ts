import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { nodeLogFileSystem, type LogFileSystem } from './log-file-system.js';
import { isNoSpace, reportStorageFault, RETRY_AFTER_FAILED_S, RETRY_AFTER_FULL_S, RETRY_AFTER_WRITE_S, storageError, type StorageFault } from './storage-faults.js';
import { checksum, GROUP_START, HEADER, LENGTH_MASK, segmentName, type LostRange } from './segment-format.js';
import { loadSegments, nextAfterLost, type Segment } from './segment-load.js';
import { SegmentTailCache } from './segment-tail-cache.js';

/**
 * An append-only log of messages in segment files (format: segment-format.ts). Appends are
 * group-committed: all appends that arrive while a write is in progress are written with one
 * positional writev and made durable with one fdatasync, so durability costs one disk flush per
 * group, not per message. An append resolves only once its group is on disk.
 *
 * Failures never leave the file ahead of what the log believes:
 * - a failed write (EIO, ENOSPC) is cut back to the last durable size before the group is
 *   rejected; the log goes on with the next group;
 * - a failed flush (fdatasync, or the fsync of the directory after a segment was created or
 *   removed), or a failed cut-back, makes the log failed: the page cache may hold pages the disk
 *   does not, so this process can no longer tell what is durable. That group and every later
 *   append are rejected (storage_failed) and the fault is reported, so the service stops and
 *   recovers from disk.
 *
 * At open, a torn tail of the last segment (a group a crash interrupted) is cut off; damage
 * anywhere else stops the open with `storage_corrupt` naming the file and offset (see
 * `dris queue check|repair`). Seqs that a repair gave up are listed in the lost-ranges file: reads
 * pass over them and no append reuses them.
 */

const DEFAULT_SEGMENT_BYTES = 64 * 1024 * 1024;
/** Recently appended payloads kept in memory: consumers that keep up never read the disk. */
const TAIL_CACHE_BYTES = 64 * 1024 * 1024;

export interface LogEntry {
  readonly seq: number;
  readonly payload: Buffer;
}

export interface SegmentLogOptions {
  readonly fs?: LogFileSystem;
  /** Size after which the next group starts a new segment, bytes. */
  readonly segmentBytes?: number;
  /** Where faults go; the process-wide storage fault sink by default. */
  readonly onFault?: (fault: StorageFault) => void;
  readonly logger?: Logger;
}

interface PendingAppend {
  readonly payload: Buffer;
  readonly resolve: (seq: number) => void;
  readonly reject: (err: unknown) => void;
}

export class SegmentLog {
  private readonly segments: Segment[] = [];
  private readonly fs: LogFileSystem;
  private readonly segmentBytes: number;
  private readonly onFault: (fault: StorageFault) => void;
  private readonly logger: Logger;
  private fd = -1;
  /** Seq of the next append: past the last segment's end, and past any lost range there. */
  private nextSeq = 1;
  private lost: LostRange[] = [];
  private pending: PendingAppend[] = [];
  private flushing = false;
  private closed = false;
  /** Set once the log can no longer be trusted; every later append is rejected with it. */
  private failure: DrisError | null = null;
  /** Segment removals, in order: each unlink is followed by a flush of the directory. */
  private housekeeping: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<() => void>();
  private readonly tail = new SegmentTailCache(TAIL_CACHE_BYTES);

  private constructor(
    private readonly dir: string,
    options: SegmentLogOptions,
  ) {
    this.fs = options.fs ?? nodeLogFileSystem;
    this.segmentBytes = options.segmentBytes ?? DEFAULT_SEGMENT_BYTES;
    this.onFault = options.onFault ?? reportStorageFault;
    this.logger = options.logger ?? componentLogger('segment-log');
  }

  /** Opens (creating) the log in `dir`; throws storage_corrupt when damage is found before the tail. */
  static open(dir: string, options: SegmentLogOptions = {}): SegmentLog {
    const log = new SegmentLog(dir, options);
    log.fs.mkdirSync(dir);
    log.load();
    return log;
  }

  /** Seq of the last durable message; 0 when the log has never held one. */
  get lastSeq(): number {
    return this.segments.at(-1)?.lastSeq ?? 0;
  }

  get firstSeq(): number {
    return this.segments[0]?.firstSeq ?? 1;
  }

  /** Why the log refuses appends, or null while it accepts them. */
  get failed(): DrisError | null {
    return this.failure;
  }

  /** Ranges of seqs a repair gave up (never delivered, never reused). */
  get lostRanges(): readonly LostRange[] {
    return this.lost;
  }

  /** Bytes of the frames from `seq` on, in the segments still held: what a budget counts. */
  bytesFrom(seq: number): number {
    let bytes = 0;
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const seg = this.segments[i] as Segment;
      if (seg.lastSeq < seq) break;
      bytes += seq <= seg.firstSeq ? seg.size : seg.size - (seg.offsets[seq - seg.firstSeq] ?? seg.size);
      if (seq >= seg.firstSeq) break;
    }
    return bytes;
  }

  /** The first seq after `seq` that is not in a lost range. */
  nextAfter(seq: number): number {
    return nextAfterLost(this.lost, seq);
  }

  /** Called after each durable group append. */
  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  append(payload: Buffer): Promise<number> {
    if (this.failure !== null) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new DrisError('dependency_unavailable', 'log closed'));
    return new Promise<number>((resolve, reject) => {
      this.pending.push({ payload, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    const group = this.pending;
    this.pending = [];
    if (group.length === 0) {
      this.flushing = false;
      return;
    }
    this.writeGroup(group.map((p) => p.payload)).then(
      (seqs) => {
        group.forEach((p, i) => p.resolve(seqs[i] ?? 0));
        for (const l of this.listeners) l();
      },
      (err: unknown) => {
        for (const p of group) p.reject(err);
      },
    ).finally(() => {
      // Appends that arrived during the write form the next group.
      this.flush();
    });
  }

  /** Writes and flushes on the thread pool, so the event loop never waits for the disk. */
  private async writeGroup(payloads: readonly Buffer[]): Promise<number[]> {
    if (this.failure !== null) throw this.failure;
    const seg = await this.writableSegment();
    const buffers: Buffer[] = [];
    const seqs: number[] = [];
    let seq = seg.lastSeq;
    let bytes = 0;
    for (const payload of payloads) {
      seq += 1;
      const header = Buffer.allocUnsafe(HEADER);
      header.writeUInt32LE(seqs.length === 0 ? (payload.length | GROUP_START) >>> 0 : payload.length, 0);
      header.writeUInt32LE(checksum(payload), 4);
      header.writeDoubleLE(seq, 8);
      buffers.push(header, payload);
      seqs.push(seq);
      bytes += HEADER + payload.length;
    }
    try {
      let written = 0;
      while (written < bytes) {
        const n = await this.fs.writev(this.fd, written === 0 ? buffers : sliceBuffers(buffers, written), seg.size + written);
        if (n <= 0) throw new Error('the disk accepted no bytes');
        written += n;
      }
    } catch (err) {
      throw await this.cutBack(seg, err);
    }
    try {
      await this.fs.fdatasync(this.fd);
    } catch (err) {
      throw this.fail(`flushing ${seg.file} failed`, err);
    }
    let at = seg.size;
    for (const payload of payloads) {
      seg.offsets.push(at);
      at += HEADER + payload.length;
    }
    seg.size += bytes;
    seg.lastSeq = seq;
    this.nextSeq = seq + 1;
    this.tail.remember(seqs, payloads);
    return seqs;
  }

  /**
   * After a failed write: cuts the segment back to its durable size, so that no rejected byte
   * stays in front of the next group. The group's error is returned for the caller to throw.
   */
  private async cutBack(seg: Segment, err: unknown): Promise<DrisError> {
    try {
      await this.fs.ftruncate(this.fd, seg.size);
    } catch (truncateErr) {
      return this.fail(`a write to ${seg.file} failed and cutting it back failed too`, truncateErr);
    }
    if (isNoSpace(err)) {
      const full = storageError('storage_full', 'the data directory has no space left; retry later', RETRY_AFTER_FULL_S, err);
      this.onFault({ kind: 'full', error: full });
      return full;
    }
    this.logger.error({ err, file: seg.file }, 'a write to the log failed; the group was rejected');
    return storageError('dependency_unavailable', 'the log could not be written; retry later', RETRY_AFTER_WRITE_S, err);
  }

  /** Marks the log failed for good, rejects what waits, and reports the fault. */
  private fail(what: string, cause: unknown): DrisError {
    if (this.failure !== null) return this.failure;
    const failure = storageError('storage_failed', `the log in ${this.dir} can no longer be trusted (${what}); the service must restart`, RETRY_AFTER_FAILED_S, cause);
    this.failure = failure;
    this.logger.fatal({ err: cause, dir: this.dir }, 'log failed: no further appends; restart to recover from disk');
    for (const p of this.pending.splice(0)) p.reject(failure);
    this.onFault({ kind: 'fatal', error: failure });
    return failure;
  }

  /** The segment the next group goes to: the last one, or a new one (full, legacy, after a lost range). */
  private async writableSegment(): Promise<Segment> {
    const last = this.segments.at(-1);
    if (last !== undefined && this.fd >= 0 && !last.legacy && last.size < this.segmentBytes && last.lastSeq + 1 === this.nextSeq) return last;
    if (this.fd >= 0) {
      const old = this.fd;
      this.fd = -1;
      // Its data was flushed: a failing close tells nothing about it.
      await this.fs.close(old).catch((err: unknown) => this.logger.warn({ err }, 'closing a full segment failed'));
    }
    const firstSeq = this.nextSeq;
    const file = path.join(this.dir, segmentName(firstSeq));
    if (this.segments.some((s) => s.file === file)) throw new DrisError('internal_error', `segment ${file} exists already`);
    let fd: number;
    try {
      fd = await this.fs.create(file);
    } catch (err) {
      if (isNoSpace(err)) {
        const full = storageError('storage_full', 'the data directory has no space left; retry later', RETRY_AFTER_FULL_S, err);
        this.onFault({ kind: 'full', error: full });
        throw full;
      }
      throw storageError('dependency_unavailable', 'a log segment could not be created; retry later', RETRY_AFTER_WRITE_S, err);
    }
    try {
      await this.fs.fsyncDir(this.dir);
    } catch (err) {
      await this.fs.close(fd).catch(() => undefined);
      throw this.fail(`flushing the directory after creating ${file} failed`, err);
    }
    this.fd = fd;
    const seg: Segment = { firstSeq, file, legacy: false, lastSeq: firstSeq - 1, size: 0, offsets: [] };
    this.segments.push(seg);
    return seg;
  }

  private load(): void {
    const { segments, lost } = loadSegments(this.fs, this.dir, this.logger);
    this.lost = lost;
    this.segments.push(...segments);
    this.nextSeq = this.nextAfter(this.lastSeq);
    this.tail.startAt(this.nextSeq);
    const last = this.segments.at(-1);
    if (last !== undefined && !last.legacy) this.fd = this.fs.openSync(last.file);
  }

  /** Reads up to maxEntries messages starting at seq `from`; stops at the durable end. */
  async read(from: number, maxEntries: number, maxBytes = 8 * 1024 * 1024): Promise<LogEntry[]> {
    const out: LogEntry[] = [];
    let next = Math.max(from, this.firstSeq);
    let bytes = 0;
    while (out.length < maxEntries && bytes < maxBytes && next <= this.lastSeq) {
      const cached = this.tail.get(next);
      if (cached !== undefined) {
        out.push({ seq: next, payload: cached });
        bytes += cached.length;
        next += 1;
        continue;
      }
      const index = this.segmentIndexFor(next);
      const seg = this.segments[index];
      if (seg === undefined || next < seg.firstSeq) break;
      if (next > seg.lastSeq) {
        // A lost range (or an empty segment): on to the next segment that holds messages.
        const following = this.segments[index + 1];
        if (following === undefined) break;
        next = following.firstSeq;
        continue;
      }
      // Older than the tail cache: one read of a run of frames from the segment holding `next`.
      const first = next - seg.firstSeq;
      let last = first;
      const budget = Math.max(1, Math.min(maxEntries - out.length, 4096));
      const start = seg.offsets[first]!;
      while (last + 1 < seg.offsets.length && last + 1 - first < budget && seg.offsets[last + 1]! - start < maxBytes - bytes && !this.tail.has(seg.firstSeq + last + 1)) last += 1;
      const end = last + 1 < seg.offsets.length ? seg.offsets[last + 1]! : seg.size;
      const chunk = Buffer.allocUnsafe(end - start);
      if ((await this.fs.readAt(seg.file, chunk, start)) < chunk.length) throw new DrisError('storage_corrupt', `segment ${seg.file} is shorter than its index`);
      let pos = 0;
      while (pos + HEADER <= chunk.length) {
        const len = chunk.readUInt32LE(pos) & LENGTH_MASK;
        const seq = chunk.readDoubleLE(pos + 8);
        out.push({ seq, payload: chunk.subarray(pos + HEADER, pos + HEADER + len) });
        bytes += len;
        pos += HEADER + len;
        next = seq + 1;
      }
    }
    return out;
  }

  private segmentIndexFor(seq: number): number {
    for (let i = this.segments.length - 1; i >= 0; i--) {
      const seg = this.segments[i];
      if (seg !== undefined && seg.firstSeq <= seq) return i;
    }
    return this.segments.length > 0 ? 0 : -1;
  }

  /** Deletes whole segments whose messages are all below `seq` (acknowledged by every reader). */
  truncateBefore(seq: number): void {
    while (this.segments.length > 1) {
      const seg = this.segments[0];
      if (seg === undefined || seg.lastSeq >= seq) break;
      try {
        this.fs.unlinkSync(seg.file);
      } catch (err) {
        // Kept: tried again at the next acknowledgement.
        this.logger.warn({ err, file: seg.file }, 'removing an acknowledged segment failed');
        return;
      }
      this.segments.shift();
      this.tail.dropThrough(seg.lastSeq);
      this.housekeeping = this.housekeeping.then(() =>
        this.fs.fsyncDir(this.dir).catch((err: unknown) => {
          this.fail(`flushing the directory after removing ${seg.file} failed`, err);
        }),
      );
    }
  }

  async close(): Promise<void> {
    while (this.flushing) await new Promise((r) => setImmediate(r));
    this.closed = true;
    await this.housekeeping;
    if (this.fd >= 0) this.fs.closeSync(this.fd);
    this.fd = -1;
  }
}

function sliceBuffers(buffers: readonly Buffer[], skip: number): Buffer[] {
  const out: Buffer[] = [];
  let rest = skip;
  for (const b of buffers) {
    if (rest >= b.length) {
      rest -= b.length;
      continue;
    }
    out.push(rest > 0 ? b.subarray(rest) : b);
    rest = 0;
  }
  return out;
}
