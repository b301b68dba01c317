import type { HashingBackend } from '../../domain/hashing/port.js';
import type { AnchorEventView, ChainReader } from '../../domain/verification/ports.js';
import type { ReasonCategory, Receipt, VerificationStatus } from '../../domain/verification/types.js';
import type { DrisErrorCode, FieldError } from '../../errors/dris-error.js';

/** The offline verification of a receipt: its inputs, what it reaches the outside through, and its report. */

export interface VerifyArgs {
  readonly receiptPath: string;
  readonly payloadPath?: string;
  readonly rpcUrl: string;
  readonly gatewayUrl?: string;
  readonly json: boolean;
  readonly timeoutMs: number;
}

/** How the verifier reaches a chain: a reader of the contract at an address, on the expected chain. */
export interface ChainConnectOptions {
  readonly rpcUrl: string;
  readonly contractAddress: string;
  /** A node on another chain is refused (config_invalid, reason chain_id_mismatch). */
  readonly expectedChainId?: number;
  /** Per JSON-RPC request. */
  readonly timeoutMs?: number;
  /** Lower bound of the event search. */
  readonly fromBlock?: number;
}

/** A manifest fetched from a gateway, checked against its CID (a mismatch is refused, reason cid_mismatch). */
export interface ManifestFetchResult {
  readonly bytes: Uint8Array;
  readonly format: 'raw' | 'car' | 'identity';
  readonly url: string;
}

/** What the verifier reaches the outside through; the composition root provides them, tests put fakes here. */
export interface VerifyDeps {
  readonly loadHashing: () => Promise<HashingBackend>;
  readonly connectChain: (options: ChainConnectOptions) => Promise<ChainReader>;
  readonly fetchManifest: (gatewayUrl: string, cid: string, options: { readonly timeoutMs: number }) => Promise<ManifestFetchResult>;
  readonly readFile: (path: string) => Promise<Uint8Array>;
}

/** Each check: true held, false failed, null not run (not asked for, or not reachable). */
export interface VerifyChecks {
  receiptValid: boolean;
  payloadHashMatches: boolean | null;
  recordHashMatches: boolean | null;
  proofValid: boolean | null;
  /** The node is on the receipt's chainId. */
  chainIdMatches: boolean | null;
  /** A DrisAnchor contract is at the receipt's contractAddress. */
  contractFound: boolean | null;
  /** The contract's anchorOf(merkleRoot) knows the root. */
  anchoredOnChain: boolean | null;
  /** ...under the receipt's batchSeq. */
  onChainRootMatches: boolean | null;
  /** The Anchored event of batchSeq names the receipt's root, batchId, treeSize, transaction, block and time. */
  anchorEventMatches: boolean | null;
  /** The Anchored event commits to the receipt's manifestCid. */
  manifestCidMatchesChain: boolean | null;
  /** The gateway's bytes hash to the manifest CID (a gateway that fails this is not believed). */
  manifestMatchesCid: boolean | null;
  /** The manifest lists the record hash at leafIndex, with treeSize leaves. */
  hashMatchesIpfs: boolean | null;
  /** The root recomputed from the manifest's leaves is the receipt's root, which is on-chain. */
  merkleRootMatchesChain: boolean | null;
}

/** What the report shows of the receipt: its fields but the salt, the proof (its length) and the payload. */
export type ReceiptSummary = Omit<Receipt, 'salt' | 'sourceTimestamp' | 'merkleAlgorithm' | 'merkleProof' | 'acceptedAt' | 'issuedAt' | 'payload'> & {
  path: string;
  proofLength: number;
};

export interface ErrorSummary {
  code: DrisErrorCode;
  message: string;
  reason?: string;
  fieldErrors?: FieldError[];
}

export interface ChainReport {
  /** The endpoint's origin only: provider URLs often carry an API key in their path. */
  rpc: string;
  /** The node's chain id, when it answered. */
  chainId: number | null;
  contractAddress: string;
  headBlock: number | null;
  /** anchorOf(merkleRoot) as read now. */
  anchor: { batchSeq: number; anchoredAt: string } | null;
  /** The Anchored event of the receipt's batchSeq. */
  event: (AnchorEventView & { anchoredAt: string; confirmations: number | null }) | null;
  /** Receipt fields the event contradicts. */
  mismatches: string[];
  error?: ErrorSummary;
}

export interface IpfsReport {
  gateway: string;
  cid: string;
  url?: string;
  format?: ManifestFetchResult['format'];
  bytes?: number;
  manifest?: { batchId: string; batchSeq: number; treeSize: number; merkleRoot: string; leafAtIndex: string | null; recomputedRoot: string | null } | null;
  error?: ErrorSummary;
}

/** The --json answer. */
export interface VerifyReport {
  verified: boolean;
  verificationStatus: VerificationStatus;
  /** null only when the input could not be read as a receipt (then `error` says why). */
  reasonCategory: ReasonCategory | null;
  message: string;
  checkedAt: string;
  checks: VerifyChecks;
  receipt: ReceiptSummary | null;
  computed: {
    /** SHA-256(JCS(payload)) of the payload checked, when one was. */
    payloadHash: string | null;
    /** Where that payload came from: --payload, or the receipt itself (downloaded with its payload). */
    payloadSource: 'file' | 'receipt' | null;
    /** SHA-256(JCS(envelope)), with the computed payloadHash when there is one. */
    recordHash: string | null;
    /** The root recomputed from the manifest's leaves. */
    manifestRoot: string | null;
  };
  chain: ChainReport | null;
  ipfs: IpfsReport | null;
  error?: ErrorSummary;
}
