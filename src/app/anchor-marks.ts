import type { ChainInfo, PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch, LifecycleEntry, Snapshot } from '../domain/pipeline/types.js';
import { ingestIdTimeMs } from '../domain/records/ids.js';
import type { Logger } from '../util/logger.js';
import { REQUEUED_REASON } from './anchor-transitions.js';
import { NO_EVENTS, type EventPublisher } from './events.js';

/**
 * Recording batches as Anchored runs behind the anchoring loop, several batches per write: their
 * snapshots and lifecycle entries in one write, then their batch rows (the batch row last, as
 * everywhere). A write may wait a little for more batches to join it (`groupWaitMs`): an insert
 * per table costs the engine about as much for one batch as for four, and a part more to merge.
 * The chain is the record: a batch whose write is lost (a crash, a store error) stays Pending in
 * the store with its root on chain, and the next pass over the pending batches adopts it. Once written, each batch is published (BatchAnchored, SnapshotStateChanged).
 */

/** Anchored batches recorded in one write. */
const MARK_GROUP = 16;

/** Batches queued at which a write starts without waiting for more (`groupWaitMs`). */
const MARK_GROUP_AT_ONCE = 4;

/** A batch anchored on chain whose Anchored state is still to be written. */
export interface AnchoredMark {
  readonly batch: Batch;
  readonly reason: string;
  /** Adopted from the chain (anchored earlier) rather than anchored now. */
  readonly adopted: boolean;
  /** The batch's snapshots, read while the anchor was on its way. */
  readonly snapshots: Promise<Snapshot[]>;
  /** What the anchor transaction cost, when this process sent it and the chain adapter says. */
  readonly cost?: AnchorCost;
}

export interface AnchorCost {
  readonly gasUsed: number | null;
  readonly feeWei: string | null;
}

/** When the first record of these snapshots was accepted (each lists its ingest ids in order). */
function firstAcceptedAtMs(snapshots: readonly Snapshot[], fallback: number): number {
  let first = Number.POSITIVE_INFINITY;
  for (const s of snapshots) {
    const id = s.ingestIds[0];
    const at = id === undefined ? Number.NaN : ingestIdTimeMs(id);
    if (at < first) first = at;
  }
  return Number.isFinite(first) ? first : fallback;
}

/** Publishes a batch recorded Anchored (`batch` as written) and the move of its snapshots. */
export function publishAnchored(
  events: EventPublisher,
  batch: Batch,
  snapshots: readonly Snapshot[],
  how: { readonly epoch: number; readonly adopted: boolean; readonly reason: string; readonly cost?: AnchorCost | undefined },
): void {
  if (batch.batchSeq === null) return;
  events.publish({
    type: 'BatchAnchored',
    batchId: batch.batchId,
    batchSeq: batch.batchSeq,
    merkleRoot: batch.merkleRoot,
    txHash: batch.txHash,
    blockNumber: batch.blockNumber,
    records: batch.treeSize,
    snapshots: snapshots.length,
    createdAtMs: batch.createdAtMs,
    firstAcceptedAtMs: firstAcceptedAtMs(snapshots, batch.createdAtMs),
    anchoredAtMs: batch.anchoredAtMs ?? 0,
    epoch: how.epoch,
    adopted: how.adopted,
    gasUsed: how.cost?.gasUsed ?? null,
    feeWei: how.cost?.feeWei ?? null,
  });
  if (events.wants('SnapshotStateChanged')) events.publish({ type: 'SnapshotStateChanged', batchId: batch.batchId, state: 'Anchored', snapshots, reason: how.reason });
}

/** A batch as recorded once its root is on chain at `batchSeq` (anchored now, or adopted). */
export function anchoredBatch(
  batch: Batch,
  batchSeq: number,
  manifestCid: string | null,
  previous: Batch['previous'],
  tx: { readonly txHash: string | null; readonly blockNumber: number | null; readonly atSec: number },
  info: ChainInfo,
): Batch {
  return {
    ...batch,
    status: 'Anchored',
    batchSeq,
    manifestCid,
    previous,
    chainId: info.chainId,
    contractAddress: info.contractAddress,
    txHash: tx.txHash,
    blockNumber: tx.blockNumber,
    anchoredAtMs: tx.atSec * 1000,
    attempts: batch.attempts + 1,
    lastError: null,
  };
}

