import type { HashingBackend } from '../domain/hashing/port.js';
import { formBatch, type FormedBatch } from '../domain/pipeline/batch-formation.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { Delivery, RecordQueue, Subscription } from '../domain/records/ports.js';
import type { AcceptedRecord } from '../domain/records/types.js';
import type { Logger } from '../util/logger.js';
import type { EventPublisher } from './events.js';
import { SeenBefore } from './seen-before.js';
import { reportingOf, type UseCaseDeps } from './use-case-deps.js';

/**
 * Closes a flush at maxRecords or maxWaitMs after its first record, whichever comes first, and
 * forms its batch. Queue messages are acked only once every record they carry is in a durably
 * stored batch: a crash re-delivers them, records already batched are skipped, and the rest form
 * the batch again — nothing is lost and nothing is split or batched twice.
 *
 * When records arrive faster than one batch is written, the full batches waiting in the buffer
 * are formed together and stored in one write (one insert per table, the batch rows last): each is
 * still formed from the first records not yet batched, in stream order, and a write stores all of
 * its batches or none, so a retry or a crash re-forms exactly the batches that were not stored.
 * Stored batches are published (BatchFormed, with their snapshots): the anchorer, fed by that event,
 * then need not read them back from the store. With `groupWaitMs`, a full batch waits that long for
 * others to be stored with it (four full ones are written at once).
 */

/** Full batches formed and stored by one write. */
const MAX_BATCHES_PER_WRITE = 8;

/** Full batches waiting at which a write starts without waiting for more (`groupWaitMs`). */
const GROUP_AT_ONCE = 4;

export interface AccumulatorOptions {
  readonly consumer: string;
  readonly maxRecords: number;
  readonly maxWaitMs: number;
  /** Delay before a failed batch write is tried again, milliseconds. */
  readonly retryMs: number;
  /**
   * How long a full batch waits for more to be stored with it, milliseconds (default 0): each
   * write is an insert per table, a part each for the engine to merge, whether it holds one batch
   * or four. At most this much is added to a batch's way to its anchor.
   */
  readonly groupWaitMs?: number;
}

export type AccumulatorDeps = UseCaseDeps;

interface Held {
  readonly delivery: Delivery;
  /** Records of this message not yet in a stored batch. */
  remaining: number;
}

interface Pending {
  readonly record: AcceptedRecord;
  readonly held: Held;
  /**
   * Messages delivered again with this record while it waited (a nak, an ack wait, a queue's
   * restart): each is settled only once the record is in a stored batch, as the first one is.
   */
  copies?: Held[];
}

