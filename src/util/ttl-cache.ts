/**
 * A bounded cache of asynchronously loaded values with a time to live, where concurrent misses of
 * one key share a single load (so a burst of verifications of one batch reads the chain once).
 * Failed loads are not cached.
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, { value: V; expiresAtMs: number }>();
  readonly #loading = new Map<K, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** `ttlMs` may depend on the value loaded; 0 or less leaves it uncached. */
  async get(key: K, load: () => Promise<V>, ttlMs: number | ((value: V) => number) = this.ttlMs): Promise<V> {
    const hit = this.#entries.get(key);
    if (hit !== undefined && hit.expiresAtMs > this.now()) return hit.value;
    const inflight = this.#loading.get(key);
    if (inflight !== undefined) return inflight;
    const p = (async () => {
      try {
        const value = await load();
        const ttl = typeof ttlMs === 'function' ? ttlMs(value) : ttlMs;
        if (ttl > 0) {
          // Map order is insertion order: the first key is the oldest.
          if (this.#entries.size >= this.maxEntries) {
            const oldest = this.#entries.keys().next();
            if (oldest.done !== true) this.#entries.delete(oldest.value);
          }
          this.#entries.delete(key);
          this.#entries.set(key, { value, expiresAtMs: this.now() + ttl });
        }
        return value;
      } finally {
        this.#loading.delete(key);
      }
    })();
    this.#loading.set(key, p);
    return p;
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }
}
