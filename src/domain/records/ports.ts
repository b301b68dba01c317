import type { AcceptedRecord, OutgoingRecord, Page, RecordQuery, RecordSummary } from './types.js';

/**
 * Ports of the record pipeline. Domain and application code depend on these interfaces only;
 * adapters (src/adapters) implement them for an embedded engine and for a cluster engine.
 */

/** A message handed to a consumer: one or more records published together. */
export interface Delivery {
  /** Records of the message, in publication order. */
  readonly records: readonly AcceptedRecord[];
  /** Position of the message in its stream (monotonic per stream). */
  readonly seq: number;
  /** Number of times this message has been delivered, 1 on the first delivery. */
  readonly deliveryCount: number;
  /** Marks the message done; it is not delivered again to this consumer. */
  ack(): Promise<void>;
  /** Gives the message back for redelivery after delayMs. */
  nak(delayMs?: number): void;
  /**
   * Sets the message aside for good, as a dead letter: `records` (by default all of the
   * message's; a consumer may keep the ones it could process) go to the queue's dead letters with
   * `reason` (an error code, never a payload), and the message is settled for this consumer, never
   * delivered to it again. Rejects, settling nothing, when the dead letter could not be stored.
   */
  deadLetter(reason: string, records?: readonly AcceptedRecord[]): Promise<void>;
}

export interface ConsumeOptions {
  /** Durable consumer name; each name sees every message once (at least once under crashes). */
  readonly consumer: string;
  /** Most messages handed to the handler in one call. */
  readonly maxBatch: number;
  /** Most messages delivered and not yet acked; the queue stops delivering above it. */
  readonly maxInFlight: number;
  /** Time after which an unacked delivery is redelivered, milliseconds. */
  readonly ackWaitMs: number;
}

export interface Subscription {
  /** Stops delivering; resolves once the handler in progress has returned. */
  stop(): Promise<void>;
}

/** Durable queue of accepted records. */
export interface RecordQueue {
  /**
   * Publishes records; resolves only once they are durably stored (the queue's acknowledgement),
   * which is what a 202 promises. Records of concurrent calls may be coalesced into one message.
   * A publish retried after a lost acknowledgement is not stored twice.
   */
  publish(records: readonly OutgoingRecord[]): Promise<void>;
  /** Consumes with a handler; the handler acks or naks each delivery. */
  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription;
  /** Health probe: throws a DrisError when the queue cannot accept publishes. */
  check(): Promise<void>;
  /** Dead letters stored (`Delivery.deadLetter`, and messages that never decoded), for health and metrics. */
  deadLetterCount?(): Promise<number>;
  close(): Promise<void>;
}

/** Hot index of records (ClickHouse). */
export interface RecordIndex {
  /** Creates or upgrades the schema; idempotent. */
  migrate(): Promise<void>;
  /** Inserts records; a record whose ingestId is already indexed is not inserted again. */
  insertRecords(records: readonly AcceptedRecord[]): Promise<void>;
  queryRecords(query: RecordQuery): Promise<Page<RecordSummary>>;
  check(): Promise<void>;
  close(): Promise<void>;
}
