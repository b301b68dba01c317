import { defined } from '../../util/defined.js';
import type { VerificationHistory } from '../../domain/verification/ports.js';
import type { VerificationHistoryPage, VerificationStatus } from '../../domain/verification/types.js';
import type { Listing } from '../listing.js';
import { actingTenant, type Caller } from '../tenancy.js';

export interface VerificationListing extends Listing {
  readonly recordId?: string | undefined;
  readonly collection?: string | undefined;
  readonly snapshotId?: string | undefined;
  readonly outcome?: VerificationStatus | undefined;
}

/** A page of one tenant's verification attempts, newest first. */
export async function listVerifications(history: VerificationHistory, caller: Caller, q: VerificationListing): Promise<VerificationHistoryPage> {
  const page = await history.query(defined({ ...q, tenantId: actingTenant(caller.principal, q.tenantId) }));
  return { items: page.items, nextCursor: page.nextCursor };
}
