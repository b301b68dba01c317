import type { AuditEvent, AuditLog, AuditQuery } from '../../domain/audit/ports.js';
import { VERIFICATION_ACTIONS } from '../../domain/audit/verification-events.js';
import type { KeyStore, ApiKeyRecord, AccessLevel } from '../../domain/keys/types.js';
import { ACCESS_LEVELS } from '../../domain/keys/types.js';
import type { RecordIndex } from '../../domain/records/ports.js';
import {
  HASH_SCHEME,
  type AcceptedRecord,
  type OperationType,
  type Page,
  type RecordQuery,
  type RecordSummary,
} from '../../domain/records/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { AppendJournal, InsertSink, type AppendSink } from './append-journal.js';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';
import { buildSql, DEFAULT_DATABASE, MAX_PAGE_LIMIT, ROW_VERSION_INGESTED, type IndexSql } from './sql.js';
import type { SqlRunner } from './sql-runner.js';

/**
 * The hot index on ClickHouse: records, API keys and the audit trail. Engine-neutral: all it
 * needs is a SqlRunner, so the embedded engine and a server run exactly this code and this SQL.
 */

export interface ClickHouseRecordIndexOptions {
  /** Database holding the tables; created by migrate(). Default `dris`. */
  readonly database?: string;
  /** Coalescing of insertRecords() calls. */
  readonly recordWrites?: Partial<GroupCommitOptions>;
  /** Coalescing of audit append() calls (without a journal). */
  readonly auditWrites?: Partial<GroupCommitOptions>;
  /**
   * Directory of a local journal for the append-only tables (audit trail, verification history):
   * appends are durable once in it and reach the tables in a few large inserts a second. For the
   * embedded engine, beside its data directory; without it, each group of appends is an insert.
   */
  readonly journalDir?: string;
  /**
   * With journalDir: the engine's data directory. The journaled tables' inserts then skip their
   * fsyncs, and the journal makes their rows durable by flushing this directory's file system
   * instead (see AppendJournal). Unset: those inserts fsync as every other.
   */
  readonly journalTableDir?: string;
  /** Most ingest ids per existence look-up (a server receives parameters in the request URL). */
  readonly lookupChunk?: number;
  /** Limit of each migration statement, milliseconds (a back-fill copies a whole table). Default 6 h. */
  readonly migrationTimeoutMs?: number;
  readonly logger?: Logger;
}

export const DEFAULT_RECORD_WRITES: GroupCommitOptions = { maxBatchRows: 10_000, maxDelayMs: 2, maxPendingRows: 50_000 };
export const DEFAULT_AUDIT_WRITES: GroupCommitOptions = { maxBatchRows: 5_000, maxDelayMs: 5, maxPendingRows: 50_000 };
const DEFAULT_LOOKUP_CHUNK = 5_000;
const DEFAULT_MIGRATION_TIMEOUT_MS = 6 * 3_600_000;

export interface HotIndexStats {
  /** INSERT statements into records (a write whose rows were all present already sends none). */
  readonly recordInserts: number;
  readonly recordRowsInserted: number;
  /** Records not inserted because their ingestId was already indexed or repeated in the write. */
  readonly recordDuplicatesSkipped: number;
  /** Coalesced record writes (each: one existence look-up, at most one INSERT). */
  readonly recordWrites: number;
  readonly auditInserts: number;
  readonly auditRowsInserted: number;
}

/** A record row as inserted; column names are the table's. */
export interface RecordRow {
  tenant_id: string;
  accepted_at: string;
  ingest_id: string;
  client_id: string;
  key_id: string;
  database: string;
  collection: string;
  record_id: string;
  record_version: string;
  operation_type: string;
  source_timestamp: string | null;
  hash_scheme: string;
  payload_hash: string;
  record_hash: string;
  salt: string;
  payload: string;
  idempotency_key: string | null;
  correlation_id: string;
  snapshot_id: string | null;
  batch_id: string | null;
  leaf_index: number | null;
  tree_size: number | null;
  merkle_proof: string[];
  status: string;
  chain_tx_hash: string | null;
  row_version: number;
}

export interface PendingRecord {
  readonly row: RecordRow;
  readonly acceptedAtMs: number;
}

