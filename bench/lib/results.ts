import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../test/harness/service.js';
import type { Environment } from './environment.js';
import type { LatencySummary } from './histogram.js';
import type { LoadResult, SeriesPoint } from './load/generator.js';
import { BenchRefusal } from './refusal.js';

/**
 * The results file every run writes: the environment, the options, every figure with its unit and
 * which direction is better, the floors measured in the same run, each load phase with its
 * percentiles, encoded HDR histogram and per-second series, and the sweeps. `--compare` and
 * `report` read it back.
 */

export const RESULT_SCHEMA = 'dris-bench/1';

/** A physical limit measured in the same run, beside which a headline figure is printed. */
export interface FloorFigure {
  readonly key: string;
  readonly label: string;
  readonly value: number;
  readonly unit: string;
  /** How it was measured. */
  readonly source: string;
}

export interface Figure {
  readonly key: string;
  readonly label: string;
  readonly value: number;
  readonly unit: string;
  readonly better: 'higher' | 'lower';
  /** Floors this figure is compared with: ratio = value / floor (throughput) in the same unit. */
  readonly floors?: readonly { readonly key: string; readonly ratio: number }[];
}

/** A latency measured other than by the load generator (202 -> Anchored), plotted like one. */
export interface LatencySet {
  readonly label: string;
  readonly summary: LatencySummary;
  /** Encoded HDR histogram (µs). */
  readonly histogram: string;
  readonly series: readonly SeriesPoint[];
}

export interface Phase {
  readonly key: string;
  readonly title: string;
  readonly load?: LoadResult;
  readonly latencies?: readonly LatencySet[];
  /** Figures of a phase that is not an HTTP load (pipeline follow-up, hashing). */
  readonly data?: Readonly<Record<string, unknown>>;
}

export interface SweepPoint {
  readonly offered: number;
  readonly achieved: number;
  readonly p50: number;
  readonly p99: number;
  readonly failed: number;
  /** Within the bound, keeping up, without errors. */
  readonly pass: boolean;
  readonly reason: string | null;
}

export interface SweepResult {
  readonly key: string;
  readonly title: string;
  readonly unit: string;
  /** The p99 bound (ms) a rate must stay under. */
  readonly boundMs: number;
  readonly latencyLabel: string;
  readonly points: readonly SweepPoint[];
  /** The highest rate that passed below the first that failed; null if none passed. */
  readonly knee: number | null;
  /** The lowest rate that failed, if any (the knee lies between the two). */
  readonly firstFail: number | null;
}

export interface BenchResult {
  readonly schema: typeof RESULT_SCHEMA;
  readonly scenario: string;
  readonly startedAt: string;
  readonly finishedAt: string;
  readonly wallSeconds: number;
  readonly argv: readonly string[];
  readonly options: Readonly<Record<string, unknown>>;
  /** The service configuration and load parameters the figures are of. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly environment: Environment;
  readonly warmupSeconds: number;
  readonly headline: readonly Figure[];
  readonly floors: readonly FloorFigure[];
  readonly phases: readonly Phase[];
  readonly sweeps: readonly SweepResult[];
  readonly notes: readonly string[];
}

export function defaultResultsDir(): string {
  return path.join(repoRoot, '.bench', 'results');
}

export function writeResult(result: BenchResult, file: string | undefined): string {
  const stamp = result.startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const target = file ?? path.join(defaultResultsDir(), `${result.scenario}-${stamp}${result.environment.commit === null ? '' : `-${result.environment.commit.slice(0, 8)}`}.json`);
  mkdirSync(path.dirname(target), { recursive: true });
  writeFileSync(target, `${JSON.stringify(result, null, 1)}\n`);
  return target;
}

export function readResult(file: string): BenchResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new BenchRefusal(`cannot read ${file} as a bench result: ${err instanceof Error ? err.message : String(err)}`);
  }
  const r = parsed as Partial<BenchResult> | null;
  if (r === null || typeof r !== 'object' || r.schema !== RESULT_SCHEMA || !Array.isArray(r.headline)) {
    throw new BenchRefusal(`${file} is not a dris bench result (schema ${RESULT_SCHEMA})`);
  }
  return r as BenchResult;
}

/** The last line of a run: its headline figures by key, the results file and the knees. */
export function compactLine(result: BenchResult, file: string): string {
  const out: Record<string, unknown> = { scenario: result.scenario };
  for (const f of result.headline) out[f.key] = f.value;
  for (const fl of result.floors) out[`floor.${fl.key}`] = fl.value;
  for (const s of result.sweeps) out[`knee.${s.key}`] = s.knee;
  out['hashBackend'] = result.environment.hashBackend.service ?? result.environment.hashBackend.bench;
  out['warmupSeconds'] = result.warmupSeconds;
  out['resultFile'] = file;
  return JSON.stringify(out);
}
