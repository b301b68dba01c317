import { randomBytes, randomFillSync } from 'node:crypto';

/**
 * Cryptographically random bytes drawn from a pool refilled 8 KiB at a time: one call into the
 * CSPRNG per few hundred salts instead of one per record, which showed in ingestion profiles.
 */

const POOL_BYTES = 8192;
const pool = Buffer.allocUnsafeSlow(POOL_BYTES);
let at = POOL_BYTES;

/**
 * Where `n` fresh random bytes start in `randomPool()`; valid until the next call of this module
 * (the allocation-free form of withRandomBytes, for per-record paths).
 */
export function reserveRandom(n: number): number {
  if (n > POOL_BYTES) throw new RangeError(`at most ${POOL_BYTES} random bytes at once`);
  return reserve(n);
}

/** The pool `reserveRandom` offsets point into. */
export function randomPool(): Uint8Array {
  return pool;
}

function reserve(n: number): number {
  if (at + n > POOL_BYTES) {
    randomFillSync(pool);
    at = 0;
  }
  const start = at;
  at += n;
  return start;
}

/** `n` random bytes as lowercase hex. */
export function randomHex(n: number): string {
  if (n > POOL_BYTES) return randomBytes(n).toString('hex');
  const start = reserve(n);
  return pool.toString('hex', start, start + n);
}

/** Calls `use` with `n` random bytes; the view is only valid during the call. */
export function withRandomBytes<T>(n: number, use: (bytes: Uint8Array) => T): T {
  if (n > POOL_BYTES) return use(randomBytes(n));
  const start = reserve(n);
  return use(pool.subarray(start, start + n));
}
