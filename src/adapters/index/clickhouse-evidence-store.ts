import type { RetrievalPolicy, RetrievalPolicyStore, StoredPolicy } from '../../domain/evidence/policy.js';
import { HASH_SCHEME, type OperationType, type Page } from '../../domain/records/types.js';
import type { BatchStatus } from '../../domain/pipeline/types.js';
import type { BatchAnchor, EvidenceIndex, HistoryQuery, RecordLookup, StoredRecord, VerificationHistory } from '../../domain/verification/ports.js';
import type { ReasonCategory, VerificationHistoryEntry, VerificationMode, VerificationStatus } from '../../domain/verification/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { dateTime64Text, decodeCursor, encodeCursor, type RecordRow } from './clickhouse-record-index.js';
import { InsertSink, type AppendSink } from './append-journal.js';
import type { GroupCommitOptions } from './group-commit.js';
import { LookupBatcher } from './lookup-batcher.js';
import { readLookup } from './record-lookup.js';
import { databaseIdentifier, MAX_PAGE_LIMIT, pointReadSettings, recordsWithLeaves } from './sql.js';
import type { SqlRunner } from './sql-runner.js';

/**
 * Verification's view of the hot index: point look-ups of records with their leaf (coalesced, so
 * many concurrent verifications cost one query), the verification history and the tenants'
 * retrieval policies. Same engine and database as the records.
 */

type Int64Out = number | string;

/** The record columns verification reads (the payload stays on disk). */
type EvidenceRow = Pick<
  RecordRow,
  | 'ingest_id'
  | 'tenant_id'
  | 'client_id'
  | 'database'
  | 'collection'
  | 'record_id'
  | 'record_version'
  | 'operation_type'
  | 'source_timestamp'
  | 'hash_scheme'
  | 'payload_hash'
  | 'record_hash'
  | 'salt'
  | 'snapshot_id'
  | 'batch_id'
  | 'leaf_index'
  | 'tree_size'
  | 'merkle_proof'
> & { accepted_at_ms: Int64Out };

interface HistoryRow {
  verification_id: string;
  at_ms: Int64Out;
  tenant_id: string;
  client_id: string;
  key_id: string;
  mode: string;
  database: string | null;
  collection: string | null;
  record_id: string | null;
  record_version: string | null;
  snapshot_id: string | null;
  batch_id: string | null;
  verified: boolean | number;
  verification_status: string;
  reason_category: string;
  correlation_id: string;
}

/** Read with the record's leaf (`recordsWithLeaves`), which adds snapshot_id … merkle_proof. */
const EVIDENCE_COLUMNS = `ingest_id, tenant_id, client_id, database, collection, record_id, record_version, operation_type,
  source_timestamp, hash_scheme, payload_hash, record_hash, salt, toUnixTimestamp64Milli(accepted_at) AS accepted_at_ms`;

/** A batch row without its leaves, ingest ids and tenants, which are most of its bytes. */
interface BatchAnchorRow {
  batch_id: string;
  created_at_ms: Int64Out;
  status: string;
  tree_size: number;
  merkle_root: string;
  batch_seq: Int64Out | null;
  manifest_cid: string | null;
  prev_batch_id: string | null;
  prev_merkle_root: string | null;
  prev_cid: string | null;
  chain_id: Int64Out | null;
  contract_address: string | null;
  tx_hash: string | null;
  block_number: Int64Out | null;
  anchored_at_ms: Int64Out | null;
  attempts: number;
  last_error: string | null;
}

const BATCH_ANCHOR_COLUMNS = `batch_id, toUnixTimestamp64Milli(created_at) AS created_at_ms, status, tree_size, merkle_root, batch_seq,
  manifest_cid, prev_batch_id, prev_merkle_root, prev_cid, chain_id, contract_address, tx_hash, block_number,
  toUnixTimestamp64Milli(anchored_at) AS anchored_at_ms, attempts, last_error`;

const HISTORY_COLUMNS = `verification_id, toUnixTimestamp64Milli(at) AS at_ms, tenant_id, client_id, key_id, mode, database,
  collection, record_id, record_version, snapshot_id, batch_id, verified, verification_status, reason_category, correlation_id`;

export const DEFAULT_HISTORY_WRITES: GroupCommitOptions = { maxBatchRows: 5_000, maxDelayMs: 5, maxPendingRows: 50_000 };

