import { ingestIdTimeMs } from '../domain/records/ids.js';
import type { BatchStatus } from '../domain/pipeline/types.js';
import type { VerificationStatus } from '../domain/verification/types.js';
import type { DomainEvent, EventOf, EventSource, EventSubscription, EventType, SubscriberStats } from './events.js';

/**
 * Metrics of what the pipeline did, from the domain event seam: a subscriber of the events
 * (`subscribeMetrics`) turns each into calls on the PipelineMetrics port, which a metrics adapter
 * implements (src/adapters/prometheus). The figures that are states rather than happenings (queue
 * lag, the open batch, batches by state, free space, the chain head) are read when the metrics
 * are scraped, through ProcessReadings, which the composition root fills from the getters of the
 * parts it wired. Names and labels of the series: docs/operations.md ("Metrics").
 */

export type IngestKind = 'single' | 'bulk';

/** Where the metrics subscriber writes: one call per thing that happened. */
export interface PipelineMetrics {
  recordsAccepted(kind: IngestKind, count: number): void;
  recordsIndexed(count: number): void;
  recordsDeadLettered(consumer: string, count: number): void;
  batchesFormed(count: number): void;
  batchAnchored(): void;
  /** One record's wait from its 202 to its batch's Anchored, seconds. */
  ingestToAnchored(seconds: number): void;
  /** Gas used by one anchor transaction. */
  anchorGas(gasUsed: number): void;
  /** Fee paid for one anchor transaction, wei. */
  anchorFee(wei: number): void;
  batchFailed(): void;
  /** A term of leadership began (leading) or ended in this process. */
  leadership(leading: boolean, epoch: number): void;
  verification(status: VerificationStatus): void;
}

/** The open batch of the accumulating leader. */
export interface OpenBatch {
  readonly records: number;
  /** Since its first record joined it, seconds. */
  readonly ageSeconds: number;
}

/**
 * The states a scrape reads, each from what already keeps it (a getter of the queue, the
 * accumulator, the pipeline store, the storage guard, the chain). A reading this process has no
 * part for is left out; one that resolves null has nothing to report now (not the leader).
 */
export interface ProcessReadings {
  /** Messages published and not yet acknowledged, by the consumers this process reads as. */
  readonly queueLag?: () => Promise<Readonly<Record<string, number>>>;
  /** Embedded queue: bytes not yet processed by every consumer, and the budget (0: none). */
  readonly queueBudget?: () => { readonly bytes: number; readonly maxBytes: number };
  readonly storageFreeBytes?: () => Promise<number | null>;
  readonly openBatch?: () => OpenBatch | null;
  /** Batches by state, as the leader sees them in the pipeline store; null when not leading. */
  readonly batchCounts?: () => Promise<Readonly<Record<BatchStatus, number>> | null>;
  /** Now minus the time of the chain's latest block, seconds. */
  readonly chainHeadLagSeconds?: () => Promise<number | null>;
  /** Every event subscriber's delivery counts (EventBus.stats). */
  readonly subscribers?: () => readonly SubscriberStats[];
}

/** Like the pipeline counters: a subscriber that does no I/O holds many references cheaply. */
const METRICS_CAPACITY = 16_384;

/**
 * Acceptance times kept per formed batch until it is anchored, for the 202 → Anchored series.
 * Batches anchored by a process that did not form them (a new leader adopting its predecessor's)
 * are measured from their first record's acceptance instead: an upper bound.
 */
const MAX_TRACKED_BATCHES = 256;

const TYPES: readonly EventType[] = [
  'RecordsAccepted',
  'RecordsIndexed',
  'RecordsDeadLettered',
  'BatchFormed',
  'BatchAnchored',
  'BatchFailed',
  'LeadershipChanged',
  'VerificationPerformed',
];

class MetricsSubscriber {
  /** batchId → acceptance time of each record (ms; NaN where its ingest id carries none). */
  readonly #accepted = new Map<string, Float64Array>();

  constructor(private readonly sink: PipelineMetrics) {}

  handle(e: DomainEvent): void {
    const s = this.sink;
    switch (e.type) {
      case 'RecordsAccepted':
        if (e.count > 0) s.recordsAccepted(e.kind, e.count);
        return;
      case 'RecordsIndexed':
        s.recordsIndexed(e.count);
        return;
      case 'RecordsDeadLettered':
        s.recordsDeadLettered(e.consumer, e.count);
        return;
      case 'BatchFormed':
        s.batchesFormed(e.batches.length);
        for (const b of e.batches) this.#track(b.batch.batchId, b.batch.ingestIds);
        return;
      case 'BatchAnchored':
        this.#anchored(e);
        return;
      case 'BatchFailed':
        s.batchFailed();
        return;
      case 'LeadershipChanged':
        s.leadership(e.leading, e.epoch);
        return;
      case 'VerificationPerformed':
        s.verification(e.verificationStatus);
        return;
      default:
        return;
    }
  }

  #track(batchId: string, ingestIds: readonly string[]): void {
    const times = new Float64Array(ingestIds.length);
    for (let i = 0; i < ingestIds.length; i++) times[i] = ingestIdTimeMs(ingestIds[i] as string);
    this.#accepted.set(batchId, times);
    if (this.#accepted.size > MAX_TRACKED_BATCHES) {
      const oldest = this.#accepted.keys().next().value;
      if (oldest !== undefined) this.#accepted.delete(oldest);
    }
  }

  #anchored(e: EventOf<'BatchAnchored'>): void {
    const s = this.sink;
    s.batchAnchored();
    if (e.gasUsed !== null) s.anchorGas(e.gasUsed);
    if (e.feeWei !== null) {
      const wei = Number(e.feeWei);
      if (Number.isFinite(wei) && wei >= 0) s.anchorFee(wei);
    }
    const times = this.#accepted.get(e.batchId);
    this.#accepted.delete(e.batchId);
    if (times === undefined) {
      const longest = Math.max(0, e.anchoredAtMs - e.firstAcceptedAtMs) / 1000;
      for (let i = 0; i < e.records; i++) s.ingestToAnchored(longest);
      return;
    }
    for (const t of times) s.ingestToAnchored(Math.max(0, e.anchoredAtMs - (Number.isFinite(t) ? t : e.firstAcceptedAtMs)) / 1000);
  }
}

/** Subscribes `sink` to the events it counts; unsubscribe() at shutdown. */
export function subscribeMetrics(source: EventSource, sink: PipelineMetrics): EventSubscription {
  const subscriber = new MetricsSubscriber(sink);
  return source.subscribe({ name: 'metrics', types: TYPES, capacity: METRICS_CAPACITY }, (e) => subscriber.handle(e));
}
