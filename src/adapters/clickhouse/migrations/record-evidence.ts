import { EVIDENCE_FIELDS } from '../schema.js';
import { byRecordKey, createTable, migration, type Migration } from './migration.js';

/**
 * record_evidence (migrations 15-18) supersedes record_lookup, with the same key and the same two
 *   writers, but the fields besides the key packed into one JSON column (EVIDENCE_FIELDS) and
 *   granules of 16 rows, LZ4: a look-up of 23 records cost 4.3 ms instead of 6.6 on a million.
 *   - Fed like record_lookup was: a view on records (the indexer's rows) and the pipeline's own
 *     insert. A second view copies what reaches record_lookup, which only a process of an older
 *     version still writes during an upgrade.
 *   - Migration 18 back-fills it from record_lookup; repeated, it adds rows of the same versions,
 *     which readers collapse.
 *   - Migration 23 merges it in the engine's default steps (merge_selector_base 5) rather than the
 *     narrower ones record_lookup took (3, see record-lookup.ts). Every record is written to it
 *     twice (indexed, then batched), and merging it was more than half of the engine's merge
 *     work in the pipeline bench: 43 ms of merge CPU per 1000 records at 3, 32 at 5 (7 000/s
 *     offered). The look-ups did not notice: right after loading a million records, 6 parts at 3
 *     and 11 at 5 verified at 2 284 and 2 419/s, 13.6 and 13.2 ms per record_evidence query.
 */

/** merge_selector_base of record_evidence from migration 23: the engine's default. */
export const EVIDENCE_MERGE_BASE = 5;

/** record_evidence's columns besides the packed evidence and the version: the key, and accepted_at to order by. */
const EVIDENCE_KEY_COLUMNS = 'tenant_id, collection, record_id, database, record_version, ingest_id, accepted_at';

function packedEvidence(): string {
  return `toJSONString(tuple(${EVIDENCE_FIELDS.join(', ')}))`;
}

/** record_evidence's columns: the key, accepted_at to order by, the packed evidence. */
const RECORD_EVIDENCE =
  "tenant_id LowCardinality(String), collection String, record_id String, database String, record_version String, ingest_id String, accepted_at DateTime64(3, 'UTC'), evidence String CODEC(LZ4), version UInt64";

export const recordEvidenceMigrations = (db: string): readonly Migration[] => [
  migration(15, 'create record_evidence', createTable(`${db}.record_evidence`, RECORD_EVIDENCE, byRecordKey(16))),
  migration(16, 'create record_evidence_from_records', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_records TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, row_version AS version
FROM ${db}.records`),
  migration(17, 'create record_evidence_from_lookup', `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_lookup TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`),
  migration(18, 'back-fill record_evidence', `INSERT INTO ${db}.record_evidence (${EVIDENCE_KEY_COLUMNS}, evidence, version)
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`),
  migration(23, 'record_evidence merges in default steps', `ALTER TABLE ${db}.record_evidence MODIFY SETTING merge_selector_base = ${EVIDENCE_MERGE_BASE}`),
];
