import typia from 'typia';
import { getSnapshot } from '../../../app/snapshots/get-snapshot.js';
import type { SnapshotView } from '../../../app/views.js';
import { callerOf, pathParam } from '../../params.js';
import { readQuery, tenant } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, SNAPSHOT_ID, TENANT_NOTE } from '../bind.js';

const query = { tenantId: tenant(TENANT_NOTE) };

export const GetSnapshot = route('GET /api/v1/snapshots/:snapshotId', 'GetSnapshot', 'Status', 'Snapshot details', {
  pathParams: SNAPSHOT_ID, query,
  responses: { 200: json('The snapshot.', typia.json.schema<SnapshotView, '3.1'>()), 404: error("Unknown snapshot, or another tenant's.") },
  bind: api((s) => async (ctx) => reply<SnapshotView>(200, await getSnapshot(s.store, callerOf(ctx), pathParam(ctx, 'snapshotId'), readQuery(ctx.query, query).tenantId))),
});
