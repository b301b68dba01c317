import { createTable, migration, type Migration } from './migration.js';

/**
 * api_keys (ReplacingMergeTree(updated_at), ORDER BY key_id): a key is replaced as a whole
 *   (revocation and rotation re-put it) with a strictly increasing updated_at; reads use FINAL.
 */

/** api_keys' columns. */
const API_KEYS =
  "key_id String, tenant_id String, client_id String, level LowCardinality(String), secret_hash String, created_at DateTime64(3, 'UTC'), expires_at Nullable(DateTime64(3, 'UTC')), revoked_at Nullable(DateTime64(3, 'UTC')), also_tenants Array(String), rotated_from Nullable(String), updated_at DateTime64(6, 'UTC')";

export const apiKeysMigrations = (db: string): readonly Migration[] => [
  migration(2, 'create api_keys', createTable(`${db}.api_keys`, API_KEYS, { engine: 'ReplacingMergeTree(updated_at)', orderBy: 'key_id' })),
];