/** 64-bit integers arrive as numbers from chDB and as strings from a server. */
type Int64Out = number | string;

interface RecordSummaryRow {
  ingest_id: string;
  tenant_id: string;
  client_id: string;
  database: string;
  collection: string;
  record_id: string;
  record_version: string;
  operation_type: string;
  source_timestamp: string | null;
  accepted_at_ms: Int64Out;
  payload_hash: string;
  record_hash: string;
  salt: string;
  hash_scheme: string;
  status: string;
  snapshot_id: string | null;
  batch_id: string | null;
  chain_tx_hash: string | null;
}

interface ApiKeyRow {
  key_id: string;
  tenant_id: string;
  client_id: string;
  level: string;
  secret_hash: string;
  created_at_ms: Int64Out;
  expires_at_ms: Int64Out | null;
  revoked_at_ms: Int64Out | null;
  also_tenants: string[];
  rotated_from: string | null;
}

interface AuditRow {
  event_id: string;
  at_ms: Int64Out;
  tenant_id: string;
  client_id: string;
  key_id: string;
  action: string;
  resource: string;
  outcome: string;
  correlation_id: string;
  detail: string;
}

const OPERATION_TYPES: ReadonlySet<string> = new Set<OperationType>(['insert', 'update', 'delete', 'upsert']);

export class ClickHouseRecordIndex implements RecordIndex, KeyStore, AuditLog {
  readonly #runner: SqlRunner;
  readonly #sql: IndexSql;
  readonly #log: Logger;
  readonly #lookupChunk: number;
  readonly #migrationTimeoutMs: number;
  readonly #records: GroupCommit<PendingRecord>;
  readonly #journal: AppendJournal | null;
  /** fsync_after_insert of the journaled tables: 0 when the journal flushes their files itself. */
  readonly #journaledTablesFsync: 0 | 1 | null;
  readonly #audit: AppendSink;
  #lastVersionUs = 0;
  #closing: Promise<void> | null = null;
  #recordInserts = 0;
  #recordRowsInserted = 0;
  #recordDuplicatesSkipped = 0;
  #auditInserts = 0;
  #auditRowsInserted = 0;

