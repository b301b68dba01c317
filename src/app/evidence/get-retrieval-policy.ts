import { DEFAULT_POLICY, type StoredPolicy } from '../../domain/evidence/policy.js';
import type { EvidenceAccess } from '../evidence-access.js';
import { iso, type RetrievalPolicyView } from '../views.js';

export function policyView(tenantId: string, stored: StoredPolicy | null): RetrievalPolicyView {
  return { tenantId, policy: stored?.policy ?? DEFAULT_POLICY, isDefault: stored === null, updatedAt: stored === null ? null : iso(stored.updatedAtMs) };
}

/** A tenant's retrieval policy as operators see it: the one set, or the default one. */
export async function getRetrievalPolicy(policies: EvidenceAccess, tenantId: string): Promise<RetrievalPolicyView> {
  return policyView(tenantId, await policies.get(tenantId));
}
