import type { SnapshotVerification } from '../../domain/verification/types.js';
import { readableTenants, type Caller } from '../tenancy.js';
import type { Verifier } from '../verifier.js';

/** A snapshot of the caller's tenants, its anchoring checked on-chain now. */
export function verifySnapshot(verifier: Verifier, caller: Caller, snapshotId: string, tenantId: string | undefined): Promise<SnapshotVerification> {
  return verifier.verifySnapshot(caller, snapshotId, readableTenants(caller.principal, tenantId));
}
