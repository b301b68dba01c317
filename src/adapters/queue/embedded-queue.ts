import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import type { AcceptedRecord, OutgoingRecord } from '../../domain/records/types.js';
import type { ConsumeOptions, Delivery, NotedMessage, PublishOptions, PublishResult, RecordQueue, Subscription } from '../../domain/records/ports.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { ConsumerState, type InFlight } from './consumer-state.js';
import { encodeDeadLetter, encodeUndecodable } from './dead-letter.js';
import { decodeLabelled, encodeRecords } from './record-codec.js';
import { labelOf, logEntries, storedUnder } from './log-messages.js';
import { SharedDecodes } from './shared-decodes.js';
import { SegmentLog } from '../storage/segment-log.js';
import { mkdirDurableSync } from '../storage/log-file-system.js';
import { RETRY_AFTER_FULL_S, RETRY_AFTER_WRITE_S, storageError } from '../storage/storage-faults.js';

/**
 * The embedded queue: a durable, in-process stream on local disk for the one-machine default.
 * A publish resolves after fdatasync (group-committed), which is what a 202 promises. Each named
 * consumer keeps an ack floor on disk; after a crash it resumes from that floor, so delivery is at
 * least once, and consumers are idempotent by ingestId (as with JetStream).
 *
 * Dead letters (a message a consumer gives up on, `Delivery.deadLetter`, and a message that does
 * not decode) go to a segment log of their own, `<dir>/dead-letter`, durable before the message is
 * acked for that consumer; other consumers still get the message.
 *
 * A message published with an id is deduplicated as JetStream does it: the queue keeps id → seq
 * for the messages it holds (rebuilt from the log at open), and a publish of an id it holds stores
 * nothing and answers with the records stored first. The window is the log's retention: a message
 * leaves it once every consumer is done with it, so ingestion also records the outcome of each
 * keyed publish in the idempotency store (and, after a crash, from `notedMessages`).
 */

/** Most bytes of records in a message published with options. */
const MAX_MESSAGE_BYTES = 8 * 1024 * 1024;

export interface EmbeddedQueueOptions {
  readonly dir: string;
  /** Consumers that must see every message; retention keeps what any of them has not acked. */
  readonly consumers: readonly string[];
  /** Most publishes awaiting the disk before publish() answers overloaded. */
  readonly maxPendingPublishes: number;
  /**
   * Most bytes of messages not yet acknowledged by every consumer before publish() answers
   * storage_full; 0 for no bound. Acknowledged segments are removed whole, so the disk holds up
   * to one segment (64 MiB) more.
   */
  readonly maxBytes?: number;
  /** Asked before every publish; throws (storage_full, storage_failed) when the disk may not take it. */
  readonly admit?: () => void;
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
}


/** A consumer's loop: whether it goes on, and how to wake it from its wait. */
interface Run {
  running: boolean;
  wake: (() => void) | null;
}

export class EmbeddedQueue implements RecordQueue {
  private readonly log: SegmentLog;
  private readonly deadLetters: SegmentLog;
  private readonly states = new Map<string, ConsumerState>();
  private readonly wakers = new Set<() => void>();
  private pendingPublishes = 0;
  private closed = false;
  private readonly log$: Logger;
  /** Message id → seq of the messages with an id that the log holds. */
  private readonly ids = new Map<string, number>();
  /** Publishes of an id still awaiting the disk: a concurrent publish of the same id waits for it. */
  private readonly writingIds = new Map<string, Promise<number>>();
  /** Resolves once `ids` has been rebuilt from the log. */
  private readonly indexed: Promise<void>;
  readonly maxMessageBytes = MAX_MESSAGE_BYTES;
  /** Messages decoded by one consumer and not yet taken by every other. */
  private readonly decodes = new SharedDecodes(() => this.states.size);

