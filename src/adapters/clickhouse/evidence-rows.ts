import type { LeafAssignment } from '../../domain/pipeline/types.js';
import type { AcceptedRecord } from '../../domain/records/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { storedProofPart, type BatchTops } from './batch-tops.js';
import type { ClickHouseDatabase } from './database.js';
import type { EnvelopeRow, RecordRow } from './record-rows.js';
import { EVIDENCE_FIELDS, EVIDENCE_ROW_HEAD, LEAF_COLUMNS } from './schema.js';
import type { SqlParams } from './sql-runner.js';
import { dateTime64Text, type Int64Out } from './values.js';
import { pointReadSettings } from './point-read.js';
import { evidenceKeyHashes, type EvidenceKey } from './evidence-key.js';

/**
 * record_evidence_packed: every record by (tenant, collection, recordId), with its leaf, in one row. The
 * indexer's inserts into records reach it through a materialized view (version 1, no leaf); the
 * pipeline writes the same row again with its leaf and the leaf's version when it stores the
 * record's batch. ReplacingMergeTree keeps the higher version whichever write lands first.
 *
 * Besides its key's columns, a row holds everything a look-up reads packed in one JSON array,
 * `row`: EVIDENCE_ROW_HEAD, then the evidence (EVIDENCE_FIELDS) as a nested array. A look-up
 * reads that one column (migrations/record-evidence.ts says what that saves). Of a batched
 * record's audit path the row keeps the lower levels only; readLookup completes it (batch-tops.ts).
 */

/** What verifying a record needs of it, as columns of records named (the payload stays on disk). */
export type EvidenceRow = EnvelopeRow & Pick<RecordRow, 'leaf_index' | 'tree_size' | 'merkle_proof'>;

/**
 * Whether a leaf read from record_leaves lacks the proof its tree needs: written since
 * record_leaves stopped carrying proofs, it is in the record's evidence row instead. A tree
 * of one leaf has an empty proof of its own.
 */
export function proofInEvidence(r: Pick<RecordRow, 'batch_id' | 'tree_size' | 'merkle_proof'>): boolean {
  return r.batch_id !== null && r.batch_id !== '' && Number(r.tree_size ?? 0) > 1 && r.merkle_proof.length === 0;
}

/** A record_evidence_packed row as read, unpacked. */
export type LookupRow = EvidenceRow & { version: Int64Out };

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

/** A packed row: EVIDENCE_ROW_HEAD, then the evidence. */
type PackedRow = [
  tenantId: string,
  collection: string,
  recordId: string,
  database: string,
  recordVersion: string,
  ingestId: string,
  acceptedAtMs: number,
  version: number,
  evidence: Evidence,
];

const PACKED_ROW_LENGTH = EVIDENCE_ROW_HEAD.length + 1;

