import type { tags } from 'typia';
import type { AuditAction, AuditEvent } from '../domain/audit/ports.js';
import type { JsonObject } from '../domain/json.js';
import type { RecordSummary } from '../domain/records/types.js';
import type { RetrievalPolicy } from '../domain/evidence/policy.js';
import type { Batch, BatchStatus, LifecycleEntry, LifecycleState, ListedSnapshot, Snapshot, SnapshotStatus } from '../domain/pipeline/types.js';

/**
 * What the read use cases answer: JSON shapes with ISO 8601 times, made from the domain's
 * records here. The OpenAPI schemas are generated from these declarations.
 */

export type DateTime = string & tags.Format<'date-time'>;
type Count = number & tags.Type<'uint32'>;

export const iso = (ms: number): DateTime => new Date(ms).toISOString();
const isoOrNull = (ms: number | null): DateTime | null => (ms === null ? null : iso(ms));

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

/** A snapshot as GET /api/v1/snapshots/{id} and the listing answer it. */
export interface SnapshotView {
  snapshotId: string;
  tenantId: string;
  status: SnapshotStatus;
  recordIds: string[];
  recordCount: Count;
  /** SHA-256 over the snapshot's record hashes in leaf order (docs/decisions.md). */
  snapshotHash: string;
  batchId: string;
  onChainConfirmed: boolean;
  createdAt: DateTime;
  merkleRoot?: string;
  anchorTimestamp?: DateTime;
  chainTxHash?: string;
}

export interface SnapshotsPage {
  items: SnapshotView[];
  nextCursor: string | null;
}

export interface LifecycleEntryView {
  state: LifecycleState;
  at: DateTime;
  reason: string;
  /** Anchoring attempt the transition belongs to (0 before the first). */
  attempt: Count;
}

export interface LifecycleResponse {
  snapshotId: string;
  status: SnapshotStatus;
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
  status: BatchStatus;
  merkleRoot: string;
  recordCount: Count;
  chainTxHash: string | null;
  ipfsCid: string | null;
  chainId: number | null;
  contractAddress: string | null;
  blockNumber: number | null;
  anchoredAt: DateTime | null;
  createdAt: DateTime;
  attempts: Count;
  lastError: string | null;
  previous: PreviousBatchView | null;
  /** This service's gateway path of the manifest. */
  manifestUrl: string | null;
  /** The caller's snapshots in the batch (never another tenant's). */
  snapshotIds: string[];
}

export type TimelineEventName = 'Accepted' | 'Indexed' | SnapshotStatus;

export interface TimelineEvent {
  event: TimelineEventName;
  at: DateTime;
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
  at: DateTime;
  tenantId: string;
  actor: AuditActor;
  action: AuditAction;
  resource: string;
  /** e.g. success, accepted, allowed, denied, or a verification status. */
  outcome: string;
  correlationId: string;
  detail: JsonObject;
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
  updatedAt: DateTime | null;
}

export function snapshotView(s: ListedSnapshot): SnapshotView {
  const v: SnapshotView = {
    snapshotId: s.snapshotId,
    tenantId: s.tenantId,
    status: s.status,
    recordIds: [...s.recordIds],
    recordCount: s.recordCount,
    snapshotHash: s.snapshotHash,
    batchId: s.batchId,
    onChainConfirmed: s.onChainConfirmed,
    createdAt: iso(s.createdAtMs),
  };
  if (s.merkleRoot !== null) v.merkleRoot = s.merkleRoot;
  if (s.anchorTimestampMs !== null) v.anchorTimestamp = iso(s.anchorTimestampMs);
  if (s.chainTxHash !== null) v.chainTxHash = s.chainTxHash;
  return v;
}

export function lifecycleView(s: Snapshot, entries: readonly LifecycleEntry[]): LifecycleResponse {
  return { snapshotId: s.snapshotId, status: s.status, items: entries.map((e) => ({ state: e.state, at: iso(e.atMs), reason: e.reason, attempt: e.attempt })) };
}

export function batchView(b: Batch, snapshots: readonly Snapshot[]): BatchView {
  return {
    batchId: b.batchId,
    batchSeq: b.batchSeq,
    status: b.status,
    merkleRoot: b.merkleRoot,
    recordCount: b.treeSize,
    chainTxHash: b.txHash,
    ipfsCid: b.manifestCid,
    chainId: b.chainId,
    contractAddress: b.contractAddress,
    blockNumber: b.blockNumber,
    anchoredAt: isoOrNull(b.anchoredAtMs),
    createdAt: iso(b.createdAtMs),
    attempts: b.attempts,
    lastError: b.lastError,
    previous: b.previous,
    manifestUrl: b.manifestCid === null ? null : `/ipfs/${b.manifestCid}`,
    snapshotIds: snapshots.map((s) => s.snapshotId),
  };
}

export function auditEntryView(e: AuditEvent): AuditEntryView {
  return {
    eventId: e.eventId,
    at: iso(e.atMs),
    tenantId: e.tenantId,
    actor: { tenantId: e.tenantId, clientId: e.clientId, keyId: e.keyId },
    // The trail holds only the actions of AUDIT_ACTIONS (every writer uses one of them).
    action: e.action as AuditAction,
    resource: e.resource,
    outcome: e.outcome,
    correlationId: e.correlationId,
    detail: { ...(e.detail ?? {}) },
  };
}

/** An API key as listed: everything but its secret. */
export interface ApiKeyView {
  keyId: string;
  tenantId: string;
  clientId: string;
  level: 'standard' | 'premium' | 'enterprise';
  /** Epoch milliseconds. */
  createdAtMs: number;
  expiresAtMs: number | null;
  revokedAtMs: number | null;
  alsoTenants: readonly string[];
  rotatedFrom: string | null;
}

export interface ApiKeyList {
  items: ApiKeyView[];
}

/** A key just made: the secret is shown here once and never again. */
export interface CreatedApiKey {
  apiKey: string;
  key: ApiKeyView;
}
