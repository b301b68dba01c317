import type { SweepPoint } from './results.js';

/**
 * Finding the knee: the highest offered rate whose p99 stays under a bound while the service keeps
 * up (achieved >= 95 % of offered) and almost nothing fails (<= 0.1 % of requests). Given rates are
 * run in ascending order. Without them the sweep starts at `from` and multiplies by `factor` until
 * a rate fails (or divides, when the first one fails), then bisects `refine` times between the last
 * rate that passed and the first that failed.
 */

export interface SweepPlan {
  readonly rates?: readonly number[];
  readonly from: number;
  readonly factor: number;
  readonly maxSteps: number;
  readonly refine: number;
  readonly boundMs: number;
}

export interface Measured {
  readonly offered: number;
  readonly achieved: number;
  readonly p50: number;
  readonly p99: number;
  readonly failed: number;
  readonly requests: number;
}

export function judge(m: Measured, boundMs: number): SweepPoint {
  const reasons: string[] = [];
  if (m.p99 > boundMs) reasons.push(`p99 ${m.p99} ms > ${boundMs} ms`);
  if (m.achieved < 0.95 * m.offered) reasons.push(`achieved ${Math.round(m.achieved)} < 95 % of ${Math.round(m.offered)}`);
  if (m.failed > Math.max(0, 0.001 * m.requests)) reasons.push(`${m.failed} failed requests`);
  return { offered: m.offered, achieved: m.achieved, p50: m.p50, p99: m.p99, failed: m.failed, pass: reasons.length === 0, reason: reasons.length === 0 ? null : reasons.join('; ') };
}

/** Two significant digits: sweep rates people can read and repeat. */
export function roundRate(r: number): number {
  if (r <= 0) return r;
  const mag = 10 ** Math.max(0, Math.floor(Math.log10(r)) - 1);
  return Math.max(1, Math.round(r / mag) * mag);
}

/** The knee of a finished list of points: the highest pass below the lowest failure. */
export function kneeOf(points: readonly SweepPoint[]): { knee: number | null; firstFail: number | null } {
  const fails = points.filter((p) => !p.pass).map((p) => p.offered);
  const firstFail = fails.length === 0 ? null : Math.min(...fails);
  const passes = points.filter((p) => p.pass && (firstFail === null || p.offered < firstFail)).map((p) => p.offered);
  return { knee: passes.length === 0 ? null : Math.max(...passes), firstFail };
}

export async function runSweep(plan: SweepPlan, measure: (rate: number, step: number) => Promise<Measured>): Promise<{ points: SweepPoint[]; knee: number | null; firstFail: number | null }> {
  const points: SweepPoint[] = [];
  const at = async (rate: number): Promise<SweepPoint> => {
    const p = judge(await measure(rate, points.length), plan.boundMs);
    points.push(p);
    return p;
  };
  if (plan.rates !== undefined && plan.rates.length > 0) {
    for (const r of [...plan.rates].sort((a, b) => a - b)) await at(r);
    return { points, ...kneeOf(points) };
  }
  let lo: number | null = null;
  let hi: number | null = null;
  let rate = roundRate(plan.from);
  const first = await at(rate);
  const up = first.pass;
  if (up) lo = rate;
  else hi = rate;
  for (let step = 1; step < plan.maxSteps; step++) {
    rate = roundRate(up ? rate * plan.factor : rate / plan.factor);
    const p = await at(rate);
    if (up && !p.pass) {
      hi = rate;
      break;
    }
    if (!up && p.pass) {
      lo = rate;
      break;
    }
    if (up) lo = rate;
    else hi = rate;
  }
  for (let i = 0; i < plan.refine && lo !== null && hi !== null; i++) {
    const mid = roundRate((lo + hi) / 2);
    if (mid <= lo || mid >= hi) break;
    if ((await at(mid)).pass) lo = mid;
    else hi = mid;
  }
  return { points, ...kneeOf(points) };
}

/** "2,000 records/s", "at least 2,000 records/s (no rate failed)" or "none (no rate passed)". */
export function describeKnee(r: { knee: number | null; firstFail: number | null }, unit: string): string {
  if (r.knee === null) return 'none (no rate passed)';
  const v = `${Math.round(r.knee).toLocaleString('en-US')} ${unit}`;
  return r.firstFail === null ? `at least ${v} (every rate passed: raise --sweep-steps or list higher rates)` : `${v} (${Math.round(r.firstFail).toLocaleString('en-US')} ${unit} failed)`;
}