export class Accumulator {
  private sub: Subscription | null = null;
  private buffer: Pending[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Serialises flushes with the handler: one batch is formed at a time, in stream order. */
  private chain: Promise<void> = Promise.resolve();
  private readonly log: Logger;
  private readonly events: EventPublisher;
  /** Deliveries whose records an earlier run (or term) may have batched. */
  private readonly seen = new SeenBefore();
  /** When the open batch's wait began (its first record, or the records a flush left over), ms. */
  private openedAtMs = 0;
  /** A full batch waits for others (`groupWaitMs`): the timer is set to the end of that wait. */
  private grouping = false;

  constructor(
    private readonly queue: RecordQueue,
    private readonly store: PipelineStore,
    private readonly hashing: HashingBackend,
    private readonly options: AccumulatorOptions,
    deps: AccumulatorDeps = {},
  ) {
    ({ events: this.events, log: this.log } = reportingOf(deps, 'accumulator'));
  }

  start(): void {
    if (this.sub !== null) return;
    this.seen.start();
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
    // A message may already be in a stored batch when it was delivered before (SeenBefore).
    const redelivered = deliveries.filter((d) => this.seen.suspect(d)).flatMap((d) => d.records);
    const already =
      redelivered.length > 0
        ? await this.store.batchedIngestIds(
            redelivered.map((r) => r.ingestId),
            redelivered.reduce((m, r) => Math.min(m, Date.parse(r.acceptedAt) || 0), Infinity),
          )
        : new Set<string>();
    const waiting = new Map(this.buffer.map((p) => [p.record.ingestId, p]));
    const settled: Delivery[] = [];
    for (const delivery of deliveries) {
      const held: Held = { delivery, remaining: 0 };
      for (const record of delivery.records) {
        if (already.has(record.ingestId)) continue;
        held.remaining += 1;
        const earlier = waiting.get(record.ingestId);
        if (earlier !== undefined) {
          // Acking this copy now would drop the record from the queue before its batch is stored.
          (earlier.copies ??= []).push(held);
          continue;
        }
        const pending: Pending = { record, held };
        waiting.set(record.ingestId, pending);
        this.buffer.push(pending);
      }
      if (held.remaining === 0) settled.push(delivery);
    }
    await this.settle(settled);
    if (this.buffer.length > 0 && this.timer === null) {
      this.openedAtMs = Date.now();
      this.armTimer(this.options.maxWaitMs);
    }
    // A failed write waits for the retry timer rather than being tried again at once.
    const wait = this.options.groupWaitMs ?? 0;
    if (wait > 0 && this.buffer.length >= this.options.maxRecords && !this.grouping) {
      // A full batch: the write starts once more are full, or after the group wait.
      this.grouping = true;
      this.armTimer(wait, true);
    }
    const atOnce = this.options.maxRecords * (wait > 0 ? GROUP_AT_ONCE : 1);
    while (this.buffer.length >= atOnce) if (!(await this.flush())) break;
  }

  /**
   * `fullOnly`: the end of a group wait, which writes full batches only. By the time it runs, a
   * write may have taken them, and what is left is an open batch with its own wait.
   */
  private armTimer(ms: number, fullOnly = false): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.serial(async () => {
        if (fullOnly && this.buffer.length < this.options.maxRecords) {
          this.grouping = false;
          if (this.buffer.length > 0 && this.timer === null) this.armTimer(Math.max(0, this.openedAtMs + this.options.maxWaitMs - Date.now()));
          return;
        }
        await this.flush();
      }).catch((err: unknown) => this.log.error({ err }, 'timed flush failed'));
    }, ms);
    this.timer.unref();
  }

  /** Forms and writes the batches due now; false when the write failed (the retry timer is set). */
  private async flush(): Promise<boolean> {
    this.grouping = false;
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return true;
    const max = this.options.maxRecords;
    const count = Math.max(1, Math.min(MAX_BATCHES_PER_WRITE, Math.floor(this.buffer.length / max)));
    const takes = Array.from({ length: count }, (_, i) => this.buffer.slice(i * max, (i + 1) * max));
    const now = Date.now();
    const formed: FormedBatch[] = [];
    for (const [i, take] of takes.entries()) {
      // Between batches, so a write of several does not hold the event loop for all of them at once.
      if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
      // A millisecond apart, so the anchorer takes them in stream order (it orders by creation time).
      formed.push(formBatch(take.map((p) => p.record), this.hashing, now + i));
    }
    try {
      await this.store.saveFormedBatches(formed);
    } catch (err) {
      // Nothing of this write counts: the retry forms its batches again from the same first
      // records, so a full batch keeps its id and its write is idempotent.
      this.log.warn({ err, batches: count, records: takes.reduce((n, t) => n + t.length, 0) }, 'batch write failed; will retry');
      // The retry timer stands: deliveries meanwhile do not replace it by a group wait.
      this.grouping = true;
      this.armTimer(this.options.retryMs);
      return false;
    }
    // Stored: whatever the acks do, these records must never be formed into a batch again.
    this.buffer = this.buffer.slice(takes.reduce((n, t) => n + t.length, 0));
    // Before the acks, which may yield: the anchorer then need not find these in the store first.
    this.published(formed);
    const done: Delivery[] = [];
    const release = (held: Held): void => {
      held.remaining -= 1;
      if (held.remaining === 0) done.push(held.delivery);
    };
    for (const [i, f] of formed.entries()) {
      this.log.info({ batchId: f.batch.batchId, records: f.batch.treeSize, snapshots: f.snapshots.length }, 'batch formed');
      for (const p of takes[i] ?? []) {
        release(p.held);
        if (p.copies !== undefined) for (const copy of p.copies) release(copy);
      }
    }
    await this.settle(done);
    if (this.buffer.length > 0 && this.timer === null) {
      // Records left over started waiting when they arrived; the next flush closes on its own size or time.
      this.openedAtMs = Date.now();
      this.armTimer(this.options.maxWaitMs);
    }
    return true;
  }

  /**
   * Acks messages whose records are all in stored batches. An ack that fails is not the flush's
   * failure: its message comes back, and its records are looked for in the store then, as is every
   * record accepted before now, in case the queue hands them out again counted as first deliveries.
   */
  private async settle(deliveries: readonly Delivery[]): Promise<void> {
    if (deliveries.length === 0) return;
    const failed = (await Promise.allSettled(deliveries.map((d) => d.ack()))).filter((r) => r.status === 'rejected');
    if (failed.length === 0) return;
    this.seen.doubt();
    this.log.warn({ err: failed[0]?.reason, messages: failed.length }, 'ack after batching failed; the messages will be delivered again and found batched');
  }

  /** Ids, hashes and counts only: the records themselves stay out of the events. */
  private published(formed: readonly FormedBatch[]): void {
    this.events.publish({ type: 'BatchFormed', batches: formed.map((f) => ({ batch: f.batch, snapshots: f.snapshots })), atMs: Date.now() });
    if (!this.events.wants('SnapshotStateChanged')) return;
    for (const f of formed) this.events.publish({ type: 'SnapshotStateChanged', batchId: f.batch.batchId, state: 'Batched', snapshots: f.snapshots, reason: `assigned to batch ${f.batch.batchId}` });
  }

  /** The batch being accumulated (records not yet in a stored batch), for metrics; null when none. */
  openBatch(now: number = Date.now()): { readonly records: number; readonly ageSeconds: number } | null {
    if (this.buffer.length === 0) return null;
    return { records: this.buffer.length, ageSeconds: Math.max(0, now - this.openedAtMs) / 1000 };
  }

  /** Stops consuming; records not yet in a batch are given back unacked, for whoever consumes next. */
  async stop(): Promise<void> {
    const sub = this.sub;
    this.sub = null;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (sub !== null) await sub.stop();
    await this.chain;
    // A timed flush may have armed a retry meanwhile; and a restarted accumulator must start empty.
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    // Held messages go back at once, for the next leader (or this process's next term) to batch.
    for (const d of new Set(this.buffer.flatMap((p) => [p.held, ...(p.copies ?? [])].map((h) => h.delivery)))) d.nak(0);
    this.buffer = [];
  }
}
