import { fromHex, toHex } from '../domain/hashing/merkle.js';
import { HASH_SCHEME, type RecordEnvelope } from '../domain/records/types.js';
import { assess, type Claim } from '../domain/verification/assess.js';
import type { AnchorEventView } from '../domain/verification/ports.js';
import type { VerificationResult, VerifyRecordRequest } from '../domain/verification/types.js';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import type { VerifyContext } from './verification-context.js';
import { codeOf } from './verification-reads.js';

/**
 * Verifying a record in a named batch without the hot index (batch mode): the envelope is rebuilt
 * from the request, its hash looked up among the leaves of the batch's manifest, which the chain's
 * Anchored event names; the proof is computed from those leaves.
 */

/** The envelope batch mode hashes: database, salt and a payload (or its hash) are required. */
function envelopeOf(tenantId: string, req: VerifyRecordRequest, computedPayloadHash: string | undefined): RecordEnvelope {
  const fields: FieldError[] = [];
  if (req.database === undefined) fields.push({ path: 'database', code: 'required', message: 'is required with batchId (the hot index is not read)' });
  if (req.salt === undefined) fields.push({ path: 'salt', code: 'required', message: 'is required with batchId (the salt of the 202 answer)' });
  const payloadHash = computedPayloadHash ?? req.payloadHash;
  if (payloadHash === undefined) fields.push({ path: 'payload', code: 'required', message: 'payload or payloadHash is required with batchId' });
  if (fields.length > 0 || req.database === undefined || req.salt === undefined || payloadHash === undefined) {
    throw new DrisError('validation_failed', 'batchId mode needs the record envelope', { fields });
  }
  return {
    hashScheme: HASH_SCHEME,
    tenantId,
    database: req.database,
    collection: req.collection,
    recordId: req.recordId,
    recordVersion: req.recordVersion ?? '1',
    operationType: req.operationType ?? 'upsert',
    sourceTimestamp: req.sourceTimestamp ?? null,
    payloadHash,
    salt: req.salt,
  };
}

export async function verifyInBatch(
  ctx: VerifyContext,
  tenantId: string,
  req: VerifyRecordRequest,
  batchId: string,
  computedPayloadHash: string | undefined,
): Promise<VerificationResult> {
  const results = ctx.results;
  const base = results.base('batch', tenantId, req);
  const envelope = envelopeOf(tenantId, req, computedPayloadHash);
  const recordHash = ctx.hashing.recordHashes([envelope])[0] ?? '';
  const r: VerificationResult = {
    ...base,
    database: envelope.database,
    recordVersion: envelope.recordVersion,
    recordHash,
    snapshotHash: recordHash,
    payloadHash: envelope.payloadHash,
    ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
    batchId,
  };
  const chain = ctx.reads.chain;
  if (chain === null) return results.outcome(r, 'chain_unavailable', computedPayloadHash);
  let event: AnchorEventView | null;
  try {
    event = await ctx.reads.eventByBatchId(chain, batchId);
  } catch (err) {
    ctx.log.warn({ code: codeOf(err) }, 'chain read failed');
    return results.outcome(r, 'chain_unavailable', computedPayloadHash);
  }
  if (event === null) return results.outcome(r, 'not_on_chain', computedPayloadHash);
  const withChain: VerificationResult = { ...r, batchSeq: event.batchSeq, merkleRoot: event.merkleRoot, chainTxHash: event.txHash, blockNumber: event.blockNumber };
  const manifest = await ctx.reads.manifest(event.manifestCid);
  if (manifest === null) return results.outcome({ ...withChain, ipfsEvidence: results.ipfsEvidence(event.manifestCid, false, false, false) }, 'ipfs_unavailable', computedPayloadHash);
  if (manifest === 'invalid' || manifest.computedRoot !== event.merkleRoot || manifest.merkleRoot !== event.merkleRoot) {
    return results.outcome({ ...withChain, ipfsEvidence: results.ipfsEvidence(event.manifestCid, true, false, false) }, 'ipfs_mismatch', computedPayloadHash);
  }
  // The root matched, so the leaves are the batch's own, all distinct: the first match is the one.
  const leafIndex = manifest.leaves.indexOf(recordHash);
  if (leafIndex < 0) {
    return results.outcome({ ...withChain, ipfsEvidence: results.ipfsEvidence(event.manifestCid, true, false, true) }, 'not_in_batch', computedPayloadHash);
  }
  const leaves = manifest.leaves.map((l) => fromHex(l));
  const proof = ctx.hashing.inclusionProof(leaves, leafIndex).map(toHex);
  const claim: Claim = { envelope, recordHash, leafIndex, treeSize: manifest.leaves.length, merkleProof: proof, merkleRoot: event.merkleRoot, batchSeq: event.batchSeq };
  const observed = await ctx.reads.observeChain(event.merkleRoot, event.batchSeq);
  const a = assess(ctx.hashing, claim, { ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }), chain: observed, manifest, manifestRequired: true });
  const pseudoBatch = { batchSeq: event.batchSeq, txHash: event.txHash, blockNumber: event.blockNumber };
  return results.fromAssessment(withChain, a, claim, pseudoBatch, observed, event.manifestCid, manifest);
}
