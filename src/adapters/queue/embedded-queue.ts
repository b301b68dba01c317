import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import type { AcceptedRecord, OutgoingRecord } from '../../domain/records/types.js';
import type { ConsumeOptions, Delivery, NotedMessage, PublishOptions, PublishResult, RecordQueue, Subscription } from '../../domain/records/ports.js';
import { componentLogger } from '../../util/logger.js';
import { encodeDeadLetter, encodeUndecodable } from './dead-letter.js';
import { decodeLabelled, decodeMessage, encodeRecords, messageLabel, type MessageLabel } from './record-codec.js';
import { SegmentLog } from '../storage/segment-log.js';
import { writeFileDurably } from '../storage/durable-file.js';
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
}

/** Delay between a consumer's floor moving and its write to disk, milliseconds. */
const FLOOR_WRITE_DELAY_MS = 250;

interface InFlight {
  readonly records: readonly AcceptedRecord[];
  deliveryCount: number;
  /** Time after which the message is handed out again, epoch ms. */
  dueAtMs: number;
}

class ConsumerState {
  ackFloor: number;
  readonly acked = new Set<number>();
  /**
   * Delivered and not acked, in the order of their last delivery, so their ack-wait deadlines
   * ascend and the due ones are found from the front. Messages given back (nak) carry a deadline
   * of their own and are also listed in `given`.
   */
  readonly inFlight = new Map<number, InFlight>();
  readonly given = new Set<number>();
  nextRead: number;
  private persistTimer: NodeJS.Timeout | null = null;
  /** Floor writes, one after the other, so an older floor never lands after a newer one. */
  private writing: Promise<void> = Promise.resolve();
  private written = -1;

  /** `nextAfter(seq)`: the seq after `seq` that the log holds (lost ranges are passed over). */
  constructor(
    private readonly file: string,
    private readonly nextAfter: (seq: number) => number,
  ) {
    this.ackFloor = ConsumerState.readFloor(file);
    this.written = this.ackFloor;
    this.nextRead = this.ackFloor + 1;
  }

  private static readFloor(file: string): number {
    try {
      const data = JSON.parse(readFileSync(file, 'utf8')) as { ackFloor?: unknown };
      return typeof data.ackFloor === 'number' && Number.isSafeInteger(data.ackFloor) ? data.ackFloor : 0;
    } catch {
      return 0;
    }
  }

  ack(seq: number): boolean {
    if (seq <= this.ackFloor) return false;
    this.inFlight.delete(seq);
    this.given.delete(seq);
    this.acked.add(seq);
    let advanced = false;
    for (let next = this.nextAfter(this.ackFloor); this.acked.delete(next); next = this.nextAfter(next)) {
      this.ackFloor = next;
      advanced = true;
    }
    if (advanced) this.schedulePersist();
    return advanced;
  }

  /**
   * The floor is written lazily: losing its last moves only causes redelivery, never loss. Each
   * write costs two disk flushes (the file, its directory), hence at most a few a second.
   */
  private schedulePersist(): void {
    if (this.persistTimer !== null) return;
    this.persistTimer = setTimeout(() => {
      this.persistTimer = null;
      void this.persist();
    }, FLOOR_WRITE_DELAY_MS);
    this.persistTimer.unref();
  }

  /** Writes the floor (tmp, flush, rename, directory flush); never rejects: a lost floor only redelivers. */
  persist(): Promise<void> {
    if (this.persistTimer !== null) {
      clearTimeout(this.persistTimer);
      this.persistTimer = null;
    }
    this.writing = this.writing.then(async () => {
      const floor = this.ackFloor;
      if (floor === this.written) return;
      try {
        await writeFileDurably(this.file, JSON.stringify({ ackFloor: floor }));
        this.written = floor;
      } catch (err) {
        floorLogger.warn({ err, file: this.file }, 'writing a consumer position failed; it will be tried again');
      }
    });
    return this.writing;
  }
}

const floorLogger = componentLogger('embedded-queue');

export class EmbeddedQueue implements RecordQueue {
  private readonly log: SegmentLog;
  private readonly deadLetters: SegmentLog;
  private readonly states = new Map<string, ConsumerState>();
  private readonly wakers = new Set<() => void>();
  private pendingPublishes = 0;
  private closed = false;
  private readonly log$ = componentLogger('embedded-queue');
  /** Message id → seq of the messages with an id that the log holds. */
  private readonly ids = new Map<string, number>();
  /** Publishes of an id still awaiting the disk: a concurrent publish of the same id waits for it. */
  private readonly writingIds = new Map<string, Promise<number>>();
  /** Resolves once `ids` has been rebuilt from the log. */
  private readonly indexed: Promise<void>;
  readonly maxMessageBytes = MAX_MESSAGE_BYTES;

  private constructor(private readonly options: EmbeddedQueueOptions) {
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
    for await (const { seq, payload } of this.entries()) {
      const label = labelOf(payload, seq, this.log$);
      if (label !== null) this.ids.set(label.id, seq);
    }
  }

  /** Every message the log holds, oldest first, read up to the durable end at the time of the call. */
  private async *entries(): AsyncGenerator<{ seq: number; payload: Buffer }> {
    const last = this.log.lastSeq;
    let from = this.log.firstSeq;
    while (from <= last) {
      const batch = await this.log.read(from, 4096);
      if (batch.length === 0) break;
      for (const e of batch) {
        if (e.seq > last) return;
        from = e.seq + 1;
        yield e;
      }
    }
  }

