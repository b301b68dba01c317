import type { IngestOutcome } from '../../../app/ingest-service.js';
import { DrisError } from '../../../errors/dris-error.js';
import { bulkAnswerJson, ingestAnswerJson } from '../../ingest-answer-json.js';
import { principalOf } from '../../params.js';
import type { RequestContext } from '../../router.js';
import { error, type RouteSpec } from '../../route-spec.js';
import { api } from '../bind.js';

/** The HTTP answer of an ingestion outcome: accepted (durable) is 202. */
export function ingestStatus(o: IngestOutcome<unknown>): number {
  return o.outcome === 'accepted' ? 202 : 500;
}

export const MAX_IDEMPOTENCY_KEY = 256;

/** The Idempotency-Key header, refused when longer than documented. */
export function idempotencyKeyOf(ctx: RequestContext): string | undefined {
  const key = ctx.headers.idempotencyKey;
  if (key !== undefined && key.length > MAX_IDEMPOTENCY_KEY) {
    throw new DrisError('validation_failed', 'the Idempotency-Key header is too long', {
      fields: [{ path: 'Idempotency-Key', code: 'invalid_length', message: `must be 1 to ${MAX_IDEMPOTENCY_KEY} characters` }],
    });
  }
  return key;
}

export const IDEMPOTENCY_REFUSALS = error('The idempotency key was used for a different request (idempotency_conflict), or a request with it is still in progress (idempotency_in_progress).');

/**
 * The ingestion handler: the body goes to the service as it came (the hot path: no copy, one
 * await), the outcome comes back as 202.
 */
export function ingestHandler(kind: 'ingestOne' | 'ingestBulk'): RouteSpec['bind'] {
  if (kind === 'ingestOne') {
    return api((s) => async (ctx) => {
      const out = await s.ingest.ingestOne(principalOf(ctx), ctx.body, idempotencyKeyOf(ctx), ctx.correlationId);
      return { status: ingestStatus(out), contentType: JSON_TYPE, body: ingestAnswerJson(out.body) };
    });
  }
  return api((s) => async (ctx) => {
    const out = await s.ingest.ingestBulk(principalOf(ctx), ctx.body, idempotencyKeyOf(ctx), ctx.correlationId);
    return { status: ingestStatus(out), contentType: JSON_TYPE, body: bulkAnswerJson(out.body) };
  });
}

const JSON_TYPE = 'application/json';
