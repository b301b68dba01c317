import { counterTotal, parseStatements, readMetricsText, statementCosts, type StatementCost, type StatementReading } from './index-statements.js';
import { fmtNum, table } from './table.js';
import { readThreads, threadCosts, type ThreadCost, type ThreadReading } from './thread-cpu.js';

/**
 * Where a load step's time went in the service: its CPU by thread group and its hot index's time
 * by statement, read before and after the step. Printed under the step's table and kept in the
 * results file, so each run says what bound it without a profiler.
 */

export interface TimeReading {
  readonly threads: ThreadReading;
  readonly statements: StatementReading;
  /** The service's own count of what the step carries (a counter named to `readTime`), if any. */
  readonly units: number;
}

export interface TimeBreakdown {
  readonly threads: readonly ThreadCost[];
  readonly statements: readonly StatementCost[];
}

/** `counter`: a counter of the service's that counts what the step carries (e.g. `dris_verifications_total`). */
export async function readTime(pid: number, opsUrl: string, counter?: string): Promise<TimeReading> {
  const threads = readThreads(pid);
  const text = await readMetricsText(opsUrl);
  return { threads, statements: parseStatements(text), units: counter === undefined ? 0 : counterTotal(text, counter) };
}

/**
 * The breakdown between two readings of a step; costs are per 1000 of `records`, or, without it,
 * of what the counter named to `readTime` counted in between.
 */
export function breakdownOf(before: TimeReading, after: TimeReading, records?: number): TimeBreakdown {
  const carried = records ?? Math.max(0, after.units - before.units);
  return { threads: threadCosts(before.threads, after.threads, carried), statements: statementCosts(before.statements, after.statements) };
}

/** The breakdown as two plain-text tables under `title`; the statements' most costly `top`. */
export function formatBreakdown(title: string, b: TimeBreakdown, unit = 'rec', top = 12): string {
  const parts: string[] = [];
  if (b.threads.length > 0) {
    parts.push(
      `${title}: the service's CPU by thread (its process only)`,
      table(
        ['threads', 'CPU s', `ms/1000 ${unit}`, 'share'],
        b.threads.map((t) => [t.group, fmtNum(t.cpuSec), fmtNum(t.msPer1000), `${t.share.toFixed(1)} %`]),
      ),
    );
  }
  if (b.statements.length > 0) {
    parts.push(
      `${title}: hot index statements by wall time (waits for the CPU and the engine included; they overlap)`,
      table(
        ['statement', 'count', 'wall s', 'mean ms', 'share'],
        b.statements.slice(0, top).map((s) => [s.statement, String(s.count), fmtNum(s.seconds), fmtNum(s.meanMs), `${s.share.toFixed(1)} %`]),
      ),
    );
  }
  return parts.join('\n\n');
}
