import type { AuditLog } from '../../domain/audit/ports.js';
import { decide, DEFAULT_POLICY, type RetrievalControlsRequest, type RetrievalControlsResponse, type RetrievalDecisionView, type RetrievalScope } from '../../domain/evidence/policy.js';
import type { EvidenceIndex } from '../../domain/verification/ports.js';
import type { AuditEvent } from '../../domain/audit/ports.js';
import type { EvidenceAccess } from '../evidence-access.js';
import { actingTenant, type Caller } from '../tenancy.js';
import { accessEvent } from './access-events.js';

export interface RetrievalControlsDeps {
  readonly evidence: EvidenceIndex;
  readonly policies: EvidenceAccess;
  readonly audit: AuditLog;
  readonly now?: () => number;
}

/**
 * The tenant's retrieval policy asked about records on the caller's behalf: one decision per
 * record, each also an audit entry (evidence.access). An unknown record is denied (not_found).
 */
export async function checkRetrievalControls(deps: RetrievalControlsDeps, caller: Caller, body: RetrievalControlsRequest): Promise<RetrievalControlsResponse> {
  const now = (deps.now ?? Date.now)();
  const p = caller.principal;
  const tenantId = actingTenant(p, body.tenantId);
  const scope: RetrievalScope = body.scope ?? 'evidence';
  const stored = await deps.policies.get(tenantId);
  const policy = stored?.policy ?? DEFAULT_POLICY;
  const found = await Promise.all(
    body.records.map((r) =>
      deps.evidence.findRecord({
        tenantId,
        collection: r.collection,
        recordId: r.recordId,
        ...(r.database === undefined ? {} : { database: r.database }),
        ...(r.recordVersion === undefined ? {} : { recordVersion: r.recordVersion }),
      }),
    ),
  );
  const decisions: RetrievalDecisionView[] = [];
  const events: AuditEvent[] = [];
  body.records.forEach((r, index) => {
    const record = (found[index] ?? []).at(-1);
    const d = record === undefined ? { allowed: false, reason: 'not_found' as const, ruleIndex: null } : decide(policy, { clientId: p.clientId, level: p.level }, record.envelope, scope);
    decisions.push({
      index,
      database: record?.envelope.database ?? r.database ?? null,
      collection: r.collection,
      recordId: r.recordId,
      recordVersion: record?.envelope.recordVersion ?? r.recordVersion ?? null,
      decision: d.allowed ? 'allowed' : 'denied',
      reason: d.reason,
      ruleIndex: d.ruleIndex,
      found: record !== undefined,
    });
    const detail = { scope, reason: d.reason, ruleIndex: d.ruleIndex, ...(body.purpose === undefined ? {} : { purpose: body.purpose }) };
    events.push(accessEvent(caller, now, tenantId, `record:${r.collection}/${r.recordId}`, d.allowed, detail));
  });
  await deps.audit.append(events);
  const allowed = decisions.filter((d) => d.decision === 'allowed').length;
  return {
    tenantId,
    clientId: p.clientId,
    keyId: p.keyId,
    accessLevel: p.level,
    scope,
    evaluatedAt: new Date(now).toISOString(),
    policyUpdatedAt: stored === null ? null : new Date(stored.updatedAtMs).toISOString(),
    allowed,
    denied: decisions.length - allowed,
    decisions,
  };
}
