import type { tags } from 'typia';
import type { JsonObject } from '../json.js';
import type { Name, OperationType, RecordEnvelope, TenantId } from '../records/types.js';
import type { SnapshotStatus } from '../pipeline/types.js';

/**
 * Verification: wire types of the verify endpoints, the receipt, and the outcome vocabulary. The
 * HTTP validators and the OpenAPI schemas are generated from these declarations.
 */

/**
 * - pass: payload hash, Merkle proof and on-chain root all match (`verified` is true only here);
 * - fail: a check ran and did not match, or there is nothing to verify (unknown record);
 * - pending: the record is accepted but its batch is not anchored (yet, or its anchoring failed
 *   and awaits a retry);
 * - error: a dependency needed to decide (the chain, IPFS) could not be read; try again.
 */
export type VerificationStatus = 'pass' | 'fail' | 'pending' | 'error';

export const VERIFICATION_STATUSES: readonly VerificationStatus[] = ['pass', 'fail', 'pending', 'error'];

/**
 * Why, one value per outcome (docs/verification.md lists each with its status):
 * pass: verified_anchored (stored hash), full_match (payload recomputed);
 * fail: payload_mismatch, record_hash_mismatch, proof_invalid, root_mismatch, not_on_chain,
 * ipfs_mismatch, not_found, version_not_found, not_in_batch;
 * pending: pending_anchor, anchor_failed; error: chain_unavailable, ipfs_unavailable.
 */
export type ReasonCategory =
  | 'verified_anchored'
  | 'full_match'
  | 'payload_mismatch'
  | 'record_hash_mismatch'
  | 'proof_invalid'
  | 'root_mismatch'
  | 'not_on_chain'
  | 'ipfs_mismatch'
  | 'not_found'
  | 'version_not_found'
  | 'not_in_batch'
  | 'pending_anchor'
  | 'anchor_failed'
  | 'chain_unavailable'
  | 'ipfs_unavailable';

export const REASON_STATUS: Readonly<Record<ReasonCategory, VerificationStatus>> = {
  verified_anchored: 'pass',
  full_match: 'pass',
  payload_mismatch: 'fail',
  record_hash_mismatch: 'fail',
  proof_invalid: 'fail',
  root_mismatch: 'fail',
  not_on_chain: 'fail',
  ipfs_mismatch: 'fail',
  not_found: 'fail',
  version_not_found: 'fail',
  not_in_batch: 'fail',
  pending_anchor: 'pending',
  anchor_failed: 'pending',
  chain_unavailable: 'error',
  ipfs_unavailable: 'error',
};

export type Hex64 = string & tags.Pattern<'^[0-9a-f]{64}$'>;
export type SaltHex = string & tags.Pattern<'^[0-9a-f]{32}$'>;

/**
 * VerifyRecord request. The first listing of the spec is enforced: collection and recordId are
 * required, tenantId defaults to the key's tenant, payload is optional (absent: the stored hash
 * is verified). `batchId` selects verification from the IPFS manifest and the chain only; since
 * the hot index is not read then, the envelope fields the 202 answer gave (salt, and payload or
 * payloadHash) must be sent, and recordVersion / operationType / sourceTimestamp / database when
 * they differ from their ingestion defaults.
 */
export interface VerifyRecordRequest {
  tenantId?: TenantId;
  database?: Name;
  collection: Name;
  recordId: Name;
  recordVersion?: string & tags.MinLength<1> & tags.MaxLength<128>;
  /** The record's payload as held by the caller; hashed (RFC 8785) and compared. */
  payload?: JsonObject;
  batchId?: string & tags.MinLength<1> & tags.MaxLength<64>;
  /** batchId mode: the salt of the 202 answer. */
  salt?: SaltHex;
  /** batchId mode without a payload: the payloadHash of the 202 answer. */
  payloadHash?: Hex64;
  /** batchId mode: the ingested operationType (default `upsert`). */
  operationType?: OperationType;
  /** batchId mode: the ingested sourceTimestamp (default none). */
  sourceTimestamp?: string | null;
}

/**
 * VerifyRecordRequest as the document states it: with batchId, database, salt and one of payload
 * or payloadHash are required too (the verifier refuses the request without them).
 */
export type VerifyRecordBody = VerifyRecordRequest &
  tags.JsonSchemaPlugin<{
    anyOf: [{ not: { required: ['batchId'] } }, { required: ['batchId', 'database', 'salt', 'payload'] }, { required: ['batchId', 'database', 'salt', 'payloadHash'] }];
  }>;

/** Explorer links of the anchoring (from DRIS_EXPLORER_ADDRESS_URL / DRIS_EXPLORER_TX_URL). */
export interface OnChainProofLinks {
  explorerContractUrl?: string;
  explorerEventUrl?: string;
}

export interface IpfsEvidence {
  ipfsCid: string;
  /** Where the manifest can be fetched (this service's trustless gateway or a configured one). */
  ipfsGatewayUrl?: string;
  /** The manifest lists the record's hash at its leaf index. */
  hashMatchesIpfs: boolean;
  /** The root recomputed from the manifest's leaves equals the root read from the chain. */
  merkleRootMatchesChain: boolean;
  /** false when the manifest could not be fetched in time (then both matches are false). */
  fetched: boolean;
}