export interface EvidenceStoreOptions {
  /** Where history rows go (`ClickHouseRecordIndex.appendSink`); default group-committed inserts. */
  readonly history?: AppendSink;
  /** Most record look-ups per coalesced query. Default 256. */
  readonly lookupBatch?: number;
  /** Coalesced queries in flight at once. Default: what the engine runs at once (`SqlRunner.parallelQueries`). */
  readonly lookupParallel?: number;
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

const orNull = (v: Int64Out | null): number | null => (v === null ? null : Number(v));

function toBatchAnchor(r: BatchAnchorRow): BatchAnchor {
  return {
    batchId: r.batch_id,
    createdAtMs: Number(r.created_at_ms),
    status: r.status as BatchStatus,
    treeSize: Number(r.tree_size),
    merkleRoot: r.merkle_root,
    batchSeq: orNull(r.batch_seq),
    manifestCid: r.manifest_cid,
    previous: r.prev_batch_id === null || r.prev_merkle_root === null || r.prev_cid === null ? null : { batchId: r.prev_batch_id, merkleRoot: r.prev_merkle_root, cid: r.prev_cid },
    chainId: orNull(r.chain_id),
    contractAddress: r.contract_address,
    txHash: r.tx_hash,
    blockNumber: orNull(r.block_number),
    anchoredAtMs: orNull(r.anchored_at_ms),
    attempts: Number(r.attempts),
    lastError: r.last_error,
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

export class ClickHouseEvidenceStore implements EvidenceIndex, VerificationHistory, RetrievalPolicyStore {
  readonly #db: string;
  readonly #lookups: LookupBatcher<RecordLookup, StoredRecord[]>;
  readonly #batches: LookupBatcher<string, BatchAnchor | null>;
  readonly #history: AppendSink;
  #lastPolicyUs = 0;

  constructor(
    private readonly runner: SqlRunner,
    database: string,
    options: EvidenceStoreOptions = {},
  ) {
    this.#db = databaseIdentifier(database);
    const maxBatch = options.lookupBatch ?? 256;
    const parallel = options.lookupParallel ?? runner.parallelQueries;
    this.#lookups = new LookupBatcher<RecordLookup, StoredRecord[]>(
      { maxBatch, maxPending: maxBatch * 64, parallel },
      (keys) => this.#findMany(keys),
    );
    this.#batches = new LookupBatcher<string, BatchAnchor | null>(
      { maxBatch, maxPending: maxBatch * 64, parallel },
      (ids) => this.#findBatches(ids),
    );
    this.#history =
      options.history ?? new InsertSink('verification history writer', DEFAULT_HISTORY_WRITES, (rows) => this.runner.insertJsonEachRow(`${this.#db}.verifications`, rows));
  }

  get lookupQueries(): number {
    return this.#lookups.queries;
  }

  findRecord(lookup: RecordLookup): Promise<StoredRecord[]> {
    return this.#lookups.lookup(lookup);
  }

  /**
   * One query for many look-ups, on record_evidence's key: the product of their tenants,
   * collections and record ids is read (a few granules per key), and the exact per-look-up match
   * is done here. One tenant and one collection, the usual batch, are named with `=`: the engine
   * then ranges over the record ids alone, about a tenth cheaper than with a set per column.
   */
  async #findMany(lookups: RecordLookup[]): Promise<StoredRecord[][]> {
    const tenants = [...new Set(lookups.map((l) => l.tenantId))];
    const collections = [...new Set(lookups.map((l) => l.collection))];
    const ids = [...new Set(lookups.map((l) => l.recordId))];
    const one = tenants.length === 1 && collections.length === 1;
    const rows = await readLookup(
      this.runner,
      this.#db,
      one
        ? 'tenant_id = {tenant:String} AND collection = {collection:String} AND record_id IN {ids:Array(String)}'
        : 'tenant_id IN {tenants:Array(String)} AND collection IN {collections:Array(String)} AND record_id IN {ids:Array(String)}',
      one ? { tenant: tenants[0] ?? '', collection: collections[0] ?? '', ids } : { tenants, collections, ids },
    );
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
    const rows = await this.runner.query<BatchAnchorRow>(
      `SELECT ${BATCH_ANCHOR_COLUMNS} FROM ${this.#db}.batches WHERE batch_id IN {ids:Array(String)}
       ORDER BY batch_id, version DESC LIMIT 1 BY batch_id
       SETTINGS ${pointReadSettings(this.runner.pointReadSettings)}`,
      { ids: [...new Set(ids)] },
    );
    const byId = new Map(rows.map((r) => [r.batch_id, toBatchAnchor(r)]));
    return ids.map((id) => byId.get(id) ?? null);
  }

