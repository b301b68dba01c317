import typia from 'typia';
import { retrySnapshot } from '../../../app/snapshots/retry-snapshot.js';
import type { RetryResponse } from '../../../app/views.js';
import { callerOf, pathParam } from '../../params.js';
import { readQuery, tenant } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, SNAPSHOT_ID, TENANT_NOTE } from '../bind.js';
import { EMPTY_BODY, noMembers } from '../empty-body.js';

const query = { tenantId: tenant(TENANT_NOTE) };

export const RetrySnapshot = route('POST /api/v1/snapshots/:snapshotId/retry', 'RetrySnapshot', 'Status', 'Retry a Failed snapshot', {
  description: "Sends a Failed snapshot's batch back to be anchored. The request takes no body; an empty JSON object is accepted too.",
  pathParams: SNAPSHOT_ID, query,
  body: EMPTY_BODY,
  responses: {
    202: json('Snapshot re-queued (status PendingAnchor).', typia.json.schema<RetryResponse, '3.1'>()),
    404: error("Unknown snapshot, or another tenant's."),
    409: error('The snapshot is not Failed (invalid_state, with its status).'),
  },
  bind: api((s) => async (ctx) => {
    noMembers(ctx);
    return reply<RetryResponse>(202, await retrySnapshot(s, callerOf(ctx), pathParam(ctx, 'snapshotId'), readQuery(ctx.query, query).tenantId));
  }),
});
