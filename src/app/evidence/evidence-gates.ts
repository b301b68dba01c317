import type { AuditEvent } from '../../domain/audit/ports.js';
import { VERIFICATION_EVIDENCE, withhold, type EvidenceGate } from '../../domain/evidence/withhold.js';
import type { VerificationResult } from '../../domain/verification/types.js';
import type { WithheldRecord } from '../evidence-access.js';

/** The retrieval policy applied to verification results and audit entries, record by record. */

export const carriesEvidence = (r: VerificationResult): boolean => VERIFICATION_EVIDENCE.some((m) => r[m] !== undefined);

/** A verification result as the policy lets this caller see it; `withheld` collects what was removed. */
export function gatedResult(gate: EvidenceGate, r: VerificationResult, withheld: WithheldRecord[]): VerificationResult {
  if (!carriesEvidence(r) || r.collection === undefined) return r;
  if (gate({ database: r.database ?? '', collection: r.collection }).allowed) return r;
  withheld.push({ collection: r.collection, recordId: r.recordId });
  return withhold(r, VERIFICATION_EVIDENCE) as VerificationResult;
}

/** Evidence members of audit details (the ingest event names the recordHash). */
const AUDIT_EVIDENCE = ['recordHash', 'payloadHash', 'salt', 'merkleProof', 'leafIndex', 'treeSize'];

/**
 * An audit event as the policy lets this caller see it. The record is named by the event's
 * resource, `record:<collection>/<recordId>`, where both names may hold `/`: every reading of it
 * must be allowed, so an ambiguous name can only withhold more.
 */
export function gatedAuditEvent(gate: EvidenceGate, e: AuditEvent, withheld: WithheldRecord[]): AuditEvent {
  const detail = e.detail;
  if (detail === undefined || !AUDIT_EVIDENCE.some((m) => detail[m] !== undefined) || !e.resource.startsWith('record:')) return e;
  const named = e.resource.slice('record:'.length);
  const database = typeof detail['database'] === 'string' ? detail['database'] : '';
  let allowed = true;
  for (let i = named.indexOf('/'); i >= 0 && allowed; i = named.indexOf('/', i + 1)) allowed = gate({ database, collection: named.slice(0, i) }).allowed;
  if (allowed) return e;
  const cut = named.indexOf('/');
  withheld.push({ collection: cut < 0 ? named : named.slice(0, cut), recordId: cut < 0 ? '' : named.slice(cut + 1) });
  const kept: Record<string, unknown> = { ...detail };
  for (const m of AUDIT_EVIDENCE) delete kept[m];
  kept['evidenceWithheld'] = true;
  return { ...e, detail: kept };
}
