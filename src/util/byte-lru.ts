/**
 * A map bounded by the bytes of its values rather than their count, so values of very different
 * sizes share one budget. A hit makes its key the newest; the least recently used go first. A
 * value larger than the whole budget is never kept.
 */
export class ByteLru<K, V> {
  readonly #maxBytes: number;
  readonly #sizeOf: (value: V) => number;
  /** Map order is use order. */
  readonly #entries = new Map<K, V>();
  #bytes = 0;

  constructor(maxBytes: number, sizeOf: (value: V) => number) {
    this.#maxBytes = maxBytes;
    this.#sizeOf = sizeOf;
  }

  /** Bytes held now, as sizeOf counts them. */
  get bytes(): number {
    return this.#bytes;
  }

  get size(): number {
    return this.#entries.size;
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value === undefined) return undefined;
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Keeps a value under a key not held yet; a key already held keeps its value. */
  add(key: K, value: V): void {
    const size = this.#sizeOf(value);
    if (this.#entries.has(key) || size > this.#maxBytes) return;
    while (this.#bytes + size > this.#maxBytes) {
      const oldest = this.#entries.entries().next();
      if (oldest.done === true) break;
      this.#entries.delete(oldest.value[0]);
      this.#bytes -= this.#sizeOf(oldest.value[1]);
    }
    this.#entries.set(key, value);
    this.#bytes += size;
  }
}
