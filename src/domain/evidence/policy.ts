import type { tags } from 'typia';
import type { AccessLevel } from '../keys/types.js';
import type { Name, TenantId } from '../records/types.js';

/**
 * Retrieval controls: a tenant's policy on which of its clients and access levels may retrieve
 * which collections' payloads and evidence (receipts, proofs). Rules are read in order and the
 * first that matches decides; when none matches, `defaultEffect` does. A tenant without a policy
 * has DEFAULT_POLICY: its own keys may retrieve everything.
 */

export type RetrievalScope = 'payload' | 'evidence';
export type Effect = 'allow' | 'deny';

export interface RetrievalRule {
  effect: Effect;
  /** Collections the rule covers; absent or containing `*`: all. */
  collections?: (string & tags.MinLength<1> & tags.MaxLength<256>)[] & tags.MaxItems<1000>;
  /** Databases the rule covers; absent or containing `*`: all. */
  databases?: (string & tags.MinLength<1> & tags.MaxLength<256>)[] & tags.MaxItems<1000>;
  /** Client ids the rule covers; absent or containing `*`: all. */
  clients?: (string & tags.MinLength<1> & tags.MaxLength<64>)[] & tags.MaxItems<1000>;
  /** Access levels the rule covers; absent: all. */
  levels?: AccessLevel[];
  /** What the rule covers; absent: both payloads and evidence. */
  scopes?: RetrievalScope[];
}

export interface RetrievalPolicy {
  defaultEffect: Effect;
  rules: RetrievalRule[] & tags.MaxItems<1000>;
}

export const DEFAULT_POLICY: RetrievalPolicy = { defaultEffect: 'allow', rules: [] };

export interface StoredPolicy {
  readonly tenantId: string;
  readonly policy: RetrievalPolicy;
  readonly updatedAtMs: number;
  readonly updatedBy: string;
}

export interface RetrievalPolicyStore {
  get(tenantId: string): Promise<StoredPolicy | null>;
  put(tenantId: string, policy: RetrievalPolicy, updatedBy: string): Promise<StoredPolicy>;
}

export interface Requester {
  readonly clientId: string;
  readonly level: AccessLevel;
}

export interface Target {
  readonly database: string;
  readonly collection: string;
}

/**
 * rule_allow / rule_deny: rule `ruleIndex` matched; default_allow / default_deny: no rule did;
 * not_found: the tenant has no such record (denied, there is nothing to retrieve).
 */
export type DecisionReason = 'rule_allow' | 'rule_deny' | 'default_allow' | 'default_deny' | 'not_found';

export interface PolicyDecision {
  readonly allowed: boolean;
  readonly reason: DecisionReason;
  readonly ruleIndex: number | null;
}

const covers = (list: readonly string[] | undefined, value: string): boolean => list === undefined || list.includes('*') || list.includes(value);

export function decide(policy: RetrievalPolicy, who: Requester, what: Target, scope: RetrievalScope): PolicyDecision {
  for (let i = 0; i < policy.rules.length; i++) {
    const r = policy.rules[i];
    if (r === undefined) continue;
    if (!covers(r.collections, what.collection) || !covers(r.databases, what.database) || !covers(r.clients, who.clientId)) continue;
    if (r.levels !== undefined && !r.levels.includes(who.level)) continue;
    if (r.scopes !== undefined && !r.scopes.includes(scope)) continue;
    return { allowed: r.effect === 'allow', reason: r.effect === 'allow' ? 'rule_allow' : 'rule_deny', ruleIndex: i };
  }
  const allowed = policy.defaultEffect === 'allow';
  return { allowed, reason: allowed ? 'default_allow' : 'default_deny', ruleIndex: null };
}

/** POST /api/v1/evidence/retrieval-controls request. */
export interface RetrievalControlsRequest {
  /** Default: the key's tenant. */
  tenantId?: TenantId;
  /** What the caller wants to retrieve; default `evidence`. */
  scope?: RetrievalScope;
  /** Why, recorded in the audit trail with every decision. */
  purpose?: string & tags.MaxLength<256>;
  records: RetrievalTarget[] & tags.MinItems<1> & tags.MaxItems<100>;
}

export interface RetrievalTarget {
  /** Default: any database holding the collection and record. */
  database?: Name;
  collection: Name;
  recordId: Name;
  recordVersion?: string & tags.MinLength<1> & tags.MaxLength<128>;
}

export interface RetrievalDecisionView {
  index: number;
  database: string | null;
  collection: string;
  recordId: string;
  recordVersion: string | null;
  decision: 'allowed' | 'denied';
  reason: DecisionReason;
  /** Index of the deciding rule in the policy, null when the default (or not_found) decided. */
  ruleIndex: number | null;
  found: boolean;
}

export interface RetrievalControlsResponse {
  tenantId: string;
  clientId: string;
  keyId: string;
  accessLevel: AccessLevel;
  scope: RetrievalScope;
  evaluatedAt: string & tags.Format<'date-time'>;
  /** When the tenant's policy was last set; null for the default policy. */
  policyUpdatedAt: (string & tags.Format<'date-time'>) | null;
  allowed: number;
  denied: number;
  decisions: RetrievalDecisionView[];
}
