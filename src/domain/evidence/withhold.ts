import { decide, type PolicyDecision, type Requester, type RetrievalPolicy, type Target } from './policy.js';

/**
 * The retrieval policy applied to answers that carry a record's evidence. The policy decides per
 * record (its database and collection) and per scope, so an answer is filtered per record: a
 * record the caller may not retrieve evidence of keeps what identifies it and its status, and
 * loses its evidence: the hashes that name its leaf (recordHash, payloadHash), the salt (which
 * would let a caller confirm guessed payloads) and the proof (leaf index, tree size, audit path).
 * Batch-level facts (root, sequence, transaction, CID) are public by design and stay. Answers
 * that are nothing but evidence (a receipt) are refused instead (403 forbidden_client).
 */

/** Members removed from a record listed by GET /api/v1/records. */
export const SUMMARY_EVIDENCE = ['payloadHash', 'recordHash', 'salt'] as const;
/** Members removed from a verification result. */
export const VERIFICATION_EVIDENCE = ['recordHash', 'snapshotHash', 'payloadHash', 'merkleProof', 'leafIndex', 'treeSize'] as const;
/** Members removed from a timeline entry (and recordHash from its events). */
export const TIMELINE_EVIDENCE = ['recordHash', 'leafIndex', 'treeSize'] as const;

/** Marks an answer from which evidence was removed, so a client can tell "withheld" from "absent". */
export interface Withheld {
  evidenceWithheld: true;
}

export type EvidenceGate = (target: Target) => PolicyDecision;

const ALLOWED: PolicyDecision = { allowed: true, reason: 'default_allow', ruleIndex: null };

/**
 * The evidence decision for one requester under one policy, memoised per database and collection
 * (a page of a thousand records of one collection costs one evaluation).
 */
export function evidenceGate(policy: RetrievalPolicy, who: Requester): EvidenceGate {
  if (policy.rules.length === 0 && policy.defaultEffect === 'allow') return () => ALLOWED;
  const memo = new Map<string, PolicyDecision>();
  return (target) => {
    const k = `${target.database}\u0000${target.collection}`;
    let d = memo.get(k);
    if (d === undefined) {
      d = decide(policy, who, target, 'evidence');
      memo.set(k, d);
    }
    return d;
  };
}

/** A copy of `value` without the named members, marked as withheld. */
export function withhold<T extends object, K extends string>(value: T, members: readonly K[]): Omit<T, K> & Withheld {
  const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
  for (const m of members) delete out[m];
  out['evidenceWithheld'] = true;
  return out as Omit<T, K> & Withheld;
}

/** A timeline entry without its evidence, its events' recordHash included. */
export function withholdTimelineEntry(entry: Record<string, unknown>): Record<string, unknown> {
  const out = withhold(entry, TIMELINE_EVIDENCE) as Record<string, unknown>;
  const events = entry['events'];
  if (Array.isArray(events)) {
    out['events'] = events.map((e: unknown) => (typeof e === 'object' && e !== null ? withoutMembers(e as Record<string, unknown>, TIMELINE_EVIDENCE) : e));
  }
  return out;
}

function withoutMembers(value: Record<string, unknown>, members: readonly string[]): Record<string, unknown> {
  const out = { ...value };
  for (const m of members) delete out[m];
  return out;
}
