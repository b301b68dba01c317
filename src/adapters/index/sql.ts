import { VERIFICATION_ACTION_OF_MODE, VERIFICATION_ACTIONS, VERIFY_RECORD_ACTION } from '../../domain/audit/verification-events.js';

/**
 * SQL of the hot index, shared verbatim by the embedded engine (chDB) and a ClickHouse server
 * (@clickhouse/client). Every value travels as a server-side parameter (`{name:Type}`); the only
 * text ever spliced into a statement is the database identifier, validated once by
 * `databaseIdentifier`, and fixed fragments chosen by code.
 *
 * Schema design
 * -------------
 * records (ReplacingMergeTree(row_version), ORDER BY (tenant_id, accepted_at, ingest_id))
 *   - GET /records filters by tenant and an acceptedAt range and pages by (acceptedAt, ingestId),
 *     which is exactly the sorting key, so a page is a key-range read in order.
 *   - The sorting key is also the replacing key. A redelivered record carries the same tenant,
 *     acceptedAt and ingestId (they are fixed at acceptance), so even a lost race between two
 *     indexers collapses into one row at merge time and FINAL hides the second one before that.
 *     The indexer's look-up of existing ingest ids keeps the stored row count exact as well.
 *   - A record row is written once, by the indexer (row_version 1, ROW_VERSION_INGESTED). Its
 *     place in a batch (snapshot_id, batch_id, leaf_index, tree_size, merkle_proof) is stored in
 *     record_leaves (below) and joined at read time (`recordsWithLeaves`). Before migration 9 the
 *     pipeline rewrote the whole row, payload included, with a higher row_version to add those
 *     columns; rows written so keep them here, and reads take them when record_leaves has no row.
 *     The snapshot's transitions (Batched, Anchored, Failed) live in `snapshots`, joined at read
 *     time; the `status` and `chain_tx_hash` columns here hold the values of such an old rewrite.
 *   - Bloom-filter skip indexes serve the look-ups that are not key prefixes: record_id (listing
 *     filters), snapshot_id and batch_id (filters, proofs), record_hash and payload_hash (verify
 *     by hash), ingest_id (idempotency checks over wide time ranges). A record found by
 *     collection and recordId is read from record_evidence (below), not from here: a bloom filter
 *     still reads whole 8192-row granules of every column it cannot rule out.
 *   - PARTITION BY month of accepted_at: accepted_at is in the replacing key, so all versions of a
 *     row share a partition (ReplacingMergeTree only collapses within one).
 *   - payload (canonical JSON text) and merkle_proof are ZSTD-compressed: they are most of the
 *     bytes and are read only by point look-ups.
 *
 *   - fsync_after_insert: the indexer acknowledges queue messages once their insert returns, so
 *     the insert must be on disk, not in the page cache, by then. Group commit makes that one
 *     fsync per few thousand rows. The same holds for keys (a revocation) and the audit trail.
 *
 * api_keys (ReplacingMergeTree(updated_at), ORDER BY key_id): a key is replaced as a whole
 *   (revocation and rotation re-put it) with a strictly increasing updated_at; reads use FINAL.
 *
 * audit_events (MergeTree, append-only, ORDER BY (tenant_id, at, event_id)): nothing updates an
 *   entry. An append retried after an ambiguous failure may store an event twice; reads collapse
 *   it with LIMIT 1 BY event_id, so the trail lists every event exactly once. The trail's
 *   verification events are the verifications rows, read beside it (`queryAudit`); rows of those
 *   actions that earlier versions also wrote here are not read.
 *
 * schema_migrations (ReplacingMergeTree, ORDER BY version): one row per applied migration.
 *   Every migration statement is idempotent (IF NOT EXISTS), so a crash between a statement and
 *   its bookkeeping row, or two processes migrating at once, only repeats harmless work.
 *
 * Pipeline and verification tables (migrations 4-8): snapshots (ReplacingMergeTree by
 * (tenant_id, snapshot_id) with a version), batches (ReplacingMergeTree by batch_id),
 * snapshot_lifecycle (append-only), verifications (append-only history of verification attempts,
 * ORDER BY (tenant_id, at, verification_id) like the audit trail) and retrieval_policies (one JSON
 * policy per tenant, replaced whole).
 *
 * record_leaves (migration 9; ReplacingMergeTree(version), ORDER BY (tenant_id, ingest_id)): one
 *   narrow row per batched record, written with its batch (before the batch row, the commit
 *   marker). A record keeps its leaf for life; a second version exists only when a batch write
 *   failed part-way and its records were formed into another batch, and the later write wins.
 *   ingest ids sort by acceptance time, so this order follows the records table's and a page of
 *   records finds its leaves by key. Granules of 128 rows: its reads are by key, a page or a few
 *   rows at a time.
 *
 * record_lookup (migrations 10-12, superseded by record_evidence; ReplacingMergeTree(version),
 *   ORDER BY (tenant_id, collection, record_id, database, record_version, ingest_id)): every record
 *   with what verifying it needs, its envelope, hashes and leaf, in one row found by key.
 *   Verification, receipts, retrieval checks and the timeline find records here.
 *   - Written twice: the materialized view record_lookup_from_records copies each row inserted
 *     into records (the indexer's, version = row_version, 1, no leaf), and the pipeline writes the
 *     same row with its leaf at the leaf's version when it stores the record's batch, from the
 *     accepted record it holds. Indexer and accumulator consume the queue independently, so either
 *     may come first; the higher version wins either way. The view also carries rows a process of
 *     an older version inserts into records, its pre-record_leaves rewrites with their leaf
 *     included.
 *   - Read without FINAL (see `lookupRecords`): every stored version of the few rows a key selects
 *     comes back and the reader keeps the highest. A row without a leaf takes it from
 *     record_leaves when that has one (a record batched by a version without record_lookup).
 *   - index_granularity 64 and Compact parts at every size: a look-up reads one granule per key
 *     and part, all of its columns, so a granule is small and its columns lie side by side in one
 *     file. 64 keys cost about 15 ms on a million rows here, where the records table cost 190.
 *   - PRIMARY KEY (tenant_id, collection, record_id), a prefix of the sorting key: look-ups always
 *     name those three, and the index kept in memory is the smaller for it.
 *   - No partitions, and merges in narrower steps than the default (merge_selector_base 3, not 5):
 *     a look-up costs a few hundred microseconds more for every part it visits, so fewer parts
 *     are worth rewriting rows a little more often. A million records loaded in batches rest in
 *     4 parts instead of 11.
 *   - Migration 12 back-fills it from records (FINAL) and record_leaves in one INSERT ... SELECT,
 *     so a data directory made before it verifies after the upgrade. Repeated (a crash before its
 *     bookkeeping row), it adds rows of the same versions, which readers collapse.
 *
 * record_evidence (migrations 15-19) supersedes record_lookup, with the same key and the same two
 *   writers, but the fields besides the key packed into one JSON column (EVIDENCE_FIELDS) and
 *   granules of 16 rows, LZ4: a look-up of 23 records cost 4.3 ms instead of 6.6 on a million.
 *   - Fed like record_lookup was: a view on records (the indexer's rows) and the pipeline's own
 *     insert. A second view copies what reaches record_lookup, which only a process of an older
 *     version still writes during an upgrade; record_lookup_from_records is dropped, so
 *     record_lookup is no longer read or fed by this version, and may be dropped by hand once no
 *     older process runs.
 *   - Migration 18 back-fills it from record_lookup; repeated, it adds rows of the same versions,
 *     which readers collapse.
 *
 * verifications and audit_events take a small insert per group commit, many a second while
 *   verifications run; migrations 13-14 let their parts merge in wider steps (merge_selector_base
 *   10 instead of 5), which rewrites each row fewer times.
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

/** The version an indexer writes; every later rewrite of a record row uses a higher one. */
export const ROW_VERSION_INGESTED = 1;

