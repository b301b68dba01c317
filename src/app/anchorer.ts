import { toDrisError, type DrisError } from '../errors/dris-error.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import type { AnchorReceipt, Chain, PipelineStore, Pinner } from '../domain/pipeline/ports.js';
import type { Batch, Snapshot } from '../domain/pipeline/types.js';
import { componentLogger, type Logger } from '../util/logger.js';
import { abandonedAnchor, anchorFoundOnChain, firstSlot } from './anchor-chain-reads.js';
import { anchoredBatch, AnchoredMarks, type AnchorCost } from './anchor-marks.js';
import { AnchorReconciler, DEFAULT_RECONCILE_OPTIONS, type ReconcileResult } from './anchor-reconciler.js';
import { markBatchFailed, requeueFailedSnapshot, RETRY_REQUESTED, transitionSnapshots } from './anchor-transitions.js';
import { PreparedManifests } from './anchor-manifests.js';
import { PendingBatches } from './anchor-pending.js';
import { AnchorWindow, type InFlight } from './anchor-window.js';
import { DEFAULT_ANCHORER_OPTIONS, FEED_CAPACITY, PIN_AHEAD, type AnchorerDeps, type AnchorerOptions } from './anchorer-options.js';
import { NO_EVENTS, type EventPublisher, type EventSource, type EventSubscription, type FormedBatchRef } from './events.js';

