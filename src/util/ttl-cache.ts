export interface TtlCacheOptions {
  readonly now?: () => number;
  /**
   * A hit with less than this left to live is answered and loaded again behind it, so a key in
   * steady use is never waited for. No value is answered past its own time to live. Default 0
   * (a key is loaded only once its value has expired).
   */
  readonly refreshWithinMs?: number;
}

/**
 * A bounded cache of asynchronously loaded values with a time to live, where concurrent misses of
 * one key share a single load (so a burst of verifications of one batch reads the chain once).
 * Failed loads are not cached.
 */
export class TtlCache<K, V> {
  readonly #entries = new Map<K, { value: V; expiresAtMs: number }>();
  readonly #loading = new Map<K, Promise<V>>();
  readonly #now: () => number;
  readonly #refreshWithinMs: number;

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    options: TtlCacheOptions = {},
  ) {
    this.#now = options.now ?? Date.now;
    this.#refreshWithinMs = options.refreshWithinMs ?? 0;
  }

  /** `ttlMs` may depend on the value loaded; 0 or less leaves it uncached. */
  async get(key: K, load: () => Promise<V>, ttlMs: number | ((value: V) => number) = this.ttlMs): Promise<V> {
    const hit = this.#entries.get(key);
    const now = this.#now();
    if (hit !== undefined && hit.expiresAtMs > now) {
      if (hit.expiresAtMs - now <= this.#refreshWithinMs && !this.#loading.has(key)) {
        // A failed refresh is not this caller's concern: the hit stays until it expires, and the
        // load after that reports the failure to whoever waits for it.
        void this.#load(key, load, ttlMs).catch(() => undefined);
      }
      return hit.value;
    }
    return this.#loading.get(key) ?? this.#load(key, load, ttlMs);
  }

  delete(key: K): void {
    this.#entries.delete(key);
  }

  /**
   * Keeps a value read elsewhere (in bulk, say) as if loaded now, unless the key holds an unexpired
   * value or is being loaded: those are at least as recent.
   */
  set(key: K, value: V, ttlMs: number = this.ttlMs): void {
    const hit = this.#entries.get(key);
    if (ttlMs <= 0 || this.#loading.has(key) || (hit !== undefined && hit.expiresAtMs > this.#now())) return;
    this.#keep(key, value, ttlMs);
  }

  #keep(key: K, value: V, ttl: number): void {
    this.#entries.delete(key);
    // Map order is insertion order: the first key is the oldest.
    if (this.#entries.size >= this.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
    this.#entries.set(key, { value, expiresAtMs: this.#now() + ttl });
  }

  #load(key: K, load: () => Promise<V>, ttlMs: number | ((value: V) => number)): Promise<V> {
    const p = (async () => {
      try {
        const value = await load();
        const ttl = typeof ttlMs === 'function' ? ttlMs(value) : ttlMs;
        // A value loaded again replaces the one it refreshes, also when it is not to be kept.
        this.#entries.delete(key);
        if (ttl > 0) this.#keep(key, value, ttl);
        return value;
      } finally {
        this.#loading.delete(key);
      }
    })();
    this.#loading.set(key, p);
    return p;
  }
}
