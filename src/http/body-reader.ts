/**
 * Reading request bodies within bounds: the route's limit, a byte budget shared by all requests
 * (so many clients together cannot buffer more than it), and a deadline (so a slow sender holds
 * nothing for long). An aborted or timed-out read gives its buffers and its budget back at once.
 */

export type BodyFailure = 'too_large' | 'over_budget' | 'aborted' | 'timeout';
export type BodyOutcome = Buffer | BodyFailure;

/** The part of uWS's HttpResponse a reader uses. */
export interface BodySource {
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): unknown;
}

/** Bytes of request bodies held at once, all requests together. */
export class ByteBudget {
  private used = 0;

  constructor(readonly limit: number) {}

  get inUse(): number {
    return this.used;
  }

  tryTake(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }
}

/**
 * The deadlines of the reads under way, checked by one timer rather than one timer per request
 * (a Set insertion is cheaper than arming and clearing a timeout on every request).
 */
export class BodyDeadlines {
  private readonly pending = new Set<BodyReader>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly timeoutMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get size(): number {
    return this.pending.size;
  }

  /** The deadline of a read starting now. */
  deadline(): number {
    return this.now() + this.timeoutMs;
  }

  add(r: BodyReader): void {
    this.pending.add(r);
    if (this.timer === null) {
      this.timer = setInterval(() => this.sweep(), Math.min(1000, Math.max(25, this.timeoutMs / 4)));
      this.timer.unref();
    }
  }

  delete(r: BodyReader): void {
    this.pending.delete(r);
  }

  /** Expires every read past its deadline. */
  sweep(): void {
    const now = this.now();
    for (const r of this.pending) if (now >= r.deadlineAt) r.expire();
  }

  close(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }
}

export class BodyReader {
  readonly deadlineAt: number;
  readonly result: Promise<BodyOutcome>;
  private resolve!: (v: BodyOutcome) => void;
  private chunks: Buffer[] = [];
  private size = 0;
  /**
   * Budget taken: what arrived so far. Taken as bytes arrive rather than for the declared length
   * up front, so that a client declaring large bodies and sending slowly holds nothing it did not
   * send.
   */
  private reserved = 0;
  private settled = false;
  private last = false;

  constructor(
    src: BodySource,
    private readonly maxBytes: number,
    private readonly budget: ByteBudget,
    private readonly deadlines: BodyDeadlines,
  ) {
    this.result = new Promise((resolve) => {
      this.resolve = resolve;
    });
    this.deadlineAt = deadlines.deadline();
    // uWS needs the data handler before its request handler returns, whatever happens next.
    src.onData((chunk, isLast) => this.onChunk(chunk, isLast));
    deadlines.add(this);
  }

  /** The last chunk arrived: nothing of the body is left on the connection. */
  get complete(): boolean {
    return this.last;
  }

  abort(): void {
    this.fail('aborted');
  }

  expire(): void {
    this.fail('timeout');
  }

  /** The request is over: the body's memory and budget go back. */
  release(): void {
    this.deadlines.delete(this);
    this.chunks = [];
    this.budget.give(this.reserved);
    this.reserved = 0;
  }

  private onChunk(chunk: ArrayBuffer, isLast: boolean): void {
    if (isLast) this.last = true;
    if (this.settled) return;
    const n = chunk.byteLength;
    if (n > 0) {
      const size = this.size + n;
      if (size > this.maxBytes) {
        this.fail('too_large');
        return;
      }
      if (!this.budget.tryTake(n)) {
        this.fail('over_budget');
        return;
      }
      this.reserved = size;
      // The chunk's memory belongs to uWS and is reused after this callback: copy it, into
      // Node's buffer pool for small bodies rather than a fresh allocation each.
      const copy = Buffer.allocUnsafe(n);
      copy.set(new Uint8Array(chunk));
      this.chunks.push(copy);
      this.size = size;
    }
    if (isLast) this.settle(this.chunks.length === 1 ? (this.chunks[0] as Buffer) : Buffer.concat(this.chunks, this.size));
  }

  private fail(kind: BodyFailure): void {
    if (this.settled) return;
    this.release();
    this.settle(kind);
  }

  private settle(v: BodyOutcome): void {
    if (this.settled) return;
    this.settled = true;
    this.deadlines.delete(this);
    this.chunks = [];
    this.resolve(v);
  }
}
