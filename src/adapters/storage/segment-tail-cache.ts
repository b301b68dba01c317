/**
 * Payloads of a segment log's latest durable appends, kept in memory so that consumers that keep
 * up never read the disk: the seqs from `first` up, at most `maxBytes`, with gaps where a payload
 * was too large to keep. Evicted from `first` by key, never by iterating: a Map's iteration walks
 * the holes its deletions leave.
 */
export class SegmentTailCache {
  readonly #entries = new Map<number, Buffer>();
  readonly #maxBytes: number;
  #bytes = 0;
  #first = 1;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  get(seq: number): Buffer | undefined {
    return this.#entries.get(seq);
  }

  has(seq: number): boolean {
    return this.#entries.has(seq);
  }

  /** The seq the next append takes, when the log opens: nothing below it is cached. */
  startAt(seq: number): void {
    this.#first = seq;
  }

  remember(seqs: readonly number[], payloads: readonly Buffer[]): void {
    for (let i = 0; i < seqs.length; i++) {
      const payload = payloads[i]!;
      if (payload.length > this.#maxBytes / 4) continue;
      this.#entries.set(seqs[i]!, payload);
      this.#bytes += payload.length;
    }
    const last = seqs.at(-1) ?? 0;
    while (this.#bytes > this.#maxBytes && this.#first <= last) this.#forget(this.#first++);
  }

  /** Lets go of every seq up to `last` (a segment removed). */
  dropThrough(last: number): void {
    if (this.#first > last) return;
    for (let q = this.#first; q <= last; q++) this.#forget(q);
    this.#first = last + 1;
  }

  #forget(seq: number): void {
    const cached = this.#entries.get(seq);
    if (cached === undefined) return;
    this.#entries.delete(seq);
    this.#bytes -= cached.length;
  }
}
