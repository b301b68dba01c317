import { APPEND_ONLY_MERGE_BASE, createTable, migration, type Migration } from './migration.js';

/**
 * audit_events (MergeTree, append-only, ORDER BY (tenant_id, at, event_id)): nothing updates an
 *   entry. An append retried after an ambiguous failure may store an event twice; reads collapse
 *   it with LIMIT 1 BY event_id, so the trail lists every event exactly once. The trail's
 *   verification events are the verifications rows, read beside it (`auditQuerySql`); rows of
 *   those actions that earlier versions also wrote here are not read.
 *
 * Migration 14 lets its parts merge in wider steps (see APPEND_ONLY_MERGE_BASE).
 */

/** audit_events' columns and skip indexes. */
const AUDIT_EVENTS =
  "tenant_id LowCardinality(String), at DateTime64(3, 'UTC'), event_id String, client_id String, key_id String, action LowCardinality(String), resource String, outcome LowCardinality(String), correlation_id String, detail String CODEC(ZSTD(3)), INDEX idx_action    action    TYPE set(256)          GRANULARITY 1, INDEX idx_key_id    key_id    TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_client_id client_id TYPE bloom_filter(0.01) GRANULARITY 1, INDEX idx_resource  resource  TYPE bloom_filter(0.01) GRANULARITY 1";

export const auditEventsMigrations = (db: string): readonly Migration[] => [
  migration(3, 'create audit_events', createTable(`${db}.audit_events`, AUDIT_EVENTS, { engine: 'MergeTree', partitionBy: 'toYYYYMM(at)', orderBy: '(tenant_id, at, event_id)' })),
  migration(14, 'audit_events merge wider', `ALTER TABLE ${db}.audit_events MODIFY SETTING merge_selector_base = ${APPEND_ONLY_MERGE_BASE}`),
];
