import { Worker } from 'node:worker_threads';
import { encodeHistogram, mergeEncoded, summarize, type Histogram, type LatencySummary } from '../histogram.js';
import type { AcceptedRequest, Counts, LoadSpec, SecondReport, WorkerMessage } from './types.js';

/**
 * The main-thread side of the load generator: starts the worker threads, opens their connections
 * before the clock starts, starts them together, merges what they report (per second and at the
 * end) and measures the generator's own cost: the CPU this process used per request sent, and in
 * an open loop how late requests left against their schedule.
 */

export interface SeriesPoint {
  /** Seconds since the warm-up ended. */
  readonly second: number;
  readonly ok: number;
  readonly errors: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

export interface GeneratorCost {
  readonly workers: number;
  readonly connectionsOpened: number;
  /** Most requests outstanding at once (open loop: what holding the rate needed). */
  readonly peakInFlight: number;
  readonly sent: number;
  /** CPU time of this process (all generator threads) over the run's wall time. */
  readonly cpuCores: number;
  readonly cpuUsPerRequest: number;
  /** Open loop: how late requests left against their intended time (ms). */
  readonly sendLag: LatencySummary | null;
}

export interface LoadResult {
  readonly mode: 'open' | 'closed';
  /** Open loop: requests per second offered. */
  readonly offeredPerSec: number | null;
  readonly connections: number | null;
  readonly warmupSec: number;
  readonly durationSec: number;
  readonly ok: number;
  /** Successful answers per second of the measured window. */
  readonly okPerSec: number;
  /** Open loop: from the intended send time; closed loop: from the send. */
  readonly latency: LatencySummary;
  /** From the actual send: the server's part. */
  readonly serviceTime: LatencySummary;
  /** Encoded HDR histogram of `latency` (µs), kept in the results for later analysis. */
  readonly histogram: string;
  readonly statuses: Readonly<Record<string, number>>;
  readonly errors: Readonly<Record<string, number>>;
  /** Answers whose status was not 2xx. */
  readonly non2xx: number;
  /** Failed requests: non-2xx, unexpected statuses, socket errors, timeouts, failed checks. */
  readonly failed: number;
  readonly series: readonly SeriesPoint[];
  readonly generator: GeneratorCost;
}

export interface LoadHooks {
  /** The epoch ms of the run's second 0 (warm-up start): worker times are relative to it. */
  readonly onStart?: (t0EpochMs: number) => void;
  /** Each second of the measured window as it ends (merged over the workers so far). */
  readonly onSecond?: (s: { second: number; ok: number; errors: number }) => void;
  /** Successful requests (with trackAccepted), as the workers report them. */
  readonly onAccepted?: (batch: readonly AcceptedRequest[]) => void;
}

function addCounts(into: Counts, c: Counts): void {
  into.ok += c.ok;
  for (const [k, v] of Object.entries(c.statuses)) into.statuses[k] = (into.statuses[k] ?? 0) + v;
  for (const [k, v] of Object.entries(c.errors)) into.errors[k] = (into.errors[k] ?? 0) + v;
}

const sum = (r: Readonly<Record<string, number>>): number => Object.values(r).reduce((a, b) => a + b, 0);

/** The measured window's seconds; answers that came in after it (the drain) are in the totals only. */
function series(seconds: Map<number, { counts: Counts; hists: string[] }>, durationSec: number): SeriesPoint[] {
  const last = Math.min(Math.ceil(durationSec) - 1, Math.max(-1, ...seconds.keys()));
  const out: SeriesPoint[] = [];
  for (let s = 0; s <= last; s++) {
    const e = seconds.get(s);
    const h = summarize(mergeEncoded(e?.hists ?? []));
    out.push({ second: s, ok: e?.counts.ok ?? 0, errors: e === undefined ? 0 : sum(e.counts.errors) + nonOk(e.counts), p50: h.p50, p99: h.p99, max: h.max });
  }
  return out;
}

/** Answers counted under a status but not successful. */
function nonOk(c: Counts): number {
  return Math.max(0, sum(c.statuses) - c.ok - (c.errors['check'] ?? 0));
}

type Done = Extract<WorkerMessage, { type: 'done' }>;

/**
 * Starts the workers together once all have their connections, passes their reports on, and
 * resolves with their final reports, the CPU usage and the wall time at the start.
 */
function drive(workers: readonly Worker[], spec: LoadSpec, hooks: LoadHooks, onReport: (r: SecondReport) => void): Promise<{ done: Done[]; cpuStart: NodeJS.CpuUsage; wallStart: number }> {
  const done: Done[] = [];
  let ready = 0;
  let cpuStart = process.cpuUsage();
  let wallStart = Date.now();
  const runMs = (spec.warmupSec + spec.durationSec) * 1000;
  return new Promise((resolve, reject) => {
    // Every wait has a deadline: connecting, the run itself, the drain after it.
    const deadline = setTimeout(() => reject(new Error(`load generator did not finish within ${Math.round((runMs + spec.timeoutMs) / 1000) + 40} s`)), runMs + spec.timeoutMs + 40_000);
    const fail = (err: Error): void => {
      clearTimeout(deadline);
      reject(err);
    };
    for (const w of workers) {
      w.on('error', fail);
      w.on('exit', (code) => {
        if (code !== 0 && done.length < workers.length) fail(new Error(`load worker exited with ${code}`));
      });
      w.on('message', (m: WorkerMessage) => {
        switch (m.type) {
          case 'ready':
            if (++ready === workers.length) {
              const t0 = Date.now() + 50;
              cpuStart = process.cpuUsage();
              wallStart = t0;
              hooks.onStart?.(t0);
              for (const x of workers) x.postMessage({ type: 'start', t0EpochMs: t0 });
            }
            return;
          case 'second':
            onReport(m.report);
            if (m.accepted !== undefined) hooks.onAccepted?.(m.accepted);
            return;
          case 'done':
            done.push(m);
            if (m.accepted !== undefined) hooks.onAccepted?.(m.accepted);
            if (done.length === workers.length) {
              clearTimeout(deadline);
              resolve({ done, cpuStart, wallStart });
            }
            return;
          case 'error':
            fail(new Error(m.message));
        }
      });
    }
  });
}

export async function runLoad(spec: LoadSpec, hooks: LoadHooks = {}): Promise<LoadResult> {
  const workers = Array.from({ length: spec.workers }, (_, index) => new Worker(new URL('./load-worker.js', import.meta.url), { workerData: { spec, index } }));
  const seconds = new Map<number, { counts: Counts; hists: string[] }>();
  const total: Counts = { ok: 0, statuses: {}, errors: {} };
  const reportSecond = (r: SecondReport): void => {
    const e = seconds.get(r.second) ?? { counts: { ok: 0, statuses: {}, errors: {} }, hists: [] };
    addCounts(e.counts, r.counts);
    e.hists.push(r.latency);
    seconds.set(r.second, e);
    hooks.onSecond?.({ second: r.second, ok: e.counts.ok, errors: sum(e.counts.errors) + nonOk(e.counts) });
  };
  let driven;
  try {
    driven = await drive(workers, spec, hooks, reportSecond);
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  const { done, cpuStart, wallStart } = driven;
  const cpu = process.cpuUsage(cpuStart);
  const wallUs = Math.max(1, (Date.now() - wallStart) * 1000);
  for (const d of done) addCounts(total, d.counts);
  const latency: Histogram = mergeEncoded(done.map((d) => d.latency));
  const sent = done.reduce((a, d) => a + d.sent, 0);
  const open = spec.mode.kind === 'open';
  const non2xx = Object.entries(total.statuses).reduce((a, [k, v]) => a + (k.startsWith('2') ? 0 : v), 0);
  return {
    mode: spec.mode.kind,
    offeredPerSec: spec.mode.kind === 'open' ? spec.mode.ratePerSec : null,
    connections: spec.mode.kind === 'closed' ? spec.mode.connections : null,
    warmupSec: spec.warmupSec,
    durationSec: spec.durationSec,
    ok: total.ok,
    okPerSec: Math.round((10 * total.ok) / spec.durationSec) / 10,
    latency: summarize(latency),
    serviceTime: summarize(mergeEncoded(done.map((d) => d.service))),
    histogram: encodeHistogram(latency),
    statuses: total.statuses,
    errors: total.errors,
    non2xx,
    failed: sum(total.errors) + nonOk(total),
    series: series(seconds, spec.durationSec),
    generator: {
      workers: spec.workers,
      connectionsOpened: done.reduce((a, d) => a + d.connectionsOpened, 0),
      peakInFlight: done.reduce((a, d) => a + d.peakBusy, 0),
      sent,
      cpuCores: Math.round((100 * (cpu.user + cpu.system)) / wallUs) / 100,
      cpuUsPerRequest: sent === 0 ? 0 : Math.round((10 * (cpu.user + cpu.system)) / sent) / 10,
      sendLag: open ? summarize(mergeEncoded(done.map((d) => d.sendLag))) : null,
    },
  };
}

/** One line on what the generator cost, printed under every load phase. */
export function describeGenerator(r: LoadResult): string {
  const g = r.generator;
  const lag = g.sendLag === null ? '' : `; send lag p99 ${g.sendLag.p99} ms, max ${g.sendLag.max} ms`;
  return `generator: ${g.workers} thread(s), ${g.connectionsOpened} connection(s) opened, peak ${g.peakInFlight} in flight, ${g.cpuCores} core(s) = ${g.cpuUsPerRequest} µs CPU/request${lag}`;
}
