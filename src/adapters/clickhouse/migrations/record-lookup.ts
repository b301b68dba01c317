import { LEAF_COLUMNS } from '../schema.js';
import { byRecordKey, createTable, migration, type Migration } from './migration.js';

/**
 * record_lookup (migrations 10-12, superseded by record_evidence; ReplacingMergeTree(version),
 *   ORDER BY (tenant_id, collection, record_id, database, record_version, ingest_id)): every record
 *   with what verifying it needs, its envelope, hashes and leaf, in one row found by key.
 *   Verification, receipts, retrieval checks and the timeline found records here.
 *   - Written twice: the materialized view record_lookup_from_records copied each row inserted
 *     into records (the indexer's, version = row_version, 1, no leaf), and the pipeline wrote the
 *     same row with its leaf at the leaf's version when it stored the record's batch, from the
 *     accepted record it held. Indexer and accumulator consume the queue independently, so either
 *     may come first; the higher version wins either way. The view also carried rows a process of
 *     an older version inserts into records, its pre-record_leaves rewrites with their leaf
 *     included.
 *   - Read without FINAL: every stored version of the few rows a key selects comes back and the
 *     reader keeps the highest. A row without a leaf takes it from record_leaves when that has one
 *     (a record batched by a version without record_lookup). record_evidence is read the same way
 *     (`lookupRecordsSql` in evidence-rows.ts).
 *   - index_granularity 64 and Compact parts at every size: a look-up reads one granule per key
 *     and part, all of its columns, so a granule is small and its columns lie side by side in one
 *     file. 64 keys cost about 15 ms on a million rows here, where the records table cost 190.
 *   - PRIMARY KEY (tenant_id, collection, record_id), a prefix of the sorting key: look-ups always
 *     name those three, and the index kept in memory is the smaller for it.
 *   - No partitions, and merges in narrower steps than the default (merge_selector_base 3, not 5):
 *     a look-up costs a few hundred microseconds more for every part it visits, so fewer parts
 *     are worth rewriting rows a little more often. A million records loaded in batches rest in
 *     4 parts instead of 11. record_evidence, which took the same clause, went back to the
 *     default in migration 23 (record-evidence.ts): it is written twice per record, and its
 *     merges cost more than the extra parts did.
 *   - Migration 12 back-fills it from records (FINAL) and record_leaves in one INSERT ... SELECT,
 *     so a data directory made before it verifies after the upgrade. Repeated (a crash before its
 *     bookkeeping row), it adds rows of the same versions, which readers collapse.
 *   - Migration 19 drops record_lookup_from_records (record_evidence took its place): this version
 *     neither reads nor feeds record_lookup, which may be dropped by hand once no older process
 *     runs.
 */

/** record_lookup's columns besides the leaf and the version, as named in records too. */
const LOOKUP_ENVELOPE_COLUMNS =
  'tenant_id, collection, record_id, database, record_version, ingest_id, accepted_at, client_id, operation_type, source_timestamp, hash_scheme, payload_hash, record_hash, salt';

/** record_lookup's columns: the envelope, the hashes and the leaf of a record. */
const RECORD_LOOKUP =
  "tenant_id LowCardinality(String), collection String, record_id String, database String, record_version String, ingest_id String, accepted_at DateTime64(3, 'UTC'), client_id LowCardinality(String), operation_type LowCardinality(String), source_timestamp Nullable(String), hash_scheme LowCardinality(String), payload_hash String, record_hash String, salt String, snapshot_id Nullable(String), batch_id Nullable(String), leaf_index Nullable(UInt32), tree_size Nullable(UInt32), merkle_proof Array(String) CODEC(ZSTD(3)), version UInt64";

export const recordLookupMigrations = (db: string): readonly Migration[] => [
  migration(10, 'create record_lookup', createTable(`${db}.record_lookup`, RECORD_LOOKUP, byRecordKey(64))),
  migration(11, 'create record_lookup_from_records', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_lookup_from_records TO ${db}.record_lookup AS
SELECT ${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, row_version AS version
FROM ${db}.records`),
  migration(12, 'back-fill record_lookup', `INSERT INTO ${db}.record_lookup (${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, version)
SELECT ${LOOKUP_ENVELOPE_COLUMNS.split(', ').map((c) => `r.${c}`).join(', ')},
       ${LEAF_COLUMNS.map((c) => `if(l.l_batch_id = '', r.${c}, l.l_${c})`).join(',\n       ')},
       if(l.l_batch_id = '', r.row_version, l.l_version)
FROM
(
    SELECT ${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, row_version
    FROM ${db}.records FINAL
) AS r
LEFT ANY JOIN
(
    SELECT tenant_id AS l_tenant_id, ingest_id AS l_ingest_id, ${LEAF_COLUMNS.map((c) => `${c} AS l_${c}`).join(', ')}, version AS l_version
    FROM ${db}.record_leaves FINAL
) AS l ON r.tenant_id = l.l_tenant_id AND r.ingest_id = l.l_ingest_id`),
  migration(19, 'drop record_lookup_from_records', `DROP VIEW IF EXISTS ${db}.record_lookup_from_records`),
];
