import type { IngestOutcome } from '../../../app/ingest-service.js';
import { DrisError } from '../../../errors/dris-error.js';
import type { RequestContext } from '../../router.js';

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