export const DEFAULT_DATABASE = 'dris';

/** Largest page any query returns, whatever the caller asks for. */
export const MAX_PAGE_LIMIT = 1000;

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** The database name is the one identifier spliced into SQL text, so it must be a plain word. */
export function databaseIdentifier(name: string): string {
  if (!IDENTIFIER.test(name)) {
    throw new TypeError(`invalid ClickHouse database name ${JSON.stringify(name)}: use letters, digits and _`);
  }
  return name;
}

export interface Migration {
  /** Applied in ascending order; never renumbered once released. */
  readonly version: number;
  readonly name: string;
  /** One idempotent statement. */
  readonly sql: string;
}

/** Statements run before the migration list itself can be consulted. */
export function bootstrapSql(db: string): readonly string[] {
  return [
    `CREATE DATABASE IF NOT EXISTS ${db}`,
    `CREATE TABLE IF NOT EXISTS ${db}.schema_migrations
(
    version    UInt32,
    name       String,
    applied_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree
ORDER BY version`,
  ];
}

/** record_lookup's columns besides the leaf and the version, as named in records too. */
const LOOKUP_ENVELOPE_COLUMNS =
  'tenant_id, collection, record_id, database, record_version, ingest_id, accepted_at, client_id, operation_type, source_timestamp, hash_scheme, payload_hash, record_hash, salt';

/** A record's place in its batch's tree, as named in records, record_leaves and record_lookup. */
const LEAF_COLUMNS = ['snapshot_id', 'batch_id', 'leaf_index', 'tree_size', 'merkle_proof'] as const;

/** record_evidence's columns besides the packed evidence and the version: the key, and accepted_at to order by. */
const EVIDENCE_KEY_COLUMNS = 'tenant_id, collection, record_id, database, record_version, ingest_id, accepted_at';

