import type { PipelineStore } from '../../domain/pipeline/ports.js';
import type { Caller } from '../tenancy.js';
import { lifecycleView, type LifecycleResponse } from '../views.js';
import { findSnapshot } from './find-snapshot.js';

/** A snapshot's state transitions, oldest first. */
export async function snapshotLifecycle(store: PipelineStore, caller: Caller, snapshotId: string, tenantId: string | undefined): Promise<LifecycleResponse> {
  const s = await findSnapshot(store, caller, snapshotId, tenantId);
  return lifecycleView(s, await store.lifecycleOf(s.tenantId, s.snapshotId));
}