  constructor(runner: SqlRunner, options: ClickHouseRecordIndexOptions = {}) {
    this.#runner = runner;
    this.#sql = buildSql(options.database ?? DEFAULT_DATABASE);
    this.#log = options.logger ?? componentLogger('hot-index');
    this.#lookupChunk = options.lookupChunk ?? DEFAULT_LOOKUP_CHUNK;
    this.#migrationTimeoutMs = options.migrationTimeoutMs ?? DEFAULT_MIGRATION_TIMEOUT_MS;
    if (!(Number.isInteger(this.#lookupChunk) && this.#lookupChunk >= 1)) {
      throw new TypeError('lookupChunk must be a positive integer');
    }
    this.#records = new GroupCommit<PendingRecord>(
      'record index writer',
      { ...DEFAULT_RECORD_WRITES, ...options.recordWrites },
      (rows) => this.#writeRecords(rows),
    );
    this.#journal =
      options.journalDir === undefined
        ? null
        : AppendJournal.open(options.journalDir, runner, {
            logger: this.#log.child({ component: 'index-journal' }),
            ...(options.journalTableDir === undefined ? {} : { tableDirs: [options.journalTableDir] }),
          });
    // Only where the engine's directory is known (the embedded engine) is this decided per start.
    this.#journaledTablesFsync = options.journalTableDir === undefined ? null : this.#journal === null ? 1 : 0;
    this.#audit =
      this.#journal?.sink(this.#sql.tables.auditEvents) ??
      new InsertSink('audit writer', { ...DEFAULT_AUDIT_WRITES, ...options.auditWrites }, (rows) => this.#writeAudit(rows));
  }

  get database(): string {
    return this.#sql.db;
  }

  /** The engine this index runs on, shared with the pipeline's store (one chDB engine per directory). */
  get runner(): SqlRunner {
    return this.#runner;
  }

  stats(): HotIndexStats {
    return {
      recordInserts: this.#recordInserts,
      recordRowsInserted: this.#recordRowsInserted,
      recordDuplicatesSkipped: this.#recordDuplicatesSkipped,
      recordWrites: this.#records.stats.writes,
      auditInserts: this.#auditInserts,
      auditRowsInserted: this.#auditRowsInserted,
    };
  }

  // ---- schema -------------------------------------------------------------------------------

  async migrate(): Promise<void> {
    for (const statement of this.#sql.bootstrap) await this.#runner.exec(statement);
    const rows = await this.#runner.query<{ version: Int64Out }>(this.#sql.appliedVersions);
    const applied = new Set(rows.map((r) => Number(r.version)));
    for (const m of this.#sql.migrations) {
      if (applied.has(m.version)) continue;
      const started = Date.now();
      await this.#runner.exec(m.sql, undefined, { timeoutMs: this.#migrationTimeoutMs });
      await this.#runner.exec(this.#sql.recordMigration, { version: m.version, name: m.name });
      this.#log.info({ version: m.version, migration: m.name, database: this.#sql.db, ms: Date.now() - started }, 'schema migration applied');
    }
    // Per start, not a migration: whether these tables' inserts fsync depends on how this
    // process writes them (through a journal that flushes them, or straight).
    const fsync = this.#journaledTablesFsync;
    if (fsync !== null) {
      for (const table of [this.#sql.tables.auditEvents, this.#sql.tables.verifications]) {
        await this.#runner.exec(`ALTER TABLE ${table} MODIFY SETTING fsync_after_insert = ${fsync}, fsync_part_directory = ${fsync}`);
      }
    }
    const known = Math.max(...this.#sql.migrations.map((m) => m.version));
    const newer = [...applied].filter((v) => v > known);
    if (newer.length > 0) {
      // Migrations only add; older code keeps working beside a newer schema during an upgrade.
      this.#log.warn({ newer, known }, 'schema has migrations this version does not know');
    }
  }

  async check(): Promise<void> {
    await this.#runner.query(this.#sql.ping);
  }

  /**
   * Where another store's append-only table (`name` in this database) is written: through this
   * index's journal when it has one, else straight into the table, group-committed.
   */
  appendSink(name: string, writes: GroupCommitOptions): AppendSink {
    const table = `${this.#sql.db}.${name}`;
    return this.#journal?.sink(table) ?? new InsertSink(`${name} writer`, writes, (rows) => this.#runner.insertJsonEachRow(table, rows));
  }

  /** Closes the writers, then the journal (which copies what it holds), then the engine: after every other user of the index. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all([this.#records.close(), this.#audit.close()]);
      await this.#journal?.close();
      await this.#runner.close();
    })();
    return this.#closing;
  }

  // ---- records ------------------------------------------------------------------------------

  async insertRecords(records: readonly AcceptedRecord[]): Promise<void> {
    // Converted before queueing, so a malformed record fails its own call and no other.
    await this.#records.submit(records.map(toPendingRecord));
  }

  async #writeRecords(pending: PendingRecord[]): Promise<void> {
    const unique = new Map<string, PendingRecord>();
    for (const p of pending) {
      const k = recordKey(p.row.tenant_id, p.row.ingest_id);
      if (!unique.has(k)) unique.set(k, p);
    }
    const present = await this.#presentKeys([...unique.values()]);
    const rows: RecordRow[] = [];
    for (const [k, p] of unique) if (!present.has(k)) rows.push(p.row);
    if (rows.length > 0) {
      try {
        await this.#runner.insertJsonEachRow(this.#sql.tables.records, rows);
      } catch (err) {
        this.#log.warn({ rows: rows.length, code: codeOf(err) }, 'record insert failed');
        throw err;
      }
      this.#recordInserts += 1;
      this.#recordRowsInserted += rows.length;
    }
    this.#recordDuplicatesSkipped += pending.length - rows.length;
  }

  /** Keys (tenant, ingestId) of these records already stored, one query per lookupChunk ids. */
  async #presentKeys(items: readonly PendingRecord[]): Promise<Set<string>> {
    const chunks: PendingRecord[][] = [];
    for (let i = 0; i < items.length; i += this.#lookupChunk) chunks.push(items.slice(i, i + this.#lookupChunk));
    const results = await Promise.all(
      chunks.map((chunk) => {
        let fromMs = Infinity;
        let toMs = -Infinity;
        const tenants = new Set<string>();
        for (const p of chunk) {
          tenants.add(p.row.tenant_id);
          if (p.acceptedAtMs < fromMs) fromMs = p.acceptedAtMs;
          if (p.acceptedAtMs > toMs) toMs = p.acceptedAtMs;
        }
        return this.#runner.query<{ tenant_id: string; ingest_id: string }>(this.#sql.existingIngestIds, {
          tenants: [...tenants],
          ids: chunk.map((p) => p.row.ingest_id),
          fromMs,
          toMs,
        });
      }),
    );
    const present = new Set<string>();
    for (const rows of results) for (const r of rows) present.add(recordKey(r.tenant_id, r.ingest_id));
    return present;
  }

  async queryRecords(query: RecordQuery): Promise<Page<RecordSummary>> {
    const limit = pageLimit(query.limit);
    const params: Record<string, string | number> = { tenantId: query.tenantId, limit: limit + 1 };
    if (query.database !== undefined) params['database'] = query.database;
    if (query.collection !== undefined) params['collection'] = query.collection;
    if (query.recordId !== undefined) params['recordId'] = query.recordId;
    if (query.snapshotId !== undefined) params['snapshotId'] = query.snapshotId;
    if (query.fromMs !== undefined) params['fromMs'] = epochMs(query.fromMs, 'from');
    if (query.toMs !== undefined) params['toMs'] = epochMs(query.toMs, 'to');
    if (query.cursor !== undefined) {
      const [afterMs, afterId] = decodeCursor(query.cursor);
      params['afterMs'] = afterMs;
      params['afterId'] = afterId;
    }
    const sql = this.#sql.queryRecords({
      database: query.database !== undefined,
      collection: query.collection !== undefined,
      recordId: query.recordId !== undefined,
      snapshotId: query.snapshotId !== undefined,
      from: query.fromMs !== undefined,
      to: query.toMs !== undefined,
      cursor: query.cursor !== undefined,
    });
    const rows = await this.#runner.query<RecordSummaryRow>(sql, params);
    const items = rows.slice(0, limit).map(toRecordSummary);
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return { items, nextCursor: last === undefined ? null : encodeCursor(Number(last.accepted_at_ms), last.ingest_id) };
  }

  // ---- keys ---------------------------------------------------------------------------------

  async putKey(key: ApiKeyRecord): Promise<void> {
    const row = {
      key_id: key.keyId,
      tenant_id: key.tenantId,
      client_id: key.clientId,
      level: key.level,
      secret_hash: key.secretHash,
      created_at: dateTime64Text(key.createdAtMs),
      expires_at: key.expiresAtMs === null ? null : dateTime64Text(key.expiresAtMs),
      revoked_at: key.revokedAtMs === null ? null : dateTime64Text(key.revokedAtMs),
      also_tenants: [...key.alsoTenants],
      rotated_from: key.rotatedFrom,
      updated_at: this.#nextVersionText(),
    };
    await this.#runner.insertJsonEachRow(this.#sql.tables.apiKeys, [row]);
  }

  async getKey(keyId: string): Promise<ApiKeyRecord | null> {
    const rows = await this.#runner.query<ApiKeyRow>(this.#sql.getKey, { keyId });
    const row = rows[0];
    return row === undefined ? null : toApiKey(row);
  }

  async listKeys(tenantId?: string): Promise<ApiKeyRecord[]> {
    const rows =
      tenantId === undefined
        ? await this.#runner.query<ApiKeyRow>(this.#sql.listKeys(false))
        : await this.#runner.query<ApiKeyRow>(this.#sql.listKeys(true), { tenantId });
    return rows.map(toApiKey);
  }

  async countKeys(): Promise<number> {
    const rows = await this.#runner.query<{ n: Int64Out }>(this.#sql.countKeys);
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * Strictly increasing replacement version: two puts of one key in the same millisecond (create
   * then revoke) must not tie, or the merge would keep either.
   */
  #nextVersionText(): string {
    const nowUs = Date.now() * 1000;
    this.#lastVersionUs = Math.max(nowUs, this.#lastVersionUs + 1);
    const us = this.#lastVersionUs;
    return dateTime64Text(Math.floor(us / 1000)) + String(us % 1000).padStart(3, '0');
  }

  // ---- audit --------------------------------------------------------------------------------

  async append(events: readonly AuditEvent[]): Promise<void> {
    await this.#audit.append(events.map(toAuditRow));
  }

  async #writeAudit(rows: object[]): Promise<void> {
    try {
      await this.#runner.insertJsonEachRow(this.#sql.tables.auditEvents, rows);
    } catch (err) {
      this.#log.warn({ rows: rows.length, code: codeOf(err) }, 'audit insert failed');
      throw err;
    }
    this.#auditInserts += 1;
    this.#auditRowsInserted += rows.length;
  }

