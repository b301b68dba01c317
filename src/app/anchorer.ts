import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import { buildManifest } from '../domain/pipeline/batch-formation.js';
import type { Chain, PipelineStore, Pinner } from '../domain/pipeline/ports.js';
import type { Batch, LifecycleEntry, Snapshot } from '../domain/pipeline/types.js';
import { componentLogger } from '../util/logger.js';

/**
 * The single active anchorer: takes formed batches in order, pins each manifest, commits each root
 * on-chain (one transaction per batch) and records the outcome. The contract's sequence check
 * (batchSeq == last + 1) is the fence: a stale leader's transaction is refused by the chain.
 *
 * Failures retry with exponential backoff: attempt k waits baseDelayMs * 2^(k-1), capped at
 * maxDelayMs; after maxAttempts the batch and its snapshots go to Failed, and only
 * POST /snapshots/{id}/retry sends them back.
 *
 * Reconciliation (every batch believed Anchored checked against the contract, missing ones sent
 * back to be anchored) runs inside the loop, never beside an anchor: at start, when the chain
 * reports a node restarted from an older state, and when the contract's sequence is found behind
 * the highest batchSeq recorded. Until it completes nothing new is anchored, so lost batches take
 * back their places in order and the manifests' previous links stay a chain.
 *
 * Throughput: the chain work of one batch (pin, simulate, send, confirm) is serial, but recording
 * a batch as Anchored (its snapshots, lifecycle and batch row) runs behind the loop, several
 * batches per write, while the next batch is already being anchored. The chain is the record: a
 * batch whose write is lost (a crash, a store error) stays Pending in the store with its root on
 * chain, and the next pass adopts it. Pending batches are read from the store a page at a time,
 * and the previous batch of a manifest is the one this loop anchored last.
 */

export interface AnchorerOptions {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Poll interval when no batch is waiting, milliseconds. */
  readonly idleMs: number;
}

/** Marks a batch sent back by POST /snapshots/{id}/retry until the anchorer takes it up. */
const RETRY_REQUESTED = 'retry_requested';

/** Pending batches read from the store at once. */
const PENDING_PAGE = 50;
/** Anchored batches recorded in one write. */
const MARK_GROUP = 16;

/** A batch anchored on chain whose Anchored state is still to be written. */
interface AnchoredMark {
  readonly batch: Batch;
  readonly reason: string;
  /** Adopted from the chain (anchored earlier) rather than anchored now. */
  readonly adopted: boolean;
  /** The batch's snapshots, read while the anchor was on its way. */
  readonly snapshots: Promise<Snapshot[]>;
}

/** Lifecycle reason of a snapshot sent back to be anchored because its anchor left the chain. */
const REQUEUED_REASON = 'anchor missing on-chain; re-queued';

export const DEFAULT_ANCHORER_OPTIONS: AnchorerOptions = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 1000 };

export class Anchorer {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly notBefore = new Map<string, number>();
  private readonly log = componentLogger('anchorer');
  /** A reconciliation is due before the next anchor. */
  private reconcileWanted = false;
  /** `recorded/onChain` sequences that last sent the loop to reconcile, so it does so once. */
  private behindMark: string | null = null;
  /** Pending batches read from the store, oldest first; reread when empty or stale. */
  private pending: Batch[] = [];
  private pendingStale = true;
  /** The batch anchored last (the next manifest's previous); undefined: read it from the store. */
  private lastAnchored: Batch | null | undefined = undefined;
  /** Anchored on chain, not yet written as Anchored. */
  private readonly marks: AnchoredMark[] = [];
  private readonly marking = new Set<string>();
  private marker: Promise<void> | null = null;
  /** The leadership term this loop runs in. */
  private epoch = 1;

  constructor(
    private readonly store: PipelineStore,
    private readonly pinner: Pinner,
    private readonly chain: Chain,
    private readonly hashing: HashingBackend,
    private readonly options: AnchorerOptions = DEFAULT_ANCHORER_OPTIONS,
  ) {
    chain.onReset?.(() => this.requestReconcile());
  }

  /** Nudges the loop (a batch was formed or retried). */
  notify(): void {
    this.wake?.();
  }

  /** Rereads pending batches before the next anchor (a batch was sent back by retry). */
  private invalidate(): void {
    this.pendingStale = true;
    this.notify();
  }

  /** Reconciles before the next anchor (the chain may have lost recent anchors). */
  requestReconcile(): void {
    this.reconcileWanted = true;
    this.notify();
  }

