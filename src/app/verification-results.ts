import type { Batch } from '../domain/pipeline/types.js';
import { outcomeOf, type Assessment, type ChainObservation, type Claim, type ManifestObservation } from '../domain/verification/assess.js';
import type { ChainReader } from '../domain/verification/ports.js';
import type { IpfsEvidence, OnChainProofLinks, ReasonCategory, VerificationMode, VerificationResult } from '../domain/verification/types.js';
import { randomHex } from '../util/random.js';
import type { ManifestRead } from './verification-reads.js';

/** How a verification answer is put together from what was found: the fields every mode shares. */

export interface ResultOptions {
  /** Public URL of a manifest, for ipfsEvidence.ipfsGatewayUrl (this service's gateway or a configured one). */
  readonly gatewayUrl?: (cid: string) => string | undefined;
  readonly explorerAddressUrl?: string;
  readonly explorerTxUrl?: string;
}

export function newVerificationId(): string {
  return `ver_${Date.now().toString(36)}${randomHex(8)}`;
}

/** A manifest whose bytes are not a manifest: matches nothing. */
export function invalidManifest(): ManifestObservation {
  return { merkleRoot: '', treeSize: -1, leaves: [], computedRoot: '' };
}

export class VerificationResults {
  constructor(
    private readonly chain: ChainReader | null,
    private readonly options: ResultOptions,
    private readonly now: () => number,
  ) {}

  /** An answer not yet decided: failing, reason not_found, until an outcome is given. */
  base(mode: VerificationMode, tenantId: string, req: { collection: string; recordId: string; database?: string; recordVersion?: string }): VerificationResult {
    return {
      verified: false,
      verificationStatus: 'fail',
      reasonCategory: 'not_found',
      verifiedAt: new Date(this.now()).toISOString(),
      verificationId: newVerificationId(),
      mode,
      tenantId,
      ...(req.database === undefined ? {} : { database: req.database }),
      collection: req.collection,
      recordId: req.recordId,
      ...(req.recordVersion === undefined ? {} : { recordVersion: req.recordVersion }),
      message: '',
    };
  }

  /** An answer decided before any assessment (not found, not anchored, unreachable…). */
  outcome(r: VerificationResult, reason: ReasonCategory, computedPayloadHash: string | undefined): VerificationResult {
    const o = outcomeOf(reason);
    return { ...r, ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }), verified: false, verificationStatus: o.status, reasonCategory: reason, message: o.message };
  }

  links(txHash: string | null): OnChainProofLinks {
    const chain = this.chain;
    const out: OnChainProofLinks = {};
    if (this.options.explorerAddressUrl !== undefined && chain !== null) out.explorerContractUrl = this.options.explorerAddressUrl.replace('{address}', chain.contractAddress);
    if (this.options.explorerTxUrl !== undefined && txHash !== null) out.explorerEventUrl = this.options.explorerTxUrl.replace('{tx}', txHash);
    return out;
  }

  chainFields(batch: Pick<Batch, 'txHash' | 'blockNumber'>): { chainId?: number; contractAddress?: string; chainTxHash?: string; blockNumber?: number } {
    const chain = this.chain;
    return {
      ...(chain === null ? {} : { chainId: chain.chainId, contractAddress: chain.contractAddress }),
      ...(batch.txHash === null ? {} : { chainTxHash: batch.txHash }),
      ...(batch.blockNumber === null ? {} : { blockNumber: batch.blockNumber }),
    };
  }

  ipfsEvidence(cid: string, fetched: boolean, hashMatchesIpfs: boolean, merkleRootMatchesChain: boolean): IpfsEvidence {
    const url = this.options.gatewayUrl?.(cid);
    return { ipfsCid: cid, ...(url === undefined ? {} : { ipfsGatewayUrl: url }), hashMatchesIpfs, merkleRootMatchesChain, fetched };
  }

  /** The answer of an assessment (src/domain/verification/assess.ts) with its evidence. */
  fromAssessment(
    r: VerificationResult,
    a: Assessment,
    claim: Claim,
    batch: Pick<Batch, 'batchSeq' | 'txHash' | 'blockNumber'>,
    chain: ChainObservation | null,
    manifestCid: string | null,
    manifest: ManifestRead | undefined,
  ): VerificationResult {
    const anchor = chain?.anchorOfRoot ?? null;
    const onChainRoot = anchor !== null ? claim.merkleRoot : (chain?.rootAtSeq ?? undefined);
    return {
      ...r,
      verified: a.verified,
      verificationStatus: a.status,
      reasonCategory: a.reason,
      message: a.message,
      merkleRoot: claim.merkleRoot,
      merkleProof: [...claim.merkleProof],
      leafIndex: claim.leafIndex,
      treeSize: claim.treeSize,
      ...(batch.batchSeq === null ? {} : { batchSeq: batch.batchSeq }),
      ...this.chainFields(batch),
      ...(chain === null ? {} : { anchoredOnChain: anchor !== null }),
      ...(onChainRoot === undefined ? {} : { onChainMerkleRoot: onChainRoot }),
      ...(anchor === null ? {} : { onChainAnchoredAt: new Date(anchor.anchoredAtSec * 1000).toISOString() }),
      ...(chain === null ? {} : { onChainProof: this.links(batch.txHash) }),
      ...(manifestCid === null
        ? {}
        : {
            ipfsEvidence: this.ipfsEvidence(manifestCid, manifest !== null && manifest !== undefined, a.checks.hashMatchesIpfs === true, a.checks.merkleRootMatchesChain === true),
          }),
    };
  }
}
