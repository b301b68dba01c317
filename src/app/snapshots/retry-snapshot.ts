import { randomBytes } from 'node:crypto';
import type { AuditLog } from '../../domain/audit/ports.js';
import type { PipelineStore } from '../../domain/pipeline/ports.js';
import type { Snapshot } from '../../domain/pipeline/types.js';
import { requeueFailedSnapshot } from '../anchor-transitions.js';
import type { Caller } from '../tenancy.js';
import { snapshotView, type RetryResponse } from '../views.js';
import { findSnapshot } from './find-snapshot.js';
import type { EventPublisher } from '../events.js';

/** What a retry needs of the anchorer when this process runs it. */
export interface RetryingAnchorer {
  retry(tenantId: string, snapshotId: string): Promise<Snapshot>;
}

export interface RetrySnapshotDeps {
  readonly store: PipelineStore;
  /** null when this process does not anchor. */
  readonly anchorer: RetryingAnchorer | null;
  /** Where retries are recorded. */
  readonly audit: AuditLog | null;
  readonly now?: () => number;
  readonly events?: EventPublisher;
}

/**
 * Sends a Failed snapshot's batch back to be anchored and records who asked. A snapshot in any
 * other state is refused (invalid_state); another tenant's is not found.
 */
export async function retrySnapshot(deps: RetrySnapshotDeps, caller: Caller, snapshotId: string, tenantId: string | undefined): Promise<RetryResponse> {
  const s = await findSnapshot(deps.store, caller, snapshotId, tenantId);
  // A process without the anchorer role writes the request to the store, where the leader finds it.
  const after = deps.anchorer === null ? (await requeueFailedSnapshot(deps.store, s.tenantId, s.snapshotId, deps.events)).snapshot : await deps.anchorer.retry(s.tenantId, s.snapshotId);
  const p = caller.principal;
  await deps.audit?.append([
    {
      eventId: `retry_${randomBytes(10).toString('hex')}`,
      atMs: (deps.now ?? Date.now)(),
      tenantId: s.tenantId,
      clientId: p.clientId,
      keyId: p.keyId,
      action: 'snapshot.retry',
      resource: `snapshot:${s.snapshotId}`,
      outcome: 'accepted',
      correlationId: caller.correlationId,
      detail: { batchId: after.batchId, status: after.status },
    },
  ]);
  return { ...snapshotView(after), message: 'snapshot re-queued for anchoring' };
}
