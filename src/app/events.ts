import type { Batch, Snapshot, SnapshotStatus } from '../domain/pipeline/types.js';
import type { ReasonCategory, VerificationHistoryEntry, VerificationStatus } from '../domain/verification/types.js';

/**
 * The domain event seam: what the use cases report they did, for whoever wants to know (the
 * anchorer's feed, the pipeline counters, later a metrics exporter or a webhook dispatcher),
 * without the use case knowing who listens.
 *
 * Events carry identifiers, counts, timings and hashes, never a record's payload. They are
 * delivered in-process by the EventBus (event-bus.ts): each subscriber has a bounded queue of its
 * own, drained after the publisher's turn, so publishing never waits and never runs a subscriber's
 * code; a subscriber that falls behind loses events (counted), it never slows the publisher. A
 * subscriber that must not lose events silently (`onLoss`) is told where it lost them and recovers
 * from the store (the anchorer rereads the pending batches).
 *
 * Transport telemetry (HTTP requests, their statuses and latencies, 429/503 answers, query
 * latencies of an adapter, the chain head's lag) is not a domain event: it belongs to the edge
 * that sees it (docs/architecture.md, "Event seam").
 */

/** Records made durable by one ingest request (single or bulk): one event per request. */
export interface RecordsAccepted {
  readonly type: 'RecordsAccepted';
  /** Which ingest operation: one record (POST /api/v1/records) or a bulk request. */
  readonly kind: 'single' | 'bulk';
  /** The tenant of every record of the request; null for a bulk request that names none (its items name theirs). */
  readonly tenantId: string | null;
  /** Records stored by this request. */
  readonly count: number;
  /** Records answered from an earlier request with the same idempotency key (not stored again). */
  readonly replayed: number;
  readonly atMs: number;
}

/** Records written to the hot index by one write of a consumer. */
export interface RecordsIndexed {
  readonly type: 'RecordsIndexed';
  readonly consumer: string;
  readonly count: number;
  /** Acceptance time of the first record of the write (stream order): the consumer's lag is atMs - this. */
  readonly firstAcceptedAtMs: number;
  readonly atMs: number;
}

/** Records the index refuses, set aside in the queue's dead letters. */
export interface RecordsDeadLettered {
  readonly type: 'RecordsDeadLettered';
  readonly consumer: string;
  readonly count: number;
  /** `index_refused` or `index_refused:<code>`. */
  readonly reason: string;
}

/** A batch formed and stored, with its snapshots (ids, hashes and counts; no record payload). */
export interface FormedBatchRef {
  readonly batch: Batch;
  readonly snapshots: readonly Snapshot[];
}

/** Batches formed and stored by one write of the accumulator, in stream order. */
export interface BatchFormed {
  readonly type: 'BatchFormed';
  readonly batches: readonly FormedBatchRef[];
  readonly atMs: number;
}

/** An anchor transaction sent for a batch (not yet confirmed). */
export interface AnchorSubmitted {
  readonly type: 'AnchorSubmitted';
  readonly batchId: string;
  readonly batchSeq: number;
  /** 1 for the first attempt of the batch since it was formed or retried. */
  readonly attempt: number;
  readonly epoch: number;
}

/** An anchoring attempt that failed; the batch backs off, or Fails past its attempts. */
export interface AnchorAttemptFailed {
  readonly type: 'AnchorAttemptFailed';
  readonly batchId: string;
  readonly attempt: number;
  /** A DrisError code. */
  readonly code: string;
  readonly willRetry: boolean;
}

/** A batch recorded Anchored: its root is on chain under `batchSeq`. */
export interface BatchAnchored {
  readonly type: 'BatchAnchored';
  readonly batchId: string;
  readonly batchSeq: number;
  readonly merkleRoot: string;
  readonly txHash: string | null;
  readonly blockNumber: number | null;
  readonly records: number;
  readonly snapshots: number;
  /** When the batch was formed. */
  readonly createdAtMs: number;
  /** When its first record was accepted (202): anchoredAtMs minus this is its longest wait. */
  readonly firstAcceptedAtMs: number;
  /** The block's time. */
  readonly anchoredAtMs: number;
  readonly epoch: number;
  /** Found on chain (anchored earlier, or recovered from Failed) rather than anchored now. */
  readonly adopted: boolean;
  /** Gas used by the anchor transaction; null when adopted or unknown to the chain adapter. */
  readonly gasUsed: number | null;
  /** Fee paid for it, wei as a decimal string; null when adopted or unknown. */
  readonly feeWei: string | null;
}