  async findByHash(tenantId: string, kind: 'payloadHash' | 'recordHash', hash: string, limit: number): Promise<StoredRecord[]> {
    const column = kind === 'payloadHash' ? 'payload_hash' : 'record_hash';
    const rows = await this.runner.query<EvidenceRow>(
      recordsWithLeaves(this.#db, {
        columns: EVIDENCE_COLUMNS,
        where: `tenant_id = {tenantId:String} AND ${column} = {hash:String}`,
        order: 'accepted_at DESC, ingest_id DESC',
        resultOrder: 'accepted_at_ms DESC, ingest_id DESC',
        limit: '{limit:UInt32}',
        proofs: true,
      }),
      { tenantId, hash, limit: Math.min(Math.max(1, limit), MAX_PAGE_LIMIT) },
    );
    return rows.map(toStored);
  }

  async payloadOf(tenantId: string, ingestId: string, acceptedAtMs: number): Promise<string | null> {
    // acceptedAt is in the sorting key: the look-up is a key-range read, not a scan.
    const rows = await this.runner.query<{ payload: string }>(
      `SELECT payload FROM ${this.#db}.records
       WHERE tenant_id = {tenantId:String} AND accepted_at = fromUnixTimestamp64Milli({atMs:Int64}, 'UTC') AND ingest_id = {ingestId:String}
       LIMIT 1`,
      { tenantId, ingestId, atMs: acceptedAtMs },
    );
    return rows[0]?.payload ?? null;
  }

  // ---- verification history -------------------------------------------------------------------

  async append(entries: readonly VerificationHistoryEntry[]): Promise<void> {
    await this.#history.append(
      entries.map((e) => ({
        tenant_id: e.tenantId,
        at: dateTime64Text(Date.parse(e.at)),
        verification_id: e.verificationId,
        client_id: e.clientId,
        key_id: e.keyId,
        mode: e.mode,
        database: e.database,
        collection: e.collection,
        record_id: e.recordId,
        record_version: e.recordVersion,
        snapshot_id: e.snapshotId,
        batch_id: e.batchId,
        verified: e.verified,
        verification_status: e.verificationStatus,
        reason_category: e.reasonCategory,
        correlation_id: e.correlationId,
      })),
    );
  }

  async query(q: HistoryQuery): Promise<Page<VerificationHistoryEntry>> {
    const limit = Math.min(Math.max(1, Math.trunc(q.limit)), MAX_PAGE_LIMIT);
    await this.#history.settled();
    const where = ['tenant_id = {tenantId:String}'];
    const params: Record<string, string | number> = { tenantId: q.tenantId, limit: limit + 1 };
    const eq = (column: string, name: string, value: string | undefined): void => {
      if (value === undefined) return;
      where.push(`${column} = {${name}:String}`);
      params[name] = value;
    };
    eq('record_id', 'recordId', q.recordId);
    eq('collection', 'collection', q.collection);
    eq('snapshot_id', 'snapshotId', q.snapshotId);
    eq('verification_status', 'outcome', q.outcome);
    if (q.fromMs !== undefined) {
      where.push(`at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
      params['fromMs'] = q.fromMs;
    }
    if (q.toMs !== undefined) {
      where.push(`at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
      params['toMs'] = q.toMs;
    }
    if (q.cursor !== undefined) {
      const [beforeMs, beforeId] = decodeCursor(q.cursor);
      where.push(`at <= fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')`);
      where.push(`(at < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC') OR verification_id < {beforeId:String})`);
      params['beforeMs'] = beforeMs;
      params['beforeId'] = beforeId;
    }
    const rows = await this.runner.query<HistoryRow>(
      `SELECT ${HISTORY_COLUMNS} FROM ${this.#db}.verifications WHERE ${where.join(' AND ')}
       ORDER BY at DESC, verification_id DESC LIMIT 1 BY verification_id LIMIT {limit:UInt32}`,
      params,
    );
    const items = rows.slice(0, limit).map(
      (r): VerificationHistoryEntry => ({
        verificationId: r.verification_id,
        at: new Date(Number(r.at_ms)).toISOString(),
        tenantId: r.tenant_id,
        clientId: r.client_id,
        keyId: r.key_id,
        mode: r.mode as VerificationMode | 'snapshot',
        database: r.database,
        collection: r.collection,
        recordId: r.record_id,
        recordVersion: r.record_version,
        snapshotId: r.snapshot_id,
        batchId: r.batch_id,
        verified: r.verified === true || r.verified === 1,
        verificationStatus: r.verification_status as VerificationStatus,
        reasonCategory: r.reason_category as ReasonCategory,
        correlationId: r.correlation_id,
      }),
    );
    const last = rows.length > limit ? items.at(-1) : undefined;
    return { items, nextCursor: last === undefined ? null : encodeCursor(Date.parse(last.at), last.verificationId) };
  }

  // ---- retrieval policies ---------------------------------------------------------------------

  async get(tenantId: string): Promise<StoredPolicy | null> {
    const rows = await this.runner.query<{ policy: string; updated_by: string; updated_at_ms: Int64Out }>(
      `SELECT policy, updated_by, toUnixTimestamp64Milli(updated_at) AS updated_at_ms FROM ${this.#db}.retrieval_policies FINAL WHERE tenant_id = {tenantId:String}`,
      { tenantId },
    );
    const r = rows[0];
    if (r === undefined) return null;
    return { tenantId, policy: JSON.parse(r.policy) as RetrievalPolicy, updatedAtMs: Number(r.updated_at_ms), updatedBy: r.updated_by };
  }

  async put(tenantId: string, policy: RetrievalPolicy, updatedBy: string): Promise<StoredPolicy> {
    // Strictly increasing microseconds: two puts in one millisecond must not tie in the merge.
    this.#lastPolicyUs = Math.max(Date.now() * 1000, this.#lastPolicyUs + 1);
    const us = this.#lastPolicyUs;
    const ms = Math.floor(us / 1000);
    await this.runner.insertJsonEachRow(`${this.#db}.retrieval_policies`, [
      { tenant_id: tenantId, policy: JSON.stringify(policy), updated_by: updatedBy, updated_at: dateTime64Text(ms) + String(us % 1000).padStart(3, '0') },
    ]);
    return { tenantId, policy, updatedAtMs: ms, updatedBy };
  }

  async close(): Promise<void> {
    await this.#history.close();
  }
}
