import { DrisError } from '../../errors/dris-error.js';
import type { PipelineStore } from '../../domain/pipeline/ports.js';
import type { Snapshot } from '../../domain/pipeline/types.js';
import { readableTenants, type Caller } from '../tenancy.js';

/** A snapshot of one of the caller's tenants; another tenant's is not found, as an unknown one. */
export async function findSnapshot(store: PipelineStore, caller: Caller, snapshotId: string, tenantId: string | undefined): Promise<Snapshot> {
  for (const tenant of readableTenants(caller.principal, tenantId)) {
    const s = await store.getSnapshot(tenant, snapshotId);
    if (s !== null) return s;
  }
  throw new DrisError('not_found', 'no such snapshot');
}
