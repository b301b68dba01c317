import typia from 'typia';
import type { IngestRecordRequest, IngestRecordResponse } from '../../../domain/records/types.js';
import { json, route } from '../../route-spec.js';
import { IDEMPOTENCY_REFUSALS, ingestHandler } from './ingest-status.js';

export const IngestRecord = route('POST /api/v1/records', 'IngestRecord', 'Records', 'Ingest one record', {
  description:
    'The record is hashed (RFC 8785 canonical payload, SHA-256 envelope) and answered 202 only once it is durably queued. ' +
    'The body is read under the I-JSON rules (RFC 7493): duplicate member names, integers beyond 2^53-1, lone surrogates and nesting deeper than 64 are refused (400) though JSON Schema cannot say so.',
  idempotencyKey: true,
  body: {
    schema: typia.json.schema<IngestRecordRequest, '3.1'>(),
    required: true,
    limit: 'record',
    example: { tenantId: 'acme', database: 'erp', collection: 'invoices', recordId: 'INV-1001', recordVersion: '1', operationType: 'insert', recordPayload: { amount: 1200, currency: 'EUR' } },
  },
  responses: {
    202: json('Accepted and durably queued; a retry with the same idempotency key answers the same record (idempotencyReplayed).', typia.json.schema<IngestRecordResponse, '3.1'>()),
    409: IDEMPOTENCY_REFUSALS,
  },
  bind: ingestHandler('ingestOne'),
});
