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
      serviceCli: null,
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

/** A result of the shape the cluster scenario writes: two kinds of floor per figure, 202 -> Anchored, CPU per role. */
export function syntheticClusterResult(scale = 1): BenchResult {
  const base = syntheticResult(1, 'cluster');
  const l = load(3);
  const anchored = { label: '202 -> Anchored (from intended send)', summary: { ...l.latency, p50: 2100, p99: 4800, max: 5200 }, histogram: l.histogram, series: l.series };
  const rate = Math.round(5000 * scale);
  const figures: Figure[] = [
    { key: 'bulk.recordsPerSec', label: 'bulk: ingest records/s through HAProxy', value: rate, unit: 'records/s', better: 'higher', floors: [{ key: 'http.bulk', ratio: rate / 100_000 }, { key: 'jetstream.bulk', ratio: rate / 40_000 }] },
    { key: 'bulk.p99Ms', label: 'bulk: request p99', value: 80 / scale, unit: 'ms', better: 'lower' },
    { key: 'bulk.anchoredRecordsPerSec', label: 'bulk: anchored records/s (first send to last Anchored)', value: Math.round(4000 * scale), unit: 'records/s', better: 'higher', floors: [{ key: 'clickhouse', ratio: (4000 * scale) / 80_000 }, { key: 'anvil', ratio: (4000 * scale) / 90_000 }] },
    { key: 'bulk.ingestToAnchoredP99Ms', label: 'bulk: 202 -> Anchored p99', value: 4800 / scale, unit: 'ms', better: 'lower' },
    { key: 'bulk.txPerThousandRecords', label: 'bulk: anchor transactions per 1000 records', value: 1, unit: 'tx', better: 'lower' },
    { key: 'bulk.cpuPer1000.api', label: 'bulk: api CPU per 1000 records', value: 0.05 / scale, unit: 'CPU s', better: 'lower' },
    { key: 'bulk.cpuPer1000.fleet', label: 'bulk: whole fleet CPU per 1000 records', value: 0.3 / scale, unit: 'CPU s', better: 'lower' },
  ];
  return {
    ...base,
    argv: ['cluster', '--variants', 'bulk', '--duration', '10'],
    config: { fleet: { api: 2, indexer: 2, anchorer: 2 }, clickhouse: 'test bridge over chDB' },
    headline: figures,
    floors: [
      { key: 'jetstream.bulk', label: 'raw JetStream publish (R3), 500 record(s)/message', value: 40_000, unit: 'records/s', source: '80 messages/s' },
      { key: 'clickhouse', label: 'raw insert through the ClickHouse HTTP interface', value: 80_000, unit: 'records/s', source: '1000-row inserts' },
      { key: 'anvil', label: 'raw anvil transactions x 1000 records', value: 90_000, unit: 'records/s', source: '90 tx/s' },
      { key: 'http.bulk', label: 'bare uWebSockets.js behind HAProxy, bulk', value: 100_000, unit: 'records/s', source: 'closed loop' },
    ],
    phases: [
      {
        key: 'bulk',
        title: 'cluster bulk closed 4',
        load: l,
        latencies: [anchored],
        data: { acceptedRecords: 65_000, anchoredRecords: 65_000, transactions: 65, batches: 65, 'cpuSecondsPer1000Records.api': 0.05, 'cpuSecondsPer1000Records.indexer': 0.04, 'rssMiB.api': 120 },
      },
    ],
    sweeps: [],
    notes: ['one machine: 2 cores shared by the fleet'],
  };
}
