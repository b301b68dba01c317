import { EVIDENCE_KEY_HASH_SQL } from '../evidence-key.js';
import { EVIDENCE_FIELDS, evidenceRowHeadSql } from '../schema.js';
import { byRecordKey, COMPACT_PARTS_UP_TO_BYTES, createTable, migration, type Migration } from './migration.js';

/**
 * record_evidence (migrations 15-18) supersedes record_lookup, with the same key and the same two
 *   writers, but the fields besides the key packed into one JSON column (EVIDENCE_FIELDS) and
 *   granules of 16 rows, LZ4: a look-up of 23 records cost 4.3 ms instead of 6.6 on a million.
 *   - Fed like record_lookup was: a view on records (the indexer's rows) and the pipeline's own
 *     insert. A second view copies what reaches record_lookup, which only a process of an older
 *     version still writes during an upgrade.
 *   - Migration 18 back-fills it from record_lookup; repeated, it adds rows of the same versions,
 *     which readers collapse.
 *   - Migration 23 merges it in the engine's default steps (merge_selector_base 5) rather than the
 *     narrower ones record_lookup took (3, see record-lookup.ts). Every record is written to it
 *     twice (indexed, then batched), and merging it was more than half of the engine's merge
 *     work in the pipeline bench: 43 ms of merge CPU per 1000 records at 3, 32 at 5 (7 000/s
 *     offered). The look-ups did not notice: right after loading a million records, 6 parts at 3
 *     and 11 at 5 verified at 2 284 and 2 419/s, 13.6 and 13.2 ms per record_evidence query.
 */

/** merge_selector_base of record_evidence from migration 23: the engine's default. */
export const EVIDENCE_MERGE_BASE = 5;

/** record_evidence's columns besides the packed evidence and the version: the key, and accepted_at to order by. */
const EVIDENCE_KEY_COLUMNS = 'tenant_id, collection, record_id, database, record_version, ingest_id, accepted_at';

function packedEvidence(): string {
  return `toJSONString(tuple(${EVIDENCE_FIELDS.join(', ')}))`;
}

/** record_evidence's columns: the key, accepted_at to order by, the packed evidence. */
const RECORD_EVIDENCE =
  "tenant_id LowCardinality(String), collection String, record_id String, database String, record_version String, ingest_id String, accepted_at DateTime64(3, 'UTC'), evidence String CODEC(LZ4), version UInt64";

export const recordEvidenceMigrations = (db: string): readonly Migration[] => [
  migration(15, 'create record_evidence', createTable(`${db}.record_evidence`, RECORD_EVIDENCE, byRecordKey(16))),
  migration(16, 'create record_evidence_from_records', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_records TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, row_version AS version
FROM ${db}.records`),
  migration(17, 'create record_evidence_from_lookup', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_lookup TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`),
  migration(18, 'back-fill record_evidence', `INSERT INTO ${db}.record_evidence (${EVIDENCE_KEY_COLUMNS}, evidence, version)
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`),
  migration(23, 'record_evidence merges in default steps', `ALTER TABLE ${db}.record_evidence MODIFY SETTING merge_selector_base = ${EVIDENCE_MERGE_BASE}`),
];

/**
 * record_evidence_by_hash (migrations 25-29) supersedes record_evidence: the same rows, written by
 *   the same two writers, under a primary key of one UInt64, a hash of (tenant, collection, record
 *   id) that the column's DEFAULT computes (evidence-key.ts says why and how).
 *   - The view on records feeds it instead of record_evidence (26, 28); the pipeline inserts into
 *     it. A view on record_evidence (27) copies what an older version's pipeline still writes
 *     there during an upgrade, and what reaches it from record_lookup.
 *   - 29 back-fills it from record_evidence after the views are in place, so no row is missed;
 *     rows written meanwhile through both views are written twice at one version, which readers
 *     collapse. record_evidence itself is left as it is, for processes of the older version.
 */
/** The engine, keys and settings of the tables keyed by the key's hash (record_evidence_by_hash, record_evidence_packed). */
const BY_KEY_HASH = `ENGINE = ReplacingMergeTree(version)
PRIMARY KEY key_hash
ORDER BY (key_hash, tenant_id, collection, record_id, database, record_version, ingest_id)
SETTINGS index_granularity = 16, min_bytes_for_wide_part = ${COMPACT_PARTS_UP_TO_BYTES}, merge_selector_base = ${EVIDENCE_MERGE_BASE},
         fsync_after_insert = 1, fsync_part_directory = 1`;

const RECORD_EVIDENCE_BY_HASH = `key_hash UInt64 DEFAULT ${EVIDENCE_KEY_HASH_SQL}, ${RECORD_EVIDENCE}`;

