import type { FieldError } from '../../errors/dris-error.js';
import type { RecordEnvelope } from '../records/types.js';
import type { FlatProofs } from './merkle.js';

/**
 * The hashing port: canonical form, payload and record hashes, Merkle trees and proofs. Every
 * backend (js, wasm, native) gives the same bytes for the same input; the conformance suite and
 * the property test hold them to it.
 */

export type HashBackendName = 'native' | 'wasm' | 'js';
export type BodyShape = 'single' | 'bulk';

export interface PreparedPayload {
  /** RFC 8785 canonical text of the payload. */
  readonly canonical: string;
  /** SHA-256 of the canonical text, lowercase hex. */
  readonly payloadHash: string;
  /** The canonical text's UTF-8 bytes, when the backend holds them: stored as they are, never decoded. */
  readonly canonicalBytes?: Uint8Array;
}

export interface PreparedBody {
  /** Parsed body (undefined after a syntax error). */
  readonly value: unknown;
  /**
   * The parsed body with every record payload that is an object replaced by `{}` (single:
   * `recordPayload`; bulk: `recordPayload` of each element of the list `payloads` covers); every
   * other member, and a payload that is not an object, as in `value`. Built on first read and
   * far cheaper than `value` for the native backend, so request envelopes are validated on it.
   * Parts without a payload may be shared with `value`: treat both as read-only.
   */
  readonly envelope: unknown;
  /** I-JSON violations (at most 100), paths from the body root, e.g. `records[3].recordPayload.x`. */
  readonly errors: readonly FieldError[];
  /**
   * single: [payload of /recordPayload]; bulk: one entry per element of `records` (or of `items`
   * when there is no `records` array). null when that element has no object recordPayload or its
   * payload has a violation (even one beyond the reported 100).
   */
  readonly payloads: readonly (PreparedPayload | null)[];
}

export type { FlatProofs } from './merkle.js';

/** Leaves written as hex (a manifest's), decoded and rooted: `HashingBackend.rootOfHexLeaves`. */
export interface HexLeavesRoot {
  /** RFC 9162 root, 32 bytes. */
  readonly root: Uint8Array;
  /** The leaves, 32 bytes each, back to back. */
  readonly packed: Uint8Array;
}

export interface HashingBackend {
  readonly name: HashBackendName;
  /** Parses a request body (UTF-8 bytes), checks I-JSON, canonicalises and hashes its payloads. */
  prepareBody(body: Uint8Array, shape: BodyShape): PreparedBody;
  /** recordHash (lowercase hex) of each envelope, in order. */
  recordHashes(envelopes: readonly RecordEnvelope[]): string[];
  /** RFC 8785 canonical text; throws DrisError('validation_failed') for values without one. */
  canonicalize(value: unknown): string;
  /** SHA-256 as lowercase hex. */
  sha256Hex(data: Uint8Array): string;
  /** RFC 9162 root; leaves are the leaf inputs (for records: the 32 raw bytes of recordHash). */
  merkleRoot(leaves: readonly Uint8Array[]): Uint8Array;
  /**
   * Leaves of 64 lowercase hex digits each (a manifest's): their RFC 9162 root and their bytes;
   * null when any leaf is other text. The native backend works on the thread pool, off the event
   * loop.
   */
  rootOfHexLeaves(leaves: readonly string[]): Promise<HexLeavesRoot | null>;
  /** RFC 9162 audit path of leaf `index`, leaf to root. */
  inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[];
  /** Root and every audit path of a tree in one call. */
  allProofs(leaves: readonly Uint8Array[]): FlatProofs;
  /** H(0x00 || leaf). */
  leafHash(leaf: Uint8Array): Uint8Array;
  verifyInclusion(leafHash: Uint8Array, index: number, treeSize: number, proof: readonly Uint8Array[], root: Uint8Array): boolean;
  /**
   * verifyInclusion for a record, from text as stored and claimed: whether `proof` places the leaf
   * whose input is the record hash `recordHash` at `index` of a tree of `treeSize` with `root`.
   * Hashes are 64 lowercase hex digits; any other text, or a position that is not a whole number
   * inside the tree, is false.
   */
  recordInclusionHolds(recordHash: string, index: number, treeSize: number, proof: readonly string[], root: string): boolean;
  /** RFC 9162 consistency proof from the first `oldSize` leaves to all of them. */
  consistencyProof(leaves: readonly Uint8Array[], oldSize: number): Uint8Array[];
  verifyConsistency(oldSize: number, newSize: number, proof: readonly Uint8Array[], oldRoot: Uint8Array, newRoot: Uint8Array): boolean;
}
