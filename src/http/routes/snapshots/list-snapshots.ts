import typia from 'typia';
import { listSnapshots } from '../../../app/snapshots/list-snapshots.js';
import type { SnapshotsPage } from '../../../app/views.js';
import { SNAPSHOT_STATUSES } from '../../../domain/pipeline/types.js';
import { callerOf } from '../../params.js';
import { choice, paging, readQuery, tenant, text } from '../../query.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const query = { tenantId: tenant(), recordId: text('Record identifier.'), status: choice(SNAPSHOT_STATUSES, 'Snapshot status.'), ...paging() };

export const ListSnapshots = route('GET /api/v1/snapshots', 'ListSnapshots', 'Status', 'List snapshots', {
  query,
  responses: { 200: json('A page of snapshots.', typia.json.schema<SnapshotsPage, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<SnapshotsPage>(200, await listSnapshots(s.store, callerOf(ctx), readQuery(ctx.query, query)))),
});
