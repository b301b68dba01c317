import typia from 'typia';
import { checkRetrievalControls } from '../../../app/evidence/check-retrieval-controls.js';
import type { RetrievalControlsRequest, RetrievalControlsResponse } from '../../../domain/evidence/policy.js';
import { bodyOf, callerOf } from '../../params.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const validate = typia.createValidate<RetrievalControlsRequest>();

export const CheckRetrievalControls = route('POST /api/v1/evidence/retrieval-controls', 'CheckRetrievalControls', 'Audit', "Check the tenant's retrieval policy for records", {
  body: { schema: typia.json.schema<RetrievalControlsRequest, '3.1'>(), required: true, limit: 'record', example: { scope: 'payload', records: [{ collection: 'invoices', recordId: 'INV-1001' }] } },
  responses: { 200: json('One decision per record; each is also an audit entry (evidence.access).', typia.json.schema<RetrievalControlsResponse, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<RetrievalControlsResponse>(200, await checkRetrievalControls(s, callerOf(ctx), bodyOf(ctx, validate)))),
});
