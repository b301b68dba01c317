import type { LeafAssignment } from '../../domain/pipeline/types.js';
import type { AcceptedRecord } from '../../domain/records/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { dateTime64Text } from './clickhouse-record-index.js';
import { EVIDENCE_FIELDS, leavesByKey, lookupRecords } from './sql.js';
import type { SqlParams, SqlRunner } from './sql-runner.js';

/**
 * record_evidence: every record by (tenant, collection, recordId), with its leaf, in one row. The
 * indexer's inserts into records reach it through a materialized view (version 1, no leaf); the
 * pipeline writes the same row again with its leaf and the leaf's version when it stores the
 * record's batch. ReplacingMergeTree keeps the higher version whichever write lands first.
 *
 * Besides its key, a row holds its evidence packed in one JSON array (EVIDENCE_FIELDS in sql.ts):
 * a look-up reads every field of a few rows, and one column to decompress and parse per granule
 * costs about a third less than the dozen record_lookup had.
 */

type Int64Out = number | string;

/** A record_evidence row as read (LOOKUP_READ_COLUMNS), its evidence unpacked. */
export interface LookupRow {
  ingest_id: string;
  tenant_id: string;
  client_id: string;
  database: string;
  collection: string;
  record_id: string;
  record_version: string;
  operation_type: string;
  source_timestamp: string | null;
  hash_scheme: string;
  payload_hash: string;
  record_hash: string;
  salt: string;
  accepted_at_ms: Int64Out;
  snapshot_id: string | null;
  batch_id: string | null;
  leaf_index: number | null;
  tree_size: number | null;
  merkle_proof: string[];
  version: Int64Out;
}

/** A row as the query returns it: the key, and the evidence still packed. */
interface PackedRow {
  ingest_id: string;
  tenant_id: string;
  database: string;
  collection: string;
  record_id: string;
  record_version: string;
  accepted_at_ms: Int64Out;
  evidence: string;
  version: Int64Out;
}

/** The evidence of a row, in EVIDENCE_FIELDS order. */
type Evidence = [
  clientId: string,
  operationType: string,
  sourceTimestamp: string | null,
  hashScheme: string,
  payloadHash: string,
  recordHash: string,
  salt: string,
  snapshotId: string | null,
  batchId: string | null,
  leafIndex: number | null,
  treeSize: number | null,
  merkleProof: readonly string[],
];

function unpack(p: PackedRow): LookupRow {
  let e: unknown;
  try {
    e = JSON.parse(p.evidence);
  } catch (err) {
    throw new DrisError('internal_error', `record ${p.ingest_id} has unreadable evidence`, { cause: err });
  }
  if (!Array.isArray(e) || e.length !== EVIDENCE_FIELDS.length || !Array.isArray(e.at(-1))) throw new DrisError('internal_error', `record ${p.ingest_id} has evidence of another shape`);
  const [clientId, operationType, sourceTimestamp, hashScheme, payloadHash, recordHash, salt, snapshotId, batchId, leafIndex, treeSize, merkleProof] = e as Evidence;
  return {
    ingest_id: p.ingest_id,
    tenant_id: p.tenant_id,
    client_id: clientId,
    database: p.database,
    collection: p.collection,
    record_id: p.record_id,
    record_version: p.record_version,
    operation_type: operationType,
    source_timestamp: sourceTimestamp,
    hash_scheme: hashScheme,
    payload_hash: payloadHash,
    record_hash: recordHash,
    salt,
    accepted_at_ms: p.accepted_at_ms,
    snapshot_id: snapshotId,
    batch_id: batchId,
    leaf_index: leafIndex === null ? null : Number(leafIndex),
    tree_size: treeSize === null ? null : Number(treeSize),
    // A fresh array from JSON.parse, owned by this row alone.
    merkle_proof: merkleProof as string[],
    version: p.version,
  };
}

interface LeafRow {
  tenant_id: string;
  ingest_id: string;
  snapshot_id: string;
  batch_id: string;
  leaf_index: number;
  tree_size: number;
  merkle_proof: string[];
}

/**
 * Look-up rows matching `where` (see `lookupRecords`): the highest version of each record, oldest
 * acceptance first. A row without a leaf takes it from record_leaves when that has one, so
 * records batched before record_lookup existed, but indexed after its back-fill, still read with
 * their leaf. That costs a second query only when some row has no leaf.
 */
export async function readLookup(runner: SqlRunner, db: string, where: string, params: SqlParams, limit?: string): Promise<LookupRow[]> {
  const rows = newestOfEach((await runner.query<PackedRow>(lookupRecords(db, where, limit, runner.pointReadSettings), params)).map(unpack));
  const leafless = rows.filter((r) => r.batch_id === null);
  if (leafless.length === 0) return rows;
  const leaves = await runner.query<LeafRow>(leavesByKey(db), {
    tenants: [...new Set(leafless.map((r) => r.tenant_id))],
    ids: leafless.map((r) => r.ingest_id),
  });
  if (leaves.length === 0) return rows;
  const byKey = new Map(leaves.map((l) => [`${l.tenant_id}\u0000${l.ingest_id}`, l]));
  return rows.map((r) => {
    const l = r.batch_id === null ? byKey.get(`${r.tenant_id}\u0000${r.ingest_id}`) : undefined;
    return l === undefined
      ? r
      : { ...r, snapshot_id: l.snapshot_id, batch_id: l.batch_id, leaf_index: l.leaf_index, tree_size: l.tree_size, merkle_proof: l.merkle_proof };
  });
}

/** What ReplacingMergeTree keeps once merged: the highest version of each (tenant, ingest id). */
function newestOfEach(rows: LookupRow[]): LookupRow[] {
  const newest = new Map<string, LookupRow>();
  for (const r of rows) {
    const key = `${r.tenant_id}\u0000${r.ingest_id}`;
    const seen = newest.get(key);
    // Versions are microsecond clocks (above 2^53 only in the year 2255), so Number compares them.
    if (seen === undefined || Number(r.version) > Number(seen.version)) newest.set(key, r);
  }
  return [...newest.values()].sort((a, b) => Number(a.accepted_at_ms) - Number(b.accepted_at_ms) || (a.ingest_id < b.ingest_id ? -1 : a.ingest_id > b.ingest_id ? 1 : 0));
}

/**
 * The record_evidence rows of batched records, as the pipeline writes them: the indexer's row (the
 * same envelope, from the same accepted record) plus the leaf, at the leaf's version.
 */
export function lookupRowsOf(records: readonly AcceptedRecord[], assignments: readonly LeafAssignment[], version: number): object[] {
  const leafOf = new Map(assignments.map((a) => [a.ingestId, a]));
  return records.map((r) => {
    const a = leafOf.get(r.ingestId);
    const acceptedAtMs = Date.parse(r.acceptedAt);
    if (a === undefined || Number.isNaN(acceptedAtMs)) throw new DrisError('internal_error', `record ${r.ingestId} has no leaf or an unreadable acceptedAt`);
    const evidence: Evidence = [
      r.clientId,
      r.operationType,
      r.sourceTimestamp,
      r.hashScheme,
      r.payloadHash,
      r.recordHash,
      r.salt,
      a.snapshotId,
      a.batchId,
      a.leafIndex,
      a.treeSize,
      a.proof,
    ];
    return {
      tenant_id: r.tenantId,
      collection: r.collection,
      record_id: r.recordId,
      database: r.database,
      record_version: r.recordVersion,
      ingest_id: r.ingestId,
      accepted_at: dateTime64Text(acceptedAtMs),
      evidence: JSON.stringify(evidence),
      version,
    };
  });
}
