import { envelopeOf, HASH_SCHEME, type RecordEnvelope } from '../records/envelope.js';
import type { Claim } from './assess.js';
import type { BatchAnchor, StoredRecord } from './ports.js';
import { RECEIPT_VERSION, type Receipt } from './types.js';

/**
 * Receipts: the evidence of one anchored record, self-contained and versioned, so that it can be
 * checked years later with nothing but the payload and a JSON-RPC endpoint of the chain.
 */

const iso = (ms: number): string => new Date(ms).toISOString();

/** null when the record is not (yet) in an anchored batch: there is nothing to prove then. */
export function buildReceipt(record: StoredRecord, batch: BatchAnchor, nowMs: number): Receipt | null {
  if (record.batchId === null || record.leafIndex === null || record.treeSize === null) return null;
  if (batch.status !== 'Anchored' || batch.batchId !== record.batchId) return null;
  if (batch.batchSeq === null || batch.manifestCid === null || batch.chainId === null || batch.contractAddress === null || batch.txHash === null || batch.blockNumber === null || batch.anchoredAtMs === null) return null;
  return {
    receiptVersion: RECEIPT_VERSION,
    ...envelopeOf(record.envelope),
    merkleAlgorithm: 'rfc9162-sha256',
    recordHash: record.recordHash,
    leafIndex: record.leafIndex,
    treeSize: record.treeSize,
    merkleProof: [...record.merkleProof],
    merkleRoot: batch.merkleRoot,
    batchId: batch.batchId,
    batchSeq: batch.batchSeq,
    manifestCid: batch.manifestCid,
    chainId: batch.chainId,
    contractAddress: batch.contractAddress,
    chainTxHash: batch.txHash,
    blockNumber: batch.blockNumber,
    anchoredAt: iso(batch.anchoredAtMs),
    acceptedAt: iso(record.acceptedAtMs),
    issuedAt: iso(nowMs),
  };
}

export function envelopeOfReceipt(r: Receipt): RecordEnvelope {
  // The scheme this verifier computes: a receipt naming another is refused before it gets here.
  return { ...envelopeOf(r), hashScheme: HASH_SCHEME };
}

export function claimOfReceipt(r: Receipt): Claim {
  return {
    envelope: envelopeOfReceipt(r),
    recordHash: r.recordHash,
    leafIndex: r.leafIndex,
    treeSize: r.treeSize,
    merkleProof: r.merkleProof,
    merkleRoot: r.merkleRoot,
    batchSeq: r.batchSeq,
  };
}
