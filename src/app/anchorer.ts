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

export const DEFAULT_ANCHORER_OPTIONS: AnchorerOptions = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 1000 };

export class Anchorer {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly notBefore = new Map<string, number>();
  private readonly log = componentLogger('anchorer');

  constructor(
    private readonly store: PipelineStore,
    private readonly pinner: Pinner,
    private readonly chain: Chain,
    private readonly hashing: HashingBackend,
    private readonly options: AnchorerOptions = DEFAULT_ANCHORER_OPTIONS,
  ) {}

  /** Nudges the loop (a batch was formed or retried). */
  notify(): void {
    this.wake?.();
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    await this.reconcile();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        const pending = await this.store.batchesByStatus('Pending', 50);
        const now = Date.now();
        const due = pending.filter((b) => (this.notBefore.get(b.batchId) ?? 0) <= now);
        if (due[0] !== undefined) {
          await this.anchorOne(due[0]);
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
        await this.markAnchored(batch, onChain.batchSeq, event?.manifestCid ?? batch.manifestCid, batch.previous, {
          txHash: event?.txHash ?? batch.txHash,
          blockNumber: event?.blockNumber ?? batch.blockNumber,
          atSec: onChain.anchoredAt,
        });
        return;
      }
      const previousBatch = await this.store.latestAnchoredBatch();
      const previous = previousBatch === null || previousBatch.manifestCid === null ? null : { batchId: previousBatch.batchId, merkleRoot: previousBatch.merkleRoot, cid: previousBatch.manifestCid };
      const batchSeq = (await this.chain.lastSequence()) + 1;
      const manifest = buildManifest(batch, batchSeq, previous);
      const cid = await this.pinner.add(Buffer.from(this.hashing.canonicalize(manifest), 'utf8'));
      const receipt = await this.chain.anchor({ batchSeq, merkleRoot: batch.merkleRoot, recordCount: batch.treeSize, batchId: batch.batchId, manifestCid: cid });
      await this.markAnchored(batch, batchSeq, cid, previous, { txHash: receipt.txHash, blockNumber: receipt.blockNumber, atSec: receipt.blockTimestamp });
    } catch (err) {
      const e = toDrisError(err);
      this.log.warn({ batchId: batch.batchId, attempt, code: e.code, reason: e.extra['reason'] }, 'anchoring attempt failed');
      if (attempt >= this.options.maxAttempts) {
        await this.markFailed(batch, attempt, e);
        return;
      }
      const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
      this.notBefore.set(batch.batchId, Date.now() + delay);
      await this.store.putBatch({ ...batch, attempts: attempt, lastError: e.code });
    }
  }

  private async markAnchored(
    batch: Batch,
    batchSeq: number,
    manifestCid: string | null,
    previous: Batch['previous'],
    tx: { txHash: string | null; blockNumber: number | null; atSec: number },
  ): Promise<void> {
    const info = this.chain.info();
    const anchoredAtMs = tx.atSec * 1000;
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
      anchoredAtMs,
      attempts: batch.attempts + 1,
      lastError: null,
    };
    await this.transition(batch.batchId, 'Anchored', `root committed in batch ${batchSeq}`, updated.attempts, (s) => ({
      ...s,
      status: 'Anchored',
      merkleRoot: batch.merkleRoot,
      anchorTimestampMs: anchoredAtMs,
      onChainConfirmed: true,
      chainTxHash: tx.txHash,
    }));
    await this.store.putBatch(updated);
    this.notBefore.delete(batch.batchId);
    this.log.info({ batchId: batch.batchId, batchSeq, txHash: tx.txHash, records: batch.treeSize }, 'batch anchored');
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
    this.notify();
    return { ...snap, status: 'PendingAnchor' };
  }

  /**
   * On start: every batch believed Anchored is checked against the contract; one whose root is
   * missing (a chain that lost state) or whose transaction left the chain (a reorg) goes back to
   * be anchored again.
   */
  async reconcile(): Promise<number> {
    let requeued = 0;
    const anchored = await this.store.batchesByStatus('Anchored', 10_000);
    for (const b of anchored) {
      let onChain;
      try {
        // A dropped transaction (a reorg, a node that lost state) leaves no root in the contract.
        onChain = await this.chain.anchorOf(b.merkleRoot);
      } catch (err) {
        this.log.warn({ code: toDrisError(err).code, batchId: b.batchId }, 'reconciliation could not read the chain; will check again at next start');
        return requeued;
      }
      if (onChain !== null) continue;
      requeued += 1;
      const at = Date.now();
      const snapshots = await this.store.snapshotsOfBatch(b.batchId);
      await this.store.putSnapshots(
        snapshots.map((s) => ({ ...s, status: 'Batched', onChainConfirmed: false, chainTxHash: null, anchorTimestampMs: null, merkleRoot: null })),
        snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at, reason: 'anchor missing on-chain; re-queued', attempt: 0 })),
      );
      await this.store.putBatch({ ...b, status: 'Pending', attempts: 0, batchSeq: null, txHash: null, blockNumber: null, anchoredAtMs: null, lastError: 'missing_on_chain' });
      this.log.warn({ batchId: b.batchId, batchSeq: b.batchSeq }, 'anchored batch missing on-chain; re-queued');
    }
    return requeued;
  }
}
