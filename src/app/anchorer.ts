import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import type { FormedBatch } from '../domain/pipeline/batch-formation.js';
import type { AnchorReceipt, Chain, PipelineStore, Pinner } from '../domain/pipeline/ports.js';
import type { Batch, Snapshot } from '../domain/pipeline/types.js';
import { componentLogger } from '../util/logger.js';
import { anchoredBatch, AnchoredMarks } from './anchor-marks.js';
import { AnchorReconciler, DEFAULT_RECONCILE_OPTIONS, sequenceCheck, type ReconcileOptions, type ReconcileResult } from './anchor-reconciler.js';
import { markBatchFailed, requeueFailedSnapshot, RETRY_REQUESTED, transitionSnapshots } from './anchor-transitions.js';
import { PreparedManifests } from './anchor-manifests.js';
import { PendingBatches } from './anchor-pending.js';

export { requeueFailedSnapshot } from './anchor-transitions.js';

/**
 * The single active anchorer: takes formed batches in order, pins each manifest, commits each root
 * on-chain (one transaction per batch) and records the outcome. The contract's sequence check
 * (batchSeq == last + 1) is the fence: a stale leader's transaction is refused by the chain.
 *
 * Failures retry with exponential backoff: attempt k waits baseDelayMs * 2^(k-1), capped at
 * maxDelayMs; after maxAttempts the batch and its snapshots go to Failed, and only
 * POST /snapshots/{id}/retry sends them back.
 *
 * Reconciliation (anchor-reconciler.ts: the store's anchored batches held against the contract,
 * newest first, lost ones sent back, Failed ones found on chain recorded Anchored) runs inside the
 * loop, never beside an anchor: at start, when the chain reports a node restarted from an older
 * state, when the contract's sequence is found behind (or ahead of) the highest batchSeq recorded,
 * and every `reconcileIntervalMs`. Until it completes nothing new is anchored, so lost batches take
 * back their places in order and the manifests' previous links stay a chain.
 *
 * Every write goes through the store of the current term (`start(epoch, store)`), fenced by its
 * epoch: a stale leader's late writes never replace its successor's rows.
 *
 * Throughput: nothing waits on a confirmation it does not need.
 * - Up to WINDOW anchors are on their way at once: each takes the sequence after the one sent
 *   before it and names that batch as previous, as if it succeeds; the chain adapter sends them
 *   in order and each awaits its own confirmations. They are settled in order. When one fails,
 *   those sent after it are awaited too: one that stands on chain all the same is kept, the others
 *   go back in their places without an attempt counted against them.
 * - The contract's sequence is read for the first anchor of a window that starts empty after a
 *   failure (or a start, or a reconciliation), and followed from there; each anchor's simulation
 *   still checks it before anything is spent.
 * - Batches formed in this term are handed over by the accumulator with their snapshots
 *   (`enqueue`), so the loop reads the store only for older work (a restart, a retry, a failure);
 *   such a batch is known not to be on chain, so the adoption check is skipped for its first try.
 * - Manifests are built and pinned ahead, for the batches due next (their CIDs follow one from
 *   another; the pins run side by side). After a failure they are built again, and those pinned
 *   ahead stay unused in the block store.
 * - Recording a batch as Anchored (its snapshots, lifecycle and batch row) runs behind the loop,
 *   several batches per write (anchor-marks.ts).
 * Pending batches are read from the store a page at a time, and the previous batch of a manifest
 * is the one sent last.
 */

export interface AnchorerOptions {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Poll interval when no batch is waiting, milliseconds. */
  readonly idleMs: number;
  /** A reconciliation runs at least this often, milliseconds (Failed anchors mined late are found then). */
  readonly reconcileIntervalMs?: number;
  readonly reconcile?: ReconcileOptions;
}

/** Batches after the current one whose manifests are pinned while it is anchored. */
const PIN_AHEAD = 8;

/** Anchors sent before the oldest one is confirmed. */
const WINDOW = 4;

/** An anchor sent: its transaction is on its way or awaiting its confirmations. */
interface InFlight {
  readonly batch: Batch;
  readonly attempt: number;
  readonly batchSeq: number;
  readonly previous: Batch['previous'];
  readonly cid: string;
  readonly snapshots: Promise<Snapshot[]>;
  readonly receipt: Promise<AnchorReceipt>;
}

export const DEFAULT_ANCHORER_OPTIONS: AnchorerOptions = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 1000, reconcileIntervalMs: 300_000 };

