import typia from 'typia';
import { snapshotLifecycle } from '../../../app/snapshots/snapshot-lifecycle.js';
import type { LifecycleResponse } from '../../../app/views.js';
import { callerOf, pathParam } from '../../params.js';
import { readQuery, tenant } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, SNAPSHOT_ID, TENANT_NOTE } from '../bind.js';

const query = { tenantId: tenant(TENANT_NOTE) };

export const GetSnapshotLifecycle = route('GET /api/v1/snapshots/:snapshotId/lifecycle', 'GetSnapshotLifecycle', 'Status', 'State transitions of a snapshot', {
  pathParams: SNAPSHOT_ID, query,
  responses: { 200: json('Lifecycle entries, oldest first.', typia.json.schema<LifecycleResponse, '3.1'>()), 404: error("Unknown snapshot, or another tenant's.") },
  bind: api((s) => async (ctx) => reply<LifecycleResponse>(200, await snapshotLifecycle(s.store, callerOf(ctx), pathParam(ctx, 'snapshotId'), readQuery(ctx.query, query).tenantId))),
});
