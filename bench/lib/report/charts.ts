import { decodeHistogram, percentileCurve } from '../histogram.js';
import type { SeriesPoint } from '../load/generator.js';
import type { LatencySet, Phase, SweepResult } from '../results.js';
import { lineChart, percentileX } from './svg.js';

/**
 * The three kinds of plot of a result: latency over time (p50, p99 and max of each second),
 * latency distribution (the HDR percentile curve), and throughput against offered rate (a
 * sweep's points beside the line where achieved equals offered, with p99 against the bound).
 */

/** Every latency of a phase: the generator's (request latency) and any measured otherwise. */
export function phaseLatencies(p: Phase): LatencySet[] {
  const out: LatencySet[] = [];
  if (p.load !== undefined) {
    const label = p.load.mode === 'open' ? 'request latency (from intended send)' : 'request latency (closed loop)';
    out.push({ label, summary: p.load.latency, histogram: p.load.histogram, series: p.load.series });
  }
  out.push(...(p.latencies ?? []));
  return out;
}

function wide(values: readonly number[]): boolean {
  const pos = values.filter((v) => v > 0);
  return pos.length > 0 && Math.max(...pos) / Math.min(...pos) > 50;
}

export function latencyOverTime(title: string, series: readonly SeriesPoint[]): string {
  const seconds = series.filter((s) => s.ok > 0);
  return lineChart({
    title,
    xLabel: 'second of the measured window',
    yLabel: 'latency (ms)',
    yScale: wide(seconds.flatMap((s) => [s.p50, s.max])) ? 'log' : 'linear',
    series: [
      { name: 'p50', points: seconds.map((s) => [s.second + 1, s.p50]) },
      { name: 'p99', points: seconds.map((s) => [s.second + 1, s.p99]) },
      { name: 'max', points: seconds.map((s) => [s.second + 1, s.max]), dashed: true },
    ],
  });
}

export function throughputOverTime(title: string, series: readonly SeriesPoint[], perRequest: number): string {
  return lineChart({
    title,
    xLabel: 'second of the measured window',
    yLabel: perRequest > 1 ? 'records/s' : 'requests/s',
    series: [
      { name: 'ok', points: series.map((s) => [s.second + 1, s.ok * perRequest]) },
      { name: 'failed', points: series.map((s) => [s.second + 1, s.errors * perRequest]), dashed: true },
    ],
  });
}

export function distribution(title: string, sets: readonly { name: string; histogram: string }[]): string {
  const curves = sets.map((s) => ({ name: s.name, curve: percentileCurve(decodeHistogram(s.histogram)) }));
  const maxX = Math.max(1, ...curves.flatMap((c) => c.curve.filter((p) => p.percentile < 100).map((p) => percentileX(p.percentile)))) + 0.3;
  return lineChart({
    title,
    xLabel: 'percentile',
    yLabel: 'latency (ms)',
    xScale: 'percentile',
    yScale: wide(curves.flatMap((c) => c.curve.map((p) => p.ms))) ? 'log' : 'linear',
    series: curves.map((c) => ({ name: c.name, points: c.curve.map((p) => [percentileX(p.percentile, maxX), p.ms] as const) })),
  });
}

export function sweepThroughput(s: SweepResult): string {
  const pts = [...s.points].sort((a, b) => a.offered - b.offered);
  const maxRate = Math.max(1, ...pts.map((p) => p.offered));
  return lineChart({
    title: `${s.title}: throughput against offered rate${s.knee === null ? '' : ` (knee ${Math.round(s.knee)} ${s.unit})`}`,
    xLabel: `offered (${s.unit})`,
    yLabel: `achieved (${s.unit})`,
    series: [
      { name: 'achieved', points: pts.map((p) => [p.offered, p.achieved]), markers: true },
      { name: 'achieved = offered', points: [[0, 0], [maxRate, maxRate]], dashed: true },
    ],
  });
}

export function sweepLatency(s: SweepResult): string {
  const pts = [...s.points].sort((a, b) => a.offered - b.offered);
  const maxRate = Math.max(1, ...pts.map((p) => p.offered));
  return lineChart({
    title: `${s.title}: ${s.latencyLabel} against offered rate`,
    xLabel: `offered (${s.unit})`,
    yLabel: 'latency (ms)',
    yScale: wide(pts.flatMap((p) => [p.p50, p.p99, s.boundMs])) ? 'log' : 'linear',
    series: [
      { name: 'p99', points: pts.map((p) => [p.offered, p.p99]), markers: true },
      { name: 'p50', points: pts.map((p) => [p.offered, p.p50]), markers: true },
      { name: `bound ${s.boundMs} ms`, points: [[0, s.boundMs], [maxRate, s.boundMs]], dashed: true },
    ],
  });
}

/** The latency distributions of a sweep's rates on one plot (for pipeline: 202 -> Anchored). */
export function sweepDistribution(s: SweepResult, phases: readonly Phase[]): string | null {
  const sets = phases
    .filter((p) => p.key.startsWith(`${s.key}.sweep`))
    .map((p) => ({ p, set: phaseLatencies(p).at(-1) }))
    .filter((x): x is { p: Phase; set: LatencySet } => x.set !== undefined && x.set.summary.count > 0)
    .sort((a, b) => (a.p.load?.offeredPerSec ?? 0) - (b.p.load?.offeredPerSec ?? 0));
  if (sets.length === 0) return null;
  return distribution(
    `${s.title}: ${sets[0]?.set.label ?? 'latency'} distribution per offered rate`,
    sets.map(({ p, set }) => ({ name: p.title.replace(/^.*@ /, ''), histogram: set.histogram })),
  );
}
