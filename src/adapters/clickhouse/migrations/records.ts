import { createTable, migration, type Migration } from './migration.js';

/**
 * records (ReplacingMergeTree(row_version), ORDER BY (tenant_id, accepted_at, ingest_id))
 *   - GET /records filters by tenant and an acceptedAt range and pages by (acceptedAt, ingestId),
 *     which is exactly the sorting key, so a page is a key-range read in order.
 *   - The sorting key is also the replacing key. A redelivered record carries the same tenant,
 *     acceptedAt and ingestId (they are fixed at acceptance), so even a lost race between two
 *     indexers collapses into one row at merge time and FINAL hides the second one before that.
 *     The indexer's look-up of existing ingest ids keeps the stored row count exact as well.
 *   - A record row is written once, by the indexer (row_version 1, ROW_VERSION_INGESTED). Its
 *     place in a batch (snapshot_id, batch_id, leaf_index, tree_size, merkle_proof) is stored in
 *     record_leaves and joined at read time (`recordsWithLeaves`). Before migration 9 the
 *     pipeline rewrote the whole row, payload included, with a higher row_version to add those
 *     columns; rows written so keep them here, and reads take them when record_leaves has no row.
 *     The snapshot's transitions (Batched, Anchored, Failed) live in `snapshots`, joined at read
 *     time; the `status` and `chain_tx_hash` columns here hold the values of such an old rewrite.
 *   - Bloom-filter skip indexes serve the look-ups that are not key prefixes: record_id (listing
 *     filters), snapshot_id and batch_id (filters, proofs), record_hash and payload_hash (verify
 *     by hash), ingest_id (idempotency checks over wide time ranges). A record found by
 *     collection and recordId is read from record_evidence, not from here: a bloom filter
 *     still reads whole 8192-row granules of every column it cannot rule out.
 *   - PARTITION BY month of accepted_at: accepted_at is in the replacing key, so all versions of a
 *     row share a partition (ReplacingMergeTree only collapses within one).
 *   - payload (canonical JSON text) and merkle_proof are ZSTD-compressed: they are most of the
 *     bytes and are read only by point look-ups.
 *
 *   - fsync_after_insert: the indexer acknowledges queue messages once their insert returns, so
 *     the insert must be on disk, not in the page cache, by then. Group commit makes that one
 *     fsync per few thousand rows. The same holds for keys (a revocation), the audit trail and
 *     every other table.
 */

/** records: the envelope, the payload, and the leaf columns of rows rewritten before record_leaves. */
const RECORDS =
  "tenant_id LowCardinality(String), accepted_at DateTime64(3, 'UTC'), ingest_id String, client_id LowCardinality(String), key_id String, database String, collection String, record_id String, record_version String, operation_type LowCardinality(String), source_timestamp Nullable(String), hash_scheme LowCardinality(String), payload_hash String, record_hash String, salt String, payload String CODEC(ZSTD(3)), idempotency_key Nullable(String), correlation_id String, snapshot_id Nullable(String), batch_id Nullable(String), leaf_index Nullable(UInt32), tree_size Nullable(UInt32), merkle_proof Array(String) CODEC(ZSTD(3)), status LowCardinality(String) DEFAULT 'Ingested', chain_tx_hash Nullable(String), row_version UInt64, indexed_at DateTime64(3, 'UTC') DEFAULT now64(3), INDEX idx_record_id    record_id    TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_snapshot_id  snapshot_id  TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_batch_id     batch_id     TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_record_hash  record_hash  TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_payload_hash payload_hash TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_ingest_id    ingest_id    TYPE bloom_filter(0.01) GRANULARITY 1";

export const recordsMigrations = (db: string): readonly Migration[] => [
  migration(1, 'create records', createTable(`${db}.records`, RECORDS, { engine: 'ReplacingMergeTree(row_version)', partitionBy: 'toYYYYMM(accepted_at)', orderBy: '(tenant_id, accepted_at, ingest_id)' })),
];
