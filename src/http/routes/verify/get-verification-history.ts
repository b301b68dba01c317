import typia from 'typia';
import { listVerifications } from '../../../app/verify/list-verifications.js';
import { VERIFICATION_STATUSES, type VerificationHistoryPage } from '../../../domain/verification/types.js';
import { callerOf } from '../../params.js';
import { choice, readListing, tenant, text, timeWindow } from '../../query.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: tenant(),
  recordId: text('Record identifier.'),
  collection: text('Collection.'),
  snapshotId: text('Snapshot.'),
  outcome: choice(VERIFICATION_STATUSES, 'Verification status.'),
  ...timeWindow(),
};

export const GetVerificationHistory = route('GET /api/v1/verify/history', 'GetVerificationHistory', 'Verification', 'Verification attempts of a tenant, newest first', {
  query,
  responses: { 200: json('A page of verification attempts.', typia.json.schema<VerificationHistoryPage, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<VerificationHistoryPage>(200, await listVerifications(s.history, callerOf(ctx), readListing(ctx.query, query)))),
});
