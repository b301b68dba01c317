import typia from 'typia';
import { verifySnapshot } from '../../../app/verify/verify-snapshot.js';
import type { SnapshotVerification } from '../../../domain/verification/types.js';
import { callerOf, pathParam } from '../../params.js';
import { readQuery, tenant } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, SNAPSHOT_ID, TENANT_NOTE } from '../bind.js';

const query = { tenantId: tenant(TENANT_NOTE) };

export const VerifySnapshot = route('GET /api/v1/verify/snapshot/:snapshotId', 'VerifySnapshot', 'Verification', 'Check the on-chain anchoring of a snapshot now', {
  pathParams: SNAPSHOT_ID, query,
  responses: { 200: json('Snapshot verification.', typia.json.schema<SnapshotVerification, '3.1'>()), 404: error("Unknown snapshot, or another tenant's.") },
  bind: api((s) => async (ctx) => {
    const { tenantId } = readQuery(ctx.query, query);
    return reply<SnapshotVerification>(200, await verifySnapshot(s.verifier, callerOf(ctx), pathParam(ctx, 'snapshotId'), tenantId));
  }),
});