/**
 * The record_lookup columns record_evidence packs into its `evidence` column, in this order, as
 * one JSON array (`toJSONString` of a tuple; `packEvidence` in record-lookup.ts writes the same).
 */
export const EVIDENCE_FIELDS = [
  'client_id',
  'operation_type',
  'source_timestamp',
  'hash_scheme',
  'payload_hash',
  'record_hash',
  'salt',
  'snapshot_id',
  'batch_id',
  'leaf_index',
  'tree_size',
  'merkle_proof',
] as const;

function packedEvidence(): string {
  return `toJSONString(tuple(${EVIDENCE_FIELDS.join(', ')}))`;
}

const LOOKUP_COLUMN_DEFINITIONS = `    tenant_id        LowCardinality(String),
    collection       String,
    record_id        String,
    database         String,
    record_version   String,
    ingest_id        String,
    accepted_at      DateTime64(3, 'UTC'),
    client_id        LowCardinality(String),
    operation_type   LowCardinality(String),
    source_timestamp Nullable(String),
    hash_scheme      LowCardinality(String),
    payload_hash     String,
    record_hash      String,
    salt             String,
    snapshot_id      Nullable(String),
    batch_id         Nullable(String),
    leaf_index       Nullable(UInt32),
    tree_size        Nullable(UInt32),
    merkle_proof     Array(String) CODEC(ZSTD(3)),
    version          UInt64`;

/**
 * Parts of record_lookup stay Compact (one file for all columns, a granule's columns side by
 * side) at any size a merge makes: a look-up reads every column of one granule, which then costs
 * one read instead of one per column.
 */
const COMPACT_PARTS_UP_TO_BYTES = '1099511627776';

/**
 * verifications and audit_events take a small insert per group commit, tens a second under load:
 * merging their parts in wider steps (about ten parts of a size at once instead of five) rewrites
 * each row fewer times, at the price of a few more parts between merges.
 */
const APPEND_ONLY_MERGE_BASE = 10;

/**
 * Engine and settings of record_lookup and record_evidence: one row per record version, found by
 * key, read a granule of `granularity` rows at a time from Compact parts.
 */
function byRecordKey(granularity: number): string {
  return `ENGINE = ReplacingMergeTree(version)
PRIMARY KEY (tenant_id, collection, record_id)
ORDER BY (tenant_id, collection, record_id, database, record_version, ingest_id)
SETTINGS index_granularity = ${granularity}, min_bytes_for_wide_part = ${COMPACT_PARTS_UP_TO_BYTES}, merge_selector_base = 3,
         fsync_after_insert = 1, fsync_part_directory = 1`;
}

