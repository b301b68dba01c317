import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { writeFileDurably } from './durable-file.js';
import { FILE_MODE, nodeLogFileSystem } from './log-file-system.js';
import { HEADER, listSegments, LOST_RANGES_FILE, parseLostRanges, scanSegment, type LostRange, type SegmentScan } from './segment-format.js';

/**
 * `dris queue check|repair` over the segment logs of a data directory (the queue, the admission
 * store's generations, the index journal, and any other): what each holds, and where it is damaged.
 * Repair never deletes: the damaged bytes move to a quarantine file beside their segment, and the
 * seqs they held are recorded as lost, so the log opens again and its readers go on after them.
 */

export interface SegmentReport {
  readonly file: string;
  readonly firstSeq: number;
  /** firstSeq - 1 when the segment holds no intact frame. */
  readonly lastSeq: number;
  readonly frames: number;
  readonly bytes: number;
  readonly fileSize: number;
}

export interface LogProblem {
  readonly kind: 'damaged' | 'gap' | 'overlap';
  readonly file: string;
  readonly offset: number;
  readonly detail: string;
  /** Seqs the problem makes unreadable (a repair records them as lost). */
  readonly lost: { readonly from: number; readonly to: number } | null;
}

export interface LogReport {
  readonly dir: string;
  readonly segments: SegmentReport[];
  readonly firstSeq: number | null;
  readonly lastSeq: number | null;
  /** Damage that stops the log from opening. */
  readonly problems: LogProblem[];
  /** An interrupted last group, cut off when the log opens (never acknowledged). */
  readonly tornTail: { readonly file: string; readonly offset: number; readonly bytes: number } | null;
  /** Seqs earlier repairs gave up. */
  readonly lostRanges: LostRange[];
}

interface Scanned {
  readonly file: string;
  readonly firstSeq: number;
  readonly scan: SegmentScan;
}

const REASONS: Readonly<Record<string, string>> = {
  incomplete: 'an incomplete frame',
  checksum: 'a frame whose checksum does not match',
  sequence: 'a frame out of sequence',
};

/** Directories under `dataDir` holding segment logs; the engines' own trees are not walked. */
export function findLogs(dataDir: string): string[] {
  const out: string[] = [];
  const skip = new Set(['clickhouse', 'ipfs', 'anvil', 'node_modules']);
  const walk = (dir: string, depth: number): void => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    if (listSegments(names).length > 0 || names.includes(LOST_RANGES_FILE)) out.push(dir);
    if (depth >= 4) return;
    for (const name of names.sort()) {
      if (depth === 0 && skip.has(name)) continue;
      const sub = path.join(dir, name);
      try {
        if (statSync(sub).isDirectory()) walk(sub, depth + 1);
      } catch {
        // vanished or unreadable: not a log
      }
    }
  };
  walk(dataDir, 0);
  return out;
}

function scanAll(dir: string): Scanned[] {
  return listSegments(readdirSync(dir)).map((f) => {
    const file = path.join(dir, f.name);
    const fd = nodeLogFileSystem.openSync(file);
    try {
      return { file, firstSeq: f.firstSeq, scan: scanSegment(nodeLogFileSystem, fd, f.firstSeq, f.legacy) };
    } finally {
      nodeLogFileSystem.closeSync(fd);
    }
  });
}

function readRanges(dir: string): LostRange[] {
  const file = path.join(dir, LOST_RANGES_FILE);
  return existsSync(file) ? parseLostRanges(readFileSync(file, 'utf8')) : [];
}

function covered(ranges: readonly LostRange[], from: number, to: number): boolean {
  let next = from;
  for (const r of ranges) if (r.from <= next && r.to >= next) next = r.to + 1;
  return next > to;
}

/** The last seq a damaged last segment may have held: no seq at or below it may be given again. */
function lastPossibleSeq(s: Scanned): number {
  const fault = s.scan.fault;
  if (fault === null) return s.scan.lastSeq;
  // Every frame takes at least HEADER bytes: an upper bound of what the damaged bytes held.
  const bound = s.scan.lastSeq + Math.floor((s.scan.fileSize - fault.offset) / HEADER);
  return Math.max(bound, s.scan.maxSeqAfterFault ?? 0);
}

