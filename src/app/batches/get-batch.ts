import { DrisError } from '../../errors/dris-error.js';
import type { PipelineStore } from '../../domain/pipeline/ports.js';
import { readableTenants, type Caller } from '../tenancy.js';
import { batchView, type BatchView } from '../views.js';

/**
 * A batch holding records of the caller's tenants, with the caller's snapshots only; a batch
 * holding none of them is not found, as an unknown one.
 */
export async function getBatch(store: PipelineStore, caller: Caller, batchId: string, tenantId: string | undefined): Promise<BatchView> {
  const tenants = new Set(readableTenants(caller.principal, tenantId));
  const batch = await store.getBatch(batchId);
  if (batch === null || !batch.tenants.some((t) => tenants.has(t))) throw new DrisError('not_found', 'no such batch');
  const own = (await store.snapshotsOfBatch(batch.batchId)).filter((s) => tenants.has(s.tenantId));
  return batchView(batch, own);
}
