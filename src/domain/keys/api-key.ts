import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key format: `dris_<keyId>_<secret><check>`. keyId (16) names the stored record, secret (52)
 * is 32 random bytes, check (7) is a CRC-32 of everything before it, so a mistyped or truncated
 * key is refused without a store lookup. All parts use the RFC 4648 base32 alphabet, lower case.
 */

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const KEY_RE = /^dris_([a-z2-7]{16})_([a-z2-7]{52})([a-z2-7]{7})$/;

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (let i = 0; i < text.length; i++) crc = (CRC_TABLE[(crc ^ text.charCodeAt(i)) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function base32(bytes: Uint8Array): string {
  let out = '';
  let bits = 0;
  let value = 0;
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += ALPHABET[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += ALPHABET[(value << (5 - bits)) & 31];
  return out;
}

function checkOf(prefix: string): string {
  const crc = crc32(prefix);
  let out = '';
  for (let i = 6; i >= 0; i--) out += ALPHABET[Math.floor(crc / 32 ** i) % 32];
  return out;
}

export interface ParsedKey {
  readonly keyId: string;
  readonly secret: string;
}

export interface GeneratedKey extends ParsedKey {
  /** The whole key as the caller sends it; shown once, never stored. */
  readonly apiKey: string;
  readonly secretHash: string;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export function generateKey(): GeneratedKey {
  const keyId = base32(randomBytes(10));
  const secret = base32(randomBytes(32)).slice(0, 52);
  const prefix = `dris_${keyId}_${secret}`;
  return { keyId, secret, apiKey: prefix + checkOf(prefix), secretHash: hashSecret(secret) };
}

/** Splits a presented key; null when it is not of the format or its check does not match. */
export function parseKey(apiKey: string): ParsedKey | null {
  const m = KEY_RE.exec(apiKey);
  if (m === null) return null;
  const [, keyId, secret, check] = m;
  if (keyId === undefined || secret === undefined || check === undefined) return null;
  if (checkOf(`dris_${keyId}_${secret}`) !== check) return null;
  return { keyId, secret };
}

/** Constant-time comparison of a presented secret with the stored hash. */
export function secretMatches(secret: string, storedHashHex: string): boolean {
  const presented = Buffer.from(hashSecret(secret), 'hex');
  const stored = Buffer.from(storedHashHex, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
