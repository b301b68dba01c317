import { withRandomBytes } from '../../util/random.js';

/**
 * Identifiers that sort by creation time (ULID layout: 48-bit milliseconds, 80 random bits,
 * Crockford base32), so index order and id order agree and ids carry no tenant data.
 */

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

export function newIngestId(nowMs: number): string {
  let out = '';
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    out = (CROCKFORD[t % 32] ?? '0') + out;
    t = Math.floor(t / 32);
  }
  return withRandomBytes(10, (rnd) => {
    let bits = 0;
    let value = 0;
    for (const b of rnd) {
      value = ((value << 8) | b) & 0xffff;
      bits += 8;
      while (bits >= 5) {
        out += CROCKFORD[(value >>> (bits - 5)) & 31] ?? '0';
        bits -= 5;
      }
    }
    return out;
  });
}

/** The acceptance time an ingest id carries (its first ten characters); NaN when it carries none. */
export function ingestIdTimeMs(id: string): number {
  if (id.length < 10) return Number.NaN;
  let t = 0;
  for (let i = 0; i < 10; i++) {
    const v = CROCKFORD.indexOf(id.charAt(i));
    if (v < 0) return Number.NaN;
    t = t * 32 + v;
  }
  return t;
}
