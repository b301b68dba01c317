import { DrisError } from '../../errors/dris-error.js';
import type { AnchorRequest } from '../../domain/pipeline/ports.js';
import { assertRoot } from './contract-reads.js';

/** Checks of an anchor request before it is sent, and of a refusal after. */

const UINT32_MAX = 0xffff_ffff;

/** What the contract would refuse, refused before any gas is spent. */
export function validateRequest(r: AnchorRequest): void {
  assertRoot(r.merkleRoot);
  if (!Number.isSafeInteger(r.batchSeq) || r.batchSeq < 1) throw new DrisError('validation_failed', 'batchSeq must be a positive integer');
  if (!Number.isInteger(r.recordCount) || r.recordCount < 0 || r.recordCount > UINT32_MAX) {
    throw new DrisError('validation_failed', 'recordCount must fit in uint32');
  }
  if (r.batchId.length === 0 || r.manifestCid.length === 0) throw new DrisError('validation_failed', 'batchId and manifestCid must not be empty');
}

/** A bad_sequence refusal whose missing sequences are all anchors of this stream (`own`) not yet mined. */
export function behindOwnAnchors(e: DrisError, batchSeq: number, own: ReadonlySet<number>): boolean {
  const expected = e.extra['expected'];
  if (e.code !== 'invalid_state' || e.extra['reason'] !== 'bad_sequence' || typeof expected !== 'number' || expected >= batchSeq) return false;
  for (let s = expected; s < batchSeq; s++) if (!own.has(s)) return false;
  return true;
}
