import type { VerificationHistoryEntry } from '../verification/types.js';
import type { AuditEvent } from './ports.js';

/**
 * A verification attempt is stored once, as its verification history entry, and the audit trail
 * lists that same entry as its event (this mapping): one row per verification instead of two,
 * which halves what every verification writes. A store's audit query reads the history for these
 * actions and never appended events that carry them (earlier versions wrote both, the same facts).
 */

/** The audit action of a verification by its history mode; every other mode is `verify.record`. */
export const VERIFICATION_ACTION_OF_MODE: Readonly<Record<string, string>> = {
  snapshot: 'verify.snapshot',
  hash: 'verify.payload',
};

export const VERIFY_RECORD_ACTION = 'verify.record';

/** Every action the audit trail takes from the verification history. */
export const VERIFICATION_ACTIONS: readonly string[] = [VERIFY_RECORD_ACTION, ...Object.values(VERIFICATION_ACTION_OF_MODE)];

export function verificationAction(mode: string): string {
  return VERIFICATION_ACTION_OF_MODE[mode] ?? VERIFY_RECORD_ACTION;
}

/** The audit trail's event for a verification attempt. */
export function verificationAuditEvent(entry: VerificationHistoryEntry): AuditEvent {
  return {
    eventId: entry.verificationId,
    atMs: Date.parse(entry.at),
    tenantId: entry.tenantId,
    clientId: entry.clientId,
    keyId: entry.keyId,
    action: verificationAction(entry.mode),
    resource: entry.recordId !== null ? `record:${entry.collection ?? ''}/${entry.recordId}` : `snapshot:${entry.snapshotId ?? ''}`,
    outcome: entry.verificationStatus,
    correlationId: entry.correlationId,
    detail: { reasonCategory: entry.reasonCategory, mode: entry.mode, verified: entry.verified },
  };
}
