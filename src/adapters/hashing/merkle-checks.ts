import { packHexLeaves } from '../../domain/hashing/hex-leaves.js';
import { splitLeaves, type MerkleHasher } from '../../domain/hashing/merkle.js';
import type { HexLeavesRoot } from '../../domain/hashing/port.js';

/** A hash as text: 64 lowercase hex digits. */
const HASH_HEX = /^[0-9a-f]{64}$/;

/**
 * The proof checks every hashing backend answers the same way, over its own SHA-256: leaf hashes,
 * inclusion and consistency proofs (RFC 9162), computed by the domain's MerkleHasher.
 */
export abstract class MerkleChecks {
  protected constructor(protected readonly merkle: MerkleHasher) {}

  /** On this thread: the backends without a thread pool of their own. */
  rootOfHexLeaves(leaves: readonly string[]): Promise<HexLeavesRoot | null> {
    const packed = packHexLeaves(leaves);
    return Promise.resolve(packed === null ? null : { root: this.merkle.root(splitLeaves(packed)), packed });
  }

  leafHash(leaf: Uint8Array): Uint8Array {
    return this.merkle.leafHash(leaf);
  }

  verifyInclusion(leafHash: Uint8Array, index: number, treeSize: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
    return this.merkle.verifyInclusion(leafHash, index, treeSize, proof, root);
  }

  recordInclusionHolds(recordHash: string, index: number, treeSize: number, proof: readonly string[], root: string): boolean {
    if (!HASH_HEX.test(recordHash) || !HASH_HEX.test(root) || !proof.every((p) => HASH_HEX.test(p))) return false;
    const leaf = this.merkle.leafHash(Buffer.from(recordHash, 'hex'));
    return this.merkle.verifyInclusion(leaf, index, treeSize, proof.map((p) => Buffer.from(p, 'hex')), Buffer.from(root, 'hex'));
  }

  consistencyProof(leaves: readonly Uint8Array[], oldSize: number): Uint8Array[] {
    return this.merkle.consistencyProof(leaves, oldSize);
  }

  verifyConsistency(oldSize: number, newSize: number, proof: readonly Uint8Array[], oldRoot: Uint8Array, newRoot: Uint8Array): boolean {
    return this.merkle.verifyConsistency(oldSize, newSize, proof, oldRoot, newRoot);
  }
}
