import { DrisError } from '../../errors/dris-error.js';

/**
 * Read coalescing, the twin of GroupCommit: point look-ups of concurrent callers are answered by
 * one query. One query runs at a time per batcher (plus `parallel - 1` more under load); look-ups
 * arriving meanwhile wait and go out together in the next, so the query's own latency is the
 * batching window. An idle batcher sends a look-up at once, unless its last query ended a moment
 * ago (`gatherMs`): then look-ups come in waves (the callers of that query sending their next),
 * and the first of a wave sent alone would cost a whole query (about 2 ms of the embedded
 * engine's fixed cost) while the rest of the wave waited behind it.
 */
export interface LookupBatcherOptions {
  /** Most look-ups answered by one query. */
  readonly maxBatch: number;
  /** Look-ups waiting beyond which lookup() fails with 'overloaded'. */
  readonly maxPending: number;
  /** Queries in flight at once. */
  readonly parallel: number;
  /**
   * How long a look-up finding the batcher idle waits for others, milliseconds, when the last
   * query ended less than `recentMs` ago; 0 (default) sends it at once.
   */
  readonly gatherMs?: number;
  /** An idle batcher whose last query ended longer ago than this, milliseconds, is not under load: no wait. Default 20. */
  readonly recentMs?: number;
}

const DEFAULT_RECENT_MS = 20;

interface Pending<K, V> {
  readonly key: K;
  readonly resolve: (v: V) => void;
  readonly reject: (err: unknown) => void;
}

export class LookupBatcher<K, V> {
  readonly #options: LookupBatcherOptions;
  readonly #run: (keys: K[]) => Promise<V[]>;
  #waiting: Pending<K, V>[] = [];
  #inFlight = 0;
  #queries = 0;
  #lastEndMs = Number.NEGATIVE_INFINITY;
  #gathering: NodeJS.Timeout | null = null;

  /** `run` answers keys in order: one value per key. */
  constructor(options: LookupBatcherOptions, run: (keys: K[]) => Promise<V[]>) {
    if (!(options.maxBatch >= 1 && options.maxPending >= options.maxBatch && options.parallel >= 1)) {
      throw new TypeError('LookupBatcher needs maxBatch >= 1, maxPending >= maxBatch, parallel >= 1');
    }
    this.#options = options;
    this.#run = run;
  }

  get queries(): number {
    return this.#queries;
  }

  lookup(key: K): Promise<V> {
    if (this.#waiting.length >= this.#options.maxPending) {
      return Promise.reject(new DrisError('overloaded', 'too many look-ups waiting'));
    }
    return new Promise<V>((resolve, reject) => {
      this.#waiting.push({ key, resolve, reject });
      this.#arrived();
    });
  }

  #arrived(): void {
    const gatherMs = this.#options.gatherMs ?? 0;
    if (this.#gathering !== null && this.#waiting.length < this.#options.maxBatch) return;
    if (gatherMs > 0 && this.#inFlight < this.#options.parallel && this.#waiting.length < this.#options.maxBatch && this.#endedRecently()) {
      this.#gathering = setTimeout(() => {
        this.#gathering = null;
        this.#pump();
      }, gatherMs);
      return;
    }
    this.#pump();
  }

  #endedRecently(): boolean {
    return performance.now() - this.#lastEndMs < (this.#options.recentMs ?? DEFAULT_RECENT_MS);
  }

  #pump(): void {
    if (this.#gathering !== null) {
      clearTimeout(this.#gathering);
      this.#gathering = null;
    }
    while (this.#inFlight < this.#options.parallel && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#options.maxBatch);
      this.#inFlight += 1;
      this.#queries += 1;
      void this.#execute(batch);
    }
  }

  async #execute(batch: Pending<K, V>[]): Promise<void> {
    let values: V[] | undefined;
    let failure: unknown;
    try {
      values = await this.#run(batch.map((p) => p.key));
      if (values.length !== batch.length) throw new DrisError('internal_error', 'look-up answered a different number of keys');
    } catch (err) {
      values = undefined;
      failure = err;
    }
    // The next query is sent before this one's callers go on: each runs up to its next await
    // once answered, and a query sent after them would leave the engine idle meanwhile.
    this.#inFlight -= 1;
    this.#lastEndMs = performance.now();
    this.#pump();
    if (values === undefined) for (const p of batch) p.reject(failure);
    else for (let i = 0; i < batch.length; i++) (batch[i] as Pending<K, V>).resolve(values[i] as V);
  }
}
