import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeHistogram, newHistogram, recordUs, summarize } from '../../bench/lib/histogram.js';
import type { LoadResult } from '../../bench/lib/load/generator.js';
import { RESULT_SCHEMA, type BenchResult, type Figure } from '../../bench/lib/results.js';

/** Synthetic bench results for the bench's own tests: no service, no load, known figures. */

const here = path.dirname(fileURLToPath(import.meta.url));
/** The compiled bench entry point (dist/bench/main.js). */
export const benchMainJs = path.resolve(here, '..', '..', 'bench', 'main.js');

function load(seed: number): LoadResult {
  const h = newHistogram();
  const series = [];
  for (let s = 0; s < 10; s++) {
    const sh = newHistogram();
    for (let i = 0; i < 500; i++) {
      const us = 800 + ((i * 37 + s * 11 + seed) % 400) * 10 + (i % 100 === 0 ? 40_000 : 0);
      recordUs(h, us);
      recordUs(sh, us);
    }
    const sum = summarize(sh);
    series.push({ second: s, ok: 500, errors: s === 4 ? 2 : 0, p50: sum.p50, p99: sum.p99, max: sum.max });
  }
  return {
    mode: 'open',
    offeredPerSec: 500,
    connections: null,
    warmupSec: 2,
    durationSec: 10,
    ok: 5000,
    okPerSec: 500,
    latency: summarize(h),
    serviceTime: summarize(h),
    histogram: encodeHistogram(h),
    statuses: { '202': 5000, '503': 2 },
    errors: {},
    non2xx: 2,
    failed: 2,
    series,
    generator: { workers: 1, connectionsOpened: 8, peakInFlight: 6, sent: 5002, cpuCores: 0.1, cpuUsPerRequest: 20, sendLag: summarize(newHistogram()) },
  };
}

export function syntheticResult(scale = 1, scenario = 'ingest'): BenchResult {
  const headline: Figure[] = [
    { key: 'embedded.single.recordsPerSec', label: 'embedded single: records/s', value: Math.round(3000 * scale), unit: 'records/s', better: 'higher', floors: [{ key: 'http.single', ratio: (3000 * scale) / 60000 }] },
    { key: 'embedded.single.p99Ms', label: 'embedded single: p99 latency', value: 20 / scale, unit: 'ms', better: 'lower' },
  ];
  return {
    schema: RESULT_SCHEMA,
    scenario,
    startedAt: '2026-11-25T10:00:00.000Z',
    finishedAt: '2026-11-25T10:01:00.000Z',
    wallSeconds: 60,
    argv: [scenario, '--sweep'],
    options: {},
    config: { modes: ['embedded'] },
    environment: {
      cpuModel: 'Test CPU',
      cores: 2,
      memoryGiB: 24,
      kernel: '6.0',
      os: 'Linux',
      node: 'v20.20.2',
      v8: '11',
      commit: '0123456789abcdef0123456789abcdef01234567',
      commitDirty: false,
      hashBackend: { bench: 'native', service: 'native' },
      loadAvg1mBefore: 0.1,
      cpuBusyBeforePercent: 3,
      pinning: { server: '0', generator: '1' },
    },
    warmupSeconds: 2,
    headline,
    floors: [{ key: 'http.single', label: 'bare uWebSockets.js single', value: 60000, unit: 'records/s', source: 'same generator' }],
    phases: [{ key: 'embedded.single', title: 'embedded single', load: load(1) }],
    sweeps: [
      {
        key: 'embedded.single',
        title: 'embedded single',
        unit: 'records/s',
        boundMs: 50,
        latencyLabel: 'request p99',
        points: [
          { offered: 500, achieved: 500, p50: 1.2, p99: 4, failed: 0, pass: true, reason: null },
          { offered: 1000, achieved: 998, p50: 1.5, p99: 9, failed: 0, pass: true, reason: null },
          { offered: 2000, achieved: 1990, p50: 3, p99: 31, failed: 0, pass: true, reason: null },
          { offered: 4000, achieved: 2900, p50: 900, p99: 2400, failed: 0, pass: false, reason: 'p99 2400 ms > 50 ms' },
        ],
        knee: 2000,
        firstFail: 4000,
      },
    ],
    notes: ['synthetic'],
  };
}

export function writeResultFile(dir: string, name: string, r: BenchResult): string {
  const file = path.join(dir, name);
  writeFileSync(file, JSON.stringify(r));
  return file;
}
