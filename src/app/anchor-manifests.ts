import { DrisError } from '../errors/dris-error.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import { buildManifest } from '../domain/pipeline/batch-formation.js';
import type { Pinner } from '../domain/pipeline/ports.js';
import type { Batch } from '../domain/pipeline/types.js';

/**
 * Manifests built and pinned ahead, for the batch being anchored and the ones due next: their
 * CIDs follow one from another (each names the one before as previous), the pins run side by side.
 * After a failure they are built again, and those pinned ahead stay unused in the block store.
 */

/** A batch's manifest for one sequence and previous batch: its CID, and its pin under way. */
export interface Prepared {
  readonly key: string;
  readonly cid: string;
  readonly pinned: Promise<void>;
}

/** What a manifest depends on besides its batch: the sequence and the previous batch's manifest. */
function manifestKey(batchSeq: number, previous: Batch['previous']): string {
  return `${batchSeq}:${previous?.batchId ?? ''}:${previous?.cid ?? ''}`;
}

export class PreparedManifests {
  /** By batch. */
  private readonly prepared = new Map<string, Prepared>();

  constructor(
    private readonly pinner: Pinner,
    private readonly hashing: HashingBackend,
  ) {}

  clear(): void {
    this.prepared.clear();
  }

  delete(batchId: string): void {
    this.prepared.delete(batchId);
  }

  /**
   * A batch's manifest for this sequence and previous batch, its CID known at once and its pin
   * started: made ahead, or now. A failed pin fails the anchor that awaits it, which forgets every
   * prepared manifest.
   */
  async prepare(batch: Batch, batchSeq: number, previous: Batch['previous']): Promise<Prepared> {
    const key = manifestKey(batchSeq, previous);
    const made = this.prepared.get(batch.batchId);
    if (made !== undefined && made.key === key) return made;
    const bytes = Buffer.from(this.hashing.canonicalize(buildManifest(batch, batchSeq, previous)), 'utf8');
    const cid = await this.pinner.cidOf(bytes);
    const pinned = this.pinner.add(bytes).then((added) => {
      if (added !== cid) throw new DrisError('internal_error', 'the pinner stored a manifest under another CID than it computed', { extra: { cid, added } });
    });
    // Awaited by the anchor that takes it; one that never does must not leave a rejection unhandled.
    pinned.catch(() => undefined);
    const p: Prepared = { key, cid, pinned };
    this.prepared.set(batch.batchId, p);
    return p;
  }

  /**
   * Prepares the manifests of `next` (the batches due after `current`, in order), as if its anchor
   * succeeds: each names the one before it as previous, so their CIDs are computed in order, while
   * their pins run side by side (and beside the current transaction).
   */
  async prepareAhead(current: Batch, batchSeq: number, cid: string, next: readonly Batch[]): Promise<void> {
    let previous: Batch['previous'] = { batchId: current.batchId, merkleRoot: current.merkleRoot, cid };
    for (const [i, b] of next.entries()) {
      const p = await this.prepare(b, batchSeq + 1 + i, previous);
      previous = { batchId: b.batchId, merkleRoot: b.merkleRoot, cid: p.cid };
    }
  }
}
