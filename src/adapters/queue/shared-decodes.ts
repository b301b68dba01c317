import type { AcceptedRecord } from '../../domain/records/types.js';
import { decodeMessage } from './record-codec.js';

/**
 * Most messages held decoded for the consumers that have not read them yet: a consumer further
 * behind decodes for itself. The records' payloads are views of the log's buffers, so what this
 * holds is mostly the records' metadata.
 */
const DECODED_MESSAGES = 256;

/**
 * The records of each message decoded once for all consumers of the embedded queue: each reads
 * every message, and the records are never changed by one. A message stays here until every
 * consumer has taken it, or is decoded again by a consumer that lags more than DECODED_MESSAGES
 * messages behind.
 */
export class SharedDecodes {
  readonly #held = new Map<number, { readonly records: readonly AcceptedRecord[]; takers: number }>();

  /** `consumers`: how many consumers read every message (the queue's registered states). */
  constructor(private readonly consumers: () => number) {}

  /** The records of message `seq`; throws what decodeMessage throws for a message that is not one. */
  take(seq: number, payload: Buffer): readonly AcceptedRecord[] {
    const hit = this.#held.get(seq);
    if (hit !== undefined) {
      hit.takers += 1;
      if (hit.takers >= this.consumers()) this.#held.delete(seq);
      return hit.records;
    }
    const records = decodeMessage(payload);
    if (this.consumers() > 1) {
      // The oldest goes first: a consumer that far behind (or one that is not running) decodes for itself.
      if (this.#held.size >= DECODED_MESSAGES) this.#held.delete(this.#held.keys().next().value as number);
      this.#held.set(seq, { records, takers: 1 });
    }
    return records;
  }
}