  async query(query: AuditQuery): Promise<Page<AuditEvent>> {
    const limit = pageLimit(query.limit);
    // The journal holds the verification history too (appendSink), so this waits for both tables.
    await this.#audit.settled();
    const params: Record<string, string | number> = { tenantId: query.tenantId, limit: limit + 1 };
    if (query.action !== undefined) params['action'] = query.action;
    if (query.keyId !== undefined) params['keyId'] = query.keyId;
    if (query.clientId !== undefined) params['clientId'] = query.clientId;
    if (query.fromMs !== undefined) params['fromMs'] = epochMs(query.fromMs, 'from');
    if (query.toMs !== undefined) params['toMs'] = epochMs(query.toMs, 'to');
    if (query.cursor !== undefined) {
      const [beforeMs, beforeId] = decodeCursor(query.cursor);
      params['beforeMs'] = beforeMs;
      params['beforeId'] = beforeId;
    }
    const sql = this.#sql.queryAudit({
      sources: query.action === undefined ? 'both' : VERIFICATION_ACTIONS.includes(query.action) ? 'verifications' : 'events',
      action: query.action !== undefined,
      keyId: query.keyId !== undefined,
      clientId: query.clientId !== undefined,
      from: query.fromMs !== undefined,
      to: query.toMs !== undefined,
      cursor: query.cursor !== undefined,
    });
    const rows = await this.#runner.query<AuditRow>(sql, params);
    const items = rows.slice(0, limit).map(toAuditEvent);
    const last = rows.length > limit ? rows[limit - 1] : undefined;
    return { items, nextCursor: last === undefined ? null : encodeCursor(Number(last.at_ms), last.event_id) };
  }
}

