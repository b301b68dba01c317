import { DrisError } from '../../errors/dris-error.js';
import type { AuditLog } from '../../domain/audit/ports.js';
import { decide, type RetrievalScope } from '../../domain/evidence/policy.js';
import type { JsonObject } from '../../domain/json.js';
import type { EvidenceIndex } from '../../domain/verification/ports.js';
import type { Receipt } from '../../domain/verification/types.js';
import type { EvidenceAccess } from '../evidence-access.js';
import { accessEvent } from '../evidence/access-events.js';
import { actingTenant, type Caller } from '../tenancy.js';
import type { Verifier } from '../verifier.js';

export interface ReceiptDeps {
  readonly verifier: Verifier;
  readonly evidence: EvidenceIndex;
  readonly policies: EvidenceAccess;
  readonly audit: AuditLog;
  readonly now?: () => number;
}

export interface ReceiptRequest {
  readonly tenantId?: string | undefined;
  readonly collection: string;
  readonly recordId: string;
  readonly database?: string | undefined;
  readonly recordVersion?: string | undefined;
  readonly includePayload: boolean;
}

/**
 * The receipt of an anchored record, with its payload when asked. Each scope asked for is a
 * decision of the tenant's retrieval policy and an audit entry; a denial refuses the receipt
 * (forbidden_client) rather than answering part of it. A record not anchored yet has none
 * (invalid_state).
 */
export async function recordReceipt(deps: ReceiptDeps, caller: Caller, q: ReceiptRequest): Promise<{ receipt: Receipt; fileName: string }> {
  const p = caller.principal;
  const tenantId = actingTenant(p, q.tenantId);
  const { receipt, record } = await deps.verifier.receipt(tenantId, {
    collection: q.collection,
    recordId: q.recordId,
    ...(q.database === undefined ? {} : { database: q.database }),
    ...(q.recordVersion === undefined ? {} : { recordVersion: q.recordVersion }),
  });
  const policy = await deps.policies.policyOf(tenantId);
  const scopes: RetrievalScope[] = q.includePayload ? ['evidence', 'payload'] : ['evidence'];
  const verdicts = scopes.map((scope) => ({ scope, ...decide(policy, { clientId: p.clientId, level: p.level }, record.envelope, scope) }));
  const at = (deps.now ?? Date.now)();
  const resource = `record:${q.collection}/${q.recordId}`;
  await deps.audit.append(verdicts.map((v) => accessEvent(caller, at, tenantId, resource, v.allowed, { scope: v.scope, reason: v.reason, ruleIndex: v.ruleIndex, via: 'receipt' })));
  const denied = verdicts.find((v) => !v.allowed);
  if (denied !== undefined) {
    throw new DrisError('forbidden_client', `the tenant's retrieval policy does not let this client retrieve this record's ${denied.scope}`, {
      extra: { scope: denied.scope, reason: denied.reason },
    });
  }
  let answer: Receipt = receipt;
  if (q.includePayload) {
    const text = await deps.evidence.payloadOf(tenantId, record.ingestId, record.acceptedAtMs);
    if (text === null) throw new DrisError('not_found', 'no such record');
    answer = { ...receipt, payload: JSON.parse(text) as JsonObject };
  }
  const fileName = `dris-receipt-${receipt.collection}-${receipt.recordId}-v${receipt.recordVersion}.json`.replace(/[^A-Za-z0-9._-]/g, '_');
  return { receipt: answer, fileName };
}
