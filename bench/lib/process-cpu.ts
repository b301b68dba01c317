import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time and memory of the processes a scenario started, grouped by role, from /proc: each
 * process's user + system time (all its threads) and its resident set. A role is given by the
 * root processes it owns (with their descendants) or found from a process's command line. Two
 * readings around a phase give each role's CPU seconds in it; dividing by the records the phase
 * carried gives the cost per role that sizing needs. Linux only: elsewhere every reading is empty.
 */

export interface ProcessInfo {
  readonly pid: number;
  readonly ppid: number;
  /** User + system time, seconds. */
  readonly cpuSec: number;
  readonly rssBytes: number;
  readonly cmdline: string;
}

export interface RoleUsage {
  readonly processes: number;
  readonly cpuSec: number;
  readonly rssBytes: number;
}

export type RoleReading = ReadonlyMap<string, RoleUsage>;

function sysconf(name: string, fallback: number): number {
  const r = spawnSync('getconf', [name], { encoding: 'utf8', timeout: 5000 });
  const v = Number(r.stdout?.trim());
  return r.status === 0 && Number.isFinite(v) && v > 0 ? v : fallback;
}

let units: { ticks: number; page: number } | null = null;
function unitsOf(): { ticks: number; page: number } {
  units ??= { ticks: sysconf('CLK_TCK', 100), page: sysconf('PAGESIZE', 4096) };
  return units;
}

/** The unit of /proc's CPU times: clock ticks per second. */
export function ticksPerSecond(): number {
  return unitsOf().ticks;
}

/** One /proc/<pid>/stat line: the command name in parentheses may hold spaces, so fields count from its end. */
export function parseStat(text: string, ticksPerSec: number, pageBytes: number): { ppid: number; cpuSec: number; rssBytes: number } | null {
  const close = text.lastIndexOf(')');
  if (close < 0) return null;
  const f = text.slice(close + 2).trim().split(/\s+/);
  // After the name: state(0) ppid(1) ... utime(11) stime(12) ... rss(21), in pages.
  const ppid = Number(f[1]);
  const utime = Number(f[11]);
  const stime = Number(f[12]);
  const rss = Number(f[21]);
  if (![ppid, utime, stime, rss].every(Number.isFinite)) return null;
  return { ppid, cpuSec: (utime + stime) / ticksPerSec, rssBytes: rss * pageBytes };
}

/** Every process visible in /proc now (those that vanish while reading are skipped). */
export function readProcesses(): Map<number, ProcessInfo> {
  const out = new Map<number, ProcessInfo>();
  const { ticks, page } = unitsOf();
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = parseStat(readFileSync(`/proc/${e}/stat`, 'utf8'), ticks, page);
      if (stat === null) continue;
      const cmdline = readFileSync(`/proc/${e}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      out.set(Number(e), { pid: Number(e), ...stat, cmdline });
    } catch {
      // Gone in between.
    }
  }
  return out;
}

/** The pid and every descendant of it among `procs`. */
export function treeOf(procs: ReadonlyMap<number, ProcessInfo>, root: number): number[] {
  const children = new Map<number, number[]>();
  for (const p of procs.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p.pid]);
  const out = new Set<number>();
  const unvisited = [root];
  while (unvisited.length > 0) {
    const pid = unvisited.pop() as number;
    if (!procs.has(pid) || out.has(pid)) continue;
    out.add(pid);
    unvisited.push(...(children.get(pid) ?? []));
  }
  return [...out];
}

export interface RoleSpec {
  /** Processes whose role is known, each with its descendants. */
  readonly roots: readonly { readonly role: string; readonly pid: number }[];
  /** Descendants of `under` not among the roots: their role from the command line (null: `other`). */
  readonly under: number;
  readonly classify: (cmdline: string) => string | null;
  /** The role of `under` itself (its own threads); not counted when unset. */
  readonly selfRole?: string;
}

/** Each role's processes, CPU seconds so far and resident memory now. */
export function readRoles(spec: RoleSpec): RoleReading {
  const procs = readProcesses();
  const roleOf = new Map<number, string>();
  for (const r of spec.roots) for (const pid of treeOf(procs, r.pid)) roleOf.set(pid, r.role);
  if (spec.selfRole !== undefined && procs.has(spec.under)) roleOf.set(spec.under, spec.selfRole);
  for (const pid of treeOf(procs, spec.under)) {
    if (pid === spec.under || roleOf.has(pid)) continue;
    roleOf.set(pid, spec.classify((procs.get(pid) as ProcessInfo).cmdline) ?? 'other');
  }
  const out = new Map<string, RoleUsage>();
  for (const [pid, role] of roleOf) {
    const p = procs.get(pid) as ProcessInfo;
    const u = out.get(role) ?? { processes: 0, cpuSec: 0, rssBytes: 0 };
    out.set(role, { processes: u.processes + 1, cpuSec: u.cpuSec + p.cpuSec, rssBytes: u.rssBytes + p.rssBytes });
  }
  return out;
}

export interface RoleCost {
  readonly role: string;
  readonly processes: number;
  readonly cpuSec: number;
  /** CPU seconds per 1000 records carried in the window. */
  readonly cpuSecPer1000: number;
  /** Cores busy on average over the window. */
  readonly cores: number;
  /** Resident memory at the end of the window, MiB. */
  readonly rssMiB: number;
}

/** Each role's cost between two readings, over `wallSec` seconds that carried `records` records. */
export function roleCosts(before: RoleReading, after: RoleReading, wallSec: number, records: number): RoleCost[] {
  const out: RoleCost[] = [];
  for (const [role, a] of after) {
    const cpuSec = Math.max(0, a.cpuSec - (before.get(role)?.cpuSec ?? 0));
    out.push({
      role,
      processes: a.processes,
      cpuSec: Math.round(cpuSec * 100) / 100,
      cpuSecPer1000: records > 0 ? Math.round((1000 * cpuSec * 1000) / records) / 1000 : 0,
      cores: wallSec > 0 ? Math.round((100 * cpuSec) / wallSec) / 100 : 0,
      rssMiB: Math.round(a.rssBytes / 2 ** 20),
    });
  }
  return out;
}
