import { randomBytes } from 'node:crypto';
import type { AuditLog } from '../../domain/audit/ports.js';
import type { RetrievalPolicy } from '../../domain/evidence/policy.js';
import type { EvidenceAccess } from '../evidence-access.js';
import type { RetrievalPolicyView } from '../views.js';
import { policyView } from './get-retrieval-policy.js';

export interface SetPolicyDeps {
  readonly policies: EvidenceAccess;
  readonly audit: AuditLog;
  readonly now?: () => number;
}

/** An operator sets a tenant's retrieval policy; the change is audited in the tenant's trail. */
export async function setRetrievalPolicy(deps: SetPolicyDeps, tenantId: string, policy: RetrievalPolicy, correlationId: string): Promise<RetrievalPolicyView> {
  const stored = await deps.policies.put(tenantId, policy, 'operator');
  await deps.audit.append([
    {
      eventId: `pol_${randomBytes(10).toString('hex')}`,
      atMs: (deps.now ?? Date.now)(),
      tenantId,
      clientId: 'operator',
      keyId: 'admin',
      action: 'policy.set',
      resource: `retrieval-policy:${tenantId}`,
      outcome: 'success',
      correlationId,
      detail: { rules: policy.rules.length, defaultEffect: policy.defaultEffect },
    },
  ]);
  return policyView(tenantId, stored);
}
