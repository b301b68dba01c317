import { randomBytes } from 'node:crypto';
import type { AuditEvent } from '../../domain/audit/ports.js';
import type { Caller } from '../tenancy.js';

/** One `evidence.access` audit entry: a retrieval decision about a record. */
export function accessEvent(caller: Caller, atMs: number, tenantId: string, resource: string, allowed: boolean, detail: Record<string, unknown>): AuditEvent {
  return {
    eventId: `acc_${randomBytes(10).toString('hex')}`,
    atMs,
    tenantId,
    clientId: caller.principal.clientId,
    keyId: caller.principal.keyId,
    action: 'evidence.access',
    resource,
    outcome: allowed ? 'allowed' : 'denied',
    correlationId: caller.correlationId,
    detail,
  };
}