  /**
   * Starts the loop, for a term of leadership (`epoch`, for the logs). Restartable: whatever the
   * last term knew is forgotten, since another leader may have anchored meanwhile.
   */
  async start(epoch = 1): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.epoch = epoch;
    this.pending = [];
    this.pendingStale = true;
    this.lastAnchored = undefined;
    this.behindMark = null;
    this.notBefore.clear();
    // A chain that cannot be read now is reconciled by the loop as soon as it answers.
    this.reconcileWanted = !(await this.reconcile()).complete;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
    await this.flushMarks();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        if (this.reconcileWanted) {
          this.reconcileWanted = false;
          if (!(await this.reconcile()).complete) this.reconcileWanted = true;
        }
        if (!this.reconcileWanted) {
          const due = await this.nextDue();
          if (due !== null) {
            await this.anchorOne(due);
            worked = true;
          }
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
  }

  /** The oldest pending batch whose backoff has passed, from the page read last. */
  private async nextDue(): Promise<Batch | null> {
    if (this.pendingStale || this.pending.length === 0) {
      // Batches anchored whose Anchored write is queued read as Pending: not again. Taken before
      // the read, since a write that completes during it may or may not show in the page.
      const writing = new Set(this.marking);
      const page = await this.store.batchesByStatus('Pending', PENDING_PAGE);
      this.pending = page.filter((b) => !writing.has(b.batchId) && !this.marking.has(b.batchId));
      this.pendingStale = false;
    }
    const now = Date.now();
    const i = this.pending.findIndex((b) => (this.notBefore.get(b.batchId) ?? 0) <= now);
    if (i < 0) {
      // Only batches in backoff: reread next time, newer batches may have been formed.
      this.pendingStale = true;
      return null;
    }
    return this.pending.splice(i, 1)[0] ?? null;
  }

  /** The batch a new manifest names as previous: the last one anchored. */
  private async previousAnchored(): Promise<Batch | null> {
    if (this.lastAnchored === undefined) {
      await this.flushMarks();
      this.lastAnchored = await this.store.latestAnchoredBatch();
    }
    return this.lastAnchored;
  }

  private async anchorOne(batch: Batch): Promise<void> {
    const attempt = batch.attempts + 1;
    if (batch.lastError === RETRY_REQUESTED) {
      // A retried batch is taken up again: its snapshots are Batched once more.
      await this.transition(batch.batchId, 'Batched', `re-queued in batch ${batch.batchId}`, 0, (s) => ({ ...s, status: 'Batched' }));
      batch = { ...batch, lastError: null };
      await this.store.putBatch(batch);
    }
    try {
      // A crash after sending leaves the root on-chain and the batch Pending: adopt what the chain says.
      const onChain = await this.chain.anchorOf(batch.merkleRoot);
      if (onChain !== null) {
        const event = await this.chain.findAnchorEvent(batch.merkleRoot);
        this.markAnchored(batch, onChain.batchSeq, event?.manifestCid ?? batch.manifestCid, batch.previous, {
          txHash: event?.txHash ?? batch.txHash,
          blockNumber: event?.blockNumber ?? batch.blockNumber,
          atSec: onChain.anchoredAt,
        }, true);
        return;
      }
      const previousBatch = await this.previousAnchored();
      const lastOnChain = await this.chain.lastSequence();
      const recorded = previousBatch?.batchSeq ?? null;
      if (recorded !== null && recorded > lastOnChain) {
        // The contract is behind what was recorded Anchored: the node lost anchors (restored
        // from an older state, or a reorg). Anchoring now would take a lost batch's sequence.
        const mark = `${recorded}/${lastOnChain}`;
        if (this.behindMark !== mark) {
          this.behindMark = mark;
          this.log.warn({ recorded, onChain: lastOnChain }, 'the contract sequence is behind the recorded anchors; reconciling first');
          this.reconcileWanted = true;
          return;
        }
        // Reconciled already and still behind: a node whose reads disagree (a lagging replica).
        throw new DrisError('dependency_unavailable', 'the contract sequence stays behind the recorded anchors', { extra: { recorded, onChain: lastOnChain } });
      }
      this.behindMark = null;
      const previous = previousBatch === null || previousBatch.manifestCid === null ? null : { batchId: previousBatch.batchId, merkleRoot: previousBatch.merkleRoot, cid: previousBatch.manifestCid };
      const batchSeq = lastOnChain + 1;
      const manifest = buildManifest(batch, batchSeq, previous);
      const cid = await this.pinner.add(Buffer.from(this.hashing.canonicalize(manifest), 'utf8'));
      const snapshots = this.prefetchSnapshots(batch.batchId);
      const receipt = await this.chain.anchor({ batchSeq, merkleRoot: batch.merkleRoot, recordCount: batch.treeSize, batchId: batch.batchId, manifestCid: cid });
      this.markAnchored(batch, batchSeq, cid, previous, { txHash: receipt.txHash, blockNumber: receipt.blockNumber, atSec: receipt.blockTimestamp }, false, snapshots);
    } catch (err) {
      const e = toDrisError(err);
      this.log.warn({ batchId: batch.batchId, attempt, code: e.code, reason: e.extra['reason'] }, 'anchoring attempt failed');
      if (attempt >= this.options.maxAttempts) {
        await this.markFailed(batch, attempt, e);
        return;
      }
      const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
      this.notBefore.set(batch.batchId, Date.now() + delay);
      const failed: Batch = { ...batch, attempts: attempt, lastError: e.code };
      await this.store.putBatch(failed);
      // Back in its place, so the page need not be read again for it.
      this.pending.unshift(failed);
    }
  }