function analyse(segs: readonly Scanned[], ranges: readonly LostRange[]): Pick<LogReport, 'problems' | 'tornTail'> {
  const problems: LogProblem[] = [];
  let tornTail: LogReport['tornTail'] = null;
  segs.forEach((s, i) => {
    const fault = s.scan.fault;
    const next = segs[i + 1];
    if (fault !== null) {
      const what = REASONS[fault.reason] ?? 'a damaged frame';
      if (next === undefined && s.scan.laterGroup === null) {
        tornTail = { file: s.file, offset: fault.offset, bytes: s.scan.fileSize - fault.offset };
      } else {
        const to = next === undefined ? lastPossibleSeq(s) : next.firstSeq - 1;
        const detail =
          next === undefined
            ? `${what}, followed by messages appended after it (seq ${s.scan.laterGroup?.seq ?? '?'} at byte ${s.scan.laterGroup?.offset ?? '?'})`
            : `${what}, in a segment that is not the last`;
        problems.push({ kind: 'damaged', file: s.file, offset: fault.offset, detail, lost: to > s.scan.lastSeq ? { from: s.scan.lastSeq + 1, to } : null });
      }
    }
    if (next === undefined) return;
    // A segment damaged itself already accounts for the seqs up to the next one.
    const end = fault !== null ? next.firstSeq - 1 : s.scan.lastSeq;
    if (next.firstSeq <= end) {
      problems.push({ kind: 'overlap', file: next.file, offset: 0, detail: `it starts at seq ${next.firstSeq}, inside ${path.basename(s.file)}`, lost: null });
    } else if (fault === null && next.firstSeq > end + 1 && !covered(ranges, end + 1, next.firstSeq - 1)) {
      problems.push({ kind: 'gap', file: next.file, offset: 0, detail: `seqs ${end + 1}..${next.firstSeq - 1} are missing before it`, lost: { from: end + 1, to: next.firstSeq - 1 } });
    }
  });
  return { problems, tornTail };
}

export function checkLog(dir: string): LogReport {
  const segs = scanAll(dir);
  const lostRanges = readRanges(dir);
  const { problems, tornTail } = analyse(segs, lostRanges);
  const segments = segs.map((s) => ({ file: s.file, firstSeq: s.firstSeq, lastSeq: s.scan.lastSeq, frames: s.scan.offsets.length, bytes: s.scan.size, fileSize: s.scan.fileSize }));
  const withFrames = segments.filter((s) => s.frames > 0);
  return {
    dir,
    segments,
    firstSeq: withFrames[0]?.firstSeq ?? null,
    lastSeq: withFrames.at(-1)?.lastSeq ?? null,
    problems,
    tornTail,
    lostRanges,
  };
}

export interface RepairOutcome {
  readonly dir: string;
  /** Damaged bytes moved aside: from which segment and offset, to which file. */
  readonly quarantined: { readonly file: string; readonly offset: number; readonly bytes: number; readonly quarantine: string }[];
  /** Seqs recorded as lost by this repair. */
  readonly lost: LostRange[];
  /** Problems a repair cannot settle by itself. */
  readonly unrepaired: LogProblem[];
}

/** Repairs one log (the service must be stopped): keeps intact frames, quarantines the rest, records lost seqs. */
export async function repairLog(dir: string, now: Date = new Date()): Promise<RepairOutcome> {
  const report = checkLog(dir);
  const quarantined: RepairOutcome['quarantined'][number][] = [];
  const lost: LostRange[] = [];
  const unrepaired: LogProblem[] = [];
  for (const p of report.problems) {
    if (p.kind === 'overlap') {
      unrepaired.push(p);
      continue;
    }
    let quarantine: string | null = null;
    if (p.kind === 'damaged') {
      quarantine = await quarantineTail(p.file, p.offset, now);
      quarantined.push({ file: p.file, offset: p.offset, bytes: statSync(quarantine).size, quarantine });
    }
    if (p.lost !== null) lost.push({ from: p.lost.from, to: p.lost.to, file: p.file, offset: p.offset, quarantine, repairedAt: now.toISOString() });
  }
  if (lost.length > 0) {
    const ranges = [...report.lostRanges, ...lost].sort((a, b) => a.from - b.from);
    await writeFileDurably(path.join(dir, LOST_RANGES_FILE), `${JSON.stringify({ ranges }, null, 2)}\n`);
  }
  return { dir, quarantined, lost, unrepaired };
}

/** Copies `file` from `offset` to a quarantine file beside it (flushed), then cuts `file` there. */
async function quarantineTail(file: string, offset: number, now: Date): Promise<string> {
  const { open, rename } = await import('node:fs/promises');
  const stamp = now.toISOString().replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const target = `${file}.corrupt-at-${offset}-${stamp}`;
  const src = await open(file, 'r+');
  try {
    const size = (await src.stat()).size;
    const bytes = Buffer.alloc(size - offset);
    await src.read(bytes, 0, bytes.length, offset);
    const tmp = `${target}.tmp`;
    const out = await open(tmp, 'w', FILE_MODE);
    try {
      await out.writeFile(bytes);
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(tmp, target);
    await nodeLogFileSystem.fsyncDir(path.dirname(file));
    // Only once the copy is on disk is anything cut.
    await src.truncate(offset);
    await src.datasync();
  } finally {
    await src.close();
  }
  return target;
}