export { requeueFailedSnapshot } from './anchor-transitions.js';
export { DEFAULT_ANCHORER_OPTIONS, type AnchorerDeps, type AnchorerOptions } from './anchorer-options.js';

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
 * Blocks lost (Chain.onReset): the adapter abandons the window's anchors at once, they go back
 * uncounted, and a reconciliation comes first. A term that ends gives its anchors up (none is sent
 * again; those mined are recorded, the others left to the next term). docs/operations.md.
 *
 * Every write goes through the store of the current term (`start(epoch, store)`), fenced by its
 * epoch: a stale leader's late writes never replace its successor's rows.
 *
 * Throughput (docs/architecture.md, "Pipeline throughput"): nothing waits on a confirmation it
 * does not need. Up to four anchors are on their way at once (anchor-window.ts), each on the
 * sequence after the one sent before it, settled in order; the contract's sequence is read only
 * for a window that starts empty. Manifests of the batches due next are pinned ahead. Anchored is
 * recorded behind the loop, several batches per write (anchor-marks.ts).
 *
 * Batches formed in this term reach the loop with their snapshots through the BatchFormed event
 * (or `enqueue`), so it reads the store only for older work (a restart, a retry, a failure); such
 * a batch is known not to be on chain, and skips the adoption check on its first try. The store
 * stays the record: a BatchFormed lost (the feed's queue was full) only sends the loop to read the
 * pending batches from the store again, in order.
 */

export class Anchorer {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly log: Logger;
  private readonly events: EventPublisher & Partial<EventSource>;
  /** The BatchFormed feed of the current term. */
  private feed: EventSubscription | null = null;
  /** A reconciliation is due before the next anchor. */
  private reconcileWanted = false;
  /** The sequences that last sent the loop to reconcile (`sequenceCheck`), so it does so once. */
  private sequenceMark: string | null = null;
  private lastReconcileAtMs = 0;
  /** Pending batches, oldest first: read from the store, or handed over by the accumulator. */
  private readonly pending: PendingBatches;
  /** Anchors sent and not yet settled, and the sequence the next one takes. */
  private readonly window = new AnchorWindow();
  /** Manifests built (and being pinned) for the batch being anchored and the next ones. */
  private readonly prepared: PreparedManifests;
  /** The batch anchored last (the next manifest's previous); undefined: read it from the store. */
  private lastAnchored: Batch | null | undefined = undefined;
  /** Anchored on chain, not yet written as Anchored. */
  private readonly marks: AnchoredMarks;
  private readonly reconciler: AnchorReconciler;
  /** The leadership term this loop runs in. */
  private epoch = 1;
  /** Aborted when the term ends: its anchors are given up (AnchorOptions.signal). */
  private termAbort = new AbortController();
  /** The store of the term: its writes carry the term's epoch. */
  private store: PipelineStore;

  /** `store`: the store not fenced, for retries; each term brings its own (`start`). */
  constructor(
    private readonly baseStore: PipelineStore,
    private readonly pinner: Pinner,
    private readonly chain: Chain,
    private readonly hashing: HashingBackend,
    private readonly options: AnchorerOptions = DEFAULT_ANCHORER_OPTIONS,
    deps: AnchorerDeps = {},
  ) {
    this.log = deps.logger ?? componentLogger('anchorer');
    this.events = deps.events ?? NO_EVENTS;
    this.store = baseStore;
    this.prepared = new PreparedManifests(pinner, hashing);
    this.marks = new AnchoredMarks(() => this.store, this.log, () => this.epoch, () => this.pending.markStale(), this.events, options.markGroupWaitMs ?? 0);
    this.pending = new PendingBatches(() => this.store, (id) => this.taken(id), () => this.marks.batchIds(), options.idleMs);
    this.reconciler = new AnchorReconciler(chain, pinner, this.log, options.reconcile ?? DEFAULT_RECONCILE_OPTIONS, this.events);
    chain.onReset?.(() => this.chainWentBack());
  }

  /** Nudges the loop (a batch was formed or retried). */
  notify(): void {
    this.wake?.();
  }

  /** Batches the accumulator formed and stored in this term, in stream order (BatchFormed). */
  enqueue(formed: readonly FormedBatchRef[]): void {
    if (!this.running) return;
    for (const f of formed) {
      this.pending.handOver(f.batch, f.snapshots);
    }
    this.notify();
  }

  /** Sent and not settled, or anchored and not yet recorded so: the store still says Pending. */
  private taken(batchId: string): boolean {
    return this.marks.has(batchId) || this.window.has(batchId);
  }

  /** Rereads pending batches before the next anchor (a batch was sent back by retry). */
  private invalidate(): void {
    this.pending.markStale();
    this.notify();
  }

  /** The chain lost blocks: a reconciliation comes first, and then the contract's sequence. */
  private chainWentBack(): void {
    this.window.forgetSequence();
    this.requestReconcile();
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
    this.termAbort = new AbortController();
    this.epoch = epoch;
    this.store = store;
    this.pending.reset();
    this.window.clear();
    this.prepared.clear();
    this.lastAnchored = undefined;
    this.sequenceMark = null;
    // Before the first read of the store: a batch formed from now on is either handed over or read.
    this.feed =
      this.events.subscribe?.({ name: 'anchorer', types: ['BatchFormed'], capacity: FEED_CAPACITY, onLoss: () => this.invalidate() }, (e) => this.enqueue(e.batches)) ?? null;
    // A chain that cannot be read now is reconciled by the loop as soon as it answers.
    this.reconcileWanted = !(await this.reconcile()).complete;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    // Before the loop is awaited: it ends with the window, whose anchors are given up now.
    this.termAbort.abort();
    this.feed?.unsubscribe();
    this.feed = null;
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
        if (this.reconcileWanted && this.window.empty) {
          this.reconcileWanted = false;
          const r = await this.reconcile();
          if (!r.complete) {
            this.reconcileWanted = true;
            // Out of time with work left: the next pass follows at once; a chain down waits.
            worked = r.checked > 0;
          }
        }
        while (!this.reconcileWanted && this.running && this.window.open) {
          const due = await this.pending.next();
          if (due === null) break;
          await this.send(due);
          worked = true;
        }
        if (!this.window.empty) {
          await this.settleOldest();
          worked = true;
        }
      } catch (err) {
        this.log.error({ err }, 'anchoring loop error');
      }
      if (!worked && this.running) await this.idle();
    }
    // The term is over: those mined are recorded, the others are the next term's, uncounted.
    await this.window.drain((f, r) => this.confirmed(f, r), this.log).catch((err: unknown) => this.log.error({ err }, 'anchoring loop error'));
  }

  /** Waits `idleMs`, or until nudged (`notify`). */
  private async idle(): Promise<void> {
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
      await transitionSnapshots(this.store, batch.batchId, 'Batched', `re-queued in batch ${batch.batchId}`, 0, this.events);
      batch = { ...batch, lastError: null };
      await this.store.putBatch(batch);
    }
    // Its first try only: once tried, a transaction of it may be on chain.
    const fresh = this.pending.takeFresh(batch.batchId);
    try {
      if (!fresh) {
        const found = await anchorFoundOnChain(this.chain, batch);
        if (found !== null) {
          this.window.forgetSequence();
          this.markAnchored(batch, found.batchSeq, found.manifestCid, batch.previous, found.tx, true);
          return;
        }
      }
      let slot = this.window.next();
      if (slot === null) {
        // The window is empty here: the last batch anchored is the previous one.
        const first = await firstSlot(this.chain, await this.previousAnchored(), this.sequenceMark, this.log);
        this.sequenceMark = first.mark;
        if (first.action === 'reconcile') {
          this.reconcileWanted = true;
          // Nothing was sent: read back after the reconciliation, it is still a first try.
          if (fresh) this.pending.keepFresh(batch.batchId);
          return;
        }
        slot = first;
      }
      const { batchSeq, previous } = slot;
      const manifest = await this.prepared.prepare(batch, batchSeq, previous);
      await this.prepared.prepareAhead(batch, batchSeq, manifest.cid, this.pending.dueAhead(PIN_AHEAD));
      const snapshots = this.pending.snapshotsOf(batch.batchId);
      await manifest.pinned;
      const receipt = this.chain.anchor(
        { batchSeq, merkleRoot: batch.merkleRoot, recordCount: batch.treeSize, batchId: batch.batchId, manifestCid: manifest.cid },
        { signal: this.termAbort.signal },
      );
      // Settled in order by settleOldest; until then a rejection is not unhandled.
      receipt.catch(() => undefined);
      this.window.sent({ batch, attempt, batchSeq, previous, cid: manifest.cid, snapshots, receipt });
      this.events.publish({ type: 'AnchorSubmitted', batchId: batch.batchId, batchSeq, attempt, epoch: this.epoch });
    } catch (err) {
      const back = await this.attemptFailed(batch, attempt, err);
      // Back in its place, so the page need not be read again for it.
      if (back !== null) this.pending.putBack([back]);
    }
  }

  /** Settles the oldest anchor of the window (anchor-window.ts); what did not stand goes back in its place. */
  private async settleOldest(): Promise<void> {
    const back = await this.window.settleOldest(
      (f, r) => this.confirmed(f, r),
      (f, err) => {
        const why = abandonedAnchor(err);
        return why === null ? this.attemptFailed(f.batch, f.attempt, err) : this.abandoned(f.batch, why);
      },
      this.log,
    );
    // Before anything not sent yet, the failed one first (in its backoff).
    if (back.length > 0) this.pending.putBack(back);
  }

  private confirmed(f: InFlight, r: AnchorReceipt): void {
    const cost: AnchorCost = { gasUsed: r.gasUsed ?? null, feeWei: r.feeWei ?? null };
    this.markAnchored(f.batch, f.batchSeq, f.cid, f.previous, { txHash: r.txHash, blockNumber: r.blockNumber, atSec: r.blockTimestamp }, false, f.snapshots, cost);
  }

  /** An anchor the chain adapter gave up: not a failure of its batch, back in its place uncounted. */
  private abandoned(batch: Batch, why: 'chain_rewound' | 'abandoned'): Promise<Batch> {
    this.prepared.clear();
    if (why === 'chain_rewound') this.chainWentBack();
    else this.window.forgetSequence();
    this.log.info({ batchId: batch.batchId, reason: why }, 'anchor abandoned by the chain adapter; taken up again');
    return Promise.resolve(batch);
  }

  /**
   * Counts a failed attempt: the batch backs off and is returned, to be put back among the pending
   * ones; past the attempts allowed it Fails (null).
   */
  private async attemptFailed(batch: Batch, attempt: number, err: unknown): Promise<Batch | null> {
    // Whatever failed, the contract is asked again before the next anchor, and the manifests
    // prepared after this one named it as previous.
    this.window.forgetSequence();
    this.prepared.clear();
    const e = toDrisError(err);
    this.log.warn({ batchId: batch.batchId, attempt, code: e.code, reason: e.extra['reason'] }, 'anchoring attempt failed');
    const willRetry = attempt < this.options.maxAttempts;
    this.events.publish({ type: 'AnchorAttemptFailed', batchId: batch.batchId, attempt, code: e.code, willRetry });
    if (!willRetry) {
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
    cost?: AnchorCost,
  ): void {
    const updated = anchoredBatch(batch, batchSeq, manifestCid, previous, tx, this.chain.info());
    this.pending.settled(batch.batchId);
    this.prepared.delete(batch.batchId);
    const last = this.lastAnchored;
    if (last !== undefined && (last === null || (last.batchSeq ?? 0) < batchSeq)) this.lastAnchored = updated;
    this.marks.push({ batch: updated, reason: `root committed in batch ${batchSeq}`, adopted, snapshots, ...(cost === undefined ? {} : { cost }) });
  }

  private async markFailed(batch: Batch, attempts: number, err: DrisError): Promise<void> {
    await markBatchFailed(this.store, batch, attempts, err.code, this.events);
    this.pending.settled(batch.batchId);
    this.log.error({ batchId: batch.batchId, attempts, code: err.code }, 'batch failed');
  }

  /**
   * Moves a Failed snapshot's batch back to be anchored (`requeueFailedSnapshot`) and takes it up
   * at once rather than at the next read of the store.
   */
  async retry(tenantId: string, snapshotId: string): Promise<Snapshot> {
    const { snapshot, batchId } = await requeueFailedSnapshot(this.baseStore, tenantId, snapshotId, this.events);
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
    this.window.forgetSequence();
    this.prepared.clear();
    this.lastReconcileAtMs = Date.now();
    return this.reconciler.run(this.store, () => !this.running, this.epoch);
  }
}
