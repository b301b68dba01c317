import { createTable, migration, type Migration } from './migration.js';

/** retrieval_policies (ReplacingMergeTree(updated_at), ORDER BY tenant_id): one JSON policy per tenant, replaced whole. */

/** retrieval_policies' columns. */
const RETRIEVAL_POLICIES =
  "tenant_id String, policy String, updated_by String, updated_at DateTime64(6, 'UTC')";

export const retrievalPoliciesMigrations = (db: string): readonly Migration[] => [
  migration(8, 'create retrieval_policies', createTable(`${db}.retrieval_policies`, RETRIEVAL_POLICIES, { engine: 'ReplacingMergeTree(updated_at)', orderBy: 'tenant_id' })),
];
