import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import type { Logger } from '../../util/logger.js';
import type { LogFileSystem } from './log-file-system.js';
import { listSegments, LOST_RANGES_FILE, parseLostRanges, scanSegment, type LostRange } from './segment-format.js';

/**
 * Opening a segment log's directory: its segments read back and checked, a torn tail cut off, and
 * the seqs a repair gave up. What is damaged anywhere but in the last group stops the open.
 */

export interface Segment {
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

/** The first seq after `seq` that is not in a lost range. */
export function nextAfterLost(lost: readonly LostRange[], seq: number): number {
  let next = seq + 1;
  for (const r of lost) if (next >= r.from && next <= r.to) next = r.to + 1;
  return next;
}

/** The segments of `dir` in sequence order, and its lost ranges; throws storage_corrupt on damage. */
export function loadSegments(fs: LogFileSystem, dir: string, logger: Logger): { segments: Segment[]; lost: LostRange[] } {
  const lost = readLostRanges(dir);
  const files = listSegments(fs.readdirSync(dir));
  const segments = files.map((f, i) => loadSegment(fs, logger, path.join(dir, f.name), f.firstSeq, f.legacy, i === files.length - 1));
  for (let i = 1; i < segments.length; i++) {
    const prev = segments[i - 1] as Segment;
    const seg = segments[i] as Segment;
    if (seg.firstSeq === prev.lastSeq + 1) continue;
    if (seg.firstSeq > prev.lastSeq + 1 && nextAfterLost(lost, prev.lastSeq) === seg.firstSeq) continue;
    throw corrupt(
      seg.file,
      0,
      seg.firstSeq <= prev.lastSeq ? `it starts at seq ${seg.firstSeq}, inside ${prev.file}` : `seqs ${prev.lastSeq + 1}..${seg.firstSeq - 1} are missing before it`,
    );
  }
  return { segments, lost };
}

function loadSegment(fs: LogFileSystem, logger: Logger, file: string, firstSeq: number, legacy: boolean, isLast: boolean): Segment {
  const fd = fs.openSync(file);
  try {
    const scan = scanSegment(fs, fd, firstSeq, legacy);
    if (scan.fault !== null) {
      const where = `${scan.fault.reason === 'incomplete' ? 'an incomplete frame' : scan.fault.reason === 'checksum' ? 'a frame whose checksum does not match' : 'a frame out of sequence'}`;
      if (!isLast) throw corrupt(file, scan.fault.offset, `${where}, in a segment that is not the last`);
      if (scan.laterGroup !== null) throw corrupt(file, scan.fault.offset, `${where}, followed by messages appended after it (seq ${scan.laterGroup.seq} at byte ${scan.laterGroup.offset})`);
      // A group a crash interrupted: never acknowledged, cut off.
      logger.warn({ file, offset: scan.fault.offset, bytes: scan.fileSize - scan.size }, 'cutting off the torn tail of the log');
      fs.ftruncateSync(fd, scan.size);
      fs.fdatasyncSync(fd);
    }
    return { firstSeq, file, legacy, lastSeq: scan.lastSeq, size: scan.size, offsets: scan.offsets };
  } finally {
    fs.closeSync(fd);
  }
}

function corrupt(file: string, offset: number, what: string): DrisError {
  return new DrisError(
    'storage_corrupt',
    `${file} is damaged at byte ${offset}: ${what}. Nothing was changed. Inspect it with \`dris queue check\`; \`dris queue repair\` (service stopped) keeps the intact messages, moves the damaged bytes aside and records the lost seqs`,
  );
}

function readLostRanges(dir: string): LostRange[] {
  let text: string;
  try {
    text = readFileSync(path.join(dir, LOST_RANGES_FILE), 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  try {
    return parseLostRanges(text);
  } catch (err) {
    throw new DrisError('storage_corrupt', `${path.join(dir, LOST_RANGES_FILE)} cannot be read; run \`dris queue check\``, { cause: err });
  }
}
