import typia from 'typia';
import { getBatch } from '../../../app/batches/get-batch.js';
import type { BatchView } from '../../../app/views.js';
import { callerOf, pathParam } from '../../params.js';
import { readQuery, tenant } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, TENANT_NOTE } from '../bind.js';

const query = { tenantId: tenant(TENANT_NOTE) };

export const GetBatch = route('GET /api/v1/batches/:batchId', 'GetBatch', 'Status', 'Batch metadata', {
  pathParams: { batchId: 'Batch identifier (b_…).' },
  query,
  responses: { 200: json("The batch, with the caller's snapshots in it.", typia.json.schema<BatchView, '3.1'>()), 404: error("Unknown batch, or one holding none of the key's tenants.") },
  bind: api((s) => async (ctx) => reply<BatchView>(200, await getBatch(s.store, callerOf(ctx), pathParam(ctx, 'batchId'), readQuery(ctx.query, query).tenantId))),
});
