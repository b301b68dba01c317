import { readFileSync } from 'node:fs';
import type { AcceptedRecord } from '../../domain/records/types.js';
import type { Logger } from '../../util/logger.js';
import { writeFileDurably } from '../storage/durable-file.js';

/**
 * Where one consumer of the embedded queue stands: its ack floor (on disk, written lazily), the
 * acks above it, and the messages delivered and not yet acked.
 */

/** Delay between a consumer's floor moving and its write to disk, milliseconds. */
const FLOOR_WRITE_DELAY_MS = 250;

export interface InFlight {
  readonly records: readonly AcceptedRecord[];
  deliveryCount: number;
  /** Time after which the message is handed out again, epoch ms. */
  dueAtMs: number;
}

export class ConsumerState {
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
    private readonly log: Logger,
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

  /**
   * The messages to hand out again now (given back, or past their ack wait), at most `max`, each
   * moved to the back of the delivery order with its count raised.
   */
  takeDue(now: number, max: number): [number, InFlight][] {
    const due: number[] = [];
    for (const seq of this.given) {
      if (due.length >= max) break;
      const f = this.inFlight.get(seq);
      if (f === undefined) this.given.delete(seq);
      else if (f.dueAtMs <= now) due.push(seq);
    }
    for (const [seq, f] of this.inFlight) {
      if (due.length >= max) break;
      if (this.given.has(seq)) continue;
      if (f.dueAtMs > now) break;
      due.push(seq);
    }
    const out: [number, InFlight][] = [];
    for (const seq of due) {
      const f = this.inFlight.get(seq);
      if (f === undefined) continue;
      this.given.delete(seq);
      // To the back: it is the most recently delivered now.
      this.inFlight.delete(seq);
      this.inFlight.set(seq, f);
      f.deliveryCount += 1;
      out.push([seq, f]);
    }
    return out;
  }

  /** When the next redelivery falls due, epoch ms; Infinity when none waits. */
  soonestDue(): number {
    let soonest = Infinity;
    for (const seq of this.given) soonest = Math.min(soonest, this.inFlight.get(seq)?.dueAtMs ?? Infinity);
    for (const [seq, f] of this.inFlight) {
      if (this.given.has(seq)) continue;
      soonest = Math.min(soonest, f.dueAtMs);
      break;
    }
    return soonest;
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
        this.log.warn({ err, file: this.file }, 'writing a consumer position failed; it will be tried again');
      }
    });
    return this.writing;
  }
}
