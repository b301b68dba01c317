import { LEAF_COLUMNS } from './schema.js';

/**
 * SQL of the records table: the indexer's existence check, the listing of a tenant's records, and
 * the read of record rows joined with their leaves that the listing and the look-ups by hash
 * (evidence-store.ts) share. Every value is a server-side parameter.
 */

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

/** Params: tenants Array(String), ids Array(String), fromMs Int64, toMs Int64. Row: { tenant_id, ingest_id }. */
export function existingIngestIdsSql(db: string): string {
  // No FINAL: any stored version of a row proves the record is indexed.
  return `SELECT DISTINCT tenant_id, ingest_id
FROM ${db}.records
WHERE tenant_id IN {tenants:Array(String)}
  AND accepted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')
  AND accepted_at <= fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')
  AND ingest_id IN {ids:Array(String)}`;
}

/** The summary columns of a record row, its own status and transaction renamed for the join. */
const RECORD_ROW_COLUMNS = `ingest_id, tenant_id, client_id, database, collection, record_id, record_version,
       operation_type, source_timestamp, toUnixTimestamp64Milli(accepted_at) AS accepted_at_ms,
       payload_hash, record_hash, salt, hash_scheme, status AS row_status, chain_tx_hash AS row_tx`;

/**
 * A page of a tenant's records, oldest first. Params: tenantId, limit UInt32, and those of the
 * filters present (`has` tells which): database, collection, recordId, snapshotId, fromMs, toMs,
 * afterMs and afterId (the cursor). Rows: RecordSummaryRow.
 */
export function recordsPageSql(db: string, has: (param: string) => boolean): string {
  const where = ['tenant_id = {tenantId:String}'];
  if (has('database')) where.push('database = {database:String}');
  if (has('collection')) where.push('collection = {collection:String}');
  if (has('recordId')) where.push('record_id = {recordId:String}');
  if (has('snapshotId')) {
    // The snapshot's records by key: its ingest ids, those whose leaf names it, or (rows
    // rewritten with their leaf before record_leaves) the row's own column.
    where.push(`(snapshot_id = {snapshotId:String} OR (tenant_id, ingest_id) IN (
        SELECT tenant_id, ingest_id FROM ${db}.record_leaves FINAL
        WHERE (tenant_id, ingest_id) IN (SELECT tenant_id, arrayJoin(ingest_ids) FROM ${db}.snapshots FINAL WHERE tenant_id = {tenantId:String} AND snapshot_id = {snapshotId:String})
          AND snapshot_id = {snapshotId:String}))`);
  }
  if (has('fromMs')) where.push(`accepted_at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
  if (has('toMs')) where.push(`accepted_at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
  if (has('afterMs')) {
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
    FROM ${db}.snapshots FINAL
    WHERE tenant_id = {tenantId:String}
) AS s ON r.snapshot_id = s.snap_id
ORDER BY r.accepted_at_ms, r.ingest_id`;
}
