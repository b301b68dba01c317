import type { Logger } from '../util/logger.js';
import { EventBus } from './event-bus.js';
import type { DomainEvent, EventOf, EventSource, EventSubscription, EventType, SubscriberStats } from './events.js';

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

/** A counter does no I/O: a large queue costs only references, and loses nothing under bursts. */
const COUNTER_CAPACITY = 16_384;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type Counts = Mutable<Omit<PipelineCounts, 'events'>>;

/** What each event adds to the counts; the types not named here are not counted. */
const COUNT: { readonly [T in EventType]?: (c: Counts, e: EventOf<T>) => void } = {
  RecordsAccepted: (c, e) => { c.recordsAccepted += e.count; c.recordsReplayed += e.replayed; },
  RecordsIndexed: (c, e) => { c.recordsIndexed += e.count; c.indexLagMs = Math.max(0, e.atMs - e.firstAcceptedAtMs); },
  RecordsDeadLettered: (c, e) => { c.recordsDeadLettered += e.count; },
  BatchFormed: (c, e) => { c.batchesFormed += e.batches.length; c.recordsBatched += e.batches.reduce((n, b) => n + b.batch.treeSize, 0); },
  AnchorSubmitted: (c) => { c.anchorsSubmitted += 1; },
  AnchorAttemptFailed: (c) => { c.anchorAttemptsFailed += 1; },
  BatchAnchored: (c, e) => { c.batchesAnchored += 1; c.lastAnchoredBatchSeq = Math.max(c.lastAnchoredBatchSeq ?? 0, e.batchSeq); },
  BatchFailed: (c) => { c.batchesFailed += 1; },
  BatchRequeued: (c) => { c.batchesRequeued += 1; },
  VerificationPerformed: (c, e) => { c.verifications += 1; if (e.verified) c.verificationsPassed += 1; },
  LeadershipChanged: (c, e) => { c.leading = e.leading; c.epoch = e.epoch; },
};

const COUNTED = Object.keys(COUNT) as EventType[];

export class PipelineStats {
  readonly #counts: Counts = {
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
    const add = COUNT[e.type] as ((c: Counts, e: DomainEvent) => void) | undefined;
    add?.(this.#counts, e);
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
