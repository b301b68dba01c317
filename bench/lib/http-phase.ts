import { availableParallelism } from 'node:os';
import { describeGenerator, runLoad, type LoadResult } from './load/generator.js';
import type { LoadMode, RequestSource, ResponseCheck } from './load/types.js';
import { bool, num, optNum, type OptionSpec, type OptionValues } from './options.js';
import type { Progress } from './progress.js';
import type { Phase, SweepResult } from './results.js';
import { describeKnee, runSweep } from './sweep.js';
import { fmtNum } from './table.js';

/**
 * One HTTP workload measured the way the command line asks: closed loop (maximum throughput over
 * --connections), open loop at --rate, or a --sweep of open-loop rates that finds the knee. Rates
 * are records per second; a bulk request carries several records.
 */

export const LOAD_OPTIONS: readonly OptionSpec[] = [
  { name: 'rate', kind: 'number', unit: 'records/s', help: 'open loop: offered rate, latency from each intended send time (coordinated-omission corrected); without it: closed loop, maximum throughput' },
  { name: 'sweep', kind: 'flag-or-numbers', help: 'open-loop rates in turn (records/s; alone: an automatic series) and the knee: the highest rate whose p99 stays under --p99-bound' },
  { name: 'sweep-from', kind: 'number', unit: 'records/s', help: 'first rate of an automatic sweep' },
  { name: 'sweep-factor', kind: 'number', default: 2, min: 1.05, help: 'growth of an automatic sweep from one rate to the next' },
  { name: 'sweep-steps', kind: 'integer', default: 8, max: 30, help: 'most rates an automatic sweep tries before bisecting' },
  { name: 'sweep-refine', kind: 'integer', default: 2, min: 0, max: 10, help: 'bisections between the last passing and the first failing rate' },
  { name: 'workers', kind: 'integer', help: 'load generator threads (default: the CPUs the generator has, at most 4)' },
  { name: 'max-connections', kind: 'integer', default: 2048, unit: 'connections', help: 'open loop: most connections the generator opens to hold the rate' },
  { name: 'timeout', kind: 'number', default: 10_000, unit: 'ms', help: 'an answer later than this is a timeout error' },
  { name: 'pin', kind: 'boolean', default: true, help: 'service on CPU 0, generator on the others (taskset; --no-pin to turn off)' },
];

export interface HttpTarget {
  readonly host: string;
  readonly port: number;
}

export interface HttpWorkload {
  readonly source: RequestSource;
  readonly check: ResponseCheck;
  readonly recordsPerRequest: number;
  /** Closed loop: connections. */
  readonly connections: number;
}

export interface PhaseTiming {
  readonly warmupSec: number;
  readonly durationSec: number;
}

export function generatorWorkers(values: OptionValues, generatorCpus: number | null): number {
  const given = optNum(values, 'workers');
  if (given !== undefined) return given;
  return Math.max(1, Math.min(4, generatorCpus ?? availableParallelism() - 1));
}

export async function measureHttp(
  progress: Progress,
  key: string,
  title: string,
  target: HttpTarget,
  w: HttpWorkload,
  values: OptionValues,
  timing: PhaseTiming & { readonly workers: number; readonly rateRecords?: number | undefined },
): Promise<Phase & { load: LoadResult }> {
  const rate = timing.rateRecords;
  const mode: LoadMode = rate === undefined ? { kind: 'closed', connections: w.connections } : { kind: 'open', ratePerSec: rate / w.recordsPerRequest };
  const load = await progress.phase(key, title, async (h) => {
    return runLoad(
      {
        host: target.host,
        port: target.port,
        source: w.source,
        mode,
        warmupSec: timing.warmupSec,
        durationSec: timing.durationSec,
        workers: timing.workers,
        initialConnections: Math.min(num(values, 'max-connections'), w.connections),
        maxConnections: num(values, 'max-connections'),
        timeoutMs: num(values, 'timeout'),
        check: w.check,
      },
      { onSecond: (s) => h.note(`second ${s.second + 1}: ${fmtNum(s.ok * w.recordsPerRequest)} records/s ok, ${s.errors} failed`) },
    );
  });
  const per = w.recordsPerRequest;
  progress.line(
    `  ${title}: ${fmtNum(load.okPerSec * per)} records/s${per > 1 ? ` (${fmtNum(load.okPerSec)} req/s)` : ''}, p50 ${fmtNum(load.latency.p50)} ms, p99 ${fmtNum(load.latency.p99)} ms, max ${fmtNum(load.latency.max)} ms, ${load.failed} failed`,
  );
  progress.line(`  ${describeGenerator(load)}`);
  return { key, title, load };
}

/** The open-loop sweep of one workload; returns its phases and its knee. */
export async function sweepHttp(
  progress: Progress,
  key: string,
  title: string,
  target: HttpTarget,
  w: HttpWorkload,
  values: OptionValues,
  timing: PhaseTiming & { readonly workers: number; readonly defaultFrom: number },
): Promise<{ phases: Phase[]; sweep: SweepResult }> {
  const listed = values['sweep'];
  const boundMs = num(values, 'p99-bound');
  const phases: Phase[] = [];
  const { points, knee, firstFail } = await runSweep(
    {
      ...(Array.isArray(listed) ? { rates: listed as number[] } : {}),
      from: optNum(values, 'sweep-from') ?? timing.defaultFrom,
      factor: num(values, 'sweep-factor'),
      maxSteps: num(values, 'sweep-steps'),
      refine: num(values, 'sweep-refine'),
      boundMs,
    },
    async (rate, step) => {
      const phaseKey = `${key}.sweep${step}`;
      progress.extend([{ key: phaseKey, seconds: timing.warmupSec + timing.durationSec + 1 }]);
      const p = await measureHttp(progress, phaseKey, `${title} @ ${fmtNum(rate)} records/s`, target, w, values, { ...timing, rateRecords: rate });
      phases.push(p);
      const requests = p.load.ok + p.load.failed;
      return { offered: rate, achieved: p.load.okPerSec * w.recordsPerRequest, p50: p.load.latency.p50, p99: p.load.latency.p99, failed: p.load.failed, requests };
    },
  );
  progress.line(`  ${title}: knee ${describeKnee({ knee, firstFail }, 'records/s')} (p99 bound ${boundMs} ms)`);
  return { phases, sweep: { key, title, unit: 'records/s', boundMs, latencyLabel: 'request p99', points, knee, firstFail } };
}

export function sweepRequested(values: OptionValues): boolean {
  return values['sweep'] !== undefined && values['sweep'] !== false;
}

export function pinRequested(values: OptionValues): boolean {
  return bool(values, 'pin');
}

/** Planned load phases of one workload: one, or the sweep's steps (listed, or a guess for an automatic sweep). */
export function plannedLoads(key: string, values: OptionValues, seconds: number): { key: string; seconds: number }[] {
  if (!sweepRequested(values)) return [{ key, seconds }];
  const listed = values['sweep'];
  const steps = Array.isArray(listed) ? listed.length : Math.ceil(num(values, 'sweep-steps') / 2) + num(values, 'sweep-refine');
  return Array.from({ length: steps }, (_, i) => ({ key: `${key}.sweep${i}`, seconds }));
}