  private constructor(private readonly options: EmbeddedQueueOptions) {
    this.log$ = options.logger ?? componentLogger('embedded-queue');
    mkdirDurableSync(path.join(options.dir, 'consumers'));
    this.log = SegmentLog.open(path.join(options.dir, 'log'));
    this.deadLetters = SegmentLog.open(path.join(options.dir, 'dead-letter'));
    for (const name of options.consumers) this.stateOf(name);
    this.log.onAppend(() => this.wakeAll());
    this.indexed = this.rebuildIds();
    // Publishes report a failed rebuild; this only keeps it from being an unhandled rejection.
    this.indexed.catch((err: unknown) => this.log$.error({ err }, 'message id index rebuild failed'));
  }

  private async rebuildIds(): Promise<void> {
    for await (const { seq, payload } of logEntries(this.log)) {
      const label = labelOf(payload, seq, this.log$);
      if (label !== null) this.ids.set(label.id, seq);
    }
  }

  static open(options: EmbeddedQueueOptions): EmbeddedQueue {
    return new EmbeddedQueue(options);
  }

  private stateOf(name: string): ConsumerState {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new DrisError('config_invalid', `invalid consumer name ${JSON.stringify(name)}`);
    let s = this.states.get(name);
    if (s === undefined) {
      s = new ConsumerState(path.join(this.options.dir, 'consumers', `${name}.json`), (seq) => this.log.nextAfter(seq), this.log$);
      this.states.set(name, s);
    }
    return s;
  }

  private wakeAll(): void {
    for (const w of [...this.wakers]) w();
  }

  async publish(records: readonly OutgoingRecord[], options?: PublishOptions): Promise<PublishResult> {
    if (records.length === 0) return { duplicate: false };
    if (this.closed) throw storageError('dependency_unavailable', 'queue is closed', RETRY_AFTER_WRITE_S);
    const msgId = options?.msgId;
    if (msgId === undefined) {
      await this.append(encodeRecords(records));
      return { duplicate: false };
    }
    await this.indexed.catch((err: unknown) => {
      throw new DrisError('dependency_unavailable', 'queue index unavailable', { cause: err });
    });
    for (;;) {
      // A concurrent publish of the id is ahead: its outcome is this one's.
      const writing = this.writingIds.get(msgId);
      if (writing !== undefined) {
        const seq = await writing.catch(() => null);
        if (seq === null) continue;
        const stored = await storedUnder(this.log, msgId, seq);
        if (stored !== null) return stored;
        continue;
      }
      const seq = this.ids.get(msgId);
      if (seq !== undefined) {
        const stored = await storedUnder(this.log, msgId, seq);
        if (stored !== null) return stored;
        this.ids.delete(msgId);
      }
      const write = this.append(encodeRecords(records, { id: msgId, note: options?.note ?? '' }));
      this.writingIds.set(msgId, write);
      try {
        this.ids.set(msgId, await write);
      } finally {
        this.writingIds.delete(msgId);
      }
      return { duplicate: false };
    }
  }

  private async append(message: Buffer): Promise<number> {
    if (this.pendingPublishes >= this.options.maxPendingPublishes) throw storageError('overloaded', 'too many records awaiting the queue', RETRY_AFTER_WRITE_S);
    this.options.admit?.();
    this.checkBudget();
    this.pendingPublishes += 1;
    try {
      return await this.log.append(message);
    } catch (err) {
      throw err instanceof DrisError ? err : new DrisError('dependency_unavailable', 'queue write failed', { cause: err });
    } finally {
      this.pendingPublishes -= 1;
    }
  }

  /** Refuses new messages while those not yet acknowledged by every consumer exceed maxBytes. */
  private checkBudget(): void {
    const max = this.options.maxBytes ?? 0;
    if (max <= 0) return;
    const pending = this.pendingBytes();
    if (pending >= max) throw storageError('storage_full', `the queue holds ${pending} bytes not yet processed (limit ${max}); retry later`, RETRY_AFTER_FULL_S);
  }

