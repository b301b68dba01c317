import { randomBytes } from 'node:crypto';
import type { AuditLog } from '../domain/audit/ports.js';
import { DEFAULT_POLICY, type RetrievalPolicy, type RetrievalPolicyStore, type StoredPolicy } from '../domain/evidence/policy.js';
import { evidenceGate, type EvidenceGate } from '../domain/evidence/withhold.js';
import { TtlCache } from '../util/ttl-cache.js';
import type { Principal } from './authenticator.js';

/**
 * Retrieval policies as every evidence route reads them: from the store through a short cache
 * (a policy is read by every answer that carries evidence; a change made in this process applies
 * at once, one made elsewhere in the cluster within refreshMs), and the audit entry of evidence
 * withheld by them.
 */

export interface EvidenceAccessOptions {
  /** How long a tenant's policy is reused, milliseconds. */
  readonly refreshMs: number;
  readonly now?: () => number;
}

export interface AccessCaller {
  readonly principal: Principal;
  readonly correlationId: string;
}

export interface WithheldRecord {
  readonly collection: string;
  readonly recordId: string;
}

/** Records named in one audit entry of withheld evidence; the count is always exact. */
const NAMED_IN_AUDIT = 20;

export class EvidenceAccess implements RetrievalPolicyStore {
  readonly #policies: TtlCache<string, StoredPolicy | null>;
  readonly #now: () => number;

  constructor(
    private readonly store: RetrievalPolicyStore,
    private readonly audit: AuditLog | null,
    private readonly options: EvidenceAccessOptions,
  ) {
    this.#now = options.now ?? Date.now;
    this.#policies = new TtlCache(options.refreshMs, 10_000, { now: this.#now });
  }

  get(tenantId: string): Promise<StoredPolicy | null> {
    return this.#policies.get(tenantId, () => this.store.get(tenantId));
  }

  async put(tenantId: string, policy: RetrievalPolicy, updatedBy: string): Promise<StoredPolicy> {
    const stored = await this.store.put(tenantId, policy, updatedBy);
    this.#policies.delete(tenantId);
    return stored;
  }

  /** The policy in force for a tenant (the default one when none was set). */
  async policyOf(tenantId: string): Promise<RetrievalPolicy> {
    return (await this.get(tenantId))?.policy ?? DEFAULT_POLICY;
  }

  /** Per-record evidence decisions for this caller within one tenant. */
  async gate(principal: Principal, tenantId: string): Promise<EvidenceGate> {
    return evidenceGate(await this.policyOf(tenantId), { clientId: principal.clientId, level: principal.level });
  }

  /** One `evidence.access` entry (outcome `denied`) for the records an answer withheld evidence of. */
  async reportWithheld(caller: AccessCaller, tenantId: string, via: string, withheld: readonly WithheldRecord[], reason: string): Promise<void> {
    if (this.audit === null || withheld.length === 0) return;
    const first = withheld[0] as WithheldRecord;
    await this.audit.append([
      {
        eventId: `acc_${randomBytes(10).toString('hex')}`,
        atMs: this.#now(),
        tenantId,
        clientId: caller.principal.clientId,
        keyId: caller.principal.keyId,
        action: 'evidence.access',
        resource: withheld.length === 1 ? `record:${first.collection}/${first.recordId}` : `records:${withheld.length}`,
        outcome: 'denied',
        correlationId: caller.correlationId,
        detail: {
          scope: 'evidence',
          via,
          reason,
          withheld: withheld.length,
          records: withheld.slice(0, NAMED_IN_AUDIT).map((r) => `${r.collection}/${r.recordId}`),
        },
      },
    ]);
  }
}
