import { SUMMARY_EVIDENCE, withhold } from '../../domain/evidence/withhold.js';
import type { RecordIndex } from '../../domain/records/ports.js';
import type { RecordQuery, RecordSummary } from '../../domain/records/types.js';
import type { EvidenceAccess } from '../evidence-access.js';
import { actingTenant, type Caller } from '../tenancy.js';
import type { RecordsPage } from '../views.js';

export interface QueryRecordsDeps {
  readonly index: RecordIndex;
  readonly policies: EvidenceAccess;
}

/**
 * A page of a tenant's records. Records whose evidence the tenant's retrieval policy withholds
 * from the caller are listed without it, and one audit entry names them.
 */
export async function queryRecords(deps: QueryRecordsDeps, caller: Caller, query: RecordQuery): Promise<RecordsPage> {
  actingTenant(caller.principal, query.tenantId);
  const [page, gate] = await Promise.all([deps.index.queryRecords(query), deps.policies.gate(caller.principal, query.tenantId)]);
  const withheld: RecordSummary[] = [];
  const items = page.items.map((item) => {
    if (gate(item).allowed) return item;
    withheld.push(item);
    return withhold(item, SUMMARY_EVIDENCE);
  });
  await deps.policies.reportWithheld(caller, query.tenantId, 'records', withheld, 'policy');
  return { items, nextCursor: page.nextCursor };
}
