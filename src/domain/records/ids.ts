import { randomPool, reserveRandom } from '../../util/random.js';

/**
 * Identifiers that sort by creation time (ULID layout: 48-bit milliseconds, 80 random bits,
 * Crockford base32), so index order and id order agree and ids carry no tenant data.
 */

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/** Character codes of CROCKFORD. */
const CODES = Array.from(CROCKFORD, (c) => c.charCodeAt(0));
/** The 16 five-bit groups of an id's random part (reused: ids are made one at a time). */
const groups = new Array<number>(16).fill(0);
let lastMs = Number.NaN;
let lastTime = '';

/** The ten characters of the time part, most significant first. */
function timePart(nowMs: number): string {
  let out = '';
  let t = nowMs;
  for (let i = 0; i < 10; i++) {
    out = (CROCKFORD[t % 32] ?? '0') + out;
    t = Math.floor(t / 32);
  }
  return out;
}

// Runs once per record on ingest: the time part is reused within a millisecond, and the random
// part becomes one string from its sixteen codes rather than from sixteen concatenations.
export function newIngestId(nowMs: number): string {
  if (nowMs !== lastMs) {
    lastTime = timePart(nowMs);
    lastMs = nowMs;
  }
  const rnd = randomPool();
  const at = reserveRandom(10);
  let bits = 0;
  let value = 0;
  let k = 0;
  for (let i = at; i < at + 10; i++) {
    value = ((value << 8) | (rnd[i] as number)) & 0xffff;
    bits += 8;
    while (bits >= 5) {
      groups[k++] = CODES[(value >>> (bits - 5)) & 31] as number;
      bits -= 5;
    }
  }
  const g = groups as number[] & { length: 16 };
  return lastTime + String.fromCharCode(g[0]!, g[1]!, g[2]!, g[3]!, g[4]!, g[5]!, g[6]!, g[7]!, g[8]!, g[9]!, g[10]!, g[11]!, g[12]!, g[13]!, g[14]!, g[15]!);
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
