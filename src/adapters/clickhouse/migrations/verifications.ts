import { APPEND_ONLY_MERGE_BASE, createTable, migration, type Migration } from './migration.js';

/**
 * verifications (MergeTree, append-only, ORDER BY (tenant_id, at, verification_id) like the audit
 *   trail): the history of verification attempts, also read as the trail's verification events.
 *
 * Migration 13 lets its parts merge in wider steps (see APPEND_ONLY_MERGE_BASE).
 */

/** verifications' columns and skip indexes. */
const VERIFICATIONS =
  "tenant_id LowCardinality(String), at DateTime64(3, 'UTC'), verification_id String, client_id String, key_id String, mode LowCardinality(String), database Nullable(String), collection Nullable(String), record_id Nullable(String), record_version Nullable(String), snapshot_id Nullable(String), batch_id Nullable(String), verified Bool, verification_status LowCardinality(String), reason_category LowCardinality(String), correlation_id String, INDEX idx_record_id   record_id   TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_snapshot_id snapshot_id TYPE bloom_filter(0.01) GRANULARITY 1";

export const verificationsMigrations = (db: string): readonly Migration[] => [
  migration(7, 'create verifications', createTable(`${db}.verifications`, VERIFICATIONS, { engine: 'MergeTree', partitionBy: 'toYYYYMM(at)', orderBy: '(tenant_id, at, verification_id)' })),
  migration(13, 'verifications merge wider', `ALTER TABLE ${db}.verifications MODIFY SETTING merge_selector_base = ${APPEND_ONLY_MERGE_BASE}`),
];
