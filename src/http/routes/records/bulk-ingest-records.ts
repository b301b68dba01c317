import typia from 'typia';
import type { BulkIngestRequest, BulkIngestResponse } from '../../../domain/records/types.js';
import { principalOf } from '../../params.js';
import { error, json, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';
import { idempotencyKeyOf, ingestStatus } from './ingest-status.js';

export const BulkIngestRecords: RouteSpec = {
  operationId: 'BulkIngestRecords',
  method: 'POST',
  path: '/api/v1/records/bulk',
  listener: 'public',
  auth: 'apiKey',
  tag: 'Records',
  summary: 'Ingest 1 to 1000 records; each is validated on its own',
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
    409: error('The idempotency key was used for a different request, or a request with it is still in progress.'),
  },
  bind: api((s) => async (ctx) => {
    const out = await s.ingest.ingestBulk(principalOf(ctx), ctx.body, idempotencyKeyOf(ctx), ctx.correlationId);
    return { status: ingestStatus(out), body: out.body };
  }),
};
