import { DrisError } from '../../errors/dris-error.js';

/**
 * Subject tokens may not contain `.`, `*`, `>` or whitespace, and tenant ids may contain dots. Every
 * byte outside [A-Za-z0-9_-] becomes `~` plus two upper-case hex digits of its UTF-8 byte (so
 * `acme.eu` is `acme~2Eeu`); `~` itself is escaped the same way, which keeps the mapping
 * reversible, and the empty string is a lone `~`, which no encoding of a non-empty string yields.
 */
export function encodeSubjectToken(value: string): string {
  if (value.length === 0) return '~';
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const plain =
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f || byte === 0x2d;
    out += plain ? String.fromCharCode(byte) : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeSubjectToken(token: string): string {
  if (token === '~') return '';
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    const ch = token.charCodeAt(i);
    if (ch === 0x7e) {
      const hex = token.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) throw new DrisError('internal_error', 'malformed subject token');
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(ch);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

export function recordSubject(prefix: string, tenantId: string, clientId: string): string {
  return `${prefix}.${encodeSubjectToken(tenantId)}.${encodeSubjectToken(clientId)}`;
}