export class Anchorer {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly log = componentLogger('anchorer');
  /** A reconciliation is due before the next anchor. */
  private reconcileWanted = false;
  /** The sequences that last sent the loop to reconcile (`sequenceCheck`), so it does so once. */
  private sequenceMark: string | null = null;
  private lastReconcileAtMs = 0;
  /** Pending batches, oldest first: read from the store, or handed over by the accumulator. */
  private readonly pending: PendingBatches;
  /** The sequence the next anchor takes, followed from the last one sent; null: read it from the contract. */
  private nextSeq: number | null = null;
  /** What the next manifest names as previous: the batch sent last (with `nextSeq`). */
  private nextPrevious: Batch['previous'] = null;
  /** Anchors sent and not yet settled, oldest first. */
  private inflight: InFlight[] = [];
  /** Manifests built (and being pinned) for the batch being anchored and the next ones. */
  private readonly prepared: PreparedManifests;
  /** The batch anchored last (the next manifest's previous); undefined: read it from the store. */
  private lastAnchored: Batch | null | undefined = undefined;
  /** Anchored on chain, not yet written as Anchored. */
  private readonly marks: AnchoredMarks;
  private readonly reconciler: AnchorReconciler;
  /** The leadership term this loop runs in. */
  private epoch = 1;
  /** The store of the term: its writes carry the term's epoch. */
  private store: PipelineStore;

  /** `store`: the store not fenced, for retries; each term brings its own (`start`). */
  constructor(
    private readonly baseStore: PipelineStore,
    private readonly pinner: Pinner,
    private readonly chain: Chain,
    private readonly hashing: HashingBackend,
    private readonly options: AnchorerOptions = DEFAULT_ANCHORER_OPTIONS,
  ) {
    this.store = baseStore;
    this.prepared = new PreparedManifests(pinner, hashing);
    this.marks = new AnchoredMarks(
      () => this.store,
      this.log,
      () => this.epoch,
      () => this.pending.markStale(),
    );
    this.pending = new PendingBatches(
      () => this.store,
      (id) => this.taken(id),
      () => this.marks.batchIds(),
      options.idleMs,
    );
    this.reconciler = new AnchorReconciler(chain, pinner, this.log, options.reconcile ?? DEFAULT_RECONCILE_OPTIONS);
    chain.onReset?.(() => this.requestReconcile());
  }

  /** Nudges the loop (a batch was formed or retried). */
  notify(): void {
    this.wake?.();
  }

  /** Batches the accumulator formed and stored in this term, in stream order. */
  enqueue(formed: readonly FormedBatch[]): void {
    if (!this.running) return;
    for (const f of formed) {
      this.pending.handOver(f.batch, f.snapshots);
    }
    this.notify();
  }

  /** Sent and not settled, or anchored and not yet recorded so: the store still says Pending. */
  private taken(batchId: string): boolean {
    return this.marks.has(batchId) || this.inflight.some((f) => f.batch.batchId === batchId);
  }

  /** Rereads pending batches before the next anchor (a batch was sent back by retry). */
  private invalidate(): void {
    this.pending.markStale();
    this.notify();
  }

  /** Reconciles before the next anchor (the chain may have lost recent anchors). */
  requestReconcile(): void {
    this.reconcileWanted = true;
    this.notify();
  }

