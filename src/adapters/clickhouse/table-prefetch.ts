import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { withTimeout } from '../../util/with-timeout.js';
import { readAhead, readAheadMethod, type ReadAheadMethod } from '../storage/page-cache.js';
import type { SqlRunner } from './sql-runner.js';

/**
 * A table's files read ahead into the page cache, newest parts first and, within a part, its
 * smallest files first (primary index and marks before the data), up to a budget: what point
 * look-ups of the table read, in memory before they ask for it. Only where the engine's files
 * are on this machine (`SqlRunner.localFiles`, the embedded engine); a server keeps its own.
 */

export interface PrefetchOptions {
  /** Most bytes asked for. */
  readonly maxBytes: number;
  /** Stops between two steps. */
  readonly signal?: AbortSignal;
  /** Bytes asked for at once: the granularity of the budget, of a stop and of the deadline. */
  readonly stepBytes?: number;
  /** Deadline of one step, milliseconds. */
  readonly stepTimeoutMs?: number;
}

export interface PrefetchResult {
  /** Bytes asked for. */
  readonly bytes: number;
  /** Bytes of the table's active parts. */
  readonly tableBytes: number;
  readonly files: number;
  /** null when nothing was read ahead because the files are not on this machine. */
  readonly method: ReadAheadMethod | null;
}

export type ReadAhead = (file: string, offset: number, length: number) => Promise<void>;

const DEFAULT_STEP_BYTES = 256 * 1024 * 1024;
const DEFAULT_STEP_TIMEOUT_MS = 60_000;

interface PartRow {
  path: string;
  bytes: number | string;
}

interface PartFile {
  readonly file: string;
  readonly size: number;
}

export async function prefetchTable(runner: SqlRunner, db: string, table: string, options: PrefetchOptions, read: ReadAhead = readAhead): Promise<PrefetchResult> {
  if (runner.localFiles !== true) return { bytes: 0, tableBytes: 0, files: 0, method: null };
  const parts = await runner.query<PartRow>(
    `SELECT path, bytes_on_disk AS bytes FROM system.parts
     WHERE database = {db:String} AND table = {table:String} AND active
     ORDER BY max_block_number DESC`,
    { db, table },
  );
  const tableBytes = parts.reduce((sum, p) => sum + Number(p.bytes), 0);
  const step = Math.max(1, options.stepBytes ?? DEFAULT_STEP_BYTES);
  const timeoutMs = options.stepTimeoutMs ?? DEFAULT_STEP_TIMEOUT_MS;
  const stopped = (): boolean => options.signal?.aborted === true;
  let budget = Math.max(0, Math.floor(options.maxBytes));
  let bytes = 0;
  let files = 0;
  for (const part of parts) {
    if (budget === 0 || stopped()) break;
    for (const f of await filesOf(path.resolve(part.path))) {
      if (budget === 0 || stopped()) break;
      const length = Math.min(f.size, budget);
      let at = 0;
      try {
        for (; at < length && !stopped(); at += step) {
          await withTimeout(read(f.file, at, Math.min(step, length - at)), timeoutMs, `reading ${table} ahead`);
        }
      } catch (err) {
        // A part merged away meanwhile: its files went with it, and its rows are in the new part.
        if (!isGone(err)) throw err;
      }
      const done = Math.min(at, length);
      bytes += done;
      budget -= done;
      if (done > 0) files += 1;
    }
  }
  return { bytes, tableBytes, files, method: readAheadMethod() };
}

/** The regular files of a part's directory, smallest first; none when the part is gone. */
async function filesOf(dir: string): Promise<PartFile[]> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if (isGone(err)) return [];
    throw err;
  }
  const out: PartFile[] = [];
  for (const name of names) {
    const file = path.join(dir, name);
    try {
      const s = await stat(file);
      if (s.isFile() && s.size > 0) out.push({ file, size: s.size });
    } catch (err) {
      if (!isGone(err)) throw err;
    }
  }
  return out.sort((a, b) => a.size - b.size || a.file.localeCompare(b.file));
}

function isGone(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 'ENOENT';
}
