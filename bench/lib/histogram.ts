import * as hdr from 'hdr-histogram-js';

/**
 * Latency statistics on HDR histograms (hdr-histogram-js): values recorded in microseconds with 3
 * significant digits from 1 µs to an hour, so p99.9 and max are exact to 0.1 % and merging the
 * histograms of several workers or seconds loses nothing. Figures are reported in milliseconds.
 */

export type Histogram = hdr.Histogram;

/** An hour in microseconds: the highest latency a bench can record (longer ones are clamped). */
const HIGHEST_US = 3_600_000_000;

export function newHistogram(): Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: HIGHEST_US, numberOfSignificantValueDigits: 3, autoResize: false });
}

/** Records a latency given in microseconds (fractions rounded up: 0 µs is recorded as 1). */
export function recordUs(h: Histogram, us: number): void {
  h.recordValue(Math.min(HIGHEST_US, Math.max(1, Math.ceil(us))));
}

export function encodeHistogram(h: Histogram): string {
  return hdr.encodeIntoCompressedBase64(h);
}

export function decodeHistogram(encoded: string): Histogram {
  const h = newHistogram();
  if (encoded !== '') h.add(hdr.decodeFromCompressedBase64(encoded));
  return h;
}

/** Merges encoded histograms (of workers, of seconds) into one. */
export function mergeEncoded(encoded: readonly string[]): Histogram {
  const h = newHistogram();
  for (const e of encoded) if (e !== '') h.add(hdr.decodeFromCompressedBase64(e));
  return h;
}

export interface LatencySummary {
  /** Recorded values. */
  readonly count: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly mean: number;
  /** Always 'ms'. */
  readonly unit: 'ms';
}

const ms = (us: number): number => Math.round(us) / 1000;

/**
 * A percentile in µs. The histogram answers with the top of a value's bucket (up to 0.1 % above
 * what was recorded); no percentile is shown above the exact maximum.
 */
function at(h: Histogram, p: number): number {
  return Math.min(h.getValueAtPercentile(p), h.maxValue);
}

/** p50, p90, p99, p99.9, max and mean of a histogram of microseconds, in milliseconds. */
export function summarize(h: Histogram): LatencySummary {
  if (h.totalCount === 0) return { count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0, mean: 0, unit: 'ms' };
  return {
    count: h.totalCount,
    p50: ms(at(h, 50)),
    p90: ms(at(h, 90)),
    p99: ms(at(h, 99)),
    p999: ms(at(h, 99.9)),
    max: ms(h.maxValue),
    mean: Math.round(h.mean) / 1000,
    unit: 'ms',
  };
}

/**
 * The latency distribution as (percentile, ms) points at 1 - 1/2^k steps (50, 75, 87.5, ... %),
 * the classic HDR percentile plot; the last point is the maximum at 100 %.
 */
export function percentileCurve(h: Histogram): { percentile: number; ms: number }[] {
  if (h.totalCount === 0) return [];
  const points: { percentile: number; ms: number }[] = [{ percentile: 0, ms: ms(at(h, 0)) }];
  // Up to the resolution the sample supports: beyond 1/count the percentiles are all the max.
  const steps = Math.min(20, Math.ceil(Math.log2(Math.max(2, h.totalCount))));
  for (let k = 1; k <= steps; k++) {
    for (const frac of [0, 0.5]) {
      const p = 100 * (1 - 1 / 2 ** (k + frac));
      points.push({ percentile: p, ms: ms(at(h, p)) });
    }
  }
  points.push({ percentile: 100, ms: ms(h.maxValue) });
  return points;
}

/** Nearest-rank percentile of an already sorted array (small samples without a histogram). */
export function percentileOfSorted(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx] ?? 0;
}
