import typia from 'typia';
import { recordTimeline } from '../../../app/records/record-timeline.js';
import type { TimelineResponse } from '../../../app/views.js';
import { callerOf } from '../../params.js';
import { readQuery, requiredText, tenant, text } from '../../query.js';
import { error, json, reply, route } from '../../route-spec.js';
import { api, TENANT_NOTE } from '../bind.js';

const query = { collection: requiredText('Collection.'), recordId: requiredText('Record identifier.'), database: text('Database.'), recordVersion: text('Version.'), tenantId: tenant(TENANT_NOTE) };

export const GetRecordTimeline = route('GET /api/v1/timeline/record', 'GetRecordTimeline', 'Status', 'Event history of a record', {
  query,
  responses: { 200: json('Timeline, one item per accepted version.', typia.json.schema<TimelineResponse, '3.1'>()), 404: error('Unknown record.') },
  bind: api((s) => async (ctx) => reply<TimelineResponse>(200, await recordTimeline(s, callerOf(ctx), readQuery(ctx.query, query)))),
});
