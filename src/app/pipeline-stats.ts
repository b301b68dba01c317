import type { Logger } from '../util/logger.js';
import { EventBus, type DomainEvent, type EventSource, type EventSubscription, type EventType, type SubscriberStats } from './events.js';

/**
 * The process's pipeline counters, kept by a subscriber of the domain events: what this process
 * accepted, indexed, set aside, formed, anchored and verified since it started, and whether it
 * leads. The detailed health report shows them; a metrics exporter can read them the same way or
 * subscribe to the events itself. They count events, so a subscriber that fell behind undercounts
 * (its drops are in `events`); the stores remain the record.
 */

export interface PipelineCounts {
  readonly recordsAccepted: number;
  readonly recordsReplayed: number;
  readonly recordsIndexed: number;
  readonly recordsDeadLettered: number;
  readonly batchesFormed: number;
  readonly recordsBatched: number;
  readonly anchorsSubmitted: number;
  readonly anchorAttemptsFailed: number;
  readonly batchesAnchored: number;
  readonly batchesFailed: number;
  readonly batchesRequeued: number;
  readonly verifications: number;
  readonly verificationsPassed: number;
  readonly leading: boolean;
  /** Epoch of the current (or last) term of leadership; null before the first. */
  readonly epoch: number | null;
  readonly lastAnchoredBatchSeq: number | null;
  /** At the last index write: how long before it its first record was accepted. */
  readonly indexLagMs: number | null;
  /** Events the subscribers of this bus lost (full queue) or failed on. */
  readonly events: { readonly dropped: number; readonly failed: number };
}

const COUNTED: readonly EventType[] = [
  'RecordsAccepted',
  'RecordsIndexed',
  'RecordsDeadLettered',
  'BatchFormed',
  'AnchorSubmitted',
  'AnchorAttemptFailed',
  'BatchAnchored',
  'BatchFailed',
  'BatchRequeued',
  'VerificationPerformed',
  'LeadershipChanged',
];

/** A counter does no I/O: a large queue costs only references, and loses nothing under bursts. */
const COUNTER_CAPACITY = 16_384;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

export class PipelineStats {
  readonly #counts: Mutable<Omit<PipelineCounts, 'events'>> = {
    recordsAccepted: 0,
    recordsReplayed: 0,
    recordsIndexed: 0,
    recordsDeadLettered: 0,
    batchesFormed: 0,
    recordsBatched: 0,
    anchorsSubmitted: 0,
    anchorAttemptsFailed: 0,
    batchesAnchored: 0,
    batchesFailed: 0,
    batchesRequeued: 0,
    verifications: 0,
    verificationsPassed: 0,
    leading: false,
    epoch: null,
    lastAnchoredBatchSeq: null,
    indexLagMs: null,
  };
  readonly #subscription: EventSubscription;

  /** `busStats`: every subscriber's delivery counts (EventBus.stats), for `events`. */
  private constructor(
    source: EventSource,
    private readonly busStats: () => readonly SubscriberStats[],
  ) {
    this.#subscription = source.subscribe({ name: 'pipeline-stats', types: COUNTED, capacity: COUNTER_CAPACITY }, (e) => this.#count(e));
  }

  static attach(source: EventSource & { stats?(): readonly SubscriberStats[] }): PipelineStats {
    return new PipelineStats(source, () => source.stats?.() ?? []);
  }

  #count(e: DomainEvent): void {
    const c = this.#counts;
    switch (e.type) {
      case 'RecordsAccepted':
        c.recordsAccepted += e.count;
        c.recordsReplayed += e.replayed;
        return;
      case 'RecordsIndexed':
        c.recordsIndexed += e.count;
        c.indexLagMs = Math.max(0, e.atMs - e.firstAcceptedAtMs);
        return;
      case 'RecordsDeadLettered':
        c.recordsDeadLettered += e.count;
        return;
      case 'BatchFormed':
        c.batchesFormed += e.batches.length;
        for (const b of e.batches) c.recordsBatched += b.batch.treeSize;
        return;
      case 'AnchorSubmitted':
        c.anchorsSubmitted += 1;
        return;
      case 'AnchorAttemptFailed':
        c.anchorAttemptsFailed += 1;
        return;
      case 'BatchAnchored':
        c.batchesAnchored += 1;
        c.lastAnchoredBatchSeq = Math.max(c.lastAnchoredBatchSeq ?? 0, e.batchSeq);
        return;
      case 'BatchFailed':
        c.batchesFailed += 1;
        return;
      case 'BatchRequeued':
        c.batchesRequeued += 1;
        return;
      case 'VerificationPerformed':
        c.verifications += 1;
        if (e.verified) c.verificationsPassed += 1;
        return;
      case 'LeadershipChanged':
        c.leading = e.leading;
        c.epoch = e.epoch;
        return;
      default:
        return;
    }
  }

  read(): PipelineCounts {
    let dropped = 0;
    let failed = 0;
    for (const s of this.busStats()) {
      dropped += s.dropped;
      failed += s.failed;
    }
    return { ...this.#counts, events: { dropped, failed } };
  }

  detach(): void {
    this.#subscription.unsubscribe();
  }
}

/** The process's event seam: one bus for every use case, and the counters subscribed to it. */
export function openEventSeam(logger?: Logger): { readonly events: EventBus; readonly stats: PipelineStats } {
  const events = new EventBus(logger === undefined ? {} : { logger });
  return { events, stats: PipelineStats.attach(events) };
}
