import type { BulkIngestResponse, BulkItemAccepted, IngestRecordResponse } from '../domain/records/types.js';
import { jsonString as str } from '../util/json-text.js';

/**
 * The JSON text of the ingest answers, written by concatenation: a bulk answer is a thousand
 * small objects, and JSON.stringify walking them (and the garbage of its property lookups) was a
 * tenth of the front's time per bulk request. Members are written in the order the app builds
 * them, so the text is what JSON.stringify gives; anything not of its declared type (never, from
 * the app) is left to JSON.stringify whole.
 */

function plainItem(a: BulkItemAccepted): boolean {
  return (
    Number.isSafeInteger(a.index) && typeof a.recordId === 'string' && typeof a.recordHash === 'string' && typeof a.tenantId === 'string' &&
    typeof a.acceptedAt === 'string' && typeof a.payloadHash === 'string' && typeof a.salt === 'string' && typeof a.ingestId === 'string' &&
    typeof a.idempotencyReplayed === 'boolean'
  );
}

function itemJson(a: BulkItemAccepted): string {
  return (
    '{"index":' + String(a.index) +
    ',"recordId":' + str(a.recordId) +
    ',"recordHash":' + str(a.recordHash) +
    ',"tenantId":' + str(a.tenantId) +
    ',"acceptedAt":' + str(a.acceptedAt) +
    ',"payloadHash":' + str(a.payloadHash) +
    ',"salt":' + str(a.salt) +
    ',"ingestId":' + str(a.ingestId) +
    ',"idempotencyReplayed":' + (a.idempotencyReplayed ? 'true' : 'false') +
    '}'
  );
}

export function bulkAnswerJson(b: BulkIngestResponse): string {
  if (!Number.isSafeInteger(b.total) || !Number.isSafeInteger(b.accepted) || !b.items.every(plainItem)) return JSON.stringify(b);
  const parts = new Array<string>(b.items.length);
  for (let i = 0; i < b.items.length; i++) parts[i] = itemJson(b.items[i] as BulkItemAccepted);
  // Rejected items are few and carry free text: JSON.stringify writes them.
  return '{"total":' + String(b.total) + ',"accepted":' + String(b.accepted) + ',"items":[' + parts.join(',') + '],"rejected":' + JSON.stringify(b.rejected) + '}';
}

export function ingestAnswerJson(a: IngestRecordResponse): string {
  const plain =
    typeof a.recordId === 'string' && typeof a.recordHash === 'string' && typeof a.tenantId === 'string' && typeof a.acceptedAt === 'string' &&
    typeof a.idempotencyReplayed === 'boolean' && typeof a.payloadHash === 'string' && typeof a.salt === 'string' && typeof a.hashScheme === 'string' &&
    typeof a.ingestId === 'string';
  if (!plain) return JSON.stringify(a);
  return (
    '{"recordId":' + str(a.recordId) +
    ',"recordHash":' + str(a.recordHash) +
    ',"tenantId":' + str(a.tenantId) +
    ',"acceptedAt":' + str(a.acceptedAt) +
    ',"idempotencyReplayed":' + (a.idempotencyReplayed ? 'true' : 'false') +
    ',"payloadHash":' + str(a.payloadHash) +
    ',"salt":' + str(a.salt) +
    ',"hashScheme":' + str(a.hashScheme) +
    ',"ingestId":' + str(a.ingestId) +
    '}'
  );
}