  async *notedMessages(): AsyncGenerator<NotedMessage> {
    for await (const { seq, payload } of logEntries(this.log)) {
      if (labelOf(payload, seq, this.log$) === null) continue;
      let decoded;
      try {
        decoded = decodeLabelled(payload);
      } catch {
        // Consumers skip it with an error of their own.
        continue;
      }
      const { label, records } = decoded;
      if (label !== null && label.note.length > 0) yield { msgId: label.id, note: label.note, records };
    }
  }

  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription {
    const state = this.stateOf(options.consumer);
    const run: Run = { running: true, wake: null };
    const done = this.consumeLoop(state, options, handler, run);
    return {
      stop: async () => {
        run.running = false;
        run.wake?.();
        await done;
        await state.persist();
      },
    };
  }

  private async consumeLoop(state: ConsumerState, options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>, run: Run): Promise<void> {
    while (run.running) {
      let batch: Delivery[];
      try {
        batch = await this.nextBatch(state, options);
      } catch (err) {
        this.log$.error({ err, consumer: options.consumer }, 'queue read failed');
        batch = [];
      }
      if (batch.length > 0) {
        try {
          await handler(batch);
        } catch (err) {
          this.log$.error({ err, consumer: options.consumer }, 'consumer handler failed; messages will be redelivered');
          for (const d of batch) d.nak(1000);
        }
        continue;
      }
      await this.idle(state.soonestDue(), run);
    }
  }

  /** Waits for a publish, a nak, stop, or the next redelivery deadline (at most a second when none). */
  private async idle(soonest: number, run: Run): Promise<void> {
    await new Promise<void>((resolve) => {
      run.wake = resolve;
      this.wakers.add(resolve);
      const delay = Number.isFinite(soonest) ? Math.max(1, soonest - Date.now()) : 1000;
      const t = setTimeout(resolve, delay);
      t.unref();
    });
    if (run.wake !== null) this.wakers.delete(run.wake);
    run.wake = null;
  }

  /** Redeliveries first (a message given back or past its ack wait), then new messages, as room allows. */
  private async nextBatch(state: ConsumerState, options: ConsumeOptions): Promise<Delivery[]> {
    const out = state.takeDue(Date.now(), options.maxBatch).map(([seq, f]) => this.delivery(state, seq, f, options.ackWaitMs, options.consumer));
    const room = Math.min(options.maxBatch - out.length, options.maxInFlight - state.inFlight.size);
    state.nextRead = this.log.nextAfter(state.nextRead - 1);
    if (room <= 0 || state.nextRead > this.log.lastSeq) return out;
    for (const e of await this.log.read(state.nextRead, room)) {
      state.nextRead = e.seq + 1;
      if (e.seq <= state.ackFloor || state.acked.has(e.seq)) continue;
      let records: readonly AcceptedRecord[];
      try {
        records = this.decodes.take(e.seq, e.payload);
      } catch (err) {
        // A frame that passed its checksum but is not a message cannot be retried into sense.
        await this.setAsideUndecodable(state, options.consumer, e.seq, e.payload, err);
        continue;
      }
      const f: InFlight = { records, deliveryCount: 1, dueAtMs: 0 };
      state.inFlight.set(e.seq, f);
      out.push(this.delivery(state, e.seq, f, options.ackWaitMs, options.consumer));
    }
    return out;
  }

  /** A message that does not decode goes to the dead letters as it is; kept (not acked) if that fails. */
  private async setAsideUndecodable(state: ConsumerState, consumer: string, seq: number, payload: Buffer, err: unknown): Promise<void> {
    try {
      await this.deadLetters.append(encodeUndecodable({ consumer, seq, deliveryCount: 1, reason: 'undecodable', atMs: Date.now() }, payload));
    } catch (dlErr) {
      this.log$.error({ seq, consumer, err: dlErr }, 'undecodable queue message could not be set aside; it is read again at the next start');
      return;
    }
    this.log$.error({ seq, consumer, err }, 'undecodable queue message set aside as a dead letter');
    if (state.ack(seq)) this.retain();
  }

