import { createHash, hash } from 'node:crypto';
import type { RecordEnvelope } from '../../domain/records/types.js';
import { canonicalize } from '../../domain/hashing/canonical.js';
import { MerkleHasher, type DigestPrimitive, type FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, HashingBackend, PreparedBody } from '../../domain/hashing/port.js';
import { prepareBody } from '../../domain/hashing/prepare-body.js';
import { recordHash } from '../../domain/hashing/record-hash.js';

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
export class JsHashingBackend implements HashingBackend {
  readonly name: HashBackendName = 'js';
  private readonly merkle = new MerkleHasher(new NodeDigest());

  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody {
    return prepareBody(body, shape, nodeSha256Hex);
  }

  recordHashes(envelopes: readonly RecordEnvelope[]): string[] {
    return envelopes.map((e) => recordHash(e, nodeSha256Hex));
  }

  canonicalize(value: unknown): string {
    return canonicalize(value);
  }

  sha256Hex(data: Uint8Array): string {
    return nodeSha256Hex(data);
  }

  merkleRoot(leaves: readonly Uint8Array[]): Uint8Array {
    return this.merkle.root(leaves);
  }

  inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
    return this.merkle.inclusionProof(leaves, index);
  }

  allProofs(leaves: readonly Uint8Array[]): FlatProofs {
    return this.merkle.tree(leaves).allProofs();
  }

  leafHash(leaf: Uint8Array): Uint8Array {
    return this.merkle.leafHash(leaf);
  }

  verifyInclusion(leafHash: Uint8Array, index: number, treeSize: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
    return this.merkle.verifyInclusion(leafHash, index, treeSize, proof, root);
  }

  consistencyProof(leaves: readonly Uint8Array[], oldSize: number): Uint8Array[] {
    return this.merkle.consistencyProof(leaves, oldSize);
  }

  verifyConsistency(oldSize: number, newSize: number, proof: readonly Uint8Array[], oldRoot: Uint8Array, newRoot: Uint8Array): boolean {
    return this.merkle.verifyConsistency(oldSize, newSize, proof, oldRoot, newRoot);
  }
}
