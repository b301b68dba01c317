import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { BenchResult } from '../results.js';
import { distribution, latencyOverTime, phaseLatencies, sweepDistribution, sweepLatency, sweepThroughput } from './charts.js';

/** The plots of a result as separate .svg files (for the README and other documents). */
export function writeSvgs(r: BenchResult, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  const put = (name: string, svg: string): void => {
    const file = path.join(dir, `${r.scenario}-${name.replace(/[^a-z0-9.-]+/gi, '-').toLowerCase()}.svg`);
    writeFileSync(file, `${svg}\n`);
    written.push(file);
  };
  for (const s of r.sweeps) {
    put(`${s.key}-throughput`, sweepThroughput(s));
    put(`${s.key}-latency`, sweepLatency(s));
    const d = sweepDistribution(s, r.phases);
    if (d !== null) put(`${s.key}-distributions`, d);
  }
  for (const p of r.phases) {
    const sets = phaseLatencies(p);
    if (sets.length === 0) continue;
    const first = sets[0];
    if (first !== undefined && first.series.length > 0) put(`${p.key}-latency-over-time`, latencyOverTime(`${p.title}: ${first.label} over time`, first.series));
    put(`${p.key}-distribution`, distribution(`${p.title}: latency distribution`, sets.map((s) => ({ name: s.label, histogram: s.histogram }))));
  }
  return written;
}