export function migrations(db: string): readonly Migration[] {
  return [
    {
      version: 1,
      name: 'create records',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.records
(
    tenant_id        LowCardinality(String),
    accepted_at      DateTime64(3, 'UTC'),
    ingest_id        String,
    client_id        LowCardinality(String),
    key_id           String,
    database         String,
    collection       String,
    record_id        String,
    record_version   String,
    operation_type   LowCardinality(String),
    source_timestamp Nullable(String),
    hash_scheme      LowCardinality(String),
    payload_hash     String,
    record_hash      String,
    salt             String,
    payload          String CODEC(ZSTD(3)),
    idempotency_key  Nullable(String),
    correlation_id   String,
    snapshot_id      Nullable(String),
    batch_id         Nullable(String),
    leaf_index       Nullable(UInt32),
    tree_size        Nullable(UInt32),
    merkle_proof     Array(String) CODEC(ZSTD(3)),
    status           LowCardinality(String) DEFAULT 'Ingested',
    chain_tx_hash    Nullable(String),
    row_version      UInt64,
    indexed_at       DateTime64(3, 'UTC') DEFAULT now64(3),
    INDEX idx_record_id    record_id    TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_snapshot_id  snapshot_id  TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_batch_id     batch_id     TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_record_hash  record_hash  TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_payload_hash payload_hash TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_ingest_id    ingest_id    TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(row_version)
PARTITION BY toYYYYMM(accepted_at)
ORDER BY (tenant_id, accepted_at, ingest_id)
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 2,
      name: 'create api_keys',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.api_keys
(
    key_id       String,
    tenant_id    String,
    client_id    String,
    level        LowCardinality(String),
    secret_hash  String,
    created_at   DateTime64(3, 'UTC'),
    expires_at   Nullable(DateTime64(3, 'UTC')),
    revoked_at   Nullable(DateTime64(3, 'UTC')),
    also_tenants Array(String),
    rotated_from Nullable(String),
    updated_at   DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY key_id
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 3,
      name: 'create audit_events',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.audit_events
(
    tenant_id      LowCardinality(String),
    at             DateTime64(3, 'UTC'),
    event_id       String,
    client_id      String,
    key_id         String,
    action         LowCardinality(String),
    resource       String,
    outcome        LowCardinality(String),
    correlation_id String,
    detail         String CODEC(ZSTD(3)),
    INDEX idx_action    action    TYPE set(256)          GRANULARITY 1,
    INDEX idx_key_id    key_id    TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_client_id client_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_resource  resource  TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (tenant_id, at, event_id)
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 4,
      name: 'create batches',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.batches
(
    batch_id         String,
    created_at       DateTime64(3, 'UTC'),
    status           LowCardinality(String),
    tree_size        UInt32,
    merkle_root      String,
    leaves           Array(String) CODEC(ZSTD(3)),
    ingest_ids       Array(String) CODEC(ZSTD(3)),
    tenants          Array(String),
    batch_seq        Nullable(UInt64),
    manifest_cid     Nullable(String),
    prev_batch_id    Nullable(String),
    prev_merkle_root Nullable(String),
    prev_cid         Nullable(String),
    chain_id         Nullable(UInt64),
    contract_address Nullable(String),
    tx_hash          Nullable(String),
    block_number     Nullable(UInt64),
    anchored_at      Nullable(DateTime64(3, 'UTC')),
    attempts         UInt32,
    last_error       Nullable(String),
    version          UInt64,
    INDEX idx_root merkle_root TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(version)
ORDER BY batch_id
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 5,
      name: 'create snapshots',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.snapshots
(
    tenant_id          LowCardinality(String),
    snapshot_id        String,
    batch_id           String,
    status             LowCardinality(String),
    record_ids         Array(String) CODEC(ZSTD(3)),
    ingest_ids         Array(String) CODEC(ZSTD(3)),
    record_count       UInt32,
    snapshot_hash      String,
    merkle_root        Nullable(String),
    anchor_timestamp   Nullable(DateTime64(3, 'UTC')),
    on_chain_confirmed Bool,
    chain_tx_hash      Nullable(String),
    created_at         DateTime64(3, 'UTC'),
    version            UInt64,
    INDEX idx_batch batch_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, snapshot_id)
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 6,
      name: 'create snapshot_lifecycle',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.snapshot_lifecycle
(
    tenant_id   LowCardinality(String),
    snapshot_id String,
    at          DateTime64(3, 'UTC'),
    entry_id    String,
    state       LowCardinality(String),
    reason      String,
    attempt     UInt32
)
ENGINE = MergeTree
ORDER BY (tenant_id, snapshot_id, at, entry_id)
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 7,
      name: 'create verifications',
      // Append-only like the audit trail; reads collapse a retried append with LIMIT 1 BY id.
      sql: `CREATE TABLE IF NOT EXISTS ${db}.verifications
(
    tenant_id           LowCardinality(String),
    at                  DateTime64(3, 'UTC'),
    verification_id     String,
    client_id           String,
    key_id              String,
    mode                LowCardinality(String),
    database            Nullable(String),
    collection          Nullable(String),
    record_id           Nullable(String),
    record_version      Nullable(String),
    snapshot_id         Nullable(String),
    batch_id            Nullable(String),
    verified            Bool,
    verification_status LowCardinality(String),
    reason_category     LowCardinality(String),
    correlation_id      String,
    INDEX idx_record_id   record_id   TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_snapshot_id snapshot_id TYPE bloom_filter(0.01) GRANULARITY 1
)
ENGINE = MergeTree
PARTITION BY toYYYYMM(at)
ORDER BY (tenant_id, at, verification_id)
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 8,
      name: 'create retrieval_policies',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.retrieval_policies
(
    tenant_id  String,
    policy     String,
    updated_by String,
    updated_at DateTime64(6, 'UTC')
)
ENGINE = ReplacingMergeTree(updated_at)
ORDER BY tenant_id
SETTINGS fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 9,
      name: 'create record_leaves',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.record_leaves
(
    tenant_id    LowCardinality(String),
    ingest_id    String,
    snapshot_id  String,
    batch_id     String,
    leaf_index   UInt32,
    tree_size    UInt32,
    merkle_proof Array(String) CODEC(ZSTD(3)),
    version      UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (tenant_id, ingest_id)
SETTINGS index_granularity = 128, fsync_after_insert = 1, fsync_part_directory = 1`,
    },
    {
      version: 10,
      name: 'create record_lookup',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.record_lookup
(
${LOOKUP_COLUMN_DEFINITIONS}
)
${byRecordKey(64)}`,
    },
    {
      version: 11,
      name: 'create record_lookup_from_records',
      sql: `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_lookup_from_records TO ${db}.record_lookup AS
SELECT ${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, row_version AS version
FROM ${db}.records`,
    },
    {
      version: 12,
      name: 'back-fill record_lookup',
      sql: `INSERT INTO ${db}.record_lookup (${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, version)
SELECT ${LOOKUP_ENVELOPE_COLUMNS.split(', ').map((c) => `r.${c}`).join(', ')},
       ${LEAF_COLUMNS.map((c) => `if(l.l_batch_id = '', r.${c}, l.l_${c})`).join(',\n       ')},
       if(l.l_batch_id = '', r.row_version, l.l_version)
FROM
(
    SELECT ${LOOKUP_ENVELOPE_COLUMNS}, ${LEAF_COLUMNS.join(', ')}, row_version
    FROM ${db}.records FINAL
) AS r
LEFT ANY JOIN
(
    SELECT tenant_id AS l_tenant_id, ingest_id AS l_ingest_id, ${LEAF_COLUMNS.map((c) => `${c} AS l_${c}`).join(', ')}, version AS l_version
    FROM ${db}.record_leaves FINAL
) AS l ON r.tenant_id = l.l_tenant_id AND r.ingest_id = l.l_ingest_id`,
    },
    {
      version: 13,
      name: 'verifications merge wider',
      sql: `ALTER TABLE ${db}.verifications MODIFY SETTING merge_selector_base = ${APPEND_ONLY_MERGE_BASE}`,
    },
    {
      version: 14,
      name: 'audit_events merge wider',
      sql: `ALTER TABLE ${db}.audit_events MODIFY SETTING merge_selector_base = ${APPEND_ONLY_MERGE_BASE}`,
    },
    {
      version: 15,
      name: 'create record_evidence',
      sql: `CREATE TABLE IF NOT EXISTS ${db}.record_evidence
(
    tenant_id      LowCardinality(String),
    collection     String,
    record_id      String,
    database       String,
    record_version String,
    ingest_id      String,
    accepted_at    DateTime64(3, 'UTC'),
    evidence       String CODEC(LZ4),
    version        UInt64
)
${byRecordKey(16)}`,
    },
    {
      version: 16,
      name: 'create record_evidence_from_records',
      sql: `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_records TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, row_version AS version
FROM ${db}.records`,
    },
    {
      version: 17,
      name: 'create record_evidence_from_lookup',
      sql: `CREATE MATERIALIZED VIEW IF NOT EXISTS ${db}.record_evidence_from_lookup TO ${db}.record_evidence AS
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`,
    },
    {
      version: 18,
      name: 'back-fill record_evidence',
      sql: `INSERT INTO ${db}.record_evidence (${EVIDENCE_KEY_COLUMNS}, evidence, version)
SELECT ${EVIDENCE_KEY_COLUMNS}, ${packedEvidence()} AS evidence, version
FROM ${db}.record_lookup`,
    },
    {
      version: 19,
      name: 'drop record_lookup_from_records',
      sql: `DROP VIEW IF EXISTS ${db}.record_lookup_from_records`,
    },
    {
      version: 20,
      name: 'batches version carries the leader epoch',
      sql: `ALTER TABLE ${db}.batches MODIFY COLUMN version UInt128`,
    },
    {
      version: 21,
      name: 'snapshots version carries the leader epoch',
      sql: `ALTER TABLE ${db}.snapshots MODIFY COLUMN version UInt128`,
    },
    {
      version: 22,
      name: 'snapshot_lifecycle epoch',
      sql: `ALTER TABLE ${db}.snapshot_lifecycle ADD COLUMN IF NOT EXISTS epoch UInt64 DEFAULT 0`,
    },
  ];
}

/** Table names qualified with the database, for inserts. */
export function tables(db: string): {
  records: string;
  recordLeaves: string;
  recordEvidence: string;
  apiKeys: string;
  auditEvents: string;
  verifications: string;
  schemaMigrations: string;
  snapshots: string;
} {
  return {
    records: `${db}.records`,
    recordLeaves: `${db}.record_leaves`,
    recordEvidence: `${db}.record_evidence`,
    snapshots: `${db}.snapshots`,
    apiKeys: `${db}.api_keys`,
    auditEvents: `${db}.audit_events`,
    verifications: `${db}.verifications`,
    schemaMigrations: `${db}.schema_migrations`,
  };
}

/** A read of record rows with their leaf assignments (`recordsWithLeaves`). */
export interface RecordsWithLeavesQuery {
  /** Record columns returned, neither the leaf columns nor `leaf_stored`; tenant_id and ingest_id among them. */
  readonly columns: string;
  /** Predicate on records, with the caller's parameters. */
  readonly where: string;
  /** Sorting of the records read (their columns), e.g. `accepted_at, ingest_id`. */
  readonly order: string;
  /** Sorting of the result (returned columns). */
  readonly resultOrder: string;
  /** LIMIT of the records read, e.g. `{limit:UInt32}`. */
  readonly limit?: string;
  /** SETTINGS of the read of records. */
  readonly settings?: string;
  /** Whether leaf_index, tree_size and merkle_proof are returned too (snapshot_id and batch_id always are). */
  readonly proofs: boolean;
}

/**
 * Record rows with their place in a batch: the row from records (FINAL), its leaf from
 * record_leaves, or, for a row rewritten with its leaf before record_leaves existed, the row's own
 * leaf columns. Returns `columns`, then `leaf_stored` (the leaf came from record_leaves) and the
 * leaf columns under their usual names (NULL / [] for a record in no batch).
 *
 * The leaves are read by key for the records the predicate selects (the same predicate, read
 * without FINAL and deduplicated, so no row version is needed for it), never for the whole tenant.
 */
export function recordsWithLeaves(db: string, q: RecordsWithLeavesQuery): string {
  const leaf = q.proofs ? LEAF_COLUMNS : LEAF_COLUMNS.slice(0, 2);
  const limit = q.limit === undefined ? '' : `\n    LIMIT ${q.limit}`;
  const settings = q.settings === undefined ? '' : `\n    SETTINGS ${q.settings}`;
  return `SELECT p.* EXCEPT (${leaf.map((c) => `r_${c}`).join(', ')}),
       l.l_batch_id != '' AS leaf_stored,
       ${leaf.map((c) => `if(l.l_batch_id = '', p.r_${c}, l.l_${c}) AS ${c}`).join(',\n       ')}
FROM
(
    SELECT ${q.columns}, ${leaf.map((c) => `${c} AS r_${c}`).join(', ')}
    FROM ${db}.records FINAL
    WHERE ${q.where}
    ORDER BY ${q.order}${limit}${settings}
) AS p
LEFT ANY JOIN
(
    SELECT tenant_id AS l_tenant_id, ingest_id AS l_ingest_id, ${leaf.map((c) => `${c} AS l_${c}`).join(', ')}
    FROM ${db}.record_leaves FINAL
    WHERE (tenant_id, ingest_id) IN
    (
        SELECT tenant_id, ingest_id FROM ${db}.records
        WHERE ${q.where}
        ORDER BY ${q.order}
        LIMIT 1 BY tenant_id, ingest_id${limit}
    )
) AS l ON p.tenant_id = l.l_tenant_id AND p.ingest_id = l.l_ingest_id
ORDER BY ${q.resultOrder}`;
}

/** The columns of a record_evidence row as read; accepted_at as epoch milliseconds. */
export const LOOKUP_READ_COLUMNS = `ingest_id, tenant_id, database, collection, record_id, record_version,
       toUnixTimestamp64Milli(accepted_at) AS accepted_at_ms, evidence, version`;

/**
 * record_lookup rows by their key: `where` names tenant_id, collection and record_id (each `=` or
 * `IN`), so the read is a granule or so per key and part whatever the table's size. Every stored
 * version of a row is returned, with its version: the caller keeps the highest of each record.
 * Neither FINAL nor LIMIT BY: FINAL merges the key ranges of every part it reads, which costs
 * more than the read itself when the table has several parts, and both cost more than picking
 * among the few rows read. With `limit`, the oldest records first, collapsed in the query.
 */
export function lookupRecords(db: string, where: string, limit?: string, engineSettings?: string): string {
  const collapse = limit === undefined ? '' : `\nORDER BY accepted_at, ingest_id, tenant_id, version DESC\nLIMIT 1 BY tenant_id, ingest_id\nLIMIT ${limit}`;
  return `SELECT ${LOOKUP_READ_COLUMNS}
FROM ${db}.record_evidence
WHERE ${where}${collapse}
SETTINGS ${pointReadSettings(engineSettings)}`;
}

/** SETTINGS of a read of a few granules by key, with the engine's own (`SqlRunner.pointReadSettings`). */
export function pointReadSettings(engineSettings: string | undefined): string {
  return engineSettings === undefined ? POINT_READ_SETTINGS : `${POINT_READ_SETTINGS}, ${engineSettings}`;
}

/**
 * A read of a few granules: one thread (more only add hand-offs) and no PREWHERE pass (the key
 * already chose granules that hold a match, so reading the key columns first filters nothing).
 * Together about a third less CPU per look-up.
 */
const POINT_READ_SETTINGS = 'max_threads = 1, optimize_move_to_prewhere = 0';

/**
 * Leaves of records by key, for look-up rows that have none: a record batched by a version that
 * wrote its leaf to record_leaves only. Params: tenants Array(String), ids Array(String).
 */
export function leavesByKey(db: string): string {
  return `SELECT tenant_id, ingest_id, ${LEAF_COLUMNS.join(', ')}
FROM ${db}.record_leaves FINAL
WHERE tenant_id IN {tenants:Array(String)} AND ingest_id IN {ids:Array(String)}`;
}

/** Filters a records query may carry; each adds one fixed predicate with its own parameter. */
export interface RecordFilterSet {
  readonly database: boolean;
  readonly collection: boolean;
  readonly recordId: boolean;
  readonly snapshotId: boolean;
  readonly from: boolean;
  readonly to: boolean;
  readonly cursor: boolean;
}

/** Filters an audit query may carry. */
export interface AuditFilterSet {
  /** Which tables the page is read from: an action filter names one of them. */
  readonly sources: 'events' | 'verifications' | 'both';
  readonly action: boolean;
  readonly keyId: boolean;
  readonly clientId: boolean;
  readonly from: boolean;
  readonly to: boolean;
  readonly cursor: boolean;
}

/** Statements of one database, built once per adapter. */
export interface IndexSql {
  readonly db: string;
  readonly bootstrap: readonly string[];
  readonly migrations: readonly Migration[];
  readonly tables: ReturnType<typeof tables>;
  /** Params: none. Row: { version }. */
  readonly appliedVersions: string;
  /** Params: version UInt32, name String. */
  readonly recordMigration: string;
  /** Params: tenants Array(String), ids Array(String), fromMs Int64, toMs Int64. Row: { tenant_id, ingest_id }. */
  readonly existingIngestIds: string;
  /** Params: tenantId, the present filters, limit UInt32. Rows: RecordSummaryRow. */
  queryRecords(filters: RecordFilterSet): string;
  /** Params: keyId String. Rows: ApiKeyRow. */
  readonly getKey: string;
  /** Params: none, or tenantId String. Rows: ApiKeyRow. */
  listKeys(byTenant: boolean): string;
  /** Row: { n }. */
  readonly countKeys: string;
  /** Params: tenantId, the present filters, limit UInt32. Rows: AuditEventRow. */
  queryAudit(filters: AuditFilterSet): string;
  /** Row: { ok }. */
  readonly ping: string;
}

/** The summary columns of a record row, its own status and transaction renamed for the join. */
const RECORD_ROW_COLUMNS = `ingest_id, tenant_id, client_id, database, collection, record_id, record_version,
       operation_type, source_timestamp, toUnixTimestamp64Milli(accepted_at) AS accepted_at_ms,
       payload_hash, record_hash, salt, hash_scheme, status AS row_status, chain_tx_hash AS row_tx`;

const API_KEY_COLUMNS = `key_id, tenant_id, client_id, level, secret_hash,
       toUnixTimestamp64Milli(created_at) AS created_at_ms,
       toUnixTimestamp64Milli(expires_at) AS expires_at_ms,
       toUnixTimestamp64Milli(revoked_at) AS revoked_at_ms,
       also_tenants, rotated_from`;

const AUDIT_COLUMNS = `event_id, toUnixTimestamp64Milli(at) AS at_ms, tenant_id, client_id, key_id, action, resource,
       outcome, correlation_id, detail`;

/** `verificationAction` (verification-events.ts) of a verifications row. */
const VERIFICATION_ACTION_SQL = `multiIf(${Object.entries(VERIFICATION_ACTION_OF_MODE)
  .map(([mode, action]) => `mode = '${mode}', '${action}'`)
  .join(', ')}, '${VERIFY_RECORD_ACTION}')`;

/** A verifications row as the audit event `verificationAuditEvent` makes of it, in AUDIT_COLUMNS. */
const VERIFICATION_AUDIT_COLUMNS = `verification_id AS event_id, toUnixTimestamp64Milli(at) AS at_ms, tenant_id, client_id, key_id,
       ${VERIFICATION_ACTION_SQL} AS action,
       if(isNull(record_id), concat('snapshot:', ifNull(snapshot_id, '')), concat('record:', ifNull(collection, ''), '/', ifNull(record_id, ''))) AS resource,
       verification_status AS outcome, correlation_id,
       concat('{"reasonCategory":', toJSONString(reason_category), ',"mode":', toJSONString(mode), ',"verified":', if(verified, 'true', 'false'), '}') AS detail`;

const VERIFICATION_ACTIONS_SQL = VERIFICATION_ACTIONS.map((a) => `'${a}'`).join(', ');

export function buildSql(database: string): IndexSql {
  const db = databaseIdentifier(database);
  const t = tables(db);
  return {
    db,
    bootstrap: bootstrapSql(db),
    migrations: migrations(db),
    tables: t,
    appliedVersions: `SELECT version FROM ${t.schemaMigrations} FINAL ORDER BY version`,
    recordMigration: `INSERT INTO ${t.schemaMigrations} (version, name) VALUES ({version:UInt32}, {name:String})`,
    // No FINAL: any stored version of a row proves the record is indexed.
    existingIngestIds: `SELECT DISTINCT tenant_id, ingest_id
FROM ${t.records}
WHERE tenant_id IN {tenants:Array(String)}
  AND accepted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
  AND accepted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
  AND ingest_id IN {ids:Array(String)}`,
    queryRecords(f: RecordFilterSet): string {
      const where = ['tenant_id = {tenantId:String}'];
      if (f.database) where.push('database = {database:String}');
      if (f.collection) where.push('collection = {collection:String}');
      if (f.recordId) where.push('record_id = {recordId:String}');
      if (f.snapshotId) {
        // The snapshot's records by key: its ingest ids, those whose leaf names it, or (rows
        // rewritten with their leaf before record_leaves) the row's own column.
        where.push(`(snapshot_id = {snapshotId:String} OR (tenant_id, ingest_id) IN (
        SELECT tenant_id, ingest_id FROM ${t.recordLeaves} FINAL
        WHERE (tenant_id, ingest_id) IN (SELECT tenant_id, arrayJoin(ingest_ids) FROM ${t.snapshots} FINAL WHERE tenant_id = {tenantId:String} AND snapshot_id = {snapshotId:String})
          AND snapshot_id = {snapshotId:String}))`);
      }
      if (f.from) where.push(`accepted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
      if (f.to) where.push(`accepted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
      if (f.cursor) {
        // The first predicate alone is a key range the engine can prune with; the second is exact.
        where.push(`accepted_at >= fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC')`);
        where.push(
          `(accepted_at > fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC') OR ingest_id > {afterId:String})`,
        );
      }
      // The snapshot's transitions (Anchored, Failed) and its transaction live in snapshots,
      // joined here; a record with a leaf and no snapshot row yet is Batched (a row rewritten
      // before record_leaves holds that status itself).
      const page = recordsWithLeaves(db, {
        columns: RECORD_ROW_COLUMNS,
        where: where.join('\n      AND '),
        order: 'accepted_at, ingest_id',
        resultOrder: 'accepted_at_ms, ingest_id',
        limit: '{limit:UInt32}',
        proofs: false,
      });
      return `SELECT r.ingest_id AS ingest_id, r.tenant_id AS tenant_id, r.client_id AS client_id, r.database AS database,
       r.collection AS collection, r.record_id AS record_id, r.record_version AS record_version,
       r.operation_type AS operation_type, r.source_timestamp AS source_timestamp, r.accepted_at_ms AS accepted_at_ms,
       r.payload_hash AS payload_hash, r.record_hash AS record_hash, r.salt AS salt, r.hash_scheme AS hash_scheme,
       if(r.snapshot_id IS NULL, 'Ingested', if(empty(s.snap_status), if(r.leaf_stored, 'Batched', r.row_status), s.snap_status)) AS status,
       r.snapshot_id AS snapshot_id, r.batch_id AS batch_id,
       if(s.snap_tx IS NULL, r.row_tx, s.snap_tx) AS chain_tx_hash
FROM
(
${page}
) AS r
LEFT JOIN
(
    SELECT snapshot_id AS snap_id, status AS snap_status, chain_tx_hash AS snap_tx
    FROM ${t.snapshots} FINAL
    WHERE tenant_id = {tenantId:String}
) AS s ON r.snapshot_id = s.snap_id
ORDER BY r.accepted_at_ms, r.ingest_id`;
    },
    getKey: `SELECT ${API_KEY_COLUMNS}
FROM ${t.apiKeys} FINAL
WHERE key_id = {keyId:String}`,
    listKeys(byTenant: boolean): string {
      return `SELECT ${API_KEY_COLUMNS}
FROM ${t.apiKeys} FINAL
${byTenant ? 'WHERE tenant_id = {tenantId:String}\n' : ''}ORDER BY created_at DESC, key_id DESC`;
    },
    countKeys: `SELECT count() AS n FROM ${t.apiKeys} FINAL`,
    queryAudit(f: AuditFilterSet): string {
      const where = (id: string, action: string): string => {
        const w = ['tenant_id = {tenantId:String}'];
        if (f.action) w.push(`${action} = {action:String}`);
        if (f.keyId) w.push('key_id = {keyId:String}');
        if (f.clientId) w.push('client_id = {clientId:String}');
        if (f.from) w.push(`at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
        if (f.to) w.push(`at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
        if (f.cursor) {
          w.push(`at <= fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')`);
          w.push(`(at < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC') OR ${id} < {beforeId:String})`);
        }
        return w.join('\n  AND ');
      };
      const events = `SELECT ${AUDIT_COLUMNS}
FROM ${t.auditEvents}
WHERE ${where('event_id', 'action')}
  AND action NOT IN (${VERIFICATION_ACTIONS_SQL})
ORDER BY at DESC, event_id DESC
LIMIT 1 BY event_id
LIMIT {limit:UInt32}`;
      const verifications = `SELECT ${VERIFICATION_AUDIT_COLUMNS}
FROM ${t.verifications}
WHERE ${where('verification_id', VERIFICATION_ACTION_SQL)}
ORDER BY at DESC, verification_id DESC
LIMIT 1 BY verification_id
LIMIT {limit:UInt32}`;
      if (f.sources === 'events') return events;
      if (f.sources === 'verifications') return verifications;
      return `SELECT * FROM
(
${events}
UNION ALL
${verifications}
)
ORDER BY at_ms DESC, event_id DESC
LIMIT {limit:UInt32}`;
    },
    ping: 'SELECT 1 AS ok',
  };
}
