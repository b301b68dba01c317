import typia from 'typia';
import { listAuditEvents } from '../../../app/audit/list-audit-events.js';
import type { AuditPage } from '../../../app/views.js';
import { AUDIT_ACTIONS } from '../../../domain/audit/ports.js';
import { callerOf } from '../../params.js';
import { choice, instant, paging, readQuery, tenant, text } from '../../query.js';
import { json, reply, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: tenant(),
  action: choice(AUDIT_ACTIONS, 'Action.'),
  keyId: text('Actor key.'),
  clientId: text('Actor client.'),
  from: instant('Earliest time, inclusive.'),
  to: instant('Latest time, exclusive.'),
  ...paging(),
};

export const GetAuditHistory: RouteSpec = {
  operationId: 'GetAuditHistory',
  method: 'GET',
  path: '/api/v1/audit/history',
  listener: 'public',
  auth: 'apiKey',
  tag: 'Audit',
  summary: 'Tenant audit trail, newest first (append-only)',
  query,
  responses: { 200: json('A page of audit entries.', typia.json.schema<AuditPage, '3.1'>()) },
  bind: api((s) => async (ctx) => {
    const { from, to, ...q } = readQuery(ctx.query, query);
    return reply<AuditPage>(200, await listAuditEvents(s, callerOf(ctx), { ...q, fromMs: from, toMs: to }));
  }),
};
