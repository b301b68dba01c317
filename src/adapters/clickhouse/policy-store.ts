import type { RetrievalPolicy, RetrievalPolicyStore, StoredPolicy } from '../../domain/evidence/policy.js';
import type { ClickHouseDatabase } from './database.js';
import { ReplacementClock, type Int64Out } from './values.js';

/** The tenants' retrieval policies in retrieval_policies: one JSON policy per tenant, replaced whole, read with FINAL. */
export class ClickHouseRetrievalPolicies implements RetrievalPolicyStore {
  readonly #db: ClickHouseDatabase;
  readonly #versions = new ReplacementClock();

  constructor(db: ClickHouseDatabase) {
    this.#db = db;
  }

  async get(tenantId: string): Promise<StoredPolicy | null> {
    const rows = await this.#db.runner.query<{ policy: string; updated_by: string; updated_at_ms: Int64Out }>(
      `SELECT policy, updated_by, toUnixTimestamp64Milli(updated_at) AS updated_at_ms FROM ${this.#db.table('retrieval_policies')} FINAL WHERE tenant_id = {tenantId:String}`,
      { tenantId },
    );
    const r = rows[0];
    if (r === undefined) return null;
    return { tenantId, policy: JSON.parse(r.policy) as RetrievalPolicy, updatedAtMs: Number(r.updated_at_ms), updatedBy: r.updated_by };
  }

  async put(tenantId: string, policy: RetrievalPolicy, updatedBy: string): Promise<StoredPolicy> {
    const version = this.#versions.next();
    await this.#db.runner.insertJsonEachRow(this.#db.table('retrieval_policies'), [
      { tenant_id: tenantId, policy: JSON.stringify(policy), updated_by: updatedBy, updated_at: version.text },
    ]);
    return { tenantId, policy, updatedAtMs: version.ms, updatedBy };
  }
}
