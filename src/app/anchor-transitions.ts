import { DrisError } from '../errors/dris-error.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch, LifecycleEntry, Snapshot, SnapshotStatus } from '../domain/pipeline/types.js';
import { NO_EVENTS, type EventPublisher } from './events.js';

/**
 * Moves of a batch and its snapshots between states, outside anchoring itself: a batch given up
 * (Failed), sent back on request (POST /snapshots/{id}/retry), or sent back because its anchor
 * left the chain (reconciliation). Each move, once written, is published (SnapshotStateChanged, and
 * BatchFailed or BatchRequeued).
 */

/** Marks a batch sent back by POST /snapshots/{id}/retry until the anchorer takes it up. */
export const RETRY_REQUESTED = 'retry_requested';

/** Lifecycle reason of a snapshot sent back to be anchored because its anchor left the chain. */
export const REQUEUED_REASON = 'anchor missing on-chain; re-queued';

/**
 * Sends a Failed snapshot's batch back to be anchored: every snapshot of the batch goes to
 * PendingAnchor (and Batched again once the anchorer takes it up: a batch is anchored as a
 * whole). It only writes the store, so any process may do it; the leading anchorer, wherever it
 * runs, finds the batch Pending at its next read of the store (within `idleMs` when idle).
 */
export async function requeueFailedSnapshot(
  store: PipelineStore,
  tenantId: string,
  snapshotId: string,
  events: EventPublisher = NO_EVENTS,
): Promise<{ snapshot: Snapshot; batchId: string }> {
  const snap = await store.getSnapshot(tenantId, snapshotId);
  if (snap === null) throw new DrisError('not_found', 'no such snapshot');
  if (snap.status !== 'Failed') throw new DrisError('invalid_state', `the snapshot is ${snap.status}, not Failed`, { extra: { status: snap.status } });
  const batch = await store.getBatch(snap.batchId);
  if (batch === null) throw new DrisError('internal_error', 'snapshot without batch');
  const at = Date.now();
  const snapshots = await store.snapshotsOfBatch(batch.batchId);
  await store.putSnapshots(
    snapshots.map((s) => ({ ...s, status: 'PendingAnchor' })),
    snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'PendingAnchor', atMs: at, reason: 'retry requested', attempt: 0 })),
  );
  await store.putBatch({ ...batch, status: 'Pending', attempts: 0, lastError: RETRY_REQUESTED });
  events.publish({ type: 'SnapshotStateChanged', batchId: batch.batchId, state: 'PendingAnchor', snapshots, reason: 'retry requested' });
  events.publish({ type: 'BatchRequeued', batchId: batch.batchId, reason: 'retry_requested' });
  return { snapshot: { ...snap, status: 'PendingAnchor' }, batchId: batch.batchId };
}

/** An Anchored batch whose root the chain no longer holds goes back to Pending, its snapshots to Batched. */
export async function requeueLostAnchor(store: PipelineStore, b: Batch, events: EventPublisher = NO_EVENTS): Promise<void> {
  const at = Date.now();
  const snapshots = await store.snapshotsOfBatch(b.batchId);
  await store.putSnapshots(
    snapshots.map((s) => ({ ...s, status: 'Batched', onChainConfirmed: false, chainTxHash: null, anchorTimestampMs: null, merkleRoot: null })),
    snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at, reason: REQUEUED_REASON, attempt: 0 })),
  );
  await store.putBatch({ ...b, status: 'Pending', attempts: 0, batchSeq: null, txHash: null, blockNumber: null, anchoredAtMs: null, lastError: 'missing_on_chain' });
  events.publish({ type: 'SnapshotStateChanged', batchId: b.batchId, state: 'Batched', snapshots, reason: REQUEUED_REASON });
  events.publish({ type: 'BatchRequeued', batchId: b.batchId, reason: 'missing_on_chain' });
}

/** Every snapshot of a batch to a state (status and lifecycle entry), as one write. */
export async function transitionSnapshots(
  store: PipelineStore,
  batchId: string,
  state: SnapshotStatus,
  reason: string,
  attempt: number,
  events: EventPublisher = NO_EVENTS,
): Promise<void> {
  const snapshots = await store.snapshotsOfBatch(batchId);
  const at = Date.now();
  await store.putSnapshots(
    snapshots.map((s) => ({ ...s, status: state })),
    snapshots.map((s): LifecycleEntry => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state, atMs: at, reason, attempt })),
  );
  events.publish({ type: 'SnapshotStateChanged', batchId, state, snapshots, reason });
}

/** A batch given up after its automatic attempts: its snapshots first, the batch row last. */
export async function markBatchFailed(store: PipelineStore, batch: Batch, attempts: number, code: string, events: EventPublisher = NO_EVENTS): Promise<void> {
  await transitionSnapshots(store, batch.batchId, 'Failed', `gave up after ${attempts} attempts: ${code}`, attempts, events);
  await store.putBatch({ ...batch, status: 'Failed', attempts, lastError: code });
  events.publish({ type: 'BatchFailed', batchId: batch.batchId, attempts, code });
}
