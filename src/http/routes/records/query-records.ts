import typia from 'typia';
import { queryRecords } from '../../../app/records/query-records.js';
import type { RecordsPage } from '../../../app/views.js';
import { defined } from '../../../util/defined.js';
import { callerOf } from '../../params.js';
import { instant, paging, readQuery, requiredText, text } from '../../query.js';
import { json, reply, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: requiredText('Tenant; one the key may act for (else 403).'),
  database: text('Source database.'),
  collection: text('Collection.'),
  recordId: text('Record identifier.'),
  snapshotId: text('Snapshot.'),
  from: instant('acceptedAt at or after.'),
  to: instant('acceptedAt before.'),
  ...paging(),
};

export const QueryRecords: RouteSpec = {
  operationId: 'QueryRecords',
  method: 'GET',
  path: '/api/v1/records',
  listener: 'public',
  auth: 'apiKey',
  tag: 'Records',
  summary: 'Query ingested records',
  query,
  responses: { 200: json('A page of record summaries, newest first.', typia.json.schema<RecordsPage, '3.1'>()) },
  bind: api((s) => async (ctx) => {
    const { from, to, ...q } = readQuery(ctx.query, query);
    const page = await queryRecords(s, callerOf(ctx), defined({ ...q, fromMs: from, toMs: to }));
    return reply<RecordsPage>(200, page);
  }),
};
