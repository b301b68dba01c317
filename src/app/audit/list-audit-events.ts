import { defined } from '../../util/defined.js';
import type { AuditAction, AuditLog } from '../../domain/audit/ports.js';
import type { EvidenceAccess, WithheldRecord } from '../evidence-access.js';
import { gatedAuditEvent } from '../evidence/evidence-gates.js';
import type { Listing } from '../listing.js';
import { actingTenant, type Caller } from '../tenancy.js';
import { auditEntryView, type AuditPage } from '../views.js';

export interface AuditListing extends Listing {
  readonly action?: AuditAction | undefined;
  /** The actor's key and client. */
  readonly keyId?: string | undefined;
  readonly clientId?: string | undefined;
}

export interface ListAuditDeps {
  readonly audit: AuditLog;
  readonly policies: EvidenceAccess;
}

/**
 * A page of a tenant's audit trail, newest first. Evidence named in an entry's detail is removed
 * where the tenant's retrieval policy withholds that record's evidence from the caller.
 */
export async function listAuditEvents(deps: ListAuditDeps, caller: Caller, q: AuditListing): Promise<AuditPage> {
  const tenantId = actingTenant(caller.principal, q.tenantId);
  const [page, gate] = await Promise.all([deps.audit.query(defined({ ...q, tenantId })), deps.policies.gate(caller.principal, tenantId)]);
  const withheld: WithheldRecord[] = [];
  const items = page.items.map((e) => auditEntryView(gatedAuditEvent(gate, e, withheld)));
  await deps.policies.reportWithheld(caller, tenantId, 'audit/history', withheld, 'policy');
  return { items, nextCursor: page.nextCursor };
}