export const recordEvidenceByHashMigrations = (db: string): readonly Migration[] => [
  migration(
    25,
    'create record_evidence_by_hash',
    createTable(
      `${db}.record_evidence_by_hash`,
      RECORD_EVIDENCE_BY_HASH,
      BY_KEY_HASH,
    ),
  ),
  migration(26, 'create record_evidence_by_hash_from_records', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_by_hash_from_records TO ${db}.record_evidence_by_hash AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, row_version AS version
FROM ${db}.records`),
  migration(27, 'create record_evidence_by_hash_from_evidence', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_by_hash_from_evidence TO ${db}.record_evidence_by_hash AS
SELECT ${EVIDENCE_KEY_COLUMNS}, evidence, version
FROM ${db}.record_evidence`),
  migration(28, 'drop record_evidence_from_records', `DROP VIEW IF EXISTS ${db}.record_evidence_from_records`),
  migration(29, 'back-fill record_evidence_by_hash', `INSERT INTO ${db}.record_evidence_by_hash (${EVIDENCE_KEY_COLUMNS}, evidence, version)
SELECT ${EVIDENCE_KEY_COLUMNS}, evidence, version
FROM ${db}.record_evidence`),
];

/**
 * record_evidence_packed (migrations 30-34) supersedes record_evidence_by_hash: the same rows under
 *   the same key, each also packed whole in one JSON array, `row` (EVIDENCE_ROW_HEAD, then the
 *   evidence), which is the one column a look-up reads.
 *   - Why: a look-up reads its columns granule by granule, and the engine's cost grows with the
 *     columns read as well as the keys. On a million records, 32 keys cost 4.4-5.3 ms of CPU
 *     reading `row` against 7.0-7.8 reading the nine columns; 64 keys 6.6-9.8 against 9.5-11.6.
 *     In the verify bench, 3 687 verifications/s on average against 3 243 (four runs each,
 *     alternated; docs/verification.md has them). The key's columns stay, for the
 *     engine's own use (the hash's DEFAULT, the ReplacingMergeTree key) and for filters.
 *   - Fed like record_evidence_by_hash was: a view on records (31, with 33 dropping the one into
 *     record_evidence_by_hash) and the pipeline's own insert. A view on record_evidence_by_hash
 *     (32) copies what an older version's pipeline still writes there during an upgrade, and
 *     what reaches that table from record_evidence.
 *   - 34 back-fills it from record_evidence_by_hash after the views are in place, as 29 did, in
 *     blocks of BACK_FILL_BLOCK_ROWS.
 */
const RECORD_EVIDENCE_PACKED = `key_hash UInt64 DEFAULT ${EVIDENCE_KEY_HASH_SQL}, tenant_id LowCardinality(String), collection String, record_id String, database String,
  record_version String, ingest_id String, accepted_at DateTime64(3, 'UTC'), version UInt64, row String CODEC(LZ4)`;

/**
 * Rows the back-fill reads and writes at a time. The engine's default (a million) made the copy of
 * a million records peak at 1.6 GB resident, the process's start included, against a
 * recommendation of 1 GiB per process; 262 144 at 1.36 GB; 65 536 at 710 MB, as fast (7.8 s
 * against 8.2), leaving 15 parts, which the engine's merges and the idle compaction then join.
 */
const BACK_FILL_BLOCK_ROWS = 65_536;

/** The packed row of a records row: its head, then its evidence as a nested array. */
function packedRowOfRecords(): string {
  return `toJSONString(tuple(${evidenceRowHeadSql('row_version')}, tuple(${EVIDENCE_FIELDS.join(', ')})))`;
}

/** record_evidence_by_hash's key columns, then its version, with the packed row its evidence makes. */
function packedFromByHash(db: string): string {
  return `WITH toJSONString(tuple(${evidenceRowHeadSql('version')})) AS head
SELECT key_hash, ${EVIDENCE_KEY_COLUMNS}, version, concat(substring(head, 1, length(head) - 1), ',', evidence, ']') AS row
FROM ${db}.record_evidence_by_hash`;
}

export const recordEvidencePackedMigrations = (db: string): readonly Migration[] => [
  migration(
    30,
    'create record_evidence_packed',
    createTable(
      `${db}.record_evidence_packed`,
      RECORD_EVIDENCE_PACKED,
      BY_KEY_HASH,
    ),
  ),
  migration(31, 'create record_evidence_packed_from_records', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_packed_from_records TO ${db}.record_evidence_packed AS
SELECT ${EVIDENCE_KEY_COLUMNS}, row_version AS version, ${packedRowOfRecords()} AS row
FROM ${db}.records`),
  migration(32, 'create record_evidence_packed_from_by_hash', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_packed_from_by_hash TO ${db}.record_evidence_packed AS
${packedFromByHash(db)}`),
  migration(33, 'drop record_evidence_by_hash_from_records', `DROP VIEW IF EXISTS ${db}.record_evidence_by_hash_from_records`),
  migration(34, 'back-fill record_evidence_packed', `INSERT INTO ${db}.record_evidence_packed (key_hash, ${EVIDENCE_KEY_COLUMNS}, version, row)
${packedFromByHash(db)}
SETTINGS max_block_size = ${BACK_FILL_BLOCK_ROWS}, max_insert_block_size = ${BACK_FILL_BLOCK_ROWS}, min_insert_block_size_rows = ${BACK_FILL_BLOCK_ROWS}`),
];
