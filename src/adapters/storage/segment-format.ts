import { crc32 } from 'node:zlib';
import type { LogFileSystem } from './log-file-system.js';

/**
 * The on-disk format of the segment log, and the scan that reads it back: shared by the log (at
 * open) and by `dris queue check|repair`.
 *
 * A frame is [u32 length][u32 checksum][f64 seq][payload]. The top bit of the length marks the
 * first frame of a group commit. Groups are written one after the other, each only once the one
 * before is on disk (fdatasync), so a damaged frame followed by the start of a later group cannot
 * be a write torn by a crash: it is corruption of data that was acknowledged.
 *
 * Segments are `<firstSeq>.seg`, checksummed with CRC-32 (zlib's, hardware-assisted). Segments of
 * the earlier format, `<firstSeq>.log` with FNV-1a, are still read and never appended to. Segments
 * written before group marks existed have none: a damaged frame in their last segment is taken
 * for a torn tail, as it always was.
 */

export const HEADER = 16;
export const GROUP_START = 0x8000_0000;
export const LENGTH_MASK = 0x7fff_ffff;
export const SEGMENT_FILE = /^(\d{16})\.(seg|log)$/;

export type Checksum = (buf: Uint8Array) => number;

/** Detects torn or garbage frames; not an integrity hash. */
export const checksum: Checksum = (buf) => crc32(buf);

/** The checksum of `.log` segments. */
export const legacyChecksum: Checksum = (buf) => {
  let h = 0x811c9dc5;
  for (let i = 0; i < buf.length; i++) {
    h ^= buf[i] ?? 0;
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
};

export function segmentName(firstSeq: number): string {
  return `${String(firstSeq).padStart(16, '0')}.seg`;
}

export interface SegmentFile {
  readonly name: string;
  readonly firstSeq: number;
  readonly legacy: boolean;
}

/** The segment files of a log directory, in sequence order. */
export function listSegments(names: readonly string[]): SegmentFile[] {
  return names
    .map((f) => SEGMENT_FILE.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ name: m[0], firstSeq: Number(m[1]), legacy: m[2] === 'log' }))
    .sort((a, b) => a.firstSeq - b.firstSeq);
}

export interface FrameFault {
  /** Byte offset of the first frame that is not intact. */
  readonly offset: number;
  readonly reason: 'incomplete' | 'checksum' | 'sequence';
}

export interface SegmentScan {
  readonly fileSize: number;
  /** Offset of each intact frame, in order from firstSeq. */
  readonly offsets: number[];
  /** End of the last intact frame. */
  readonly size: number;
  /** Seq of the last intact frame; firstSeq - 1 when there is none. */
  readonly lastSeq: number;
  readonly fault: FrameFault | null;
  /** An intact frame opening a later group, found after the fault: the fault is no torn tail. */
  readonly laterGroup: { readonly offset: number; readonly seq: number } | null;
  /** Highest seq of any intact frame found after the fault. */
  readonly maxSeqAfterFault: number | null;
}

type ScanFs = Pick<LogFileSystem, 'sizeSync' | 'readSync'>;

/** Reads every frame of an open segment; past the first damaged one, looks for intact frames. */
export function scanSegment(fs: ScanFs, fd: number, firstSeq: number, legacy: boolean): SegmentScan {
  const sum = legacy ? legacyChecksum : checksum;
  const fileSize = fs.sizeSync(fd);
  const offsets: number[] = [];
  const header = Buffer.alloc(HEADER);
  let pos = 0;
  let lastSeq = firstSeq - 1;
  let fault: FrameFault | null = null;
  while (pos < fileSize) {
    if (pos + HEADER > fileSize || fs.readSync(fd, header, 0, HEADER, pos) < HEADER) {
      fault = { offset: pos, reason: 'incomplete' };
      break;
    }
    const len = header.readUInt32LE(0) & LENGTH_MASK;
    const expected = header.readUInt32LE(4);
    const seq = header.readDoubleLE(8);
    if (pos + HEADER + len > fileSize) {
      fault = { offset: pos, reason: 'incomplete' };
      break;
    }
    const payload = Buffer.allocUnsafe(len);
    if (fs.readSync(fd, payload, 0, len, pos + HEADER) < len) {
      fault = { offset: pos, reason: 'incomplete' };
      break;
    }
    if (sum(payload) !== expected) {
      fault = { offset: pos, reason: 'checksum' };
      break;
    }
    if (seq !== lastSeq + 1) {
      fault = { offset: pos, reason: 'sequence' };
      break;
    }
    offsets.push(pos);
    lastSeq = seq;
    pos += HEADER + len;
  }
  if (fault === null) return { fileSize, offsets, size: pos, lastSeq, fault, laterGroup: null, maxSeqAfterFault: null };
  const rest = Buffer.allocUnsafe(fileSize - fault.offset);
  const got = fs.readSync(fd, rest, 0, rest.length, fault.offset);
  const found = findIntactFrames(rest.subarray(0, got), fault.offset, lastSeq, sum);
  return { fileSize, offsets, size: pos, lastSeq, fault, ...found };
}

/**
 * Frames are not aligned, so every byte offset past the fault is tried: a plausible header (a
 * later whole seq, a length that fits) whose checksum matches its payload. Only run when a
 * segment is damaged, at start-up or by `dris queue check`.
 */
function findIntactFrames(buf: Buffer, base: number, lastSeq: number, sum: Checksum): Pick<SegmentScan, 'laterGroup' | 'maxSeqAfterFault'> {
  let laterGroup: SegmentScan['laterGroup'] = null;
  let maxSeq: number | null = null;
  const maxPlausible = lastSeq + 1 + Math.floor(buf.length / HEADER);
  // The damaged frame itself (offset 0) is skipped: it is what failed.
  let p = 1;
  while (p + HEADER <= buf.length) {
    const raw = buf.readUInt32LE(p);
    const len = raw & LENGTH_MASK;
    const seq = buf.readDoubleLE(p + 8);
    if (p + HEADER + len <= buf.length && Number.isInteger(seq) && seq > lastSeq && seq <= maxPlausible && sum(buf.subarray(p + HEADER, p + HEADER + len)) === buf.readUInt32LE(p + 4)) {
      if ((raw & GROUP_START) !== 0 && laterGroup === null) laterGroup = { offset: base + p, seq };
      maxSeq = Math.max(maxSeq ?? seq, seq);
      p += HEADER + len;
      continue;
    }
    p += 1;
  }
  return { laterGroup, maxSeqAfterFault: maxSeq };
}

/** What the lost-ranges file of a log holds: seqs that repair gave up, never to be read or reused. */
export interface LostRange {
  readonly from: number;
  readonly to: number;
  /** Where the damaged bytes were, and where repair moved them. */
  readonly file: string;
  readonly offset: number;
  readonly quarantine: string | null;
  readonly repairedAt: string;
}

export const LOST_RANGES_FILE = 'lost-ranges.json';

export function parseLostRanges(text: string): LostRange[] {
  const data = JSON.parse(text) as { ranges?: unknown };
  if (!Array.isArray(data.ranges)) throw new Error('no ranges array');
  return (data.ranges as LostRange[]).filter((r) => Number.isSafeInteger(r.from) && Number.isSafeInteger(r.to) && r.from <= r.to).sort((a, b) => a.from - b.from);
}
