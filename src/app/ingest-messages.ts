import { createHash } from 'node:crypto';
import type { PreparedPayload } from '../domain/hashing/port.js';
import { HASH_SCHEME, type IngestRecordRequest, type IngestRecordResponse, type RecordEnvelope } from '../domain/records/types.js';

/**
 * How keyed ingestion maps onto queue messages. A record published under an idempotency key is a
 * message of its own whose id is derived from (tenant, key), so any retry of it (after a crash,
 * a lost acknowledgement, a lease takeover) is deduplicated by the queue and answered with the
 * records stored first. A bulk request under an Idempotency-Key header publishes its records in
 * parts whose ids are derived from (tenant, key, part); which records go into which part depends on
 * the request body only, so a retry of the same body forms the same parts.
 */

/** A validated item ready to be hashed and queued. */
export interface Candidate {
  readonly index: number;
  readonly req: Required<Omit<IngestRecordRequest, 'idempotencyKey' | 'sourceTimestamp' | 'clientId'>> & {
    clientId: string;
    sourceTimestamp: string | null;
  };
  readonly payload: PreparedPayload;
  readonly idempotencyKey: string | null;
  /** What an idempotency key is bound to; computed only for records that carry a key. */
  readonly fingerprint: () => string;
}

/** What a keyed message carries besides its records (the queue gives it back on a duplicate). */
export interface IdempotencyNote {
  /** The idempotency store key (tenant-scoped). */
  readonly k: string;
  /** Bulk parts: fingerprint of the request body, the part number, and the item index of each record. */
  readonly fp?: string;
  readonly p?: number;
  readonly idx?: readonly number[];
}

export function messageIdOf(storeKey: string, part?: number): string {
  const h = createHash('sha256').update('dris-idempotency\n').update(storeKey);
  if (part !== undefined) h.update(`\npart ${part}`);
  return h.digest('base64url');
}

export function noteText(note: IdempotencyNote): string {
  return JSON.stringify(note);
}

export function parseNote(text: string | null): IdempotencyNote | null {
  if (text === null || text.length === 0) return null;
  try {
    const v = JSON.parse(text) as Partial<IdempotencyNote>;
    if (typeof v !== 'object' || v === null || typeof v.k !== 'string') return null;
    return v as IdempotencyNote;
  } catch {
    return null;
  }
}

function fingerprintOf(parts: readonly (string | null)[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

/** What the same request means for a record (DECISIONS: idempotency), from the record itself. */
export interface FingerprintFields {
  readonly tenantId: string;
  readonly clientId: string;
  readonly database: string;
  readonly collection: string;
  readonly recordId: string;
  readonly recordVersion: string;
  readonly operationType: string;
  readonly sourceTimestamp: string | null;
  readonly payloadHash: string;
}

export function recordFingerprint(r: FingerprintFields): string {
  return fingerprintOf([r.tenantId, r.clientId, r.database, r.collection, r.recordId, r.recordVersion, r.operationType, r.sourceTimestamp, r.payloadHash]);
}

/** The 202 answer of one stored record (as first given: not replayed). */
export function answerOf(r: RecordEnvelope & { recordHash: string; acceptedAt: string; ingestId: string }): IngestRecordResponse {
  return {
    recordId: r.recordId,
    recordHash: r.recordHash,
    tenantId: r.tenantId,
    acceptedAt: r.acceptedAt,
    idempotencyReplayed: false,
    payloadHash: r.payloadHash,
    salt: r.salt,
    hashScheme: HASH_SCHEME,
    ingestId: r.ingestId,
  };
}

// Bound on a record's encoded metadata beside the members taken from the request: member names,
// ids, hashes, salt, times, key id and correlation id (at most 128 characters).
const FIXED_META_BYTES = 1024;

/** Characters JSON.stringify escapes; a string without them is its UTF-8 bytes between quotes. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u2028\u2029\ud800-\udfff]/;

/** Bytes of JSON.stringify(value) at most, without building it. */
function jsonBytesAtMost(value: string): number {
  // An escape is at most six bytes for one UTF-16 unit.
  return NEEDS_ESCAPE.test(value) ? 6 * value.length + 2 : Buffer.byteLength(value, 'utf8') + 2;
}

/**
 * An upper bound of a record's bytes in a queue message that depends on the request only (not on
 * the salt, ids or times chosen at acceptance), so parts are formed alike on every retry.
 */
export function messageWeight(c: Candidate): number {
  const r = c.req;
  let n = FIXED_META_BYTES + (c.payload.canonicalBytes?.byteLength ?? Buffer.byteLength(c.payload.canonical, 'utf8'));
  for (const f of [r.tenantId, r.clientId, r.database, r.collection, r.recordId, r.recordVersion, r.operationType, r.sourceTimestamp, c.idempotencyKey]) {
    if (f !== null) n += jsonBytesAtMost(f);
  }
  return n;
}

/** Groups items, in order, into parts of at most `budget` weight (an item heavier than it alone). */
export function formParts<T>(items: readonly T[], weight: (item: T) => number, budget: number): T[][] {
  const parts: T[][] = [];
  let current: T[] = [];
  let used = 0;
  for (const item of items) {
    const w = weight(item);
    if (current.length > 0 && used + w > budget) {
      parts.push(current);
      current = [];
      used = 0;
    }
    current.push(item);
    used += w;
  }
  if (current.length > 0) parts.push(current);
  return parts;
}

/**
 * What became of an ingestion: `accepted`, the records are durable (stored by the queue, or found
 * stored by an earlier request under the same idempotency key). Refusals are thrown DrisErrors.
 * The HTTP edge chooses the answer's status from the outcome.
 */
export interface IngestOutcome<T> {
  readonly outcome: 'accepted';
  readonly body: T;
}

/**
 * The status code stored with an idempotency answer. Stored answers keep the field (entries
 * written by earlier versions carry it); only accepted answers are stored.
 */
export const STORED_ACCEPTED = 202;