  /**
   * Starts the loop, for a term of leadership: `epoch` and the store fenced by it (by default the
   * store given at construction, fenced by `epoch`). Restartable: whatever the last term knew is
   * forgotten, since another leader may have anchored meanwhile.
   */
  async start(epoch = 1, store: PipelineStore = this.baseStore.fenced(epoch)): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.epoch = epoch;
    this.store = store;
    this.pending.reset();
    this.nextSeq = null;
    this.nextPrevious = null;
    this.inflight = [];
    this.prepared.clear();
    this.lastAnchored = undefined;
    this.sequenceMark = null;
    // A chain that cannot be read now is reconciled by the loop as soon as it answers.
    this.reconcileWanted = !(await this.reconcile()).complete;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
    await this.marks.flush();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        const interval = this.options.reconcileIntervalMs;
        if (interval !== undefined && interval > 0 && Date.now() - this.lastReconcileAtMs >= interval) this.reconcileWanted = true;
        // Reconciliation, and a sequence read from the contract, wait for the window to empty.
        if (this.reconcileWanted && this.inflight.length === 0) {
          this.reconcileWanted = false;
          const r = await this.reconcile();
          if (!r.complete) {
            this.reconcileWanted = true;
            // Out of time with work left: the next pass follows at once; a chain down waits.
            worked = r.checked > 0;
          }
        }
        while (!this.reconcileWanted && this.running && this.inflight.length < WINDOW && (this.nextSeq !== null || this.inflight.length === 0)) {
          const due = await this.pending.next();
          if (due === null) break;
          await this.send(due);
          worked = true;
        }
        if (this.inflight.length > 0) {
          await this.settleOldest();
          worked = true;
        }
      } catch (err) {
        this.log.error({ err }, 'anchoring loop error');
      }
      if (!worked && this.running) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.options.idleMs);
          t.unref();
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = null;
      }
    }
    while (this.inflight.length > 0) await this.settleOldest().catch((err: unknown) => this.log.error({ err }, 'anchoring loop error'));
  }

  /** The batch a new manifest names as previous: the last one anchored. */
  private async previousAnchored(): Promise<Batch | null> {
    if (this.lastAnchored === undefined) {
      await this.marks.flush();
      this.lastAnchored = await this.store.latestAnchoredBatch();
    }
    return this.lastAnchored;
  }

  /**
   * Takes a batch up: adopts it when its root is already on chain, else sends its anchor with the
   * next sequence (after the anchors in the window, as if they succeed) and adds it to the window.
   */
  private async send(batch: Batch): Promise<void> {
    const attempt = batch.attempts + 1;
    if (batch.lastError === RETRY_REQUESTED) {
      // A retried batch is taken up again: its snapshots are Batched once more.
      await transitionSnapshots(this.store, batch.batchId, 'Batched', `re-queued in batch ${batch.batchId}`, 0);
      batch = { ...batch, lastError: null };
      await this.store.putBatch(batch);
    }
    // Its first try only: once tried, a transaction of it may be on chain.
    const fresh = this.pending.takeFresh(batch.batchId);
    try {
      if (!fresh) {
        // A crash after sending leaves the root on-chain and the batch Pending: adopt what the chain says.
        const onChain = await this.chain.anchorOf(batch.merkleRoot);
        if (onChain !== null) {
          this.nextSeq = null;
          const event = await this.chain.findAnchorEvent(batch.merkleRoot);
          this.markAnchored(batch, onChain.batchSeq, event?.manifestCid ?? batch.manifestCid, batch.previous, {
            txHash: event?.txHash ?? batch.txHash,
            blockNumber: event?.blockNumber ?? batch.blockNumber,
            atSec: onChain.anchoredAt,
          }, true);
          return;
        }
      }
      let batchSeq = this.nextSeq;
      let previous = this.nextPrevious;
      if (batchSeq === null) {
        // The window is empty here: the last batch anchored is the previous one.
        const previousBatch = await this.previousAnchored();
        const lastOnChain = await this.chain.lastSequence();
        const recorded = previousBatch?.batchSeq ?? null;
        const check = sequenceCheck(recorded, lastOnChain, this.sequenceMark);
        this.sequenceMark = check.mark;
        if (check.action === 'reconcile') {
          this.log.warn({ recorded, onChain: lastOnChain }, `the contract sequence is ${check.why} the recorded anchors; reconciling first`);
          this.reconcileWanted = true;
          // Nothing was sent: read back after the reconciliation, it is still a first try.
          if (fresh) this.pending.keepFresh(batch.batchId);
          return;
        }
        if (check.action === 'refuse') {
          // Reconciled already and still behind: a node whose reads disagree (a lagging replica).
          throw new DrisError('dependency_unavailable', 'the contract sequence stays behind the recorded anchors', { extra: { recorded, onChain: lastOnChain } });
        }
        batchSeq = lastOnChain + 1;
        previous = previousBatch === null || previousBatch.manifestCid === null ? null : { batchId: previousBatch.batchId, merkleRoot: previousBatch.merkleRoot, cid: previousBatch.manifestCid };
      }
      const manifest = await this.prepared.prepare(batch, batchSeq, previous);
      await this.prepared.prepareAhead(batch, batchSeq, manifest.cid, this.pending.dueAhead(PIN_AHEAD));
      const snapshots = this.pending.snapshotsOf(batch.batchId);
      await manifest.pinned;
      const receipt = this.chain.anchor({ batchSeq, merkleRoot: batch.merkleRoot, recordCount: batch.treeSize, batchId: batch.batchId, manifestCid: manifest.cid });
      // Settled in order by settleOldest; until then a rejection is not unhandled.
      receipt.catch(() => undefined);
      this.inflight.push({ batch, attempt, batchSeq, previous, cid: manifest.cid, snapshots, receipt });
      this.nextSeq = batchSeq + 1;
      this.nextPrevious = { batchId: batch.batchId, merkleRoot: batch.merkleRoot, cid: manifest.cid };
    } catch (err) {
      const back = await this.attemptFailed(batch, attempt, err);
      // Back in its place, so the page need not be read again for it.
      if (back !== null) this.pending.putBack([back]);
    }
  }

  /**
   * Waits for the oldest anchor of the window. When it fails, the ones sent after it assumed its
   * sequence and named it as previous: each is awaited too, kept if it stands on chain all the
   * same, otherwise put back in its place without counting an attempt against it.
   */
  private async settleOldest(): Promise<void> {
    const f = this.inflight.shift();
    if (f === undefined) return;
    try {
      const r = await f.receipt;
      this.markAnchored(f.batch, f.batchSeq, f.cid, f.previous, { txHash: r.txHash, blockNumber: r.blockNumber, atSec: r.blockTimestamp }, false, f.snapshots);
      return;
    } catch (err) {
      const after = this.inflight.splice(0);
      const failed = await this.attemptFailed(f.batch, f.attempt, err);
      const back: Batch[] = failed === null ? [] : [failed];
      for (const g of after) {
        try {
          const r = await g.receipt;
          this.markAnchored(g.batch, g.batchSeq, g.cid, g.previous, { txHash: r.txHash, blockNumber: r.blockNumber, atSec: r.blockTimestamp }, false, g.snapshots);
        } catch (e) {
          this.log.info({ batchId: g.batch.batchId, code: toDrisError(e).code }, 'anchor sent after a failed one did not stand; taken up again');
          back.push(g.batch);
        }
      }
      // In their places: before anything not sent yet, the failed one first (in its backoff).
      this.pending.putBack(back);
    }
  }

  /**
   * Counts a failed attempt: the batch backs off and is returned, to be put back among the pending
   * ones; past the attempts allowed it Fails (null).
   */
  private async attemptFailed(batch: Batch, attempt: number, err: unknown): Promise<Batch | null> {
    // Whatever failed, the contract is asked again before the next anchor, and the manifests
    // prepared after this one named it as previous.
    this.nextSeq = null;
    this.nextPrevious = null;
    this.prepared.clear();
    const e = toDrisError(err);
    this.log.warn({ batchId: batch.batchId, attempt, code: e.code, reason: e.extra['reason'] }, 'anchoring attempt failed');
    if (attempt >= this.options.maxAttempts) {
      await this.markFailed(batch, attempt, e);
      return null;
    }
    const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    this.pending.backOff(batch.batchId, Date.now() + delay);
    const failed: Batch = { ...batch, attempts: attempt, lastError: e.code };
    await this.store.putBatch(failed);
    return failed;
  }

  /** Queues the Anchored write of a batch whose root is on chain; the loop goes on meanwhile. */
  private markAnchored(
    batch: Batch,
    batchSeq: number,
    manifestCid: string | null,
    previous: Batch['previous'],
    tx: { txHash: string | null; blockNumber: number | null; atSec: number },
    adopted: boolean,
    snapshots: Promise<Snapshot[]> = this.pending.snapshotsOf(batch.batchId),
  ): void {
    const updated = anchoredBatch(batch, batchSeq, manifestCid, previous, tx, this.chain.info());
    this.pending.settled(batch.batchId);
    this.prepared.delete(batch.batchId);
    const last = this.lastAnchored;
    if (last !== undefined && (last === null || (last.batchSeq ?? 0) < batchSeq)) this.lastAnchored = updated;
    this.marks.push({ batch: updated, reason: `root committed in batch ${batchSeq}`, adopted, snapshots });
  }

  private async markFailed(batch: Batch, attempts: number, err: DrisError): Promise<void> {
    await markBatchFailed(this.store, batch, attempts, err.code);
    this.pending.settled(batch.batchId);
    this.log.error({ batchId: batch.batchId, attempts, code: err.code }, 'batch failed');
  }

  /**
   * Moves a Failed snapshot's batch back to be anchored (`requeueFailedSnapshot`) and takes it up
   * at once rather than at the next read of the store.
   */
  async retry(tenantId: string, snapshotId: string): Promise<Snapshot> {
    const { snapshot, batchId } = await requeueFailedSnapshot(this.baseStore, tenantId, snapshotId);
    this.pending.clearBackoff(batchId);
    this.invalidate();
    return snapshot;
  }

  /**
   * One reconciliation pass (anchor-reconciler.ts) through the term's store; incomplete when the
   * chain cannot be read or the pass ran out of time, and the loop runs another.
   */
  async reconcile(): Promise<ReconcileResult> {
    await this.marks.flush();
    // Whatever reconciliation changes, the loop reads it back from the store.
    this.pending.markStale();
    this.lastAnchored = undefined;
    this.nextSeq = null;
    this.nextPrevious = null;
    this.prepared.clear();
    this.lastReconcileAtMs = Date.now();
    return this.reconciler.run(this.store, () => !this.running);
  }
}
