import { defined } from '../../util/defined.js';
import type { PipelineStore } from '../../domain/pipeline/ports.js';
import type { SnapshotStatus } from '../../domain/pipeline/types.js';
import type { Listing } from '../listing.js';
import { actingTenant, type Caller } from '../tenancy.js';
import { snapshotView, type SnapshotsPage } from '../views.js';

export interface SnapshotListing extends Omit<Listing, 'fromMs' | 'toMs'> {
  readonly recordId?: string | undefined;
  readonly status?: SnapshotStatus | undefined;
}

/** A page of one tenant's snapshots (the key's own unless another of its tenants is named). */
export async function listSnapshots(store: PipelineStore, caller: Caller, q: SnapshotListing): Promise<SnapshotsPage> {
  const tenantId = actingTenant(caller.principal, q.tenantId);
  const page = await store.listSnapshots(defined({ ...q, tenantId }));
  return { items: page.items.map(snapshotView), nextCursor: page.nextCursor };
}