  private delivery(state: ConsumerState, seq: number, f: InFlight, ackWaitMs: number, consumer: string): Delivery {
    const deliveredAt = Date.now();
    // While a handler runs the message is not redelivered; the ack wait starts on delivery.
    f.dueAtMs = deliveredAt + ackWaitMs;
    return {
      records: f.records,
      seq,
      deliveryCount: f.deliveryCount,
      ack: () => {
        if (state.ack(seq)) this.retain();
        return Promise.resolve();
      },
      nak: (delayMs = 0) => {
        const cur = state.inFlight.get(seq);
        if (cur !== undefined) {
          cur.dueAtMs = Date.now() + Math.max(1, delayMs);
          state.given.add(seq);
        }
        this.wakeAll();
      },
      deadLetter: async (reason, records = f.records) => {
        try {
          await this.deadLetters.append(encodeDeadLetter({ consumer, seq, deliveryCount: f.deliveryCount, reason, atMs: Date.now() }, records));
        } catch (err) {
          throw new DrisError('dependency_unavailable', 'dead-letter write failed', { cause: err });
        }
        this.log$.error(
          { consumer, seq, deliveryCount: f.deliveryCount, reason, records: records.length, ingestIds: records.slice(0, 10).map((r) => r.ingestId) },
          'queue message set aside as a dead letter',
        );
        if (state.ack(seq)) this.retain();
      },
    };
  }

  /** Dead letters stored in this data directory (since it was created). */
  deadLetterCount(): Promise<number> {
    return Promise.resolve(this.deadLetters.lastSeq);
  }

  /** Drops segments every consumer has acknowledged. */
  private retain(): void {
    let min = Infinity;
    for (const s of this.states.values()) min = Math.min(min, s.ackFloor);
    if (!Number.isFinite(min)) return;
    const first = this.log.firstSeq;
    this.log.truncateBefore(min + 1);
    if (this.log.firstSeq === first) return;
    // Ids of the messages that left with their segment; a whole segment went, so this is rare.
    const floor = this.log.firstSeq;
    for (const [id, seq] of this.ids) if (seq < floor) this.ids.delete(id);
  }

  /** Messages after the consumer's ack floor (some above it may be acked already: out-of-order acks). */
  consumerLag(consumer: string): Promise<number> {
    const s = this.states.get(consumer);
    if (s === undefined) return Promise.reject(new DrisError('not_found', `no consumer ${JSON.stringify(consumer)} of the embedded queue`));
    return Promise.resolve(Math.max(0, this.log.lastSeq - s.ackFloor));
  }

  /** Bytes not yet processed by every consumer, and the budget they are held to (0: none). */
  budget(): { bytes: number; maxBytes: number } {
    return { bytes: this.pendingBytes(), maxBytes: this.options.maxBytes ?? 0 };
  }

  private pendingBytes(): number {
    let floor = Infinity;
    for (const s of this.states.values()) floor = Math.min(floor, s.ackFloor);
    return this.log.bytesFrom(Number.isFinite(floor) ? floor + 1 : this.log.firstSeq);
  }

  /** Highest durable position and each consumer's floor: for health and tests. */
  positions(): { lastSeq: number; consumers: Record<string, number> } {
    const consumers: Record<string, number> = {};
    for (const [name, s] of this.states) consumers[name] = s.ackFloor;
    return { lastSeq: this.log.lastSeq, consumers };
  }

  check(): Promise<void> {
    if (this.closed) return Promise.reject(new DrisError('dependency_unavailable', 'queue is closed'));
    if (this.log.failed !== null) return Promise.reject(this.log.failed);
    try {
      this.checkBudget();
    } catch (err) {
      return Promise.reject(err as Error);
    }
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.states.values()].map((s) => s.persist()));
    this.wakeAll();
    await this.log.close();
    await this.deadLetters.close();
  }
}
