import { DrisError } from '../../errors/dris-error.js';

/**
 * Group commit: rows submitted by concurrent callers are written together, because ClickHouse
 * wants few large inserts (each insert makes a part; each chDB call costs milliseconds whatever
 * its size). One write is in flight at a time; rows arriving meanwhile wait for it and go out
 * together in the next one, so the write's own latency is the batching window under load. An
 * idle committer waits at most maxDelayMs for companions.
 *
 * A caller's rows are never split across writes: its promise settles with the one write that
 * held them.
 */
export interface GroupCommitOptions {
  /** A write starts at once when this many rows are waiting; a write holds at most this many,
   *  unless a single submission is larger, which is then written alone. */
  readonly maxBatchRows: number;
  /** Longest an idle committer waits for more rows before writing. */
  readonly maxDelayMs: number;
  /** Rows waiting (not yet in a write) beyond which submit() fails with 'overloaded'. A
   *  submission larger than this is still taken when nothing else is waiting. */
  readonly maxPendingRows: number;
}

export interface GroupCommitStats {
  /** Writes attempted. */
  readonly writes: number;
  /** Rows handed to writes. */
  readonly rows: number;
  readonly failedWrites: number;
}

interface Waiter<T> {
  readonly rows: readonly T[];
  readonly resolve: () => void;
  readonly reject: (err: unknown) => void;
}

export class GroupCommit<T> {
  readonly #name: string;
  readonly #options: GroupCommitOptions;
  readonly #write: (rows: T[]) => Promise<void>;
  #waiting: Waiter<T>[] = [];
  #waitingRows = 0;
  #timer: NodeJS.Timeout | null = null;
  #loop: Promise<void> | null = null;
  #closed = false;
  #writes = 0;
  #rows = 0;
  #failedWrites = 0;

  constructor(name: string, options: GroupCommitOptions, write: (rows: T[]) => Promise<void>) {
    if (!(options.maxBatchRows >= 1 && options.maxDelayMs >= 0 && options.maxPendingRows >= options.maxBatchRows)) {
      throw new TypeError(`${name}: need maxBatchRows >= 1, maxDelayMs >= 0, maxPendingRows >= maxBatchRows`);
    }
    this.#name = name;
    this.#options = options;
    this.#write = write;
  }

  get stats(): GroupCommitStats {
    return { writes: this.#writes, rows: this.#rows, failedWrites: this.#failedWrites };
  }

  /** Rows waiting for a write (not counting the write in flight). */
  get waitingRows(): number {
    return this.#waitingRows;
  }

  submit(rows: readonly T[]): Promise<void> {
    if (this.#closed) {
      return Promise.reject(new DrisError('dependency_unavailable', `${this.#name} is closed`));
    }
    if (rows.length === 0) return Promise.resolve();
    if (this.#waitingRows > 0 && this.#waitingRows + rows.length > this.#options.maxPendingRows) {
      return Promise.reject(
        new DrisError('overloaded', `${this.#name}: too many rows waiting to be written`, {
          extra: { retryAfter: 1 },
        }),
      );
    }
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ rows, resolve, reject });
      this.#waitingRows += rows.length;
      this.#schedule();
    });
  }

  /** Writes what is waiting, then refuses further submissions. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#loop !== null || this.#waiting.length > 0) {
      this.#start();
      await this.#loop;
    }
  }

  #schedule(): void {
    if (this.#loop !== null) return; // the running loop takes these rows when its write ends
    if (this.#waitingRows >= this.#options.maxBatchRows) {
      this.#start();
    } else if (this.#timer === null) {
      this.#timer = setTimeout(() => {
        this.#timer = null;
        this.#start();
      }, this.#options.maxDelayMs);
    }
  }

  #start(): void {
    if (this.#timer !== null) {
      clearTimeout(this.#timer);
      this.#timer = null;
    }
    if (this.#loop !== null || this.#waiting.length === 0) return;
    this.#loop = this.#drain().finally(() => {
      this.#loop = null;
      // Callers resumed by the last write may have submitted before this ran.
      if (this.#waiting.length > 0) this.#schedule();
    });
  }

  /** Never rejects: every failure is delivered to the callers whose rows it concerned. */
  async #drain(): Promise<void> {
    while (this.#waiting.length > 0) {
      const batch = this.#takeBatch();
      const rows: T[] = [];
      for (const w of batch) for (const r of w.rows) rows.push(r);
      this.#writes += 1;
      this.#rows += rows.length;
      try {
        await this.#write(rows);
        for (const w of batch) w.resolve();
      } catch (err) {
        this.#failedWrites += 1;
        for (const w of batch) w.reject(err);
      }
    }
  }

  #takeBatch(): Waiter<T>[] {
    let count = 0;
    let n = 0;
    for (const w of this.#waiting) {
      if (n > 0 && count + w.rows.length > this.#options.maxBatchRows) break;
      count += w.rows.length;
      n += 1;
    }
    const batch = this.#waiting.splice(0, n);
    this.#waitingRows -= count;
    return batch;
  }
}