// ---- conversions ------------------------------------------------------------------------------

function recordKey(tenantId: string, ingestId: string): string {
  return `${tenantId}\u0000${ingestId}`;
}

function codeOf(err: unknown): string | undefined {
  return err instanceof DrisError ? err.code : undefined;
}

/** `YYYY-MM-DD hh:mm:ss.sss` (UTC): the DateTime64 text every ClickHouse input parser accepts. */
export function dateTime64Text(ms: number): string {
  // DateTime64 holds 1900..2299; the ISO form below is also only 4-digit years in this range.
  if (!Number.isSafeInteger(ms) || ms < -2_208_988_800_000 || ms >= 10_413_792_000_000) {
    throw new DrisError('internal_error', 'timestamp outside the storable range');
  }
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
}

export function toPendingRecord(r: AcceptedRecord): PendingRecord {
  const acceptedAtMs = Date.parse(r.acceptedAt);
  if (Number.isNaN(acceptedAtMs)) {
    throw new DrisError('internal_error', `record ${r.ingestId} has an unreadable acceptedAt`);
  }
  return {
    acceptedAtMs,
    row: {
      tenant_id: r.tenantId,
      accepted_at: dateTime64Text(acceptedAtMs),
      ingest_id: r.ingestId,
      client_id: r.clientId,
      key_id: r.keyId,
      database: r.database,
      collection: r.collection,
      record_id: r.recordId,
      record_version: r.recordVersion,
      operation_type: r.operationType,
      source_timestamp: r.sourceTimestamp,
      hash_scheme: r.hashScheme,
      payload_hash: r.payloadHash,
      record_hash: r.recordHash,
      salt: r.salt,
      payload: r.payload,
      idempotency_key: r.idempotencyKey,
      correlation_id: r.correlationId,
      snapshot_id: null,
      batch_id: null,
      leaf_index: null,
      tree_size: null,
      merkle_proof: [],
      status: 'Ingested',
      chain_tx_hash: null,
      row_version: ROW_VERSION_INGESTED,
    },
  };
}

