import type { tags } from 'typia';
import type { RecordSummary } from '../domain/records/types.js';
import type { PublicHealth } from '../app/health.js';
import type { RetrievalPolicy } from '../domain/evidence/policy.js';

/** Answer shapes that exist only on the wire; the OpenAPI schemas are generated from them. */

export interface FieldErrorBody {
  /** Path of the offending field, e.g. `records[2].recordPayload.amount`. */
  path: string;
  /** Stable code, e.g. `required`, `duplicate_key`, `unsafe_integer`. */
  code: string;
  message: string;
}

/** The error body of every 4xx and 5xx answer. */
export interface ErrorResponse {
  /** Stable error code (see docs/errors.md). */
  error: string;
  message: string;
  /** One entry per offending field: `<path>: <message>`. */
  details: string[];
  /** The same problems, structured. */
  fieldErrors?: FieldErrorBody[];
}

/** The 429 body. */
export interface RateLimitResponse extends ErrorResponse {
  status: 429;
  error: 'rate_limit_exceeded';
  /** Seconds to wait; also in the Retry-After header. */
  retryAfter: number & tags.Type<'uint32'>;
  resetTime: string & tags.Format<'date-time'>;
}

/**
 * A listed record. When the tenant's retrieval policy withholds the record's evidence from the
 * caller, payloadHash, recordHash and salt are absent and evidenceWithheld is true.
 */
export interface RecordListItem extends Omit<RecordSummary, 'payloadHash' | 'recordHash' | 'salt'> {
  payloadHash?: string;
  recordHash?: string;
  salt?: string;
  evidenceWithheld?: boolean;
}

export interface RecordsPage {
  items: RecordListItem[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

/** The unauthenticated health answer: component statuses and public facts only. */
export type HealthResponse = PublicHealth;

/** A snapshot as GET /api/v1/snapshots/{id} and the listing answer it. */
export interface SnapshotView {
  snapshotId: string;
  tenantId: string;
  status: 'PendingAnchor' | 'Batched' | 'Anchored' | 'Failed';
  recordIds: string[];
  recordCount: number & tags.Type<'uint32'>;
  /** SHA-256 over the snapshot's record hashes in leaf order (docs/decisions.md). */
  snapshotHash: string;
  batchId: string;
  onChainConfirmed: boolean;
  createdAt: string & tags.Format<'date-time'>;
  merkleRoot?: string;
  anchorTimestamp?: string & tags.Format<'date-time'>;
  chainTxHash?: string;
}

export interface SnapshotsPage {
  items: SnapshotView[];
  nextCursor: string | null;
}

export interface LifecycleEntryView {
  state: 'Ingested' | 'PendingAnchor' | 'Batched' | 'Anchored' | 'Failed';
  at: string & tags.Format<'date-time'>;
  reason: string;
  /** Anchoring attempt the transition belongs to (0 before the first). */
  attempt: number & tags.Type<'uint32'>;
}

export interface LifecycleResponse {
  snapshotId: string;
  status: string;
  items: LifecycleEntryView[];
}

/** POST /api/v1/snapshots/{id}/retry (202): the snapshot as re-queued. */
export interface RetryResponse extends SnapshotView {
  message: string;
}

export interface PreviousBatchView {
  batchId: string;
  merkleRoot: string;
  cid: string;
}

export interface BatchView {
  batchId: string;
  batchSeq: number | null;
  status: 'Pending' | 'Anchored' | 'Failed';
  merkleRoot: string;
  recordCount: number & tags.Type<'uint32'>;
  chainTxHash: string | null;
  ipfsCid: string | null;
  chainId: number | null;
  contractAddress: string | null;
  blockNumber: number | null;
  anchoredAt: (string & tags.Format<'date-time'>) | null;
  createdAt: string & tags.Format<'date-time'>;
  attempts: number & tags.Type<'uint32'>;
  lastError: string | null;
  previous: PreviousBatchView | null;
  /** This service's gateway path of the manifest. */
  manifestUrl: string | null;
  /** The caller's snapshots in the batch (never another tenant's). */
  snapshotIds: string[];
}

export interface TimelineEvent {
  event: 'Accepted' | 'Indexed' | 'PendingAnchor' | 'Batched' | 'Anchored' | 'Failed';
  at: string & tags.Format<'date-time'>;
  reason?: string;
  snapshotId?: string;
  recordHash?: string;
  batchId?: string;
  batchSeq?: number | null;
  chainTxHash?: string | null;
  blockNumber?: number | null;
  ipfsCid?: string | null;
}

export interface TimelineItem {
  ingestId: string;
  tenantId: string;
  database: string;
  collection: string;
  recordId: string;
  recordVersion: string;
  /** Absent when the evidence is withheld (evidenceWithheld), as are leafIndex and treeSize. */
  recordHash?: string;
  snapshotId: string | null;
  batchId: string | null;
  leafIndex?: number | null;
  treeSize?: number | null;
  events: TimelineEvent[];
  /** The retrieval policy withholds this record's evidence (recordHash, leafIndex, treeSize) from the caller. */
  evidenceWithheld?: boolean;
}

export interface TimelineResponse {
  items: TimelineItem[];
}

export interface AuditActor {
  tenantId: string;
  clientId: string;
  keyId: string;
}

export interface AuditEntryView {
  eventId: string;
  at: string & tags.Format<'date-time'>;
  tenantId: string;
  actor: AuditActor;
  /** e.g. record.ingest, verify.record, verify.payload, verify.snapshot, snapshot.retry, evidence.access, key.create, key.revoke, policy.set */
  action: string;
  resource: string;
  outcome: string;
  correlationId: string;
  detail: Record<string, unknown>;
}

export interface AuditPage {
  items: AuditEntryView[];
  nextCursor: string | null;
}

export interface RetrievalPolicyView {
  tenantId: string;
  policy: RetrievalPolicy;
  /** true when the tenant has set no policy (then everything is allowed to its keys). */
  isDefault: boolean;
  updatedAt: (string & tags.Format<'date-time'>) | null;
}
