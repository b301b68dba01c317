import { Counter, Gauge, type Registry } from 'prom-client';
import type { ProcessReadings } from '../../app/metrics.js';
import type { Logger } from '../../util/logger.js';

/**
 * The gauges read when Prometheus scrapes (prom-client's collect()), from the getters the
 * composition root hands over (ProcessReadings). Each reading has a deadline: one that fails or
 * is late leaves its series out of this scrape rather than report a stale value or hold the
 * scrape. Readings that query a store (batches by state) are reused for a few seconds, so that
 * several scrapers do not multiply the queries.
 */

/** Per reading, milliseconds: the readings run together, well inside a 10 s scrape timeout. */
export const READING_DEADLINE_MS = 2000;
/** A store query's answer is reused for this long, milliseconds. */
const STORE_READING_CACHE_MS = 5000;

const BATCH_STATES = ['Pending', 'Anchored', 'Failed'] as const;

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reading not done within ${ms} ms`)), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** The last answer of `read` while younger than `ms`; a failed read is not kept. */
function reused<T>(read: () => Promise<T>, ms: number): () => Promise<T> {
  let last: { atMs: number; value: Promise<T> } | null = null;
  return () => {
    const now = Date.now();
    if (last !== null && now - last.atMs < ms) return last.value;
    const value = read();
    const entry = { atMs: now, value };
    last = entry;
    value.catch(() => {
      if (last === entry) last = null;
    });
    return value;
  };
}

type Gauges = Gauge<string>;

/**
 * A gauge whose values `fill` sets at each scrape from what `read` resolves; a failed or late read
 * (or null) leaves the series out of this scrape. prom-client's collect() cannot do that for a
 * gauge without labels (a reset one reads 0), hence get() itself.
 */
class ScrapeGauge<T> extends Gauge<string> {
  readonly #metric: string;

  constructor(
    registry: Registry,
    private readonly log: Logger,
    spec: { readonly name: string; readonly help: string; readonly labelNames?: string[] },
    private readonly read: () => Promise<T | null> | T | null,
    private readonly fill: (g: Gauges, value: T) => void,
  ) {
    super({ name: spec.name, help: spec.help, labelNames: spec.labelNames ?? [], registers: [registry] });
    this.#metric = spec.name;
  }

  override async get(): ReturnType<Gauges['get']> {
    let value: T | null;
    try {
      value = await within(Promise.resolve(this.read()), READING_DEADLINE_MS);
    } catch (err) {
      this.log.debug({ err, metric: this.#metric }, 'a metrics reading failed; its series is left out of this scrape');
      value = null;
    }
    this.reset();
    if (value === null) return { ...(await super.get()), values: [] };
    this.fill(this, value);
    return super.get();
  }
}

function scrapeGauge<T>(registry: Registry, log: Logger, spec: { name: string; help: string; labelNames?: string[] }, read: () => Promise<T | null> | T | null, fill: (g: Gauges, value: T) => void): void {
  new ScrapeGauge(registry, log, spec, read, fill);
}

/** Registers the gauge of every reading `r` provides. */
export function registerReadings(registry: Registry, r: ProcessReadings, log: Logger): void {
  if (r.queueLag !== undefined) {
    const read = r.queueLag;
    scrapeGauge(registry, log, { name: 'dris_queue_lag_messages', help: 'Messages published but not yet acknowledged by the consumer.', labelNames: ['consumer'] }, read, (g, lags) => {
      for (const [consumer, n] of Object.entries(lags)) g.set({ consumer }, n);
    });
  }
  if (r.queueBudget !== undefined) {
    const read = r.queueBudget;
    scrapeGauge(registry, log, { name: 'dris_queue_bytes', help: 'Embedded queue: bytes not yet processed by every consumer.' }, read, (g, b) => g.set(b.bytes));
    scrapeGauge(registry, log, { name: 'dris_queue_max_bytes', help: 'Embedded queue: its budget, bytes (0: none).' }, read, (g, b) => g.set(b.maxBytes));
  }
  if (r.storageFreeBytes !== undefined) {
    scrapeGauge(registry, log, { name: 'dris_storage_free_bytes', help: "Free bytes of the data directory's file system." }, r.storageFreeBytes, (g, n) => g.set(n));
  }
  if (r.openBatch !== undefined) {
    const read = r.openBatch;
    scrapeGauge(registry, log, { name: 'dris_batch_open_records', help: 'Records in the batch being accumulated.' }, read, (g, b) => g.set(b.records));
    scrapeGauge(registry, log, { name: 'dris_batch_open_age_seconds', help: 'Age of the open batch: since its first record joined it, seconds.' }, read, (g, b) => g.set(b.ageSeconds));
  }
  if (r.batchCounts !== undefined) {
    scrapeGauge(registry, log, { name: 'dris_batches', help: "Batches by state (the leader's view).", labelNames: ['state'] }, reused(r.batchCounts, STORE_READING_CACHE_MS), (g, counts) => {
      for (const state of BATCH_STATES) g.set({ state }, counts[state]);
    });
  }
  if (r.chainHeadLagSeconds !== undefined) {
    scrapeGauge(registry, log, { name: 'dris_chain_head_lag_seconds', help: "Now minus the timestamp of the chain's latest block, seconds." }, r.chainHeadLagSeconds, (g, s) => g.set(s));
  }
  if (r.subscribers !== undefined) {
    const read = r.subscribers;
    new Counter({
      name: 'dris_events_dropped_total',
      help: 'Domain events a bounded subscriber dropped, by subscriber.',
      labelNames: ['subscriber'],
      registers: [registry],
      collect() {
        this.reset();
        for (const s of read()) this.inc({ subscriber: s.name }, s.dropped);
      },
    });
  }
}
