import { closeSync, fdatasync, fdatasyncSync, fstatSync, ftruncateSync, mkdirSync, openSync, readdirSync, readSync, unlinkSync, writev } from 'node:fs';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * An append-only log of messages in segment files, each message framed as
 * [u32 length][u32 checksum][f64 seq][payload]. Appends are group-committed: all appends that
 * arrive while a write is in progress are written with one writev and made durable with one
 * fdatasync, so durability costs one disk flush per group, not per message.
 * A torn tail (a crash in the middle of a write) is cut off when the log is opened.
 *
 * Segments are `<firstSeq>.seg`, checksummed with CRC-32 (zlib's, hardware-assisted). Segments of
 * the earlier format, `<firstSeq>.log` with FNV-1a, are still read and never appended to: a log
 * opened on them starts a new segment for its next append.
 */

const writevAsync = promisify(writev);
const fdatasyncAsync = promisify(fdatasync);

const HEADER = 16;
const SEGMENT_BYTES = 64 * 1024 * 1024;
/** Recently appended payloads kept in memory: consumers that keep up never read the disk. */
const TAIL_CACHE_BYTES = 64 * 1024 * 1024;
const SEGMENT_FILE = /^(\d{16})\.(seg|log)$/;

type Checksum = (buf: Uint8Array) => number;

/** Detects torn or garbage tails; not an integrity hash. */
const checksum: Checksum = (buf) => crc32(buf);

/** The checksum of `.log` segments. */
const legacyChecksum: Checksum = (buf) => {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) {
    h ^= buf[i] ?? 0;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
};

interface Segment {
  readonly firstSeq: number;
  readonly file: string;
  /** A `.log` segment: read, never appended to. */
  readonly legacy: boolean;
  /** Seq of the last message in the segment; firstSeq - 1 when empty. */
  lastSeq: number;
  size: number;
  /** Byte offset of each message's frame: message `seq` is at offsets[seq - firstSeq]. */
  readonly offsets: number[];
}

export interface LogEntry {
  readonly seq: number;
  readonly payload: Buffer;
}

interface PendingAppend {
  readonly payload: Buffer;
  readonly resolve: (seq: number) => void;
  readonly reject: (err: unknown) => void;
}

export class SegmentLog {
  private readonly segments: Segment[] = [];
  private fd = -1;
  private pending: PendingAppend[] = [];
  private flushing = false;
  private closed = false;
  private readonly listeners = new Set<() => void>();
  /**
   * seq → payload of the latest durable appends, at most TAIL_CACHE_BYTES: the seqs from
   * `tailFirst` up, with gaps where a payload was too large to keep. Evicted from `tailFirst` by
   * key, never by iterating: a Map's iteration walks the holes its deletions leave.
   */
  private readonly tail = new Map<number, Buffer>();
  private tailBytes = 0;
  private tailFirst = 1;

  private constructor(private readonly dir: string) {}

  static open(dir: string): SegmentLog {
    mkdirSync(dir, { recursive: true });
    const log = new SegmentLog(dir);
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

  /** Called after each durable group append. */
  onAppend(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  append(payload: Buffer): Promise<number> {
    if (this.closed) return Promise.reject(new Error('log closed'));
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
    let seg = this.activeSegment();
    if (seg.size >= SEGMENT_BYTES) seg = this.roll();
    const fd = this.fd;
    const buffers: Buffer[] = [];
    const seqs: number[] = [];
    let seq = seg.lastSeq;
    let bytes = 0;
    for (const payload of payloads) {
      seq += 1;
      const header = Buffer.allocUnsafe(HEADER);
      header.writeUInt32LE(payload.length, 0);
      header.writeUInt32LE(checksum(payload), 4);
      header.writeDoubleLE(seq, 8);
      buffers.push(header, payload);
      seqs.push(seq);
      bytes += HEADER + payload.length;
    }
    let written = 0;
    let pos = seg.size;
    let pendingBufs = buffers;
    while (written < bytes) {
      const n = (await writevAsync(fd, pendingBufs, pos)).bytesWritten;
      written += n;
      pos += n;
      if (written < bytes) pendingBufs = sliceBuffers(buffers, written);
    }
    await fdatasyncAsync(fd);
    let at = seg.size;
    for (const payload of payloads) {
      seg.offsets.push(at);
      at += HEADER + payload.length;
    }
    seg.size += bytes;
    seg.lastSeq = seq;
    this.remember(seqs, payloads);
    return seqs;
  }

  private remember(seqs: readonly number[], payloads: readonly Buffer[]): void {
    for (let i = 0; i < seqs.length; i++) {
      const payload = payloads[i]!;
      if (payload.length > TAIL_CACHE_BYTES / 4) continue;
      this.tail.set(seqs[i]!, payload);
      this.tailBytes += payload.length;
    }
    const last = seqs.at(-1) ?? 0;
    while (this.tailBytes > TAIL_CACHE_BYTES && this.tailFirst <= last) this.forget(this.tailFirst++);
  }

  private forget(seq: number): void {
    const cached = this.tail.get(seq);
    if (cached === undefined) return;
    this.tail.delete(seq);
    this.tailBytes -= cached.length;
  }

  private activeSegment(): Segment {
    const seg = this.segments.at(-1);
    if (seg !== undefined && this.fd >= 0 && !seg.legacy) return seg;
    return this.roll();
  }

  private roll(): Segment {
    if (this.fd >= 0) closeSync(this.fd);
    const firstSeq = this.lastSeq + 1;
    const file = path.join(this.dir, `${String(firstSeq).padStart(16, '0')}.seg`);
    this.fd = openSync(file, 'a+');
    const seg: Segment = { firstSeq, file, legacy: false, lastSeq: firstSeq - 1, size: 0, offsets: [] };
    this.segments.push(seg);
    return seg;
  }

  private load(): void {
    const files = readdirSync(this.dir)
      .map((f) => SEGMENT_FILE.exec(f))
      .filter((m): m is RegExpExecArray => m !== null)
      .sort((a, b) => Number(a[1]) - Number(b[1]));
    for (const m of files) {
      const file = path.join(this.dir, m[0]);
      const firstSeq = Number(m[1]);
      const legacy = m[2] === 'log';
      const seg: Segment = { firstSeq, file, legacy, lastSeq: firstSeq - 1, size: 0, offsets: [] };
      const fd = openSync(file, 'r+');
      try {
        const { size, lastSeq } = scanSegment(fd, firstSeq, seg.offsets, legacy ? legacyChecksum : checksum);
        if (size < fstatSync(fd).size) {
          ftruncateSync(fd, size);
          fdatasyncSync(fd);
        }
        seg.size = size;
        seg.lastSeq = lastSeq;
      } finally {
        closeSync(fd);
      }
      this.segments.push(seg);
    }
    this.tailFirst = this.lastSeq + 1;
    const last = this.segments.at(-1);
    if (last !== undefined && !last.legacy) this.fd = openSync(last.file, 'a+');
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
      // Older than the tail cache: one read of a run of frames from the segment holding `next`.
      const seg = this.segments[this.segmentIndexFor(next)];
      if (seg === undefined || next > seg.lastSeq || next < seg.firstSeq) break;
      const first = next - seg.firstSeq;
      let last = first;
      const budget = Math.max(1, Math.min(maxEntries - out.length, 4096));
      const start = seg.offsets[first]!;
      while (last + 1 < seg.offsets.length && last + 1 - first < budget && seg.offsets[last + 1]! - start < maxBytes - bytes && !this.tail.has(seg.firstSeq + last + 1)) last += 1;
      const end = last + 1 < seg.offsets.length ? seg.offsets[last + 1]! : seg.size;
      const chunk = Buffer.allocUnsafe(end - start);
      const handle = await fs.open(seg.file, 'r');
      try {
        let got = 0;
        while (got < chunk.length) {
          const { bytesRead } = await handle.read(chunk, got, chunk.length - got, start + got);
          if (bytesRead === 0) break;
          got += bytesRead;
        }
        if (got < chunk.length) throw new Error(`segment ${seg.file} is shorter than its index`);
      } finally {
        await handle.close();
      }
      let pos = 0;
      while (pos + HEADER <= chunk.length) {
        const len = chunk.readUInt32LE(pos);
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
      this.segments.shift();
      unlinkSync(seg.file);
      if (this.tailFirst <= seg.lastSeq) {
        for (let q = this.tailFirst; q <= seg.lastSeq; q++) this.forget(q);
        this.tailFirst = seg.lastSeq + 1;
      }
    }
  }

  async close(): Promise<void> {
    while (this.flushing) await new Promise((r) => setImmediate(r));
    this.closed = true;
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }
}

function scanSegment(fd: number, firstSeq: number, offsets: number[], sum: Checksum): { size: number; lastSeq: number } {
  const total = fstatSync(fd).size;
  const header = Buffer.alloc(HEADER);
  let pos = 0;
  let lastSeq = firstSeq - 1;
  while (pos + HEADER <= total) {
    if (readSync(fd, header, 0, HEADER, pos) < HEADER) break;
    const len = header.readUInt32LE(0);
    const expected = header.readUInt32LE(4);
    const seq = header.readDoubleLE(8);
    if (pos + HEADER + len > total || seq !== lastSeq + 1) break;
    const payload = Buffer.allocUnsafe(len);
    if (readSync(fd, payload, 0, len, pos + HEADER) < len || sum(payload) !== expected) break;
    offsets.push(pos);
    lastSeq = seq;
    pos += HEADER + len;
  }
  return { size: pos, lastSeq };
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
