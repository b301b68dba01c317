import { outcomeOf } from '../domain/verification/assess.js';
import type { ReasonCategory, VerificationResult, VerifyPayloadRequest, VerifyPayloadResponse } from '../domain/verification/types.js';
import { DrisError } from '../errors/dris-error.js';
import type { VerifyContext } from './verification-context.js';
import { newVerificationId } from './verification-results.js';
import { verifyStoredRecord } from './verify-record.js';

/**
 * Verifying by hash (hash mode): the tenant's records with this payloadHash or recordHash, the
 * first few of them verified as in stored mode; the answer is the best of them.
 */

const MAX_HASH_MATCHES = 100;
const MAX_HASH_VERIFICATIONS = 10;

export interface PayloadVerification {
  readonly answer: VerifyPayloadResponse;
  /** What the verification history keeps of it: the best result, as one attempt. */
  readonly remembered: VerificationResult;
}

export async function verifyPayload(ctx: VerifyContext, tenantId: string, req: VerifyPayloadRequest): Promise<PayloadVerification> {
  if ((req.payloadHash === undefined) === (req.recordHash === undefined)) {
    throw new DrisError('validation_failed', 'send exactly one of payloadHash and recordHash', {
      fields: [{ path: req.payloadHash === undefined ? 'payloadHash' : 'recordHash', code: 'one_of', message: 'exactly one of payloadHash and recordHash is required' }],
    });
  }
  const hashType = req.payloadHash !== undefined ? 'payloadHash' : 'recordHash';
  const hash = (req.payloadHash ?? req.recordHash) as string;
  const records = await ctx.evidence.findByHash(tenantId, hashType, hash, MAX_HASH_MATCHES);
  const verifiedAt = new Date(ctx.now()).toISOString();
  const verificationId = newVerificationId();
  const results: VerificationResult[] = [];
  for (const record of records.slice(0, MAX_HASH_VERIFICATIONS)) {
    const base = ctx.results.base('hash', tenantId, { collection: record.envelope.collection, recordId: record.envelope.recordId });
    results.push(await verifyStoredRecord(ctx, { ...base, verificationId, verifiedAt }, record, undefined));
  }
  const best = results.find((x) => x.verified) ?? results[0];
  const reason: ReasonCategory = best?.reasonCategory ?? 'not_found';
  const outcome = outcomeOf(reason);
  const answer: VerifyPayloadResponse = {
    hash,
    hashType,
    tenantId,
    matches: records.length,
    anchored: best?.verified ?? false,
    verificationStatus: outcome.status,
    reasonCategory: reason,
    verifiedAt,
    verificationId,
    results,
    message: best?.message ?? outcome.message,
  };
  const remembered: VerificationResult = {
    ...(best ?? ctx.results.base('hash', tenantId, { collection: '', recordId: '' })),
    verificationId,
    verifiedAt,
    verified: answer.anchored,
    verificationStatus: answer.verificationStatus,
    reasonCategory: reason,
    message: answer.message,
  };
  return { answer, remembered };
}
