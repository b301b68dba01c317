import { DrisError } from '../../errors/dris-error.js';

/**
 * Read coalescing, the twin of GroupCommit: point look-ups of concurrent callers are answered by
 * one query. One query runs at a time per batcher (plus `parallel - 1` more under load); look-ups
 * arriving meanwhile wait and go out together in the next, so the query's own latency is the
 * batching window and an idle batcher adds no delay at all.
 */
export interface LookupBatcherOptions {
  /** Most look-ups answered by one query. */
  readonly maxBatch: number;
  /** Look-ups waiting beyond which lookup() fails with 'overloaded'. */
  readonly maxPending: number;
  /** Queries in flight at once. */
  readonly parallel: number;
}

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
      this.#pump();
    });
  }

  #pump(): void {
    while (this.#inFlight < this.#options.parallel && this.#waiting.length > 0) {
      const batch = this.#waiting.splice(0, this.#options.maxBatch);
      this.#inFlight += 1;
      this.#queries += 1;
      void this.#execute(batch);
    }
  }

  async #execute(batch: Pending<K, V>[]): Promise<void> {
    try {
      const values = await this.#run(batch.map((p) => p.key));
      if (values.length !== batch.length) throw new DrisError('internal_error', 'look-up answered a different number of keys');
      for (let i = 0; i < batch.length; i++) (batch[i] as Pending<K, V>).resolve(values[i] as V);
    } catch (err) {
      for (const p of batch) p.reject(err);
    } finally {
      this.#inFlight -= 1;
      this.#pump();
    }
  }
}
