import { createTable, migration, type Migration } from './migration.js';

/**
 * record_leaves (migration 9; ReplacingMergeTree(version), ORDER BY (tenant_id, ingest_id)): one
 *   narrow row per batched record, written with its batch (before the batch row, the commit
 *   marker). A record keeps its leaf for life; a second version exists only when a batch write
 *   failed part-way and its records were formed into another batch, and the later write wins.
 *   ingest ids sort by acceptance time, so this order follows the records table's and a page of
 *   records finds its leaves by key. Granules of 128 rows: its reads are by key, a page or a few
 *   rows at a time.
 */

/** record_leaves' columns. */
const RECORD_LEAVES =
  'tenant_id LowCardinality(String), ingest_id String, snapshot_id String, batch_id String, leaf_index UInt32, tree_size UInt32, merkle_proof Array(String) CODEC(ZSTD(3)), version UInt64';

export const recordLeavesMigrations = (db: string): readonly Migration[] => [
  migration(9, 'create record_leaves', createTable(`${db}.record_leaves`, RECORD_LEAVES, { engine: 'ReplacingMergeTree(version)', orderBy: '(tenant_id, ingest_id)', settings: 'index_granularity = 128' })),
];