  static open(options: EmbeddedQueueOptions): EmbeddedQueue {
    return new EmbeddedQueue(options);
  }

  private stateOf(name: string): ConsumerState {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw new DrisError('config_invalid', `invalid consumer name ${JSON.stringify(name)}`);
    let s = this.states.get(name);
    if (s === undefined) {
      s = new ConsumerState(path.join(this.options.dir, 'consumers', `${name}.json`), (seq) => this.log.nextAfter(seq));
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
        const stored = await this.storedUnder(msgId, seq);
        if (stored !== null) return stored;
        continue;
      }
      const seq = this.ids.get(msgId);
      if (seq !== undefined) {
        const stored = await this.storedUnder(msgId, seq);
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
    let floor = Infinity;
    for (const s of this.states.values()) floor = Math.min(floor, s.ackFloor);
    const pending = this.log.bytesFrom(Number.isFinite(floor) ? floor + 1 : this.log.firstSeq);
    if (pending >= max) throw storageError('storage_full', `the queue holds ${pending} bytes not yet processed (limit ${max}); retry later`, RETRY_AFTER_FULL_S);
  }

  /** The message stored under `msgId` at `seq`, as a duplicate's answer; null when the log no longer holds it. */
  private async storedUnder(msgId: string, seq: number): Promise<PublishResult | null> {
    if (seq < this.log.firstSeq) return null;
    let entries;
    try {
      entries = await this.log.read(seq, 1);
    } catch (err) {
      throw new DrisError('dependency_unavailable', 'queue read failed', { cause: err });
    }
    const e = entries[0];
    if (e?.seq !== seq) return null;
    const { label, records } = decodeLabelled(e.payload);
    if (label?.id !== msgId) return null;
    return { duplicate: true, records, note: label.note };
  }

  async *notedMessages(): AsyncGenerator<NotedMessage> {
    for await (const { seq, payload } of this.entries()) {
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
    let running = true;
    let wake: (() => void) | null = null;
    const timerWake = (): void => wake?.();

    const nextBatch = async (): Promise<Delivery[]> => {
      const now = Date.now();
      const out: Delivery[] = [];
      // Redeliveries first: a message given back or past its ack wait goes out before new ones.
      const due: number[] = [];
      for (const seq of state.given) {
        if (due.length >= options.maxBatch) break;
        const f = state.inFlight.get(seq);
        if (f === undefined) state.given.delete(seq);
        else if (f.dueAtMs <= now) due.push(seq);
      }
      for (const [seq, f] of state.inFlight) {
        if (due.length >= options.maxBatch) break;
        if (state.given.has(seq)) continue;
        if (f.dueAtMs > now) break;
        due.push(seq);
      }
      for (const seq of due) {
        const f = state.inFlight.get(seq);
        if (f === undefined) continue;
        state.given.delete(seq);
        // To the back: it is the most recently delivered now.
        state.inFlight.delete(seq);
        state.inFlight.set(seq, f);
        f.deliveryCount += 1;
        out.push(this.delivery(state, seq, f, options.ackWaitMs, options.consumer));
      }
      const room = Math.min(options.maxBatch - out.length, options.maxInFlight - state.inFlight.size);
      state.nextRead = this.log.nextAfter(state.nextRead - 1);
      if (room > 0 && state.nextRead <= this.log.lastSeq) {
        const entries = await this.log.read(state.nextRead, room);
        for (const e of entries) {
          state.nextRead = e.seq + 1;
          if (e.seq <= state.ackFloor || state.acked.has(e.seq)) continue;
          let records: AcceptedRecord[];
          try {
            records = decodeMessage(e.payload);
          } catch (err) {
            // A frame that passed its checksum but is not a message cannot be retried into sense.
            await this.setAsideUndecodable(state, options.consumer, e.seq, e.payload, err);
            continue;
          }
          const f: InFlight = { records, deliveryCount: 1, dueAtMs: 0 };
          state.inFlight.set(e.seq, f);
          out.push(this.delivery(state, e.seq, f, options.ackWaitMs, options.consumer));
        }
      }
      return out;
    };

    const loop = async (): Promise<void> => {
      while (running) {
        let batch: Delivery[];
        try {
          batch = await nextBatch();
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
        let soonest = Infinity;
        for (const seq of state.given) soonest = Math.min(soonest, state.inFlight.get(seq)?.dueAtMs ?? Infinity);
        for (const [seq, f] of state.inFlight) {
          if (state.given.has(seq)) continue;
          soonest = Math.min(soonest, f.dueAtMs);
          break;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
          this.wakers.add(resolve);
          const delay = Number.isFinite(soonest) ? Math.max(1, soonest - Date.now()) : 1000;
          const t = setTimeout(resolve, delay);
          t.unref();
        });
        if (wake !== null) this.wakers.delete(wake);
        wake = null;
      }
    };
    const done = loop();
    const unsubscribe = (): void => {
      running = false;
      timerWake();
    };
    return {
      stop: async () => {
        unsubscribe();
        await done;
        await state.persist();
      },
    };
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

/** A message's label; null for unlabelled messages and (logged) for a label that cannot be read. */
function labelOf(payload: Buffer, seq: number, log: ReturnType<typeof componentLogger>): MessageLabel | null {
  try {
    return messageLabel(payload);
  } catch (err) {
    log.error({ seq, err }, 'queue message with an unreadable label: its id is not deduplicated');
    return null;
  }
}