function toRecordSummary(row: RecordSummaryRow): RecordSummary {
  if (!OPERATION_TYPES.has(row.operation_type)) {
    throw new DrisError('internal_error', 'stored record has an unknown operation type');
  }
  if (row.hash_scheme !== HASH_SCHEME) {
    throw new DrisError('internal_error', 'stored record has an unknown hash scheme');
  }
  return {
    ingestId: row.ingest_id,
    tenantId: row.tenant_id,
    clientId: row.client_id,
    database: row.database,
    collection: row.collection,
    recordId: row.record_id,
    recordVersion: row.record_version,
    operationType: row.operation_type as OperationType,
    sourceTimestamp: row.source_timestamp,
    acceptedAt: new Date(Number(row.accepted_at_ms)).toISOString(),
    payloadHash: row.payload_hash,
    recordHash: row.record_hash,
    salt: row.salt,
    hashScheme: row.hash_scheme,
    status: row.snapshot_id === null ? 'Ingested' : row.status,
    snapshotId: row.snapshot_id,
    batchId: row.batch_id,
    chainTxHash: row.chain_tx_hash,
  };
}

function nullableMs(v: Int64Out | null): number | null {
  return v === null ? null : Number(v);
}

function toApiKey(row: ApiKeyRow): ApiKeyRecord {
  if (!(ACCESS_LEVELS as readonly string[]).includes(row.level)) {
    throw new DrisError('internal_error', 'stored key has an unknown access level');
  }
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    clientId: row.client_id,
    level: row.level as AccessLevel,
    secretHash: row.secret_hash,
    createdAtMs: Number(row.created_at_ms),
    expiresAtMs: nullableMs(row.expires_at_ms),
    revokedAtMs: nullableMs(row.revoked_at_ms),
    alsoTenants: row.also_tenants,
    rotatedFrom: row.rotated_from,
  };
}

function toAuditRow(e: AuditEvent): object {
  return {
    tenant_id: e.tenantId,
    at: dateTime64Text(e.atMs),
    event_id: e.eventId,
    client_id: e.clientId,
    key_id: e.keyId,
    action: e.action,
    resource: e.resource,
    outcome: e.outcome,
    correlation_id: e.correlationId,
    // Empty text marks "no detail", so an empty object still reads back as {}.
    detail: e.detail === undefined ? '' : JSON.stringify(e.detail),
  };
}

function toAuditEvent(row: AuditRow): AuditEvent {
  const base = {
    eventId: row.event_id,
    atMs: Number(row.at_ms),
    tenantId: row.tenant_id,
    clientId: row.client_id,
    keyId: row.key_id,
    action: row.action,
    resource: row.resource,
    outcome: row.outcome,
    correlationId: row.correlation_id,
  };
  return row.detail === '' ? base : { ...base, detail: JSON.parse(row.detail) as Record<string, unknown> };
}

// ---- paging -----------------------------------------------------------------------------------

function invalid(path: string, message: string): DrisError {
  return new DrisError('validation_failed', `invalid ${path}`, { fields: [{ path, code: 'invalid', message }] });
}

function pageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw invalid('limit', 'must be a positive integer');
  return Math.min(limit, MAX_PAGE_LIMIT);
}

function epochMs(ms: number, path: string): number {
  if (!Number.isSafeInteger(ms)) throw invalid(path, 'must be an integer number of milliseconds');
  // Outside DateTime64's range a bound is just "before everything" or "after everything".
  return Math.min(Math.max(ms, -2_208_988_800_000), 10_413_791_999_999);
}

/** Opaque page cursor: base64url of [epoch ms, tie-breaking id] of the last item returned. */
export function encodeCursor(ms: number, id: string): string {
  return Buffer.from(JSON.stringify([ms, id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): [number, string] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('cursor', 'not a cursor returned by this endpoint');
  }
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    Number.isSafeInteger(value[0]) &&
    typeof value[1] === 'string' &&
    cursor === encodeCursor(value[0] as number, value[1])
  ) {
    return [value[0] as number, value[1]];
  }
  throw invalid('cursor', 'not a cursor returned by this endpoint');
}
