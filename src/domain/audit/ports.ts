import type { Page, TimeWindowQuery } from '../records/types.js';

/**
 * Audit trail (SPEC "Audit and compliance"): ingestions, verifications, retries, key provisioning
 * and revocation, evidence access decisions. Append-only: nothing in dris updates or deletes an
 * entry, and the API exposes reads only.
 */

/** Every action the audit trail records (the `action` filter of the audit history takes these). */
export const AUDIT_ACTIONS = [
  'record.ingest',
  'verify.record',
  'verify.payload',
  'verify.snapshot',
  'snapshot.retry',
  'evidence.access',
  'key.create',
  'key.rotate',
  'key.revoke',
  'policy.set',
] as const;

export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** One audited action and who did it. */
export interface AuditEvent {
  /** Unique per event; an event appended twice (a retried append) is listed once. */
  readonly eventId: string;
  /** When the action happened, epoch milliseconds. */
  readonly atMs: number;
  /** Tenant whose trail holds the event. */
  readonly tenantId: string;
  /** Actor: client and key; empty strings for operator actions outside any key (e.g. the CLI). */
  readonly clientId: string;
  readonly keyId: string;
  /** Dotted verb, e.g. `record.ingest`, `key.create`, `key.revoke`, `verify.record`. */
  readonly action: string;
  /** What was acted on, e.g. `record:<ingestId>`, `key:<keyId>`, `snapshot:<id>`. */
  readonly resource: string;
  /** e.g. `success`, `denied`, `failure`, or a verification status. */
  readonly outcome: string;
  readonly correlationId: string;
  /** Small structured context; never a payload, a key or a secret. */
  readonly detail?: Readonly<Record<string, unknown>>;
}

export interface AuditQuery extends TimeWindowQuery {
  readonly action?: string;
  /** Actor filters. */
  readonly keyId?: string;
  readonly clientId?: string;
}

export interface AuditLog {
  /**
   * Appends events; resolves once they are stored. Events of concurrent calls may be written
   * together in one insert.
   */
  append(events: readonly AuditEvent[]): Promise<void>;
  /**
   * Newest first (at, then eventId, descending). Verification attempts are listed too: they are
   * stored once, in the verification history, and read as `verificationAuditEvent` makes them;
   * appended events with a verification action (VERIFICATION_ACTIONS) are not listed.
   */
  query(query: AuditQuery): Promise<Page<AuditEvent>>;
}
