/**
 * Names and constants of the ClickHouse schema shared by the migrations and the stores. The
 * schema itself, table by table with the reasons for its design, is in `migrations/`.
 */

/** The version an indexer writes; every later rewrite of a record row uses a higher one. */
export const ROW_VERSION_INGESTED = 1;

export const DEFAULT_DATABASE = 'dris';

/** Largest page any query returns, whatever the caller asks for. */
export const MAX_PAGE_LIMIT = 1000;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The database name is the one identifier spliced into SQL text, so it must be a plain word. */
export function databaseIdentifier(name: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new TypeError(`invalid ClickHouse database name ${JSON.stringify(name)}: use letters, digits and _`);
  }
  return name;
}

/** The tables (and views) of a database, as the stores name them. */
export type TableName =
  | 'records'
  | 'record_leaves'
  | 'record_evidence'
  | 'record_evidence_by_hash'
  | 'record_evidence_packed'
  | 'api_keys'
  | 'audit_events'
  | 'verifications'
  | 'retrieval_policies'
  | 'batches'
  | 'batch_blocks'
  | 'snapshots'
  | 'snapshot_lifecycle'
  | 'schema_migrations';

/** A record's place in its batch's tree, as named in records, record_leaves and record_lookup. */
export const LEAF_COLUMNS = ['snapshot_id', 'batch_id', 'leaf_index', 'tree_size', 'merkle_proof'] as const;

/**
 * The record_lookup columns record_evidence (and record_evidence_by_hash) pack into their `evidence`
 * column, in this order, as one JSON array (`toJSONString` of a tuple), and record_evidence_packed
 * into the last member of its `row` (`lookupRowsOf` in evidence-rows.ts writes the same).
 */
export const EVIDENCE_FIELDS = [
  'client_id',
  'operation_type',
  'source_timestamp',
  'hash_scheme',
  'payload_hash',
  'record_hash',
  'salt',
  'snapshot_id',
  'batch_id',
  'leaf_index',
  'tree_size',
  'merkle_proof',
] as const;

/**
 * What record_evidence_packed's `row` holds before the evidence, in this order: the row's key, its
 * acceptance as epoch milliseconds and its version. The row is one JSON array, these and then the
 * evidence (EVIDENCE_FIELDS) as a nested array, so one parse reads a look-up's row whole.
 */
export const EVIDENCE_ROW_HEAD = ['tenant_id', 'collection', 'record_id', 'database', 'record_version', 'ingest_id', 'accepted_at_ms', 'version'] as const;

/** EVIDENCE_ROW_HEAD as the engine computes it from a row whose version is the column `version`. */
export function evidenceRowHeadSql(version: string): string {
  return EVIDENCE_ROW_HEAD.map((c) => (c === 'accepted_at_ms' ? 'toUnixTimestamp64Milli(accepted_at)' : c === 'version' ? version : c)).join(', ');
}
