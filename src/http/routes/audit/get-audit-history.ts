import typia from 'typia';
import { listAuditEvents } from '../../../app/audit/list-audit-events.js';
import type { AuditPage } from '../../../app/views.js';
import { AUDIT_ACTIONS } from '../../../domain/audit/ports.js';
import { callerOf } from '../../params.js';
import { choice, readListing, tenant, text, timeWindow } from '../../query.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: tenant(),
  action: choice(AUDIT_ACTIONS, 'Action.'),
  keyId: text('Actor key.'),
  clientId: text('Actor client.'),
  ...timeWindow(),
};

export const GetAuditHistory = route('GET /api/v1/audit/history', 'GetAuditHistory', 'Audit', 'Tenant audit trail, newest first (append-only)', {
  query,
  responses: { 200: json('A page of audit entries.', typia.json.schema<AuditPage, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<AuditPage>(200, await listAuditEvents(s, callerOf(ctx), readListing(ctx.query, query)))),
});
