import type { PipelineStore } from '../../domain/pipeline/ports.js';
import type { Caller } from '../tenancy.js';
import { snapshotView, type SnapshotView } from '../views.js';
import { findSnapshot } from './find-snapshot.js';

export async function getSnapshot(store: PipelineStore, caller: Caller, snapshotId: string, tenantId: string | undefined): Promise<SnapshotView> {
  return snapshotView(await findSnapshot(store, caller, snapshotId, tenantId));
}
