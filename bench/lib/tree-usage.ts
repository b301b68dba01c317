import { readProcesses, treeOf } from './process-cpu.js';

/**
 * CPU time and peak resident memory of a process and its descendants (the embedded default and the
 * anvil it runs) over a phase: the CPU from two readings of /proc, the memory from a reading every
 * `everyMs` in between. Linux only: elsewhere both are 0.
 */

export interface TreeUsage {
  /** User + system seconds of every process of the tree (all threads) over the phase. */
  readonly cpuSec: number;
  /** The highest sum of the tree's resident sets seen in the phase, bytes. */
  readonly peakRssBytes: number;
}

function reading(pid: number): { cpuSec: number; rssBytes: number } {
  const procs = readProcesses();
  let cpuSec = 0;
  let rssBytes = 0;
  for (const p of treeOf(procs, pid)) {
    const info = procs.get(p);
    if (info === undefined) continue;
    cpuSec += info.cpuSec;
    rssBytes += info.rssBytes;
  }
  return { cpuSec, rssBytes };
}

/** Runs `work` while measuring the tree under `pid`. */
export async function measureTree<T>(pid: number, work: () => Promise<T>, everyMs = 1000): Promise<{ result: T; usage: TreeUsage }> {
  const first = reading(pid);
  let peak = first.rssBytes;
  const timer = setInterval(() => {
    peak = Math.max(peak, reading(pid).rssBytes);
  }, everyMs);
  timer.unref();
  try {
    const result = await work();
    const last = reading(pid);
    peak = Math.max(peak, last.rssBytes);
    return { result, usage: { cpuSec: Math.max(0, last.cpuSec - first.cpuSec), peakRssBytes: peak } };
  } finally {
    clearInterval(timer);
  }
}

/** Milliseconds of CPU per 1000 records; 0 without records. */
export function cpuMsPerThousand(usage: TreeUsage, records: number): number {
  return records > 0 ? Math.round(((usage.cpuSec * 1000) / records) * 1000 * 10) / 10 : 0;
}
