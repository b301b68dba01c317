import type { HashingBackend } from '../domain/hashing/port.js';
import { formBatch } from '../domain/pipeline/batch-formation.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { Delivery, RecordQueue, Subscription } from '../domain/records/ports.js';
import type { AcceptedRecord } from '../domain/records/types.js';
import { componentLogger } from '../util/logger.js';

/**
 * Closes a flush at maxRecords or maxWaitMs after its first record, whichever comes first, and
 * forms its batch. Queue messages are acked only once every record they carry is in a durably
 * stored batch: a crash re-delivers them, records already batched are skipped, and the rest form
 * the batch again — nothing is lost and nothing is split or batched twice.
 */

export interface AccumulatorOptions {
  readonly consumer: string;
  readonly maxRecords: number;
  readonly maxWaitMs: number;
  /** Delay before a failed batch write is tried again, milliseconds. */
  readonly retryMs: number;
}

interface Held {
  readonly delivery: Delivery;
  /** Records of this message not yet in a stored batch. */
  remaining: number;
}

interface Pending {
  readonly record: AcceptedRecord;
  readonly held: Held;
}

export class Accumulator {
  private sub: Subscription | null = null;
  private buffer: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Serialises flushes with the handler: one batch is formed at a time, in stream order. */
  private chain: Promise<void> = Promise.resolve();
  private readonly log = componentLogger('accumulator');
  private formed = 0;

  constructor(
    private readonly queue: RecordQueue,
    private readonly store: PipelineStore,
    private readonly hashing: HashingBackend,
    private readonly options: AccumulatorOptions,
    private readonly onBatchFormed: () => void,
  ) {}

  get batchesFormed(): number {
    return this.formed;
  }

  start(): void {
    if (this.sub !== null) return;
    this.sub = this.queue.consume(
      {
        consumer: this.options.consumer,
        maxBatch: 256,
        // Enough to hold a full flush of one-record messages and the start of the next.
        maxInFlight: this.options.maxRecords * 2 + 256,
        // A held message must not come back while its flush is still open.
        ackWaitMs: this.options.maxWaitMs * 2 + 60_000,
      },
      (deliveries) => this.serial(() => this.take(deliveries)),
    );
  }

  private serial(task: () => Promise<void>): Promise<void> {
    const run = this.chain.then(task);
    this.chain = run.catch(() => undefined);
    return run;
  }

  private async take(deliveries: readonly Delivery[]): Promise<void> {
    const redelivered = deliveries.filter((d) => d.deliveryCount > 1).flatMap((d) => d.records.map((r) => r.ingestId));
    const already = redelivered.length > 0 ? await this.store.batchedIngestIds(redelivered) : new Set<string>();
    const inBuffer = new Set(this.buffer.map((p) => p.record.ingestId));
    for (const delivery of deliveries) {
      const held: Held = { delivery, remaining: 0 };
      for (const record of delivery.records) {
        if (already.has(record.ingestId) || inBuffer.has(record.ingestId)) continue;
        held.remaining += 1;
        inBuffer.add(record.ingestId);
        this.buffer.push({ record, held });
      }
      if (held.remaining === 0) await delivery.ack();
    }
    if (this.buffer.length > 0 && this.timer === null) this.armTimer(this.options.maxWaitMs);
    while (this.buffer.length >= this.options.maxRecords) await this.flush();
  }

  private armTimer(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = null;
      this.serial(() => this.flush()).catch((err: unknown) => this.log.error({ err }, 'timed flush failed'));
    }, ms);
    this.timer.unref();
  }

  private async flush(): Promise<void> {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return;
    const take = this.buffer.slice(0, this.options.maxRecords);
    const formed = formBatch(
      take.map((p) => p.record),
      this.hashing,
      Date.now(),
    );
    try {
      await this.store.saveFormedBatch(formed);
    } catch (err) {
      this.log.warn({ err, records: take.length }, 'batch write failed; will retry');
      this.armTimer(this.options.retryMs);
      return;
    }
    this.buffer = this.buffer.slice(take.length);
    this.formed += 1;
    this.log.info({ batchId: formed.batch.batchId, records: formed.batch.treeSize, snapshots: formed.snapshots.length }, 'batch formed');
    const done: Delivery[] = [];
    for (const p of take) {
      p.held.remaining -= 1;
      if (p.held.remaining === 0) done.push(p.held.delivery);
    }
    await Promise.all(done.map((d) => d.ack()));
    if (this.buffer.length > 0 && this.timer === null) {
      // Records left over started waiting when they arrived; the next flush closes on its own size or time.
      this.armTimer(this.options.maxWaitMs);
    }
    this.onBatchFormed();
  }

  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (sub !== null) await sub.stop();
    await this.chain;
  }
}
