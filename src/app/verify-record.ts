import { assess, type Claim } from '../domain/verification/assess.js';
import type { StoredRecord } from '../domain/verification/ports.js';
import type { ReasonCategory, VerificationMode, VerificationResult, VerifyRecordRequest } from '../domain/verification/types.js';
import type { VerifyContext } from './verification-context.js';
import { invalidManifest } from './verification-results.js';

/**
 * Verifying a record from the hot index: its newest (or given) version, against its batch, the
 * chain now and the manifest (stored mode); with a payload sent, its hash is compared too (payload
 * mode). Hash mode (verify-payload.ts) verifies each record it finds the same way.
 */

export function payloadHashOf(ctx: VerifyContext, payload: Record<string, unknown>): string {
  return ctx.hashing.sha256Hex(Buffer.from(ctx.hashing.canonicalize(payload), 'utf8'));
}

export async function verifyStored(ctx: VerifyContext, tenantId: string, req: VerifyRecordRequest, computedPayloadHash: string | undefined): Promise<VerificationResult> {
  const mode: VerificationMode = computedPayloadHash === undefined ? 'stored' : 'payload';
  const base = ctx.results.base(mode, tenantId, req);
  const versions = await ctx.evidence.findRecord({
    tenantId,
    collection: req.collection,
    recordId: req.recordId,
    ...(req.database === undefined ? {} : { database: req.database }),
  });
  if (versions.length === 0) return ctx.results.outcome(base, 'not_found', computedPayloadHash);
  const candidates = req.recordVersion === undefined ? versions : versions.filter((v) => v.envelope.recordVersion === req.recordVersion);
  const record = candidates.at(-1);
  if (record === undefined) return ctx.results.outcome(base, 'version_not_found', computedPayloadHash);
  return verifyStoredRecord(ctx, base, record, computedPayloadHash);
}

/** `fresh`: the batch row is not the reused one (the chain disagreed with that). */
export async function verifyStoredRecord(
  ctx: VerifyContext,
  base: VerificationResult,
  record: StoredRecord,
  computedPayloadHash: string | undefined,
  fresh = false,
): Promise<VerificationResult> {
  const r: VerificationResult = {
    ...base,
    database: record.envelope.database,
    collection: record.envelope.collection,
    recordVersion: record.envelope.recordVersion,
    recordHash: record.recordHash,
    snapshotHash: record.recordHash,
    payloadHash: record.envelope.payloadHash,
    ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
    ...(record.snapshotId === null ? {} : { snapshotId: record.snapshotId }),
    ...(record.batchId === null ? {} : { batchId: record.batchId }),
  };
  const tampered = computedPayloadHash !== undefined && computedPayloadHash !== record.envelope.payloadHash;
  if (record.batchId === null || record.leafIndex === null || record.treeSize === null) {
    return ctx.results.outcome(r, tampered ? 'payload_mismatch' : 'pending_anchor', computedPayloadHash);
  }
  const batch = await ctx.reads.storedModeBatch(record.batchId, fresh);
  if (batch === null || batch.status !== 'Anchored' || batch.batchSeq === null) {
    const reason: ReasonCategory = tampered ? 'payload_mismatch' : batch?.status === 'Failed' ? 'anchor_failed' : 'pending_anchor';
    return ctx.results.outcome({ ...r, leafIndex: record.leafIndex, treeSize: record.treeSize, merkleProof: [...record.merkleProof] }, reason, computedPayloadHash);
  }
  const claim: Claim = {
    envelope: record.envelope,
    recordHash: record.recordHash,
    leafIndex: record.leafIndex,
    treeSize: record.treeSize,
    merkleProof: record.merkleProof,
    merkleRoot: batch.merkleRoot,
    batchSeq: batch.batchSeq,
  };
  const [chain, manifest] = await Promise.all([
    ctx.reads.observeChain(batch.merkleRoot, batch.batchSeq),
    batch.manifestCid === null ? Promise.resolve(undefined) : ctx.reads.manifest(batch.manifestCid),
  ]);
  if (!fresh && chain !== null && chain.anchorOfRoot?.batchSeq !== batch.batchSeq) {
    // The reused row may predate what the chain shows (a batch sent back to be anchored, or
    // adopted under another sequence): the answer is given on a row as recent as the chain read.
    return verifyStoredRecord(ctx, base, record, computedPayloadHash, true);
  }
  const a = assess(ctx.hashing, claim, {
    ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
    chain,
    ...(manifest === undefined ? {} : { manifest: manifest === 'invalid' ? invalidManifest() : manifest }),
  });
  return ctx.results.fromAssessment(r, a, claim, batch, chain, batch.manifestCid, manifest);
}