/** Verification result (SPEC "Verification result", plus leafIndex, treeSize and the checks). */
export interface VerificationResult {
  verified: boolean;
  verificationStatus: VerificationStatus;
  reasonCategory: ReasonCategory;
  verifiedAt: string & tags.Format<'date-time'>;
  verificationId: string;
  /** How the evidence was gathered: `stored` (hot index), `payload` (recomputed), `batch` (IPFS + chain only). */
  mode: VerificationMode;
  tenantId: string;
  database?: string;
  collection?: string;
  recordId: string;
  recordVersion?: string;
  snapshotId?: string;
  /** The stored recordHash (the leaf of the tree). */
  snapshotHash?: string;
  recordHash?: string;
  payloadHash?: string;
  computedPayloadHash?: string;
  batchId?: string;
  batchSeq?: number;
  merkleRoot?: string;
  merkleProof?: string[];
  leafIndex?: number;
  treeSize?: number;
  anchoredOnChain?: boolean;
  chainId?: number;
  contractAddress?: string;
  chainTxHash?: string;
  blockNumber?: number;
  onChainMerkleRoot?: string;
  onChainAnchoredAt?: string & tags.Format<'date-time'>;
  onChainProof?: OnChainProofLinks;
  ipfsEvidence?: IpfsEvidence;
  message: string;
  /**
   * true when the tenant's retrieval policy withholds this record's evidence from the caller:
   * recordHash, snapshotHash, payloadHash, merkleProof, leafIndex and treeSize are then absent.
   */
  evidenceWithheld?: boolean;
}

export type VerificationMode = 'stored' | 'payload' | 'batch' | 'hash';

/** VerifyPayload request: exactly one of the two hashes. */
export interface VerifyPayloadRequest {
  tenantId?: TenantId;
  payloadHash?: Hex64;
  recordHash?: Hex64;
}

/** VerifyPayloadRequest as the document states it: exactly one of the two hashes. */
export type VerifyPayloadBody = VerifyPayloadRequest & tags.JsonSchemaPlugin<{ oneOf: [{ required: ['payloadHash'] }, { required: ['recordHash'] }] }>;

export interface VerifyPayloadResponse {
  /** The hash asked about. */
  hash: string;
  hashType: 'payloadHash' | 'recordHash';
  tenantId: string;
  /** Records of the tenant carrying the hash (at most 100, newest first). */
  matches: number;
  /** true when at least one record carrying the hash passes verification (anchored, proof, chain root). */
  anchored: boolean;
  verificationStatus: VerificationStatus;
  reasonCategory: ReasonCategory;
  verifiedAt: string & tags.Format<'date-time'>;
  verificationId: string;
  /** One verification per matching record. */
  results: VerificationResult[];
  message: string;
}

/** VerifySnapshot answer: a snapshot's anchoring checked on-chain now. */
export interface SnapshotVerification {
  snapshotId: string;
  tenantId: string;
  status: SnapshotStatus;
  recordCount: number;
  batchId: string;
  verificationStatus: VerificationStatus;
  reasonCategory: ReasonCategory;
  verified: boolean;
  verifiedAt: string & tags.Format<'date-time'>;
  verificationId: string;
  merkleRoot?: string;
  batchSeq?: number;
  anchoredOnChain: boolean;
  onChainMerkleRoot?: string;
  onChainAnchoredAt?: string & tags.Format<'date-time'>;
  chainId?: number;
  contractAddress?: string;
  chainTxHash?: string;
  blockNumber?: number;
  /** Blocks on top of the anchoring block (the anchoring block counts as one). */
  confirmations?: number;
  onChainProof?: OnChainProofLinks;
  ipfsCid?: string;
  message: string;
}

/** One stored verification attempt (GET /api/v1/verify/history). */
export interface VerificationHistoryEntry {
  verificationId: string;
  at: string & tags.Format<'date-time'>;
  tenantId: string;
  clientId: string;
  keyId: string;
  mode: VerificationMode | 'snapshot';
  database: string | null;
  collection: string | null;
  recordId: string | null;
  recordVersion: string | null;
  snapshotId: string | null;
  batchId: string | null;
  verified: boolean;
  verificationStatus: VerificationStatus;
  reasonCategory: ReasonCategory;
  correlationId: string;
}

export interface VerificationHistoryPage {
  items: VerificationHistoryEntry[];
  nextCursor: string | null;
}

export const RECEIPT_VERSION = 1 as const;

/**
 * A self-contained evidence bundle of one anchored record: with it, the payload and any JSON-RPC
 * endpoint of the chain, anyone can check the record without dris (`dris verify`).
 */
export interface Receipt extends RecordEnvelope {
  receiptVersion: typeof RECEIPT_VERSION;
  merkleAlgorithm: 'rfc9162-sha256';
  recordHash: string;
  leafIndex: number;
  treeSize: number;
  merkleProof: string[];
  merkleRoot: string;
  batchId: string;
  batchSeq: number;
  manifestCid: string;
  chainId: number;
  contractAddress: string;
  chainTxHash: string;
  blockNumber: number;
  anchoredAt: string & tags.Format<'date-time'>;
  acceptedAt: string & tags.Format<'date-time'>;
  issuedAt: string & tags.Format<'date-time'>;
  /** The payload itself, only when asked for (`includePayload=true`) and allowed by the tenant's policy. */
  payload?: JsonObject;
}
