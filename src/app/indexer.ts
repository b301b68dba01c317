import type { AuditEvent, AuditLog } from '../domain/audit/ports.js';
import type { Delivery, RecordIndex, RecordQueue, Subscription } from '../domain/records/ports.js';
import type { AcceptedRecord } from '../domain/records/types.js';
import { toDrisError } from '../errors/dris-error.js';
import type { Logger } from '../util/logger.js';
import type { EventPublisher } from './events.js';
import { SeenBefore } from './seen-before.js';
import { reportingOf, type UseCaseDeps } from './use-case-deps.js';

/**
 * Moves accepted records from the queue into the hot index. A delivery is acked only after the
 * insert holding its records has completed, and inserts are idempotent by ingestId, so a crash or
 * a redelivery never loses a record nor makes a second row.
 *
 * Deliveries are gathered into large writes: ClickHouse makes a part per insert, and an insert of
 * a hundred records costs several times more per record (in the insert and in the merges after
 * it) than one of thousands. A write starts when `maxWriteRecords` are waiting or `lingerMs` after
 * the first of them arrived; one write runs at a time. The queue's in-flight bound holds the
 * deliveries waiting here, so a slow index slows delivery, never memory.
 *
 * The ingestion audit entries are written here, off the request path, from the queue: one per
 * accepted record, with the id `ingest:<ingestId>` so a redelivery lists once.
 *
 * Poison messages: a message whose records the index refuses is written alone (the others of its
 * write go on), delivered again with a growing delay, and at its `maxDeliveries`-th delivery its
 * records are written one by one; those still refused go to the queue's dead letters with an
 * error log naming the message, never its payload. An outage is never taken for poison.
 *
 * Each write is published once done (RecordsIndexed, with the acceptance time of its first record,
 * which gives the consumer's lag), and each set of records set aside (RecordsDeadLettered).
 */

export interface IndexerOptions {
  readonly consumer: string;
  readonly maxBatch: number;
  readonly maxInFlight: number;
  readonly ackWaitMs: number;
  /** Delay before a failed batch is handed out again, milliseconds (doubles per attempt, capped). */
  readonly retryBaseMs: number;
  /** A write starts once this many records wait for it. */
  readonly maxWriteRecords: number;
  /** Longest a record waits for others before its write starts, milliseconds. */
  readonly lingerMs: number;
  /**
   * Deliveries of a message the index keeps refusing before the records it refuses go to the
   * queue's dead letters (see `messageFailed`).
   */
  readonly maxDeliveries: number;
}

export type IndexerDeps = UseCaseDeps;

/** Codes of a failure of the index itself rather than of the records written: never a dead letter. */
const TRANSIENT = new Set(['dependency_unavailable', 'timeout', 'overloaded']);
const MAX_RETRY_DELAY_MS = 30_000;
/** Messages whose first failure is remembered at once. */
const MAX_TRACKED_FAILURES = 100_000;

export const DEFAULT_INDEXER_OPTIONS: IndexerOptions = {
  consumer: 'indexer',
  maxBatch: 1024,
  maxInFlight: 16_384,
  ackWaitMs: 60_000,
  retryBaseMs: 500,
  maxWriteRecords: 5_000,
  lingerMs: 1_000,
  maxDeliveries: 10,
};

export class Indexer {
  private sub: Subscription | null = null;
  private readonly log: Logger;
  private readonly events: EventPublisher;
  /** Writes the index has taken: a clock of its successes. */
  private inserts = 0;
  /** `inserts` when each message that failed first failed here, by its position. */
  private readonly firstFailedAt = new Map<number, number>();
  private waiting: Delivery[] = [];
  private waitingRecords = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The write in progress (or the last one), which the next write follows. */
  private writing: Promise<void> = Promise.resolve();
  /** Deliveries whose records an earlier run may have indexed: only those are looked for first. */
  private readonly seen = new SeenBefore();

