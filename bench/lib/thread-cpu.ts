import { readdirSync, readFileSync } from 'node:fs';
import { parseStat, ticksPerSecond } from './process-cpu.js';

/**
 * CPU time of one process by thread group, from /proc/<pid>/task: where a service's CPU goes when
 * a profiler cannot say. A sampling profile of the main thread shows JavaScript only; the
 * embedded engine's threads (chDB names them: MergeMutate for merges, ThreadPool and
 * QueryPipelineEx for query and insert work) and Node's own (libuv's pool, where the engine's
 * calls and file system work run, and V8's helpers, all named `node`) are seen here instead.
 * Linux only: elsewhere a reading is empty.
 */

/** The main thread's group: the process's own task. */
export const MAIN_THREAD = 'main (JavaScript, event loop)';
/** Threads named after the executable: libuv's pool and V8's platform workers. */
export const NODE_THREADS = 'libuv pool and V8 helpers';

/** CPU seconds so far of each thread group of `pid`. */
export type ThreadReading = ReadonlyMap<string, number>;

export function groupOf(pid: number, tid: number, comm: string): string {
  if (tid === pid) return MAIN_THREAD;
  if (comm === 'node') return NODE_THREADS;
  return comm;
}

/** The thread's name from a /proc stat line (between the first '(' and the last ')'). */
function commOf(stat: string): string {
  return stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
}

export function readThreads(pid: number, ticksPerSec = ticksPerSecond()): ThreadReading {
  const out = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const t of tids) {
    try {
      const text = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
      const stat = parseStat(text, ticksPerSec, 4096);
      if (stat === null) continue;
      const group = groupOf(pid, Number(t), commOf(text));
      out.set(group, (out.get(group) ?? 0) + stat.cpuSec);
    } catch {
      // The thread ended in between.
    }
  }
  return out;
}

export interface ThreadCost {
  readonly group: string;
  readonly cpuSec: number;
  /** CPU milliseconds per 1000 records carried between the readings. */
  readonly msPer1000: number;
  /** Share of the process's CPU between the readings, percent. */
  readonly share: number;
}

/**
 * Each group's CPU between two readings, largest first. A thread that ended in between is missing
 * from the second reading; its group's CPU is undercounted by what it had before, never negative.
 */
export function threadCosts(before: ThreadReading, after: ThreadReading, records: number): ThreadCost[] {
  const spent = [...after].map(([group, sec]) => ({ group, sec: Math.max(0, sec - (before.get(group) ?? 0)) }));
  const total = spent.reduce((s, g) => s + g.sec, 0);
  return spent
    .filter((g) => g.sec > 0)
    .sort((a, b) => b.sec - a.sec)
    .map(({ group, sec }) => ({
      group,
      cpuSec: Math.round(sec * 100) / 100,
      msPer1000: records > 0 ? Math.round((10 * 1000 * sec * 1000) / records) / 10 : 0,
      share: total > 0 ? Math.round((1000 * sec) / total) / 10 : 0,
    }));
}
