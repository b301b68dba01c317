import { toDrisError } from '../errors/dris-error.js';
import type { AnchorReceipt } from '../domain/pipeline/ports.js';
import type { Batch, Snapshot } from '../domain/pipeline/types.js';
import type { Logger } from '../util/logger.js';

/**
 * The anchors on their way, oldest first: each was sent on the sequence after the one sent before
 * it, naming that batch as previous, as if it succeeds; they are settled in order.
 */

/** Anchors sent before the oldest one is confirmed. */
const WINDOW = 4;

/** An anchor sent: its transaction is on its way or awaiting its confirmations. */
export interface InFlight {
  readonly batch: Batch;
  readonly attempt: number;
  readonly batchSeq: number;
  readonly previous: Batch['previous'];
  readonly cid: string;
  readonly snapshots: Promise<Snapshot[]>;
  readonly receipt: Promise<AnchorReceipt>;
}

export class AnchorWindow {
  private inflight: InFlight[] = [];
  /** The sequence the next anchor takes, followed from the last one sent; null: read it from the contract. */
  private nextSeq: number | null = null;
  /** What the next manifest names as previous: the batch sent last (with `nextSeq`). */
  private nextPrevious: Batch['previous'] = null;

  get empty(): boolean {
    return this.inflight.length === 0;
  }

  /** Another anchor may be sent now: room in the window, and its sequence known (or the window empty). */
  get open(): boolean {
    return this.inflight.length < WINDOW && (this.nextSeq !== null || this.inflight.length === 0);
  }

  has(batchId: string): boolean {
    return this.inflight.some((f) => f.batch.batchId === batchId);
  }

  /** The sequence and previous link of the next anchor; null: read them from the contract. */
  next(): { readonly batchSeq: number; readonly previous: Batch['previous'] } | null {
    return this.nextSeq === null ? null : { batchSeq: this.nextSeq, previous: this.nextPrevious };
  }

  sent(f: InFlight): void {
    this.inflight.push(f);
    this.nextSeq = f.batchSeq + 1;
    this.nextPrevious = { batchId: f.batch.batchId, merkleRoot: f.batch.merkleRoot, cid: f.cid };
  }

  /** The next anchor reads the contract's sequence again. */
  forgetSequence(): void {
    this.nextSeq = null;
    this.nextPrevious = null;
  }

  clear(): void {
    this.inflight = [];
    this.forgetSequence();
  }

  /**
   * Waits for the oldest anchor. When it fails (`failed` counts the attempt and gives the batch
   * back, or null once it Failed), the ones sent after it assumed its sequence and named it as
   * previous: each is awaited too, kept if it stands on chain all the same, otherwise given back
   * without an attempt counted against it. Resolves with the batches to put back in their places,
   * the failed one first.
   */
  async settleOldest(
    confirmed: (f: InFlight, r: AnchorReceipt) => void,
    failed: (f: InFlight, err: unknown) => Promise<Batch | null>,
    log: Logger,
  ): Promise<Batch[]> {
    const f = this.inflight.shift();
    if (f === undefined) return [];
    try {
      confirmed(f, await f.receipt);
      return [];
    } catch (err) {
      const after = this.inflight.splice(0);
      const first = await failed(f, err);
      const back: Batch[] = first === null ? [] : [first];
      for (const g of after) {
        try {
          confirmed(g, await g.receipt);
        } catch (e) {
          log.info({ batchId: g.batch.batchId, code: toDrisError(e).code }, 'anchor sent after a failed one did not stand; taken up again');
          back.push(g.batch);
        }
      }
      return back;
    }
  }

  /**
   * Empties the window at the end of a term: each anchor is awaited (given up by then, so promptly)
   * and recorded when it was mined; the others are left, uncounted, to be taken up again.
   */
  async drain(confirmed: (f: InFlight, r: AnchorReceipt) => void, log: Logger): Promise<void> {
    const all = this.inflight.splice(0);
    this.forgetSequence();
    for (const f of all) {
      try {
        confirmed(f, await f.receipt);
      } catch (err) {
        log.info({ batchId: f.batch.batchId, code: toDrisError(err).code }, 'anchor given up with the term; taken up again later');
      }
    }
  }
}
