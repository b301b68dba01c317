import type { AuditEvent, AuditLog } from '../domain/audit/ports.js';
import type { Delivery, RecordIndex, RecordQueue, Subscription } from '../domain/records/ports.js';
import type { AcceptedRecord } from '../domain/records/types.js';
import { componentLogger } from '../util/logger.js';

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
}

export const DEFAULT_INDEXER_OPTIONS: IndexerOptions = {
  consumer: 'indexer',
  maxBatch: 1024,
  maxInFlight: 16_384,
  ackWaitMs: 60_000,
  retryBaseMs: 500,
  maxWriteRecords: 5_000,
  lingerMs: 1_000,
};

export class Indexer {
  private sub: Subscription | null = null;
  private readonly log = componentLogger('indexer');
  private indexed = 0;
  private waiting: Delivery[] = [];
  private waitingRecords = 0;
  private timer: NodeJS.Timeout | null = null;
  /** The write in progress (or the last one), which the next write follows. */
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly queue: RecordQueue,
    private readonly index: RecordIndex,
    private readonly options: IndexerOptions = DEFAULT_INDEXER_OPTIONS,
    private readonly audit: AuditLog | null = null,
  ) {}

  get indexedCount(): number {
    return this.indexed;
  }

  start(): void {
    if (this.sub !== null) return;
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
    const records = deliveries.flatMap((d) => d.records);
    try {
      await this.index.insertRecords(records);
      if (this.audit !== null) await this.audit.append(records.map(ingestEvent));
    } catch (err) {
      let attempt = 1;
      for (const d of deliveries) attempt = Math.max(attempt, d.deliveryCount);
      const delay = Math.min(30_000, this.options.retryBaseMs * 2 ** Math.min(attempt - 1, 6));
      this.log.warn({ err, records: records.length, attempt, delayMs: delay }, 'index insert failed; will retry');
      for (const d of deliveries) d.nak(delay);
      return;
    }
    this.indexed += records.length;
    try {
      await Promise.all(deliveries.map((d) => d.ack()));
    } catch (err) {
      // The records are indexed; an ack that did not reach the queue only means a redelivery,
      // which the index absorbs.
      this.log.warn({ err, records: records.length }, 'ack after indexing failed; the records will be delivered again');
    }
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
