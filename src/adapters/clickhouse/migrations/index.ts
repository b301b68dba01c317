import { apiKeysMigrations } from './api-keys.js';
import { auditEventsMigrations } from './audit-events.js';
import { batchBlocksMigrations } from './batch-blocks.js';
import { createTable, type Migration } from './migration.js';
import { pipelineMigrations } from './pipeline.js';
import { recordEvidenceByHashMigrations, recordEvidenceMigrations, recordEvidencePackedMigrations } from './record-evidence.js';
import { recordLeavesMigrations } from './record-leaves.js';
import { recordLookupMigrations } from './record-lookup.js';
import { recordsMigrations } from './records.js';
import { retrievalPoliciesMigrations } from './retrieval-policies.js';
import { verificationsMigrations } from './verifications.js';

export type { Migration } from './migration.js';

/**
 * The schema of one database, table by table (each file holds its tables' migrations and the
 * reasons for their design), applied in version order by `ClickHouseDatabase.migrate`.
 *
 * Every value travels as a server-side parameter (`{name:Type}`); the only text ever spliced into
 * a statement is the database identifier, validated once by `databaseIdentifier`, and fixed
 * fragments chosen by code. The statements are shared verbatim by the embedded engine (chDB) and
 * a ClickHouse server (@clickhouse/client).
 *
 * schema_migrations (ReplacingMergeTree, ORDER BY version): one row per applied migration.
 *   Every migration statement is idempotent (IF NOT EXISTS), so a crash between a statement and
 *   its bookkeeping row, or two processes migrating at once, only repeats harmless work.
 */

/** Statements run before the migration list itself can be consulted. */
export function bootstrapSql(db: string): readonly string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${db}`,
    createTable(`${db}.schema_migrations`, "version UInt32, name String, applied_at DateTime64(3, 'UTC') DEFAULT now64(3)", 'ENGINE = ReplacingMergeTree\nORDER BY version'),
  ];
}

/** Every migration of database `db`, in ascending version order. */
export function migrations(db: string): readonly Migration[] {
  return [
    ...recordsMigrations(db),
    ...apiKeysMigrations(db),
    ...auditEventsMigrations(db),
    ...pipelineMigrations(db),
    ...verificationsMigrations(db),
    ...retrievalPoliciesMigrations(db),
    ...recordLeavesMigrations(db),
    ...recordLookupMigrations(db),
    ...recordEvidenceMigrations(db),
    ...recordEvidenceByHashMigrations(db),
    ...recordEvidencePackedMigrations(db),
    ...batchBlocksMigrations(db),
  ].sort((a, b) => a.version - b.version);
}

/** Row: { version }. */
export function appliedVersionsSql(db: string): string {
  return `SELECT version FROM ${db}.schema_migrations FINAL ORDER BY version`;
}

/** Params: version UInt32, name String. */
export function recordMigrationSql(db: string): string {
  return `INSERT INTO ${db}.schema_migrations (version, name) VALUES ({version:UInt32}, {name:String})`;
}
