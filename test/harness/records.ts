import type { AcceptedRecord, OutgoingRecord } from '../../src/domain/records/types.js';

/** A record as published and as consumed: `payloadBytes` for the queue, `payload` for comparisons. */
export type QueuedRecord = AcceptedRecord & OutgoingRecord;

export function queued(r: AcceptedRecord): QueuedRecord {
  return { ...r, payloadBytes: Buffer.from(r.payload, 'utf8') };
}

/** What a consumer receives for a published record. */
export function consumed(r: QueuedRecord): AcceptedRecord {
  const { payloadBytes: _bytes, ...rest } = r;
  return rest;
}
