import typia from 'typia';
import { verifyRecord } from '../../../app/verify/verify-record.js';
import { DrisError } from '../../../errors/dris-error.js';
import type { VerificationResult, VerifyRecordBody, VerifyRecordRequest } from '../../../domain/verification/types.js';
import { bodyOf, callerOf } from '../../params.js';
import { json, reply, route } from '../../route-spec.js';
import { api } from '../bind.js';

const validate = typia.createValidate<VerifyRecordRequest>();

export const VerifyRecord = route('POST /api/v1/verify/record', 'VerifyRecord', 'Verification', 'Verify a record against its on-chain Merkle proof', {
  description:
    'Without batchId the stored record is verified (mode `stored`), or the payload sent is hashed and compared (mode `payload`). With batchId only the IPFS manifest and the chain are read ' +
    '(mode `batch`): database, salt and payload or payloadHash of the 202 answer are then required. A payload is read under the I-JSON rules, as at ingestion.',
  body: { schema: typia.json.schema<VerifyRecordBody, '3.1'>(), required: true, limit: 'record', example: { tenantId: 'acme', collection: 'invoices', recordId: 'INV-1001' } },
  responses: {
    200: json('Verification result: every outcome, including fail, pending and error, is a 200 with verificationStatus and reasonCategory (docs/verification.md).', typia.json.schema<VerificationResult, '3.1'>()),
  },
  bind: api((s) => async (ctx) => {
    const body = bodyOf(ctx, validate);
    if (body.payload !== undefined && Array.isArray(body.payload)) {
      throw new DrisError('validation_failed', 'invalid request', { fields: [{ path: 'payload', code: 'invalid_type', message: 'must be an object' }] });
    }
    return reply<VerificationResult>(200, await verifyRecord(s, callerOf(ctx), body));
  }),
});
