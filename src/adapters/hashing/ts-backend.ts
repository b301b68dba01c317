import type { RecordEnvelope } from '../../domain/records/types.js';
import { canonicalize } from '../../domain/hashing/canonical.js';
import { MerkleHasher, type DigestPrimitive, type FlatProofs } from '../../domain/hashing/merkle.js';
import type { BodyShape, HashBackendName, HashingBackend, PreparedBody } from '../../domain/hashing/port.js';
import { prepareBody } from '../../domain/hashing/prepare-body.js';
import { recordHash, type Sha256Hex } from '../../domain/hashing/record-hash.js';
import { MerkleChecks } from './merkle-checks.js';

/**
 * The TypeScript implementation of the hashing contract over a given SHA-256: the js and wasm
 * backends differ only in the primitive they hand it.
 */
export class TsHashingBackend extends MerkleChecks implements HashingBackend {
  protected constructor(
    readonly name: HashBackendName,
    private readonly hex: Sha256Hex,
    digest: DigestPrimitive,
  ) {
    super(new MerkleHasher(digest));
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
}
