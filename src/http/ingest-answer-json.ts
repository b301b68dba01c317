import type { BulkIngestResponse, BulkItemAccepted, IngestRecordResponse } from '../domain/records/types.js';
import { jsonObjectWriter } from '../util/json-text.js';

/**
 * The JSON text of the ingest answers, written member by member: a bulk answer is a thousand
 * small objects, and JSON.stringify walking them (and the garbage of its property lookups) was a
 * tenth of the front's time per bulk request. Members are declared in the order the app builds
 * them, so the text is what JSON.stringify gives; anything not of its declared type (never, from
 * the app) is left to JSON.stringify whole.
 */

const item = jsonObjectWriter<BulkItemAccepted>([
  ['index', 'integer'],
  ['recordId', 'string'],
  ['recordHash', 'string'],
  ['tenantId', 'string'],
  ['acceptedAt', 'string'],
  ['payloadHash', 'string'],
  ['salt', 'string'],
  ['ingestId', 'string'],
  ['idempotencyReplayed', 'boolean'],
]);

const single = jsonObjectWriter<IngestRecordResponse>([
  ['recordId', 'string'],
  ['recordHash', 'string'],
  ['tenantId', 'string'],
  ['acceptedAt', 'string'],
  ['idempotencyReplayed', 'boolean'],
  ['payloadHash', 'string'],
  ['salt', 'string'],
  ['hashScheme', 'string'],
  ['ingestId', 'string'],
]);

export function bulkAnswerJson(b: BulkIngestResponse): string {
  if (!Number.isSafeInteger(b.total) || !Number.isSafeInteger(b.accepted)) return JSON.stringify(b);
  const parts = new Array<string>(b.items.length);
  for (let i = 0; i < b.items.length; i++) {
    const text = item(b.items[i] as BulkItemAccepted);
    if (text === null) return JSON.stringify(b);
    parts[i] = text;
  }
  // Rejected items are few and carry free text: JSON.stringify writes them.
  return '{"total":' + String(b.total) + ',"accepted":' + String(b.accepted) + ',"items":[' + parts.join(',') + '],"rejected":' + JSON.stringify(b.rejected) + '}';
}

export function ingestAnswerJson(a: IngestRecordResponse): string {
  return single(a) ?? JSON.stringify(a);
}