/** A batch given up after its automatic attempts: only POST /snapshots/{id}/retry sends it back. */
export interface BatchFailed {
  readonly type: 'BatchFailed';
  readonly batchId: string;
  readonly attempts: number;
  readonly code: string;
}

/** A batch sent back to be anchored: on request (retry) or because the chain lost its anchor. */
export interface BatchRequeued {
  readonly type: 'BatchRequeued';
  readonly batchId: string;
  readonly reason: 'retry_requested' | 'missing_on_chain';
}

/** What a snapshot state event names of each snapshot (a Snapshot fits as it is). */
export type SnapshotRef = Pick<Snapshot, 'snapshotId' | 'tenantId' | 'recordCount'>;

/** Every snapshot of a batch moved to `state` (one event per batch and move). */
export interface SnapshotStateChanged {
  readonly type: 'SnapshotStateChanged';
  readonly batchId: string;
  readonly state: SnapshotStatus;
  readonly snapshots: readonly SnapshotRef[];
  /** The lifecycle entry's reason. */
  readonly reason: string;
}

/** One verification answered (and stored in the verification history). */
export interface VerificationPerformed {
  readonly type: 'VerificationPerformed';
  readonly mode: VerificationHistoryEntry['mode'];
  readonly tenantId: string;
  readonly verified: boolean;
  readonly verificationStatus: VerificationStatus;
  readonly reasonCategory: ReasonCategory;
  readonly durationMs: number;
}

/** This process began or ended a term of leadership (it accumulates and anchors while it leads). */
export interface LeadershipChanged {
  readonly type: 'LeadershipChanged';
  readonly leading: boolean;
  readonly epoch: number;
}

export type DomainEvent =
  | RecordsAccepted
  | RecordsIndexed
  | RecordsDeadLettered
  | BatchFormed
  | AnchorSubmitted
  | AnchorAttemptFailed
  | BatchAnchored
  | BatchFailed
  | BatchRequeued
  | SnapshotStateChanged
  | VerificationPerformed
  | LeadershipChanged;

export type EventType = DomainEvent['type'];
export type EventOf<T extends EventType> = Extract<DomainEvent, { readonly type: T }>;

/** What a use case needs to report: publishing never waits, never throws, never runs a subscriber. */
export interface EventPublisher {
  publish(event: DomainEvent): void;
  /**
   * Whether anyone listens to this type: a publisher on a hot path asks first, so that nobody
   * listening costs no event object at all.
   */
  wants(type: EventType): boolean;
}

export interface SubscribeOptions<T extends EventType> {
  /** For logs and counters. */
  readonly name: string;
  readonly types: readonly T[];
  /** Events held for this subscriber before newer ones are dropped (default 1024). */
  readonly capacity?: number;
  /**
   * For a subscriber that must not lose events silently: called in the order of delivery, in
   * place of the events dropped, with their count (consecutive drops are one call). It then
   * recovers what it lost from where the events came from (a store).
   */
  readonly onLoss?: (dropped: number) => void;
}

/** A subscriber's delivery counts since it subscribed. */
export interface SubscriberStats {
  readonly name: string;
  readonly delivered: number;
  readonly dropped: number;
  /** Events whose handler threw or rejected (the next events are delivered all the same). */
  readonly failed: number;
  readonly queued: number;
}

export interface EventSubscription {
  stats(): SubscriberStats;
  /** Stops delivery; events still queued are discarded. */
  unsubscribe(): void;
}

export interface EventSource {
  /**
   * `handler` sees this subscriber's events one at a time, in publication order; when it returns
   * a promise, the next event waits for it to settle.
   */
  subscribe<T extends EventType>(options: SubscribeOptions<T>, handler: (event: EventOf<T>) => void | Promise<void>): EventSubscription;
}

/** For a use case nobody listens to (tools, tests): every event costs one call and nothing else. */
export const NO_EVENTS: EventPublisher = {
  publish: () => undefined,
  wants: () => false,
};

