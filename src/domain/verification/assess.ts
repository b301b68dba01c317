import type { HashingBackend } from '../hashing/port.js';
import { equalBytes, fromHex, HASH_LEN, splitLeaves, toHex } from '../hashing/merkle.js';
import type { RecordEnvelope } from '../records/types.js';
import { packHexLeaves } from '../hashing/hex-leaves.js';
import { REASON_STATUS, type ReasonCategory, type VerificationStatus } from './types.js';

/**
 * The decision of a verification, shared by the service and the offline verifier: given what is
 * claimed about a record (its envelope, leaf and batch) and what was observed independently (the
 * payload's hash, the chain, the manifest), which checks hold and what the outcome is. Pure: the
 * caller gathers the observations.
 */

/** What the service's index (or a receipt) claims about a record. */
export interface Claim {
  readonly envelope: RecordEnvelope;
  readonly recordHash: string;
  readonly leafIndex: number;
  readonly treeSize: number;
  readonly merkleProof: readonly string[];
  readonly merkleRoot: string;
  readonly batchSeq: number | null;
}

/** The root committed on-chain, as read now. */
export interface ChainObservation {
  /** The contract's stored anchor of the claimed root; null when the root is not on-chain. */
  readonly anchorOfRoot: { readonly batchSeq: number; readonly anchoredAtSec: number } | null;
  /** The root the contract's Anchored event records at the claimed batchSeq, when one was looked up. */
  readonly rootAtSeq?: string | null;
}

export interface ManifestObservation {
  readonly merkleRoot: string;
  readonly treeSize: number;
  /** The leaves as the manifest wrote them (an observer holding them packed may build these on first use). */
  readonly leaves: readonly string[];
  /**
   * When every leaf is 64 lowercase hex digits, an observer may give them as 32 bytes each, back
   * to back (packHexLeaves): assess then reads these, not `leaves`.
   */
  readonly packedLeaves?: Uint8Array;
  /** The root recomputed from `leaves` by the observer, when it already did (a cache); else assess does. */
  readonly computedRoot?: string;
}

export interface Observations {
  /** SHA-256 of the canonical payload supplied by the caller, when one was. */
  readonly computedPayloadHash?: string;
  /** null: the chain could not be read. */
  readonly chain: ChainObservation | null;
  /** undefined: not fetched; null: could not be fetched; otherwise the parsed manifest. */
  readonly manifest?: ManifestObservation | null;
  /** The manifest is the only evidence of the leaves (batch mode): unavailable is then an error. */
  readonly manifestRequired?: boolean;
}

export interface Checks {
  payloadHashMatches: boolean | null;
  recordHashMatches: boolean;
  proofValid: boolean;
  anchoredOnChain: boolean | null;
  onChainRootMatches: boolean | null;
  hashMatchesIpfs: boolean | null;
  merkleRootMatchesChain: boolean | null;
}

export interface Assessment {
  readonly status: VerificationStatus;
  readonly reason: ReasonCategory;
  readonly verified: boolean;
  readonly checks: Checks;
  /** recordHash recomputed from the envelope (with the supplied payload's hash when given). */
  readonly computedRecordHash: string;
  /** Root recomputed from the manifest's leaves, when a manifest was observed. */
  readonly manifestRoot: string | null;
  readonly message: string;
}

const MESSAGES: Readonly<Record<ReasonCategory, string>> = {
  verified_anchored: 'the stored record hash is in an anchored batch whose root is committed on-chain',
  full_match: 'the supplied payload matches the record, which is in an anchored batch whose root is committed on-chain',
  payload_mismatch: 'the supplied payload does not match the hash recorded at ingestion',
  record_hash_mismatch: 'the record envelope does not hash to the recorded record hash',
  proof_invalid: 'the Merkle proof does not lead from the record hash to the batch root',
  root_mismatch: 'the root committed on-chain for this batch differs from the batch root',
  not_on_chain: 'the batch root is not committed on-chain',
  ipfs_mismatch: 'the IPFS manifest does not match the record or the on-chain root',
  not_found: 'no such record',
  version_not_found: 'the record exists, but not with this recordVersion',
  not_in_batch: 'the record hash is not a leaf of this batch',
  pending_anchor: 'the record is accepted; its batch is not anchored yet',
  anchor_failed: 'the record is accepted; anchoring of its batch failed and awaits a retry',
  chain_unavailable: 'the chain could not be read; try again',
  ipfs_unavailable: 'the IPFS manifest could not be fetched; try again',
};

export function messageOf(reason: ReasonCategory): string {
  return MESSAGES[reason];
}

/** An outcome without evidence to check (unknown record, pending anchor, unreadable chain). */
export function outcomeOf(reason: ReasonCategory): { status: VerificationStatus; reason: ReasonCategory; verified: boolean; message: string } {
  return { status: REASON_STATUS[reason], reason, verified: false, message: MESSAGES[reason] };
}

