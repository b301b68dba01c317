import { createHash, hash } from 'node:crypto';
import type { DigestPrimitive } from '../../domain/hashing/merkle.js';
import { TsHashingBackend } from './ts-backend.js';

/** crypto.hash() (Node >= 20.12) is one call into OpenSSL; createHash is the fallback. */
const oneShot: ((alg: string, data: string | Uint8Array, enc: 'hex' | 'buffer') => string | Buffer) | undefined =
  typeof hash === 'function' ? (hash as never) : undefined;

export function nodeSha256Hex(data: string | Uint8Array): string {
  if (oneShot !== undefined) return oneShot('sha256', data, 'hex') as string;
  return createHash('sha256').update(data).digest('hex');
}

class NodeDigest implements DigestPrimitive {
  digestInto(data: Uint8Array, out: Uint8Array, outOffset: number): void {
    const d = oneShot !== undefined ? (oneShot('sha256', data, 'buffer') as Buffer) : createHash('sha256').update(data).digest();
    out.set(d, outOffset);
  }
}

/** RFC 8785 in TypeScript plus node:crypto (OpenSSL, SHA-NI where the CPU has it). */
export class JsHashingBackend extends TsHashingBackend {
  constructor() {
    super('js', nodeSha256Hex, new NodeDigest());
  }
}
