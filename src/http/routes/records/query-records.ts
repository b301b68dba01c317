import typia from 'typia';
import { queryRecords } from '../../../app/records/query-records.js';
import type { RecordsPage } from '../../../app/views.js';
import { defined } from '../../../util/defined.js';
import { callerOf } from '../../params.js';
import { readListing, requiredText, text, timeWindow } from '../../query.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const query = {
  tenantId: requiredText('Tenant; one the key may act for (else 403).'),
  database: text('Source database.'),
  collection: text('Collection.'),
  recordId: text('Record identifier.'),
  snapshotId: text('Snapshot.'),
  ...timeWindow('By acceptedAt. '),
};

export const QueryRecords = route('GET /api/v1/records', 'QueryRecords', 'Records', 'Query ingested records', {
  query,
  responses: { 200: json('A page of record summaries, newest first.', typia.json.schema<RecordsPage, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<RecordsPage>(200, await queryRecords(s, callerOf(ctx), defined(readListing(ctx.query, query))))),
});
