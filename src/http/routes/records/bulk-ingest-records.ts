import typia from 'typia';
import type { BulkIngestRequest, BulkIngestResponse } from '../../../domain/records/types.js';
import { json, route } from '../../route-spec.js';
import { IDEMPOTENCY_REFUSALS, ingestHandler } from './ingest-status.js';

export const BulkIngestRecords = route('POST /api/v1/records/bulk', 'BulkIngestRecords', 'Records', 'Ingest 1 to 1000 records; each is validated on its own', {
  description:
    'Form A names the tenant once (`tenantId` + `records`), form B gives each item its own (`items`). An item that is not a valid record is rejected alone and listed in `rejected`; ' +
    'the request is answered 202 when at least one record is accepted, else 400 (or 403 when every item names a tenant the key may not act for) with the rejected items.',
  idempotencyKey: true,
  body: {
    schema: typia.json.schema<BulkIngestRequest, '3.1'>(),
    required: true,
    limit: 'bulk',
    example: { tenantId: 'acme', records: [{ database: 'erp', collection: 'invoices', recordId: 'INV-1002', recordPayload: { amount: 80 } }] },
  },
  responses: {
    202: json('At least one record accepted and durably queued; rejected items are listed.', typia.json.schema<BulkIngestResponse, '3.1'>()),
    409: IDEMPOTENCY_REFUSALS,
  },
  bind: ingestHandler('ingestBulk'),
});