export class AnchoredMarks {
  private readonly marks: AnchoredMark[] = [];
  private readonly marking = new Set<string>();
  private writer: Promise<void> | null = null;
  /** Set while a write waits for more batches: starts it now. */
  private hurry: (() => void) | null = null;

  /**
   * `store()`: the store of the current term, read when a write starts; `onWriteFailed`: the
   * batches of a failed write are Pending in the store again.
   */
  constructor(
    private readonly store: () => PipelineStore,
    private readonly log: Logger,
    private readonly epoch: () => number,
    private readonly onWriteFailed: () => void,
    private readonly events: EventPublisher = NO_EVENTS,
    /** How long a write waits for more batches when fewer than MARK_GROUP_AT_ONCE are queued. */
    private readonly groupWaitMs = 0,
  ) {}

  /** Whether a batch's Anchored write is queued or under way: the store may still say Pending. */
  has(batchId: string): boolean {
    return this.marking.has(batchId);
  }

  /** The batches queued or being written now. */
  batchIds(): Set<string> {
    return new Set(this.marking);
  }

  /** Queues a batch's Anchored write; the caller goes on meanwhile. */
  push(mark: AnchoredMark): void {
    this.marks.push(mark);
    this.marking.add(mark.batch.batchId);
    this.startWriter();
  }

  private startWriter(): void {
    if (this.writer !== null) return;
    this.writer = this.write().finally(() => {
      this.writer = null;
      // A mark pushed after the write's last look at the queue, before this ran, is not left behind.
      if (this.marks.length > 0) this.startWriter();
    });
  }

  /** Resolves once every queued Anchored write has been made (or has failed); a write waiting for more starts now. */
  async flush(): Promise<void> {
    this.hurry?.();
    while (this.writer !== null) {
      await this.writer;
      this.hurry?.();
    }
  }

  /** Lets more batches join the next write, unless enough are queued or the wait is off. */
  private async gather(): Promise<void> {
    if (this.groupWaitMs <= 0 || this.marks.length >= MARK_GROUP_AT_ONCE) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, this.groupWaitMs);
      this.hurry = () => {
        clearTimeout(t);
        resolve();
      };
    });
    this.hurry = null;
  }

  /** Never throws: a failed write leaves the batches Pending, roots on chain, to be adopted. */
  private async write(): Promise<void> {
    await this.gather();
    while (this.marks.length > 0) {
      const group = this.marks.splice(0, MARK_GROUP);
      const store = this.store();
      try {
        const snapshots = await Promise.all(group.map((m) => m.snapshots));
        const at = Date.now();
        const changed: Snapshot[] = [];
        const entries: LifecycleEntry[] = [];
        for (const [i, m] of group.entries()) {
          for (const s of snapshots[i] ?? []) {
            changed.push({ ...s, status: 'Anchored', merkleRoot: m.batch.merkleRoot, anchorTimestampMs: m.batch.anchoredAtMs, onChainConfirmed: true, chainTxHash: m.batch.txHash });
            // Already Anchored: an earlier write stopped before the batch row (the commit marker),
            // maybe before its lifecycle entry too. Rare (a crash), so the lifecycle is read.
            const claimed = s.status === 'Anchored' && (await store.lifecycleOf(s.tenantId, s.snapshotId)).at(-1)?.state === 'Anchored';
            if (claimed) {
              // Adopted: the same anchor, already in the lifecycle. Anchored anew: the first
              // anchor left the chain (a node that lost state), as reconciliation would say.
              if (m.adopted) continue;
              entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at - 1, reason: REQUEUED_REASON, attempt: 0 });
            }
            entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Anchored', atMs: at, reason: m.reason, attempt: m.batch.attempts });
          }
        }
        await store.putSnapshots(changed, entries);
        await store.putBatches(group.map((m) => m.batch));
        const epoch = this.epoch();
        for (const [i, m] of group.entries()) {
          this.log.info({ batchId: m.batch.batchId, batchSeq: m.batch.batchSeq, txHash: m.batch.txHash, records: m.batch.treeSize, epoch }, 'batch anchored');
          publishAnchored(this.events, m.batch, snapshots[i] ?? [], { epoch, adopted: m.adopted, reason: m.reason, cost: m.cost });
        }
      } catch (err) {
        this.log.error({ err, batches: group.map((m) => m.batch.batchId) }, 'recording anchored batches failed; they will be adopted from the chain');
        this.onWriteFailed();
      } finally {
        for (const m of group) this.marking.delete(m.batch.batchId);
      }
    }
  }
}
