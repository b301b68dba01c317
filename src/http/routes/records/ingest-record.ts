import typia from 'typia';
import type { IngestRecordRequest, IngestRecordResponse } from '../../../domain/records/types.js';
import { principalOf } from '../../params.js';
import { error, json, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';
import { idempotencyKeyOf, ingestStatus } from './ingest-status.js';

export const IngestRecord: RouteSpec = {
  operationId: 'IngestRecord',
  method: 'POST',
  path: '/api/v1/records',
  listener: 'public',
  auth: 'apiKey',
  tag: 'Records',
  summary: 'Ingest one record',
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
    409: error('The idempotency key was used for a different request (idempotency_conflict), or a request with it is still in progress (idempotency_in_progress).'),
  },
  bind: api((s) => async (ctx) => {
    const out = await s.ingest.ingestOne(principalOf(ctx), ctx.body, idempotencyKeyOf(ctx), ctx.correlationId);
    return { status: ingestStatus(out), body: out.body };
  }),
};
