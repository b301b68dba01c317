import { HASH_SCHEME, type OperationType } from '../../domain/records/types.js';
import type { BatchAnchor, EvidenceIndex, RecordLookup, RecordsPrefetch, StoredRecord } from '../../domain/verification/ports.js';
import { DrisError } from '../../errors/dris-error.js';
import { BatchTops } from './batch-tops.js';
import type { ClickHouseDatabase } from './database.js';
import { proofInEvidence, readLookup, type EvidenceRow } from './evidence-rows.js';
import { pointReadSettings } from './point-read.js';
import { LookupBatcher } from './lookup-batcher.js';
import { BATCH_ANCHOR_COLUMNS, toBatchAnchor, type BatchAnchorRow } from './pipeline-rows.js';
import { recordsWithLeaves } from './record-sql.js';
import { MAX_PAGE_LIMIT } from './schema.js';
import { prefetchTable } from './table-prefetch.js';

/**
 * Verification's view of the stored records: point look-ups of records with their leaf and of
 * batches (each coalesced, so many concurrent verifications cost one query), look-ups by hash and
 * the payload of one record.
 */

export interface EvidenceStoreOptions {
  /** Most record look-ups per coalesced query. Default 256. */
  readonly lookupBatch?: number;
  /** Coalesced queries in flight at once. Default: what the engine runs at once (`SqlRunner.parallelQueries`). */
  readonly lookupParallel?: number;
  /** How long a look-up waits for others under load, milliseconds (LookupBatcherOptions.gatherMs). Default 1. */
  readonly lookupGatherMs?: number;
  /** The upper levels of batch trees, which complete stored paths (batch-tops.ts). Default: this store's own. */
  readonly tops?: BatchTops;
}

/** Read with the record's leaf (`recordsWithLeaves`), which adds snapshot_id … merkle_proof. */
const EVIDENCE_COLUMNS = `ingest_id, tenant_id, client_id, database, collection, record_id, record_version, operation_type,
  source_timestamp, hash_scheme, payload_hash, record_hash, salt, toUnixTimestamp64Milli(accepted_at) AS accepted_at_ms`;

export class ClickHouseEvidenceStore implements EvidenceIndex {
  readonly #db: ClickHouseDatabase;
  readonly #lookups: LookupBatcher<RecordLookup, StoredRecord[]>;
  readonly #batches: LookupBatcher<string, BatchAnchor | null>;
  readonly #tops: BatchTops;

  constructor(db: ClickHouseDatabase, options: EvidenceStoreOptions = {}) {
    this.#db = db;
    this.#tops = options.tops ?? new BatchTops(db);
    const maxBatch = options.lookupBatch ?? 256;
    const batching = { maxBatch, maxPending: maxBatch * 64, parallel: options.lookupParallel ?? db.runner.parallelQueries, gatherMs: options.lookupGatherMs ?? 1 };
    this.#lookups = new LookupBatcher<RecordLookup, StoredRecord[]>(batching, (keys) => this.#findMany(keys));
    this.#batches = new LookupBatcher<string, BatchAnchor | null>(batching, (ids) => this.#findBatches(ids));
  }

  get lookupQueries(): number {
    return this.#lookups.queries;
  }

  findRecord(lookup: RecordLookup): Promise<StoredRecord[]> {
    return this.#lookups.lookup(lookup);
  }

  /**
   * One query for many look-ups, on record_evidence_packed's key: the hashes of the look-ups'
   * (tenant, collection, record id), a granule or so each, and the exact match per look-up here.
   */
  async #findMany(lookups: RecordLookup[]): Promise<StoredRecord[][]> {
    const rows = await readLookup(this.#db, this.#tops, lookups);
    const stored = rows.map(toStored);
    return lookups.map((l) => stored.filter((r) => matches(l, r)).slice(-1000));
  }

  findBatch(batchId: string): Promise<BatchAnchor | null> {
    return this.#batches.lookup(batchId);
  }