  constructor(
    private readonly queue: RecordQueue,
    private readonly index: RecordIndex,
    private readonly options: IndexerOptions = DEFAULT_INDEXER_OPTIONS,
    private readonly audit: AuditLog | null = null,
    deps: IndexerDeps = {},
  ) {
    ({ events: this.events, log: this.log } = reportingOf(deps, 'indexer'));
  }

  start(): void {
    if (this.sub !== null) return;
    this.seen.start();
    this.sub = this.queue.consume(
      { consumer: this.options.consumer, maxBatch: this.options.maxBatch, maxInFlight: this.options.maxInFlight, ackWaitMs: this.options.ackWaitMs },
      (deliveries) => this.take(deliveries),
    );
  }

  /** Holds deliveries for a write; waits for one only when enough are held to start it. */
  private async take(deliveries: readonly Delivery[]): Promise<void> {
    for (const d of deliveries) {
      this.waiting.push(d);
      this.waitingRecords += d.records.length;
    }
    if (this.waitingRecords >= this.options.maxWriteRecords) {
      await this.flush();
    } else if (this.timer === null && this.waiting.length > 0) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.options.lingerMs);
    }
  }

  /** Writes everything held now, after the write in progress; never rejects. */
  private flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const batch = this.waiting;
    this.waiting = [];
    this.waitingRecords = 0;
    if (batch.length === 0) return this.writing;
    this.writing = this.writing.then(() => this.write(batch));
    return this.writing;
  }

  private async write(deliveries: readonly Delivery[]): Promise<void> {
    const unseen: AcceptedRecord[] = [];
    const rest: AcceptedRecord[] = [];
    for (const d of deliveries) (this.seen.suspect(d) ? rest : unseen).push(...d.records);
    try {
      await this.insert(rest, unseen);
    } catch (err) {
      await this.writeFailed(deliveries, err);
      return;
    }
    await this.written(deliveries, unseen.length + rest.length);
  }

  /**
   * One write: `records` looked for in the index first, `unseen` (first deliveries of records
   * accepted since this consumer started) not. A retry after a failure looks for every record:
   * a failed write may have stored some.
   */
  private async insert(records: readonly AcceptedRecord[], unseen: readonly AcceptedRecord[] = []): Promise<void> {
    // Both calls reach the index in the same turn, which coalesces them into one write.
    await Promise.all([
      records.length > 0 || unseen.length === 0 ? this.index.insertRecords(records) : undefined,
      unseen.length > 0 ? this.index.insertRecords(unseen, { unseen: true }) : undefined,
    ]);
    this.inserts += 1;
    if (unseen.length > 0) records = records.length === 0 ? unseen : [...records, ...unseen];
    if (this.audit !== null) await this.audit.append(records.map(ingestEvent));
  }

  private async written(deliveries: readonly Delivery[], records: number): Promise<void> {
    this.indexedEvent(deliveries[0]?.records[0], records);
    for (const d of deliveries) this.firstFailedAt.delete(d.seq);
    try {
      await Promise.all(deliveries.map((d) => d.ack()));
    } catch (err) {
      // The records are indexed; an ack that did not reach the queue only means a redelivery,
      // which the index absorbs.
      this.log.warn({ err, records }, 'ack after indexing failed; the records will be delivered again');
    }
  }

  /**
   * A write of several messages failed: each is written alone, so that one message the index
   * refuses does not hold back the others (an outage fails them all the same, and they wait).
   */
  private async writeFailed(deliveries: readonly Delivery[], err: unknown): Promise<void> {
    const failedAt = this.inserts;
    if (TRANSIENT.has(toDrisError(err).code)) {
      // An outage: everything waits, as long as the most delivered message of the write.
      let attempt = 1;
      for (const d of deliveries) attempt = Math.max(attempt, d.deliveryCount);
      for (const d of deliveries) this.retryLater(d, err, attempt);
      return;
    }
    if (deliveries.length === 1) {
      for (const d of deliveries) await this.messageFailed(d, err, failedAt);
      return;
    }
    for (const d of deliveries) {
      try {
        await this.insert(d.records);
      } catch (e) {
        await this.messageFailed(d, e, failedAt);
        continue;
      }
      await this.written([d], d.records.length);
    }
  }

  /**
   * One message the index did not take. It is delivered again after a growing delay; at its
   * `maxDeliveries`-th delivery its records are written one by one, and those the index refuses
   * (not for an outage: a code other than unavailable or timeout, while it takes other writes) go
   * to the dead letters, the others are indexed, and the message is settled.
   */
  private async messageFailed(d: Delivery, err: unknown, failedAt: number): Promise<void> {
    const since = this.firstFailedAt.get(d.seq) ?? failedAt;
    this.rememberFailure(d.seq, since);
    if (d.deliveryCount < this.options.maxDeliveries || TRANSIENT.has(toDrisError(err).code)) {
      this.retryLater(d, err);
      return;
    }
    const refused: AcceptedRecord[] = [];
    let reason = 'index_refused';
    let taken = 0;
    for (const r of d.records) {
      try {
        await this.insert([r]);
        taken += 1;
      } catch (e) {
        const code = toDrisError(e).code;
        if (TRANSIENT.has(code)) {
          this.retryLater(d, e);
          return;
        }
        if (refused.length === 0) reason = `index_refused:${code}`;
        refused.push(r);
      }
    }
    if (refused.length === 0) {
      await this.written([d], d.records.length);
      return;
    }
    // Evidence that the index works and refuses these records only: it took others meanwhile.
    if (taken === 0 && this.inserts <= since) {
      this.retryLater(d, err);
      return;
    }
    try {
      await d.deadLetter(reason, refused);
    } catch (e) {
      this.log.error({ err: e, seq: d.seq }, 'a message the index refuses could not be set aside; it will be delivered again');
      this.retryLater(d, err);
      return;
    }
    this.firstFailedAt.delete(d.seq);
    if (taken > 0) this.indexedEvent(d.records[0], taken);
    this.events.publish({ type: 'RecordsDeadLettered', consumer: this.options.consumer, count: refused.length, reason });
  }

  /** One event per write; `first`: its first record, in stream order. */
  private indexedEvent(first: AcceptedRecord | undefined, count: number): void {
    if (first === undefined || !this.events.wants('RecordsIndexed')) return;
    const atMs = Date.now();
    const acceptedAtMs = Date.parse(first.acceptedAt);
    this.events.publish({ type: 'RecordsIndexed', consumer: this.options.consumer, count, firstAcceptedAtMs: Number.isNaN(acceptedAtMs) ? atMs : acceptedAtMs, atMs });
  }

  private retryLater(d: Delivery, err: unknown, attempt = d.deliveryCount): void {
    const delay = Math.min(MAX_RETRY_DELAY_MS, this.options.retryBaseMs * 2 ** Math.min(attempt - 1, 6));
    this.log.warn({ err, seq: d.seq, records: d.records.length, attempt, delayMs: delay }, 'index insert failed; will retry');
    d.nak(delay);
  }

  /** Bounded: the oldest failures are forgotten first (they then count from their next failure). */
  private rememberFailure(seq: number, at: number): void {
    if (!this.firstFailedAt.has(seq) && this.firstFailedAt.size >= MAX_TRACKED_FAILURES) {
      const oldest = this.firstFailedAt.keys().next();
      if (oldest.done !== true) this.firstFailedAt.delete(oldest.value);
    }
    this.firstFailedAt.set(seq, at);
  }

  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (sub !== null) await sub.stop();
    await this.flush();
  }
}

function ingestEvent(r: AcceptedRecord): AuditEvent {
  return {
    eventId: `ingest:${r.ingestId}`,
    atMs: Date.parse(r.acceptedAt),
    tenantId: r.tenantId,
    clientId: r.clientId,
    keyId: r.keyId,
    action: 'record.ingest',
    resource: `record:${r.collection}/${r.recordId}`,
    outcome: 'accepted',
    correlationId: r.correlationId,
    detail: { ingestId: r.ingestId, database: r.database, recordVersion: r.recordVersion, recordHash: r.recordHash },
  };
}
