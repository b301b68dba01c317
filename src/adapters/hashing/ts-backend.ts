import type { RecordEnvelope } from '../../domain/records/types.js';
import { canonicalize } from '../../domain/hashing/canonical.js';
import { MerkleHasher, type DigestPrimitive, type FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, HashingBackend, PreparedBody } from '../../domain/hashing/port.js';
import { prepareBody } from '../../domain/hashing/prepare-body.js';
import { recordHash, type Sha256Hex } from '../../domain/hashing/record-hash.js';

/**
 * The TypeScript implementation of the hashing contract over a given SHA-256: the js and wasm
 * backends differ only in the primitive they hand it.
 */
export class TsHashingBackend implements HashingBackend {
  private readonly merkle: MerkleHasher;

  protected constructor(
    readonly name: HashBackendName,
    private readonly hex: Sha256Hex,
    digest: DigestPrimitive,
  ) {
    this.merkle = new MerkleHasher(digest);
  }

  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody {
    return prepareBody(body, shape, this.hex);
  }

  recordHashes(envelopes: readonly RecordEnvelope[]): string[] {
    return envelopes.map((e) => recordHash(e, this.hex));
  }

  canonicalize(value: unknown): string {
    return canonicalize(value);
  }

  sha256Hex(data: Uint8Array): string {
    return this.hex(data);
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