  /**
   * One query for many batches, on the key; the leaf arrays, tens of KiB per batch, are not read.
   * The newest version of each by LIMIT 1 BY, which costs less than FINAL across parts.
   */
  async #findBatches(ids: string[]): Promise<(BatchAnchor | null)[]> {
    const rows = await this.#db.runner.query<BatchAnchorRow>(
      `SELECT ${BATCH_ANCHOR_COLUMNS} FROM ${this.#db.table('batches')} WHERE batch_id IN {ids:Array(String)}
       ORDER BY batch_id, version DESC LIMIT 1 BY batch_id
       SETTINGS ${pointReadSettings(this.#db.runner.pointReadSettings)}`,
      { ids: [...new Set(ids)] },
    );
    const byId = new Map(rows.map((r) => [r.batch_id, toBatchAnchor(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  /**
   * The newest row of every batch (FINAL, before the filter), the Anchored ones of highest
   * sequence: a scan of the batches' narrow columns, the leaf arrays unread, made once when
   * verification warms up.
   */
  async anchoredBatches(limit: number): Promise<BatchAnchor[]> {
    if (limit <= 0) return [];
    const rows = await this.#db.runner.query<BatchAnchorRow>(
      `SELECT ${BATCH_ANCHOR_COLUMNS} FROM ${this.#db.table('batches')} FINAL
       WHERE status = 'Anchored' ORDER BY batch_seq DESC, batch_id LIMIT {limit:UInt32}`,
      { limit },
    );
    return rows.map(toBatchAnchor);
  }

  /** record_evidence_packed's files into the page cache, newest parts first (table-prefetch.ts). */
  async prefetchRecords(maxBytes: number, signal?: AbortSignal): Promise<RecordsPrefetch> {
    const r = await prefetchTable(this.#db.runner, this.#db.name, 'record_evidence_packed', { maxBytes, ...(signal === undefined ? {} : { signal }) });
    return { bytes: r.bytes, tableBytes: r.tableBytes };
  }

  /** The upper levels of these batches' trees (batch-tops.ts), in one read of those not held. */
  async warmBatches(batchIds: readonly string[]): Promise<void> {
    await this.#tops.warm(batchIds);
  }

  async findByHash(tenantId: string, kind: 'payloadHash' | 'recordHash', hash: string, limit: number): Promise<StoredRecord[]> {
    const column = kind === 'payloadHash' ? 'payload_hash' : 'record_hash';
    const rows = await this.#db.runner.query<EvidenceRow>(
      recordsWithLeaves(this.#db.name, {
        columns: EVIDENCE_COLUMNS,
        where: `tenant_id = {tenantId:String} AND ${column} = {hash:String}`,
        order: 'accepted_at DESC, ingest_id DESC',
        resultOrder: 'accepted_at_ms DESC, ingest_id DESC',
        limit: '{limit:UInt32}',
        proofs: true,
      }),
      { tenantId, hash, limit: Math.min(Math.max(1, limit), MAX_PAGE_LIMIT) },
    );
    return (await this.#withProofs(tenantId, rows)).map(toStored);
  }

  /**
   * Rows whose leaf came from record_leaves without its proof, completed from their evidence rows
   * (by key: tenant, collection and record id are the row's own). A leaf whose evidence row does
   * not hold the same batch is of a batch write under way: the record reads as in no batch yet.
   */
  async #withProofs(tenantId: string, rows: EvidenceRow[]): Promise<EvidenceRow[]> {
    const lacking = rows.filter(proofInEvidence);
    if (lacking.length === 0) return rows;
    const evidence = await readLookup(
      this.#db,
      this.#tops,
      lacking.map((r) => ({ tenantId, collection: r.collection, recordId: r.record_id })),
    );
    const byIngestId = new Map(evidence.map((e) => [e.ingest_id, e]));
    return rows.map((r) => {
      if (!proofInEvidence(r)) return r;
      const e = byIngestId.get(r.ingest_id);
      if (e !== undefined && e.batch_id === r.batch_id) return { ...r, leaf_index: e.leaf_index, tree_size: e.tree_size, merkle_proof: e.merkle_proof };
      return { ...r, snapshot_id: null, batch_id: null, leaf_index: null, tree_size: null, merkle_proof: [] };
    });
  }

  async payloadOf(tenantId: string, ingestId: string, acceptedAtMs: number): Promise<string | null> {
    // acceptedAt is in the sorting key: the look-up is a key-range read, not a scan.
    const rows = await this.#db.runner.query<{ payload: string }>(
      `SELECT payload FROM ${this.#db.table('records')}
       WHERE tenant_id = {tenantId:String} AND accepted_at = fromUnixTimestamp64Milli({atMs:Int64}, 'UTC') AND ingest_id = {ingestId:String}
       LIMIT 1`,
      { tenantId, ingestId, atMs: acceptedAtMs },
    );
    return rows[0]?.payload ?? null;
  }
}

function toStored(r: EvidenceRow): StoredRecord {
  if (r.hash_scheme !== HASH_SCHEME) throw new DrisError('internal_error', 'stored record has an unknown hash scheme');
  return {
    ingestId: r.ingest_id,
    clientId: r.client_id,
    envelope: {
      hashScheme: HASH_SCHEME,
      tenantId: r.tenant_id,
      database: r.database,
      collection: r.collection,
      recordId: r.record_id,
      recordVersion: r.record_version,
      operationType: r.operation_type as OperationType,
      sourceTimestamp: r.source_timestamp,
      payloadHash: r.payload_hash,
      salt: r.salt,
    },
    recordHash: r.record_hash,
    acceptedAtMs: Number(r.accepted_at_ms),
    snapshotId: r.snapshot_id,
    batchId: r.batch_id,
    leafIndex: r.leaf_index === null ? null : Number(r.leaf_index),
    treeSize: r.tree_size === null ? null : Number(r.tree_size),
    merkleProof: r.merkle_proof,
  };
}

function matches(l: RecordLookup, r: StoredRecord): boolean {
  const e = r.envelope;
  return (
    e.tenantId === l.tenantId &&
    e.collection === l.collection &&
    e.recordId === l.recordId &&
    (l.database === undefined || e.database === l.database) &&
    (l.recordVersion === undefined || e.recordVersion === l.recordVersion)
  );
}
