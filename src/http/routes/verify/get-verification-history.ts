import typia from 'typia';
import { listVerifications } from '../../../app/verify/list-verifications.js';
import { VERIFICATION_STATUSES, type VerificationHistoryPage } from '../../../domain/verification/types.js';
import { callerOf } from '../../params.js';
import { choice, instant, paging, readQuery, tenant, text } from '../../query.js';
import { json, reply, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: tenant(),
  recordId: text('Record identifier.'),
  collection: text('Collection.'),
  snapshotId: text('Snapshot.'),
  outcome: choice(VERIFICATION_STATUSES, 'Verification status.'),
  from: instant('Earliest time, inclusive.'),
  to: instant('Latest time, exclusive.'),
  ...paging(),
};

export const GetVerificationHistory: RouteSpec = {
  operationId: 'GetVerificationHistory',
  method: 'GET',
  path: '/api/v1/verify/history',
  listener: 'public',
  auth: 'apiKey',
  tag: 'Verification',
  summary: 'Verification attempts of a tenant, newest first',
  query,
  responses: { 200: json('A page of verification attempts.', typia.json.schema<VerificationHistoryPage, '3.1'>()) },
  bind: api((s) => async (ctx) => {
    const { from, to, ...q } = readQuery(ctx.query, query);
    return reply<VerificationHistoryPage>(200, await listVerifications(s.history, callerOf(ctx), { ...q, fromMs: from, toMs: to }));
  }),
};
