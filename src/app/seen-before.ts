import type { Delivery } from '../domain/records/ports.js';

/**
 * Which deliveries a consumer may have handled before: a redelivery in this run, or any message of
 * records accepted before this consumer started, since a queue restarted after a crash counts
 * deliveries from 1 again (the embedded queue keeps only its ack floor, and lazily) and may hand
 * out again messages that were handled and acked. Every other delivery is the first sight of its
 * records, and a consumer may skip looking for what it would have stored of them.
 */

/** Clock skew allowed between the processes that accept records and the one that consumes them. */
export const SUSPECT_CLOCK_MARGIN_MS = 5_000;

export class SeenBefore {
  /** Records accepted up to then may have been handled by an earlier run (or term). */
  #suspectBeforeMs = Number.POSITIVE_INFINITY;

  /** The consumer starts (or starts a new term) now. */
  start(nowMs: number = Date.now()): void {
    // The margin covers API processes whose clocks run ahead of this one's.
    this.#suspectBeforeMs = nowMs + SUSPECT_CLOCK_MARGIN_MS;
  }

  /**
   * Records accepted up to now may be handed out again counted as first deliveries: an ack the
   * queue did not confirm may still have been lost by it, or a consumer's state moved meanwhile.
   */
  doubt(nowMs: number = Date.now()): void {
    this.#suspectBeforeMs = Math.max(this.#suspectBeforeMs, nowMs + SUSPECT_CLOCK_MARGIN_MS);
  }

  /** Whether any record of this delivery may have been handled already. Before start(): all. */
  suspect(d: Delivery): boolean {
    if (d.deliveryCount > 1) return true;
    for (const r of d.records) if (!(Date.parse(r.acceptedAt) > this.#suspectBeforeMs)) return true;
    return false;
  }
}