  /** Queues the Anchored write of a batch whose root is on chain; the loop goes on meanwhile. */
  private markAnchored(
    batch: Batch,
    batchSeq: number,
    manifestCid: string | null,
    previous: Batch['previous'],
    tx: { txHash: string | null; blockNumber: number | null; atSec: number },
    adopted: boolean,
    snapshots: Promise<Snapshot[]> = this.prefetchSnapshots(batch.batchId),
  ): void {
    const info = this.chain.info();
    const updated: Batch = {
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
    this.notBefore.delete(batch.batchId);
    const last = this.lastAnchored;
    if (last !== undefined && (last === null || (last.batchSeq ?? 0) < batchSeq)) this.lastAnchored = updated;
    this.marks.push({ batch: updated, reason: `root committed in batch ${batchSeq}`, adopted, snapshots });
    this.marking.add(batch.batchId);
    this.marker ??= this.writeMarks().finally(() => {
      this.marker = null;
    });
  }

  /**
   * Writes queued Anchored states, several batches at a time: one write of their snapshots and
   * lifecycle entries, then their batch rows (the batch row last, as everywhere). Never throws: a
   * failed write leaves the batches Pending in the store, roots on chain, and the next pass over
   * the pending batches adopts them from the chain.
   */
  private async writeMarks(): Promise<void> {
    while (this.marks.length > 0) {
      const group = this.marks.splice(0, MARK_GROUP);
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
            const claimed = s.status === 'Anchored' && (await this.store.lifecycleOf(s.tenantId, s.snapshotId)).at(-1)?.state === 'Anchored';
            if (claimed) {
              // Adopted: the same anchor, already in the lifecycle. Anchored anew: the first
              // anchor left the chain (a node that lost state), as reconciliation would say.
              if (m.adopted) continue;
              entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at - 1, reason: REQUEUED_REASON, attempt: 0 });
            }
            entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Anchored', atMs: at, reason: m.reason, attempt: m.batch.attempts });
          }
        }
        await this.store.putSnapshots(changed, entries);
        await Promise.all(group.map((m) => this.store.putBatch(m.batch)));
        for (const m of group) {
          this.log.info({ batchId: m.batch.batchId, batchSeq: m.batch.batchSeq, txHash: m.batch.txHash, records: m.batch.treeSize, epoch: this.epoch }, 'batch anchored');
        }
      } catch (err) {
        this.log.error({ err, batches: group.map((m) => m.batch.batchId) }, 'recording anchored batches failed; they will be adopted from the chain');
        this.pendingStale = true;
      } finally {
        for (const m of group) this.marking.delete(m.batch.batchId);
      }
    }
  }

  /** The snapshots of a batch, read now for an Anchored write to come; a failed read fails that write. */
  private prefetchSnapshots(batchId: string): Promise<Snapshot[]> {
    const read = this.store.snapshotsOfBatch(batchId);
    // Handled here so a batch whose anchor fails meanwhile leaves no unhandled rejection.
    read.catch(() => undefined);
    return read;
  }

  /** Resolves once every queued Anchored write has been made (or has failed). */
  private async flushMarks(): Promise<void> {
    while (this.marker !== null) await this.marker;
  }

  private async markFailed(batch: Batch, attempts: number, err: DrisError): Promise<void> {
    await this.transition(batch.batchId, 'Failed', `gave up after ${attempts} attempts: ${err.code}`, attempts, (s) => ({ ...s, status: 'Failed' }));
    await this.store.putBatch({ ...batch, status: 'Failed', attempts, lastError: err.code });
    this.notBefore.delete(batch.batchId);
    this.log.error({ batchId: batch.batchId, attempts, code: err.code }, 'batch failed');
  }

  private async transition(batchId: string, state: LifecycleEntry['state'], reason: string, attempt: number, change: (s: Snapshot) => Snapshot): Promise<void> {
    const snapshots = await this.store.snapshotsOfBatch(batchId);
    const at = Date.now();
    await this.store.putSnapshots(
      snapshots.map(change),
      snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state, atMs: at, reason, attempt })),
    );
  }

  /**
   * Moves a Failed snapshot's batch back to be anchored: every snapshot of the batch goes to
   * PendingAnchor and then Batched again (a batch is anchored as a whole).
   */
  async retry(tenantId: string, snapshotId: string): Promise<Snapshot> {
    const snap = await this.store.getSnapshot(tenantId, snapshotId);
    if (snap === null) throw new DrisError('not_found', 'no such snapshot');
    if (snap.status !== 'Failed') throw new DrisError('invalid_state', `the snapshot is ${snap.status}, not Failed`, { extra: { status: snap.status } });
    const batch = await this.store.getBatch(snap.batchId);
    if (batch === null) throw new DrisError('internal_error', 'snapshot without batch');
    const at = Date.now();
    const snapshots = await this.store.snapshotsOfBatch(batch.batchId);
    await this.store.putSnapshots(
      snapshots.map((s) => ({ ...s, status: 'PendingAnchor' })),
      snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'PendingAnchor', atMs: at, reason: 'retry requested', attempt: 0 })),
    );
    await this.store.putBatch({ ...batch, status: 'Pending', attempts: 0, lastError: RETRY_REQUESTED });
    this.notBefore.delete(batch.batchId);
    this.invalidate();
    return { ...snap, status: 'PendingAnchor' };
  }

  /**
   * Every batch believed Anchored is checked against the contract; one whose root is missing (a
   * chain that lost state, a reorg) goes back to be anchored again, and one the contract holds
   * under another sequence takes the contract's. Incomplete when the chain cannot be read: the
   * loop tries again.
   */
  async reconcile(): Promise<{ requeued: number; complete: boolean }> {
    let requeued = 0;
    await this.flushMarks();
    // Whatever reconciliation changes, the loop reads it back from the store.
    this.pendingStale = true;
    this.lastAnchored = undefined;
    const anchored = await this.store.batchesByStatus('Anchored', 10_000);
    for (const b of anchored) {
      let onChain;
      try {
        onChain = await this.chain.anchorOf(b.merkleRoot);
      } catch (err) {
        this.log.warn({ code: toDrisError(err).code, batchId: b.batchId }, 'reconciliation could not read the chain; will try again');
        return { requeued, complete: false };
      }
      if (onChain !== null) {
        if (onChain.batchSeq !== b.batchSeq) await this.adoptOnChain(b, onChain.batchSeq);
        continue;
      }
      requeued += 1;
      const at = Date.now();
      const snapshots = await this.store.snapshotsOfBatch(b.batchId);
      await this.store.putSnapshots(
        snapshots.map((s) => ({ ...s, status: 'Batched', onChainConfirmed: false, chainTxHash: null, anchorTimestampMs: null, merkleRoot: null })),
        snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at, reason: REQUEUED_REASON, attempt: 0 })),
      );
      await this.store.putBatch({ ...b, status: 'Pending', attempts: 0, batchSeq: null, txHash: null, blockNumber: null, anchoredAtMs: null, lastError: 'missing_on_chain' });
      this.notBefore.delete(b.batchId);
      this.log.warn({ batchId: b.batchId, batchSeq: b.batchSeq }, 'anchored batch missing on-chain; re-queued');
    }
    if (requeued > 0) this.log.warn({ requeued, checked: anchored.length }, 'reconciliation re-queued lost anchors');
    return { requeued, complete: true };
  }

  /** The contract holds the root under another sequence than recorded: the chain is the record. */
  private async adoptOnChain(b: Batch, batchSeq: number): Promise<void> {
    const event = await this.chain.findAnchorEvent(b.merkleRoot).catch(() => null);
    this.log.warn({ batchId: b.batchId, recorded: b.batchSeq, onChain: batchSeq }, 'anchored batch holds another sequence on-chain; adopted');
    await this.store.putBatch({
      ...b,
      batchSeq,
      txHash: event?.txHash ?? b.txHash,
      blockNumber: event?.blockNumber ?? b.blockNumber,
      manifestCid: event?.manifestCid ?? b.manifestCid,
    });
  }
}
