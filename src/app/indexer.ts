import type { AuditEvent, AuditLog } from '../domain/audit/ports.js';
import type { Delivery, RecordIndex, RecordQueue, Subscription } from '../domain/records/ports.js';
import type { AcceptedRecord } from '../domain/records/types.js';
import { componentLogger } from '../util/logger.js';

/**
 * Moves accepted records from the queue into the hot index. A delivery is acked only after the
 * insert holding its records has completed, and inserts are idempotent by ingestId, so a crash or
 * a redelivery never loses a record nor makes a second row.
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
}

export const DEFAULT_INDEXER_OPTIONS: IndexerOptions = { consumer: 'indexer', maxBatch: 256, maxInFlight: 4096, ackWaitMs: 60_000, retryBaseMs: 500 };

export class Indexer {
  private sub: Subscription | null = null;
  private readonly log = componentLogger('indexer');
  private indexed = 0;

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
      (deliveries) => this.handle(deliveries),
    );
  }

  private async handle(deliveries: readonly Delivery[]): Promise<void> {
    const records = deliveries.flatMap((d) => d.records);
    try {
      await this.index.insertRecords(records);
      if (this.audit !== null) await this.audit.append(records.map(ingestEvent));
    } catch (err) {
      const attempt = Math.max(...deliveries.map((d) => d.deliveryCount));
      const delay = Math.min(30_000, this.options.retryBaseMs * 2 ** Math.min(attempt - 1, 6));
      this.log.warn({ err, records: records.length, attempt, delayMs: delay }, 'index insert failed; will retry');
      for (const d of deliveries) d.nak(delay);
      return;
    }
    this.indexed += records.length;
    await Promise.all(deliveries.map((d) => d.ack()));
  }

  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (sub !== null) await sub.stop();
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
