import type { Environment } from './environment.js';
import type { OptionSpec, OptionValues } from './options.js';
import type { PlannedPhase, Progress } from './progress.js';
import type { Figure, FloorFigure, Phase, SweepResult } from './results.js';
import type { ToolRequirement } from './tools.js';

/**
 * A bench scenario is one file in bench/scenarios/ exporting `scenario`: the registry finds it
 * there, `--help` lists it with its options, and the entry point runs it with the common options
 * (duration, warm-up, results, comparison, report) handled around it.
 */

export interface ScenarioContext {
  readonly values: OptionValues;
  readonly progress: Progress;
  /** Filled in by the scenario where it learns more (the service's backend, pinning). */
  readonly environment: Environment;
  readonly allowFallback: boolean;
}

export interface ScenarioOutput {
  readonly headline: readonly Figure[];
  readonly floors: readonly FloorFigure[];
  readonly phases: readonly Phase[];
  readonly sweeps: readonly SweepResult[];
  /** Service configuration and load parameters the figures are of. */
  readonly config: Readonly<Record<string, unknown>>;
  readonly notes: readonly string[];
  readonly warmupSeconds: number;
  /** Scenario-specific tables printed before the common headline table. */
  readonly tables: readonly string[];
}

export interface Scenario {
  readonly name: string;
  /** One line for the scenario list. */
  readonly summary: string;
  /** Position in the list. */
  readonly order: number;
  /** Paragraph(s) for the scenario's --help: what it measures, against which floor. */
  readonly description: string;
  /** Its own options; the common ones are added by the entry point. */
  readonly options: readonly OptionSpec[];
  /** Defaults of the common options that differ per scenario. */
  readonly defaults: { readonly duration: number; readonly warmup: number; readonly p99BoundMs: number };
  /** Checks the hashing backend itself (the hash scenario measures every backend). */
  readonly ownBackendCheck?: boolean;
  requirements?(values: OptionValues): readonly ToolRequirement[];
  /** The phases a run with these options expects, for progress and ETA. */
  plan(values: OptionValues): readonly PlannedPhase[];
  run(ctx: ScenarioContext): Promise<ScenarioOutput>;
}

export function isScenario(v: unknown): v is Scenario {
  const s = v as Partial<Scenario> | null;
  return s !== null && typeof s === 'object' && typeof s.name === 'string' && typeof s.run === 'function' && typeof s.plan === 'function' && Array.isArray(s.options);
}

/** A throughput figure and its ratios to the floors it is compared with. */
export function withFloors(f: Omit<Figure, 'floors'>, floors: readonly (FloorFigure | null | undefined)[]): Figure {
  const ratios = floors.filter((x): x is FloorFigure => x !== null && x !== undefined && x.value > 0).map((x) => ({ key: x.key, ratio: Math.round((10_000 * f.value) / x.value) / 10_000 }));
  return ratios.length === 0 ? f : { ...f, floors: ratios };
}