export function assess(hashing: HashingBackend, claim: Claim, obs: Observations): Assessment {
  const checks: Checks = {
    payloadHashMatches: null,
    recordHashMatches: false,
    proofValid: false,
    anchoredOnChain: null,
    onChainRootMatches: null,
    hashMatchesIpfs: null,
    merkleRootMatchesChain: null,
  };
  const envelope = obs.computedPayloadHash === undefined ? claim.envelope : { ...claim.envelope, payloadHash: obs.computedPayloadHash };
  if (obs.computedPayloadHash !== undefined) checks.payloadHashMatches = obs.computedPayloadHash === claim.envelope.payloadHash;
  const computedRecordHash = hashing.recordHashes([envelope])[0] ?? '';
  checks.recordHashMatches = computedRecordHash === claim.recordHash;
  checks.proofValid = proofHolds(hashing, claim);

  let manifestRoot: string | null = null;
  if (obs.manifest !== undefined && obs.manifest !== null) {
    const m = obs.manifest;
    manifestRoot = m.computedRoot ?? rootOfLeaves(hashing, m.leaves);
    checks.hashMatchesIpfs = leafIs(m, claim.leafIndex, claim.recordHash) && leafCount(m) === claim.treeSize && m.treeSize === claim.treeSize;
  }
  if (obs.chain !== null) {
    const a = obs.chain.anchorOfRoot;
    checks.anchoredOnChain = a !== null;
    checks.onChainRootMatches = a !== null && (claim.batchSeq === null || a.batchSeq === claim.batchSeq);
    if (manifestRoot !== null && obs.manifest !== undefined && obs.manifest !== null) {
      checks.merkleRootMatchesChain = a !== null && manifestRoot === claim.merkleRoot && obs.manifest.merkleRoot === claim.merkleRoot;
    }
  }

  const done = (reason: ReasonCategory): Assessment => ({
    status: REASON_STATUS[reason],
    reason,
    verified: REASON_STATUS[reason] === 'pass',
    checks,
    computedRecordHash,
    manifestRoot,
    message: MESSAGES[reason],
  });

  if (checks.payloadHashMatches === false) return done('payload_mismatch');
  if (!checks.recordHashMatches) return done('record_hash_mismatch');
  if (!checks.proofValid) return done('proof_invalid');
  if (obs.chain === null) return done('chain_unavailable');
  if (obs.chain.anchorOfRoot === null) {
    const other = obs.chain.rootAtSeq;
    return done(other !== undefined && other !== null && other !== claim.merkleRoot ? 'root_mismatch' : 'not_on_chain');
  }
  if (checks.onChainRootMatches === false) return done('root_mismatch');
  if (obs.manifest === null && obs.manifestRequired === true) return done('ipfs_unavailable');
  if (obs.manifest !== undefined && obs.manifest !== null && (checks.hashMatchesIpfs !== true || checks.merkleRootMatchesChain !== true)) return done('ipfs_mismatch');
  return done(obs.computedPayloadHash !== undefined ? 'full_match' : 'verified_anchored');
}

function proofHolds(hashing: HashingBackend, claim: Claim): boolean {
  if (!Number.isSafeInteger(claim.leafIndex) || !Number.isSafeInteger(claim.treeSize) || claim.leafIndex < 0 || claim.leafIndex >= claim.treeSize) return false;
  return hashing.recordInclusionHolds(claim.recordHash, claim.leafIndex, claim.treeSize, claim.merkleProof, claim.merkleRoot);
}

/** 64 lowercase hex digits (checked by the caller) as 32 bytes; Buffer decodes them natively. */
function hashBytes(hex: string): Uint8Array {
  return Buffer.from(hex, 'hex');
}

/** RFC 9162 root of a manifest's leaves (lowercase hex); malformed leaves make a root no chain holds. */
export function rootOfLeaves(hashing: HashingBackend, leaves: readonly string[]): string {
  const packed = packHexLeaves(leaves);
  return packed === null ? toHex(hashing.merkleRoot(leaves.map((l) => fromHexSafe(l)))) : rootOfPackedLeaves(hashing, packed);
}

/** RFC 9162 root (lowercase hex) of leaves of 32 bytes each, back to back (packHexLeaves). */
export function rootOfPackedLeaves(hashing: HashingBackend, packed: Uint8Array): string {
  return toHex(hashing.merkleRoot(splitLeaves(packed)));
}

/** Hex that may be malformed (a tampered manifest): malformed leaves hash as empty input. */
function fromHexSafe(hex: string): Uint8Array {
  return /^[0-9a-f]{64}$/.test(hex) ? hashBytes(hex) : new Uint8Array(0);
}

function leafCount(m: ManifestObservation): number {
  return m.packedLeaves === undefined ? m.leaves.length : m.packedLeaves.length / HASH_LEN;
}

/** Whether the manifest's leaf `index`, as the manifest wrote it, is `hash`. */
function leafIs(m: ManifestObservation, index: number, hash: string): boolean {
  const packed = m.packedLeaves;
  if (packed === undefined) return m.leaves[index] === hash;
  if (!Number.isSafeInteger(index) || index < 0 || (index + 1) * HASH_LEN > packed.length) return false;
  // Packed leaves were written as lowercase hex, so their text is this one leaf's.
  return Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength).toString('hex', index * HASH_LEN, (index + 1) * HASH_LEN) === hash;
}

/** The leaf index of a record hash in a manifest, or -1. */
export function leafIndexIn(manifest: ManifestObservation, recordHash: string): number {
  return manifest.leaves.indexOf(recordHash);
}

export function sameRoot(a: Uint8Array, b: string): boolean {
  return /^[0-9a-f]{64}$/.test(b) && equalBytes(a, fromHex(b));
}
