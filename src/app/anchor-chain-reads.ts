import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { Chain } from '../domain/pipeline/ports.js';
import type { Batch } from '../domain/pipeline/types.js';
import type { Logger } from '../util/logger.js';
import { sequenceCheck } from './anchor-reconciler.js';

/** What the anchoring loop reads from the chain before it sends an anchor. */

/** An anchor found on chain for a batch the store still lists as Pending. */
export interface FoundAnchor {
  readonly batchSeq: number;
  readonly manifestCid: string | null;
  readonly tx: { readonly txHash: string | null; readonly blockNumber: number | null; readonly atSec: number };
}

/**
 * A crash after sending leaves the root on chain and the batch Pending: what the chain says of a
 * batch tried before (null: its root is not on chain).
 */
export async function anchorFoundOnChain(chain: Chain, batch: Batch): Promise<FoundAnchor | null> {
  const onChain = await chain.anchorOf(batch.merkleRoot);
  if (onChain === null) return null;
  const event = await chain.findAnchorEvent(batch.merkleRoot);
  return {
    batchSeq: onChain.batchSeq,
    manifestCid: event?.manifestCid ?? batch.manifestCid,
    tx: { txHash: event?.txHash ?? batch.txHash, blockNumber: event?.blockNumber ?? batch.blockNumber, atSec: onChain.anchoredAt },
  };
}

/** Where an anchor sent with the window empty goes, or that a reconciliation must come first. */
export type FirstSlot =
  | { readonly action: 'send'; readonly batchSeq: number; readonly previous: Batch['previous']; readonly mark: string | null }
  | { readonly action: 'reconcile'; readonly mark: string };

/**
 * The window is empty: the contract's last sequence is read, and checked against the last batch
 * recorded Anchored (`sequenceCheck`, with the mark of the check that last sent the loop to
 * reconcile). The anchor goes after the contract's sequence and names that batch as previous.
 */
export async function firstSlot(chain: Chain, previousBatch: Batch | null, lastMark: string | null, log: Logger): Promise<FirstSlot> {
  const lastOnChain = await chain.lastSequence();
  const recorded = previousBatch?.batchSeq ?? null;
  const check = sequenceCheck(recorded, lastOnChain, lastMark);
  if (check.action === 'reconcile') {
    log.warn({ recorded, onChain: lastOnChain }, `the contract sequence is ${check.why} the recorded anchors; reconciling first`);
    return { action: 'reconcile', mark: check.mark };
  }
  if (check.action === 'refuse') {
    // Reconciled already and still behind: a node whose reads disagree (a lagging replica).
    throw new DrisError('dependency_unavailable', 'the contract sequence stays behind the recorded anchors', { extra: { recorded, onChain: lastOnChain } });
  }
  const previous = previousBatch === null || previousBatch.manifestCid === null ? null : { batchId: previousBatch.batchId, merkleRoot: previousBatch.merkleRoot, cid: previousBatch.manifestCid };
  return { action: 'send', batchSeq: lastOnChain + 1, previous, mark: check.mark };
}

/**
 * An anchor the chain adapter abandoned (Chain.anchor): the chain went back after it was sent
 * ('chain_rewound'), or the term gave it up ('abandoned'). Not a failure of its batch.
 */
export function abandonedAnchor(err: unknown): 'chain_rewound' | 'abandoned' | null {
  const e = toDrisError(err);
  const reason = e.extra['reason'];
  if (e.code !== 'dependency_unavailable') return null;
  return reason === 'chain_rewound' || reason === 'abandoned' ? reason : null;
}
