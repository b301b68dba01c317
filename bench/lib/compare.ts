import type { BenchResult, Figure } from './results.js';
import { table } from './table.js';

/**
 * Two results of one scenario side by side: each headline figure's change in percent, signed so
 * that a positive change is always an improvement, and a regression wherever a figure got worse by
 * more than the threshold. Differences of environment that make the comparison doubtful (another
 * CPU, core count, hashing backend, Node) are listed above the table.
 */

export interface CompareRow {
  readonly key: string;
  readonly label: string;
  readonly unit: string;
  readonly better: Figure['better'];
  readonly old: number;
  readonly new: number;
  /** (new - old) / old in percent; null when old is 0. */
  readonly deltaPct: number | null;
  readonly regressed: boolean;
}

export interface Comparison {
  readonly rows: readonly CompareRow[];
  readonly regressions: number;
  readonly thresholdPct: number;
  /** Figures present in only one of the two. */
  readonly unmatched: readonly string[];
  readonly environmentNotes: readonly string[];
}

function worsePct(better: Figure['better'], deltaPct: number): number {
  return better === 'higher' ? -deltaPct : deltaPct;
}

export function compareResults(oldR: BenchResult, newR: BenchResult, thresholdPct: number): Comparison {
  const notes: string[] = [];
  if (oldR.scenario !== newR.scenario) notes.push(`different scenarios: ${oldR.scenario} against ${newR.scenario}`);
  const eo = oldR.environment;
  const en = newR.environment;
  const differ = (what: string, a: unknown, b: unknown): void => {
    if (a !== b) notes.push(`${what} differs: ${String(a)} -> ${String(b)}`);
  };
  differ('CPU', eo.cpuModel, en.cpuModel);
  differ('cores', eo.cores, en.cores);
  differ('Node', eo.node, en.node);
  // Two builds on one generator: the service's commit is the point of the comparison, said here so it is not mistaken for the bench's.
  differ('service under test', eo.serviceCli?.commit ?? eo.commit, en.serviceCli?.commit ?? en.commit);
  differ('service hash backend', eo.hashBackend.service ?? eo.hashBackend.bench, en.hashBackend.service ?? en.hashBackend.bench);
  const oldBy = new Map(oldR.headline.map((f) => [f.key, f]));
  const rows: CompareRow[] = [];
  const unmatched: string[] = [];
  for (const f of newR.headline) {
    const o = oldBy.get(f.key);
    if (o === undefined) {
      unmatched.push(f.key);
      continue;
    }
    oldBy.delete(f.key);
    const deltaPct = o.value === 0 ? null : (100 * (f.value - o.value)) / Math.abs(o.value);
    const regressed = deltaPct !== null && worsePct(f.better, deltaPct) > thresholdPct;
    rows.push({ key: f.key, label: f.label, unit: f.unit, better: f.better, old: o.value, new: f.value, deltaPct, regressed });
  }
  unmatched.push(...oldBy.keys());
  return { rows, regressions: rows.filter((r) => r.regressed).length, thresholdPct, unmatched, environmentNotes: notes };
}

function fmt(v: number): string {
  return Math.abs(v) >= 100 ? Math.round(v).toLocaleString('en-US') : String(Math.round(v * 1000) / 1000);
}

export function formatComparison(c: Comparison, oldName: string, newName: string): string {
  const lines: string[] = [`compare ${oldName} -> ${newName} (threshold ${c.thresholdPct} %)`];
  for (const n of c.environmentNotes) lines.push(`  note: ${n}`);
  const rows = c.rows.map((r) => {
    const d = r.deltaPct === null ? 'n/a' : `${r.deltaPct >= 0 ? '+' : ''}${r.deltaPct.toFixed(1)} %`;
    const verdict = r.regressed ? 'REGRESSION' : r.deltaPct !== null && worsePct(r.better, r.deltaPct) < -c.thresholdPct ? 'better' : '';
    return [r.label, r.unit, fmt(r.old), fmt(r.new), d, `${r.better} is better`, verdict];
  });
  lines.push(table(['figure', 'unit', 'old', 'new', 'change', '', 'verdict'], rows));
  if (c.unmatched.length > 0) lines.push(`  in one result only: ${c.unmatched.join(', ')}`);
  lines.push(c.regressions > 0 ? `${c.regressions} figure(s) regressed by more than ${c.thresholdPct} %` : `no figure regressed by more than ${c.thresholdPct} %`);
  return lines.join('\n');
}
