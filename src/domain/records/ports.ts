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

/** A message of its own, deduplicated by its id (see RecordQueue.publish). */
export interface PublishOptions {
  /**
   * The message's deduplication id: a message whose id was stored within the queue's duplicate
   * window (24 h) is not stored again. Default: derived from the records' ingestIds.
   */
  readonly msgId?: string;
  /** Text stored with the message and given back to a later publish that duplicates it. */
  readonly note?: string;
}

export type PublishResult =
  | { readonly duplicate: false }
  /** The id was already stored: nothing was written, and these are the records stored under it. */
  | { readonly duplicate: true; readonly records: readonly AcceptedRecord[]; readonly note: string | null };

/** A message published with a note, as the queue still holds it. */
export interface NotedMessage {
  readonly msgId: string;
  readonly note: string;
  readonly records: readonly AcceptedRecord[];
}

/** Durable queue of accepted records. */
export interface RecordQueue {
  /**
   * Publishes records; resolves only once they are durably stored (the queue's acknowledgement),
   * which is what a 202 promises. Without options, records of concurrent calls may be coalesced
   * into one message. With options, the records form one message of their own under its id, and
   * a publish whose id was already stored resolves `duplicate` with the records stored first, so a
   * retry after a crash or an indeterminate failure (a lost acknowledgement) stores nothing twice.
   */
  publish(records: readonly OutgoingRecord[], options?: PublishOptions): Promise<PublishResult>;
  /**
   * Bytes of encoded records (payloads and metadata) a message published with options should not
   * exceed: what a caller splitting many records into messages aims for, leaving room for the
   * message's id and note. One record alone may exceed it up to the queue's own message limit.
   */
  readonly maxMessageBytes: number;
  /**
   * Messages with a note that the queue holds on local disk, oldest first: for a queue whose
   * duplicate window ends with its retention (the embedded queue), so their notes can be acted on
   * at start-up. Queues that keep ids for the whole window do not implement it.
   */
  notedMessages?(): AsyncIterable<NotedMessage>;
  /** Consumes with a handler; the handler acks or naks each delivery. */
  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription;
  /** Health probe: throws a DrisError when the queue cannot accept publishes. */
  check(): Promise<void>;
  /** Dead letters stored (`Delivery.deadLetter`, and messages that never decoded), for health and metrics. */
  deadLetterCount?(): Promise<number>;
  /** Messages published and not yet acknowledged by this durable consumer, for metrics. */
  consumerLag?(consumer: string): Promise<number>;
  close(): Promise<void>;
}

/**
 * Hot index of records (ClickHouse). Its schema, health and lifetime belong to the database that
 * holds it, which the composition root manages; this port is what the indexer and the listing use.
 */
export interface InsertRecordsOptions {
  /**
   * The caller knows none of these records can be indexed yet (the first delivery of records
   * accepted after its consumer started): the index need not look for them first.
   */
  readonly unseen?: boolean;
}

export interface RecordIndex {
  /** Inserts records; a record whose ingestId is already indexed is not inserted again. */
  insertRecords(records: readonly AcceptedRecord[], options?: InsertRecordsOptions): Promise<void>;
  queryRecords(query: RecordQuery): Promise<Page<RecordSummary>>;
}
