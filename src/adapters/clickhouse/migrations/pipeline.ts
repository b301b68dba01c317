import { createTable, migration, type Migration } from './migration.js';

/**
 * The pipeline's tables (migrations 4-6): batches (ReplacingMergeTree by batch_id with a version),
 * snapshots (ReplacingMergeTree by (tenant_id, snapshot_id) with a version) and
 * snapshot_lifecycle (append-only).
 *
 * Leader epochs (migrations 20-22): the version of batches and snapshots widens to UInt128 and
 *   holds the writer's leadership epoch in its high 64 bits and microseconds in its low 64
 *   (ClickHouse allows widening a ReplacingMergeTree version in place). FINAL, and any read that
 *   keeps the highest version, thus takes the newest epoch first and the latest write within it:
 *   a stale leader's late write can never replace a row its successor wrote, whatever the clocks
 *   say. Rows written before (and by an older process during an upgrade) have epoch 0 and lose to
 *   every fenced write. snapshot_lifecycle is append-only; its entries carry the epoch in a column
 *   of their own, and a reader leaves out an entry of an older epoch than one listed before it
 *   (ClickHousePipelineStore.lifecycleOf).
 */

/** batches' columns: a batch with its leaves, its chain anchor and its retries. */
const BATCHES =
  "batch_id String, created_at DateTime64(3, 'UTC'), status LowCardinality(String), tree_size UInt32, merkle_root String, leaves Array(String) CODEC(ZSTD(3)), ingest_ids Array(String) CODEC(ZSTD(3)), tenants Array(String), batch_seq Nullable(UInt64), manifest_cid Nullable(String), prev_batch_id Nullable(String), prev_merkle_root Nullable(String), prev_cid Nullable(String), chain_id Nullable(UInt64), contract_address Nullable(String), tx_hash Nullable(String), block_number Nullable(UInt64), anchored_at Nullable(DateTime64(3, 'UTC')), attempts UInt32, last_error Nullable(String), version UInt64, INDEX idx_root merkle_root TYPE bloom_filter(0.01) GRANULARITY 1";

/** snapshots' columns: one tenant's share of a batch. */
const SNAPSHOTS =
  "tenant_id LowCardinality(String), snapshot_id String, batch_id String, status LowCardinality(String), record_ids Array(String) CODEC(ZSTD(3)), ingest_ids Array(String) CODEC(ZSTD(3)), record_count UInt32, snapshot_hash String, merkle_root Nullable(String), anchor_timestamp Nullable(DateTime64(3, 'UTC')), on_chain_confirmed Bool, chain_tx_hash Nullable(String), created_at DateTime64(3, 'UTC'), version UInt64, INDEX idx_batch batch_id TYPE bloom_filter(0.01) GRANULARITY 1";

/** snapshot_lifecycle's columns: a snapshot's transitions. */
const SNAPSHOT_LIFECYCLE =
  "tenant_id LowCardinality(String), snapshot_id String, at DateTime64(3, 'UTC'), entry_id String, state LowCardinality(String), reason String, attempt UInt32";

export const pipelineMigrations = (db: string): readonly Migration[] => [
  migration(4, 'create batches', createTable(`${db}.batches`, BATCHES, { engine: 'ReplacingMergeTree(version)', orderBy: 'batch_id' })),
  migration(5, 'create snapshots', createTable(`${db}.snapshots`, SNAPSHOTS, { engine: 'ReplacingMergeTree(version)', orderBy: '(tenant_id, snapshot_id)' })),
  migration(6, 'create snapshot_lifecycle', createTable(`${db}.snapshot_lifecycle`, SNAPSHOT_LIFECYCLE, { engine: 'MergeTree', orderBy: '(tenant_id, snapshot_id, at, entry_id)' })),
  migration(20, 'batches version carries the leader epoch', `ALTER TABLE ${db}.batches MODIFY COLUMN version UInt128`),
  migration(21, 'snapshots version carries the leader epoch', `ALTER TABLE ${db}.snapshots MODIFY COLUMN version UInt128`),
  migration(22, 'snapshot_lifecycle epoch', `ALTER TABLE ${db}.snapshot_lifecycle ADD COLUMN IF NOT EXISTS epoch UInt64 DEFAULT 0`),
];
