import { createTable, migration, type Migration } from './migration.js';

/**
 * record_leaves (migration 9; ReplacingMergeTree(version), ORDER BY (tenant_id, ingest_id)): one
 *   narrow row per batched record, written with its batch (before the batch row, the commit
 *   marker). A record keeps its leaf for life; a second version exists only when a batch write
 *   failed part-way and its records were formed into another batch, and the later write wins.
 *   ingest ids sort by acceptance time, so this order follows the records table's and a page of
 *   records finds its leaves by key. Granules of 128 rows: its reads are by key, a page or a few
 *   rows at a time.
 * - merkle_proof is written empty since the record's proof went to record_evidence with the rest
 *   of its evidence: a listing reads no proof, and a look-up by hash takes it from there
 *   (`ClickHouseEvidenceStore.findByHash`). Rows of earlier versions keep theirs, and are read as
 *   before. An empty proof with a tree of more than one leaf thus means "see record_evidence".
 */

/** record_leaves' columns. */
const RECORD_LEAVES =
  'tenant_id LowCardinality(String), ingest_id String, snapshot_id String, batch_id String, leaf_index UInt32, tree_size UInt32, merkle_proof Array(String) CODEC(ZSTD(3)), version UInt64';

export const recordLeavesMigrations = (db: string): readonly Migration[] => [
  migration(9, 'create record_leaves', createTable(`${db}.record_leaves`, RECORD_LEAVES, { engine: 'ReplacingMergeTree(version)', orderBy: '(tenant_id, ingest_id)', settings: 'index_granularity = 128' })),
];
