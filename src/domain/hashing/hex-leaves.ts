import { HASH_LEN } from './merkle.js';

/**
 * Manifest leaves (64 lowercase hex digits each, as manifests write them) as 32 bytes each, back
 * to back. One pass checks and decodes: a manifest's thousand leaves were checked by a regular
 * expression and then decoded by Buffer, twice over (for its root, then for the packed cache),
 * which at ten million records was a tenth of verification's main thread (bench verify, profiled).
 */

/** Each hex digit's value by character code; 0xff for any other character, upper case included. */
const DIGIT = ((): Uint8Array => {
  const t = new Uint8Array(256).fill(0xff);
  for (let i = 0; i < 10; i++) t[0x30 + i] = i;
  for (let i = 0; i < 6; i++) t[0x61 + i] = 10 + i;
  return t;
})();

/** The leaves packed; null when any is not 64 lowercase hex digits (a tampered manifest). */
export function packHexLeaves(leaves: readonly string[]): Buffer | null {
  const out = Buffer.allocUnsafeSlow(leaves.length * HASH_LEN);
  let o = 0;
  for (const s of leaves) {
    if (s.length !== 2 * HASH_LEN) return null;
    for (let j = 0; j < 2 * HASH_LEN; j += 2, o++) {
      const c1 = s.charCodeAt(j);
      const c2 = s.charCodeAt(j + 1);
      if ((c1 | c2) > 0xff) return null;
      const hi = DIGIT[c1] as number;
      const lo = DIGIT[c2] as number;
      if ((hi | lo) > 0x0f) return null;
      out[o] = (hi << 4) | lo;
    }
  }
  return out;
}
