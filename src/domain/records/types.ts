import type { tags } from 'typia';
import type { HashScheme, OperationType, RecordEnvelope } from './envelope.js';
import type { JsonObject } from '../json.js';

/**
 * Wire and domain types of records. The HTTP validators (typia) and the OpenAPI schemas are both
 * generated from these declarations, so the documented shape and the enforced shape are one.
 */

export { ENVELOPE_FIELDS, HASH_SCHEME, envelopeOf, type EnvelopeField, type HashScheme, type OperationType, type RecordEnvelope } from './envelope.js';

/** Identifiers that also name queue subjects and index partitions. */
export type TenantId = string & tags.Pattern<'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'>;
export type ClientId = string & tags.Pattern<'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$'>;
export type Name = string & tags.MinLength<1> & tags.MaxLength<256>;

/** Record ingest request (SPEC "Record ingest request"). */
export interface IngestRecordRequest {
  /** Organisation identifier; must be the API key's tenant or one it may act for. */
  tenantId: TenantId;
  /** Application within the tenant; defaults to the API key's client. */
  clientId?: ClientId;
  /** Logical source database or system. */
  database: Name;
  /** Logical table or collection. */
  collection: Name;
  /** Unique record identifier within the collection. */
  recordId: Name;
  /** Version tag; default '1'. */
  recordVersion?: string & tags.MinLength<1> & tags.MaxLength<128>;
  /** Default `upsert`. */
  operationType?: OperationType;
  /** Arbitrary JSON object that is hashed (RFC 8785 canonical form) and preserved. */
  recordPayload: JsonObject;
  /** When the record was produced in the originating system (RFC 3339 / ISO 8601 date-time). */
  sourceTimestamp?: string & tags.Format<'date-time'>;
  /** Deduplication key with a 24-hour window; the Idempotency-Key header is the alternative. */
  idempotencyKey?: string & tags.MinLength<1> & tags.MaxLength<256>;
}

/** A record of bulk form A: tenantId may be omitted (the request's is inherited) or repeated. */
export interface BulkRecord extends Omit<IngestRecordRequest, 'tenantId'> {
  tenantId?: TenantId;
}

/**
 * Each item of a bulk request is validated on its own: an item that is not a valid record is
 * rejected alone (listed in `rejected`) while the others are accepted, so the document lets any
 * item through, names the record schema beside it, and asks for at least one valid record (a
 * request without one is refused whole).
 */
type ItemByItem<Item extends string> = tags.JsonSchemaPlugin<{
  items: { anyOf: [{ $ref: `#/components/schemas/${Item}` }, { description: 'anything else: this item is rejected on its own' }] };
  contains: { $ref: `#/components/schemas/${Item}` };
}>;

/** Bulk form A: one tenant, many records. */
export interface BulkIngestFormA {
  tenantId: TenantId;
  /** Records of the tenant; each may omit tenantId (it is inherited) or repeat it. */
  records: BulkRecord[] & tags.MinItems<1> & tags.MaxItems<1000> & ItemByItem<'BulkRecord'>;
}

/** Bulk form B: items each carrying their own tenantId. */
export interface BulkIngestFormB {
  items: IngestRecordRequest[] & tags.MinItems<1> & tags.MaxItems<1000> & ItemByItem<'IngestRecordRequest'>;
}

/** A bulk request: form A or form B, never both (a body with both `records` and `items` is refused). */
export type BulkIngestRequest = (BulkIngestFormA & tags.JsonSchemaPlugin<{ not: { required: ['items'] } }>) | (BulkIngestFormB & tags.JsonSchemaPlugin<{ not: { required: ['records'] } }>);

/** Record ingest response (HTTP 202). */
export interface IngestRecordResponse {
  recordId: string;
  /** SHA-256 of the canonical record envelope, lowercase hex. */
  recordHash: string;
  tenantId: string;
  acceptedAt: string & tags.Format<'date-time'>;
  idempotencyReplayed: boolean;
  /** SHA-256 of the canonical payload, lowercase hex. */
  payloadHash: string;
  /** 16 random bytes, hex, chosen at ingestion and part of the envelope. */
  salt: string;
  hashScheme: HashScheme;
  /** Server identifier of this acceptance. */
  ingestId: string;
}

export interface BulkItemAccepted {
  index: number & tags.Type<'uint32'>;
  recordId: string;
  recordHash: string;
  tenantId: string;
  acceptedAt: string & tags.Format<'date-time'>;
  payloadHash: string;
  salt: string;
  ingestId: string;
  idempotencyReplayed: boolean;
}

export interface BulkItemRejected {
  index: number & tags.Type<'uint32'>;
  recordId: string | null;
  error: string;
  details: string[];
}

/** Bulk ingest response (HTTP 202). */
export interface BulkIngestResponse {
  total: number & tags.Type<'uint32'>;
  accepted: number & tags.Type<'uint32'>;
  items: BulkItemAccepted[];
  rejected: BulkItemRejected[];
}

/** A record once accepted: what the queue carries and the hot index stores. */
export interface AcceptedRecord extends RecordEnvelope {
  /** Unique, time-ordered identifier of this acceptance; the idempotency unit of every consumer. */
  ingestId: string;
  clientId: string;
  keyId: string;
  recordHash: string;
  /** Acceptance time, ISO 8601 with milliseconds, UTC. */
  acceptedAt: string;
  /** RFC 8785 canonical JSON text of recordPayload. */
  payload: string;
  idempotencyKey: string | null;
  correlationId: string;
  /**
   * The UTF-8 bytes of `payload`, when the queue kept them: a record read from a queue message
   * carries its payload as these bytes and decodes `payload` only when it is read, since most
   * consumers never read it. Not enumerable, so a copy or a JSON text of the record is as before.
   */
  readonly payloadBytes?: Uint8Array;
}

/**
 * A record as ingestion publishes it: its payload as the UTF-8 bytes of the canonical text that
 * was hashed, which the queue stores as they are. Consumers receive it as an AcceptedRecord.
 */
export interface OutgoingRecord extends Omit<AcceptedRecord, 'payload'> {
  readonly payloadBytes: Uint8Array;
}

/** A record summary as listed by QueryRecords. */
export interface RecordSummary {
  ingestId: string;
  tenantId: string;
  clientId: string;
  database: string;
  collection: string;
  recordId: string;
  recordVersion: string;
  operationType: OperationType;
  sourceTimestamp: string | null;
  acceptedAt: string & tags.Format<'date-time'>;
  payloadHash: string;
  recordHash: string;
  salt: string;
  hashScheme: HashScheme;
  /** `Ingested` until the record's batch is formed, then the snapshot's status. */
  status: string;
  snapshotId: string | null;
  batchId: string | null;
  chainTxHash: string | null;
}

export interface RecordQuery {
  tenantId: string;
  database?: string;
  collection?: string;
  recordId?: string;
  snapshotId?: string;
  /** acceptedAt >= from (inclusive), epoch milliseconds. */
  fromMs?: number;
  /** acceptedAt < to (exclusive), epoch milliseconds. */
  toMs?: number;
  limit: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
}

/** A page of a tenant's entries in a time window, newest first: what every listing query carries. */
export interface TimeWindowQuery {
  readonly tenantId: string;
  /** at >= fromMs (inclusive), epoch milliseconds. */
  readonly fromMs?: number;
  /** at < toMs (exclusive), epoch milliseconds. */
  readonly toMs?: number;
  readonly limit: number;
  /** Opaque cursor from a previous page. */
  readonly cursor?: string;
}

export interface Page<T> {
  items: T[];
  nextCursor: string | null;
}
