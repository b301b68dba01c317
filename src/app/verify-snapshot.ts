import type { Snapshot } from '../domain/pipeline/types.js';
import { outcomeOf } from '../domain/verification/assess.js';
import type { BatchAnchor } from '../domain/verification/ports.js';
import type { ReasonCategory, SnapshotVerification } from '../domain/verification/types.js';
import { DrisError } from '../errors/dris-error.js';
import type { VerifyContext } from './verification-context.js';
import { codeOf } from './verification-reads.js';
import { newVerificationId } from './verification-results.js';

/**
 * Verifying a snapshot: its batch's root held against the contract's anchor of it and the
 * Anchored event, read now.
 */

type Finish = (reason: ReasonCategory, extra: Partial<SnapshotVerification>) => SnapshotVerification;

/** The first of `tenants` (the caller's) holding the snapshot. */
async function findSnapshot(ctx: VerifyContext, snapshotId: string, tenants: readonly string[]): Promise<Snapshot> {
  for (const t of tenants) {
    const snapshot = await ctx.store.getSnapshot(t, snapshotId);
    if (snapshot !== null) return snapshot;
  }
  throw new DrisError('not_found', 'no such snapshot');
}

export async function verifySnapshot(ctx: VerifyContext, snapshotId: string, tenants: readonly string[]): Promise<SnapshotVerification> {
  const snapshot = await findSnapshot(ctx, snapshotId, tenants);
  const base = {
    snapshotId,
    tenantId: snapshot.tenantId,
    status: snapshot.status,
    recordCount: snapshot.recordCount,
    batchId: snapshot.batchId,
    verifiedAt: new Date(ctx.now()).toISOString(),
    verificationId: newVerificationId(),
    anchoredOnChain: false,
  };
  const batch = await ctx.reads.batch(snapshot.batchId);
  const finish: Finish = (reason, extra) => {
    const o = outcomeOf(reason);
    return { ...base, ...extra, verificationStatus: o.status, reasonCategory: reason, verified: o.status === 'pass', message: o.message };
  };
  if (batch === null || batch.status !== 'Anchored' || batch.batchSeq === null) {
    return finish(batch?.status === 'Failed' ? 'anchor_failed' : 'pending_anchor', batch === null ? {} : { merkleRoot: batch.merkleRoot });
  }
  const chainInfo = ctx.results.chainFields(batch);
  try {
    return await onChain(ctx, batch, batch.batchSeq, chainInfo, finish);
  } catch (err) {
    ctx.log.warn({ code: codeOf(err) }, 'chain read failed');
    return finish('chain_unavailable', { merkleRoot: batch.merkleRoot, batchSeq: batch.batchSeq, ...chainInfo });
  }
}

/** An Anchored batch against the chain now; throws when the chain cannot be read. */
async function onChain(ctx: VerifyContext, batch: BatchAnchor, batchSeq: number, chainInfo: Partial<SnapshotVerification>, finish: Finish): Promise<SnapshotVerification> {
  const chain = ctx.reads.chain;
  if (chain === null) throw new DrisError('dependency_unavailable', 'no chain access');
  const [anchor, event, head] = await Promise.all([ctx.reads.anchorOf(chain, batch.merkleRoot), chain.eventByRoot(batch.merkleRoot), chain.headBlock()]);
  const extra: Partial<SnapshotVerification> = { merkleRoot: batch.merkleRoot, batchSeq, ...chainInfo, ...(batch.manifestCid === null ? {} : { ipfsCid: batch.manifestCid }) };
  if (anchor === null || event === null) return finish('not_on_chain', extra);
  if (anchor.batchSeq !== batchSeq || event.merkleRoot !== batch.merkleRoot) {
    return finish('root_mismatch', { ...extra, anchoredOnChain: true, onChainMerkleRoot: event.merkleRoot });
  }
  return finish('verified_anchored', {
    ...extra,
    anchoredOnChain: true,
    onChainMerkleRoot: event.merkleRoot,
    onChainAnchoredAt: new Date(anchor.anchoredAtSec * 1000).toISOString(),
    chainTxHash: event.txHash,
    blockNumber: event.blockNumber,
    confirmations: Math.max(0, head - event.blockNumber + 1),
    onChainProof: ctx.results.links(event.txHash),
  });
}
