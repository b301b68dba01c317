import typia from 'typia';
import { verifyPayload } from '../../../app/verify/verify-payload.js';
import type { VerifyPayloadBody, VerifyPayloadRequest, VerifyPayloadResponse } from '../../../domain/verification/types.js';
import { bodyOf, callerOf } from '../../params.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const validate = typia.createValidate<VerifyPayloadRequest>();

export const VerifyPayload = route('POST /api/v1/verify/payload', 'VerifyPayload', 'Verification', 'Verify that a payload hash or record hash was anchored', {
  body: { schema: typia.json.schema<VerifyPayloadBody, '3.1'>(), required: true, limit: 'record', example: { payloadHash: '0'.repeat(64) } },
  responses: { 200: json('Whether a record of the tenant carrying the hash is anchored, with one verification per matching record.', typia.json.schema<VerifyPayloadResponse, '3.1'>()) },
  bind: api((s) => async (ctx) => reply<VerifyPayloadResponse>(200, await verifyPayload(s, callerOf(ctx), bodyOf(ctx, validate)))),
});