function unpack(text: string): LookupRow {
  let p: unknown;
  try {
    p = JSON.parse(text);
  } catch (err) {
    throw new DrisError('internal_error', 'a record has an unreadable evidence row', { cause: err });
  }
  const e: unknown = Array.isArray(p) && p.length === PACKED_ROW_LENGTH ? p.at(-1) : undefined;
  if (!Array.isArray(e) || e.length !== EVIDENCE_FIELDS.length || !Array.isArray(e.at(-1))) throw new DrisError('internal_error', 'a record has an evidence row of another shape');
  const [tenantId, collection, recordId, database, recordVersion, ingestId, acceptedAtMs, version] = p as PackedRow;
  const [clientId, operationType, sourceTimestamp, hashScheme, payloadHash, recordHash, salt, snapshotId, batchId, leafIndex, treeSize, merkleProof] = e as Evidence;
  return {
    ingest_id: ingestId,
    tenant_id: tenantId,
    client_id: clientId,
    database,
    collection,
    record_id: recordId,
    record_version: recordVersion,
    operation_type: operationType,
    source_timestamp: sourceTimestamp,
    hash_scheme: hashScheme,
    payload_hash: payloadHash,
    record_hash: recordHash,
    salt,
    accepted_at_ms: Number(acceptedAtMs),
    snapshot_id: snapshotId,
    batch_id: batchId,
    leaf_index: leafIndex === null ? null : Number(leafIndex),
    tree_size: treeSize === null ? null : Number(treeSize),
    // A fresh array from JSON.parse, owned by this row alone.
    merkle_proof: merkleProof as string[],
    version: Number(version),
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
 * Look-up rows of these keys (and `filter`, on the row's columns): the highest version of each
 * record, oldest acceptance first. Rows are found by their keys' hashes (evidence-key.ts) and
 * kept when their key is one of `keys`. A row without a leaf takes it from record_leaves when that has one, so
 * records batched before record_lookup existed, but indexed after its back-fill, still read with
 * their leaf. That costs a second query only when some row has no leaf. A path kept in part (see
 * batch-tops.ts) comes back whole.
 */
export async function readLookup(db: ClickHouseDatabase, tops: BatchTops, keys: readonly EvidenceKey[], filter?: { where: string; params: SqlParams }, limit?: string): Promise<LookupRow[]> {
  if (keys.length === 0) return [];
  const runner = db.runner;
  const params: SqlParams = { ...filter?.params, keyHashes: evidenceKeyHashes(keys) };
  const sql = lookupRecordsSql(db.name, filter?.where, limit, runner.pointReadSettings);
  const rows = await tops.complete(newestOfEach(ofKeys(keys, (await runner.queryValues(sql, params)).map(unpack))));
  const leafless = rows.filter((r) => r.batch_id === null);
  if (leafless.length === 0) return rows;
  const leaves = await runner.query<LeafRow>(leavesByKeySql(db.name), {
    tenants: [...new Set(leafless.map((r) => r.tenant_id))],
    ids: leafless.map((r) => r.ingest_id),
  });
  if (leaves.length === 0) return rows;
  // A leaf without its proof is of a batch write under way (its evidence row comes with it).
  const byKey = new Map(leaves.filter((l) => !proofInEvidence(l)).map((l) => [`${l.tenant_id}\u0000${l.ingest_id}`, l]));
  return rows.map((r) => {
    const l = r.batch_id === null ? byKey.get(`${r.tenant_id}\u0000${r.ingest_id}`) : undefined;
    return l === undefined
      ? r
      : { ...r, snapshot_id: l.snapshot_id, batch_id: l.batch_id, leaf_index: l.leaf_index, tree_size: l.tree_size, merkle_proof: l.merkle_proof };
  });
}

/** The rows whose key is one of `keys`: a hash names a key, not a record. */
function ofKeys(keys: readonly EvidenceKey[], rows: LookupRow[]): LookupRow[] {
  const wanted = new Set(keys.map((k) => `${k.tenantId}\u0000${k.collection}\u0000${k.recordId}`));
  return rows.filter((r) => wanted.has(`${r.tenant_id}\u0000${r.collection}\u0000${r.record_id}`));
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

/** What `lookupLinesOf` needs of the engine: a JSON array read into a String column as its text. */
export const LOOKUP_LINES_SETTINGS = { input_format_json_read_arrays_as_strings: 1 } as const;

/**
 * The record_evidence_packed rows of batched records as JSONEachRow lines (`lookupRowsOf`), each
 * row's `row` written as the JSON array it is rather than as a string holding it: escaping it into
 * a string, and the engine unescaping it, cost more than the rest of the line.
 */
export function lookupLinesOf(records: readonly AcceptedRecord[], assignments: readonly LeafAssignment[], version: number): Buffer {
  const leafOf = new Map(assignments.map((a) => [a.ingestId, a]));
  let text = '';
  let acceptedAt = '';
  let acceptedAtMs = NaN;
  let acceptedAtText = '';
  for (const r of records) {
    const a = leafOf.get(r.ingestId);
    // The records of a bulk request share their acceptance time: parsed once.
    if (r.acceptedAt !== acceptedAt) {
      acceptedAt = r.acceptedAt;
      acceptedAtMs = Date.parse(acceptedAt);
      if (!Number.isNaN(acceptedAtMs)) acceptedAtText = dateTime64Text(acceptedAtMs);
    }
    if (a === undefined || Number.isNaN(acceptedAtMs)) throw new DrisError('internal_error', `record ${r.ingestId} has no leaf or an unreadable acceptedAt`);
    text += lookupLine(r, a, acceptedAtText, acceptedAtMs, version);
  }
  return Buffer.from(text, 'utf8');
}

/**
 * One line: the text `referenceLookupLine` gives (the test compares the two), by one
 * JSON.stringify of an object literal of one shape, the serializer's fast path. On Node 20 that
 * cost about 7 µs per record with a ten-hash proof, where the text written member by member in
 * JavaScript (escape checks on every value and hash) cost 9-11.
 */
function lookupLine(r: AcceptedRecord, a: LeafAssignment, acceptedAt: string, acceptedAtMs: number, version: number): string {
  return (
    JSON.stringify({
      tenant_id: r.tenantId,
      collection: r.collection,
      record_id: r.recordId,
      database: r.database,
      record_version: r.recordVersion,
      ingest_id: r.ingestId,
      accepted_at: acceptedAt,
      version,
      row: packedRowOf(r, a, acceptedAtMs, version),
    }) + '\n'
  );
}

/** A batched record's evidence, in EVIDENCE_FIELDS order. */
function evidenceOf(r: AcceptedRecord, a: LeafAssignment): Evidence {
  return [r.clientId, r.operationType, r.sourceTimestamp, r.hashScheme, r.payloadHash, r.recordHash, r.salt, a.snapshotId, a.batchId, a.leafIndex, a.treeSize, storedProofPart(a.proof, a.leafIndex, a.treeSize)];
}

/** A batched record's packed row: EVIDENCE_ROW_HEAD, then its evidence. */
function packedRowOf(r: AcceptedRecord, a: LeafAssignment, acceptedAtMs: number, version: number): PackedRow {
  return [r.tenantId, r.collection, r.recordId, r.database, r.recordVersion, r.ingestId, acceptedAtMs, version, evidenceOf(r, a)];
}

/** The line as JSON.stringify writes the row (`lookupRowsOf`): what the lines of `lookupLinesOf` are compared with. */
export function referenceLookupLine(r: AcceptedRecord, a: LeafAssignment, version: number): string {
  const { row, ...key } = lookupRowsOf([r], [a], version, false)[0] as { row: PackedRow };
  return `${JSON.stringify(key).slice(0, -1)},"row":${JSON.stringify(row)}}\n`;
}

/**
 * The record_evidence_packed rows of batched records, as the pipeline writes them: the indexer's
 * row (the same envelope, from the same accepted record) plus the leaf, at the leaf's version.
 * `packed`: the row as its JSON text (as the column holds it), else as the array.
 */
export function lookupRowsOf(records: readonly AcceptedRecord[], assignments: readonly LeafAssignment[], version: number, packed = true): object[] {
  const leafOf = new Map(assignments.map((a) => [a.ingestId, a]));
  return records.map((r) => {
    const a = leafOf.get(r.ingestId);
    const acceptedAtMs = Date.parse(r.acceptedAt);
    if (a === undefined || Number.isNaN(acceptedAtMs)) throw new DrisError('internal_error', `record ${r.ingestId} has no leaf or an unreadable acceptedAt`);
    const row = packedRowOf(r, a, acceptedAtMs, version);
    return {
      tenant_id: r.tenantId,
      collection: r.collection,
      record_id: r.recordId,
      database: r.database,
      record_version: r.recordVersion,
      ingest_id: r.ingestId,
      accepted_at: dateTime64Text(acceptedAtMs),
      version,
      row: packed ? JSON.stringify(row) : row,
    };
  });
}

// ---- SQL ----------------------------------------------------------------------------------------

/**
 * record_evidence_packed rows by their keys' hashes (param keyHashes Array(UInt64)), and `where`
 * when given, so the read is a granule or so per key and part whatever the table's size. Every stored
 * version of a row is returned, with its version: the caller keeps the highest of each record.
 * Neither FINAL nor LIMIT BY: FINAL merges the key ranges of every part it reads, which costs
 * more than the read itself when the table has several parts, and both cost more than picking
 * among the few rows read. With `limit`, the oldest records first, collapsed in the query.
 */
function lookupRecordsSql(db: string, where: string | undefined, limit?: string, engineSettings?: string): string {
  const collapse = limit === undefined ? '' : `\nORDER BY accepted_at, ingest_id, tenant_id, version DESC\nLIMIT 1 BY tenant_id, ingest_id\nLIMIT ${limit}`;
  return `SELECT row
FROM ${db}.record_evidence_packed
WHERE key_hash IN {keyHashes:Array(UInt64)}${where === undefined ? '' : ` AND ${where}`}${collapse}
SETTINGS ${pointReadSettings(engineSettings)}`;
}

/**
 * Leaves of records by key, for look-up rows that have none: a record batched by a version that
 * wrote its leaf to record_leaves only. Params: tenants Array(String), ids Array(String).
 */
function leavesByKeySql(db: string): string {
  return `SELECT tenant_id, ingest_id, ${LEAF_COLUMNS.join(', ')}
FROM ${db}.record_leaves FINAL
WHERE tenant_id IN {tenants:Array(String)} AND ingest_id IN {ids:Array(String)}`;
}
