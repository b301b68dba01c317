import type { InsertRecordsOptions, RecordIndex } from '../../domain/records/ports.js';
import type { AcceptedRecord, Page, RecordQuery, RecordSummary } from '../../domain/records/types.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { CountedInsert } from './counted-insert.js';
import type { ClickHouseDatabase } from './database.js';
import { encodeInSlices, ENCODE_SLICE_ROWS } from './encode-in-slices.js';
import { GroupCommit, type GroupCommitOptions } from './group-commit.js';
import { existingIngestIdsSql, recordsPageSql } from './record-sql.js';
import { RECORD_LINE_COLUMNS, recordLines, RECORD_LINES_SETTINGS, toPendingRecord, toRecordSummary, type PendingRecord, type RecordSummaryRow } from './record-rows.js';
import { pageOf, pageParams } from './values.js';

/**
 * The records table: the indexer's writes, coalesced into large inserts of the records not stored
 * yet (one existence look-up per write for the records that may be stored already, so a
 * redelivery stores nothing twice), and the listing of
 * a tenant's records.
 */

export interface RecordStoreOptions {
  /** Coalescing of insertRecords() calls. */
  readonly writes?: Partial<GroupCommitOptions>;
  /** Most ingest ids per existence look-up (a server receives parameters in the request URL). */
  readonly lookupChunk?: number;
  readonly logger?: Logger;
}

export const DEFAULT_RECORD_WRITES: GroupCommitOptions = { maxBatchRows: 10_000, maxDelayMs: 2, maxPendingRows: 50_000 };
const DEFAULT_LOOKUP_CHUNK = 5_000;

export interface RecordWriteStats {
  /** INSERT statements into records (a write whose rows were all present already sends none). */
  readonly recordInserts: number;
  readonly recordRowsInserted: number;
  /** Records not inserted because their ingestId was already indexed or repeated in the write. */
  readonly recordDuplicatesSkipped: number;
  /** Coalesced record writes (each: one existence look-up, at most one INSERT). */
  readonly recordWrites: number;
}

export class ClickHouseRecordStore implements RecordIndex {
  readonly #db: ClickHouseDatabase;
  readonly #lookupChunk: number;
  readonly #writes: GroupCommit<PendingRecord>;
  readonly #inserts: CountedInsert;
  #duplicatesSkipped = 0;

  constructor(db: ClickHouseDatabase, options: RecordStoreOptions = {}) {
    this.#db = db;
    this.#inserts = new CountedInsert(db, 'records', options.logger ?? componentLogger('hot-index'), 'record insert failed');
    this.#lookupChunk = options.lookupChunk ?? DEFAULT_LOOKUP_CHUNK;
    if (!(Number.isInteger(this.#lookupChunk) && this.#lookupChunk >= 1)) {
      throw new TypeError('lookupChunk must be a positive integer');
    }
    this.#writes = new GroupCommit<PendingRecord>('record index writer', { ...DEFAULT_RECORD_WRITES, ...options.writes }, (rows) => this.#write(rows));
  }

  stats(): RecordWriteStats {
    return {
      recordInserts: this.#inserts.inserts,
      recordRowsInserted: this.#inserts.rows,
      recordDuplicatesSkipped: this.#duplicatesSkipped,
      recordWrites: this.#writes.stats.writes,
    };
  }

  async insertRecords(records: readonly AcceptedRecord[], options?: InsertRecordsOptions): Promise<void> {
    // Converted before queueing, so a malformed record fails its own call and no other.
    const unseen = options?.unseen === true;
    await this.#writes.submit(
      records.map((r) => {
        const p = toPendingRecord(r);
        p.unseen = unseen;
        return p;
      }),
    );
  }

  async #write(pending: PendingRecord[]): Promise<void> {
    const unique = new Map<string, PendingRecord>();
    for (const p of pending) {
      const k = recordKey(p.row.tenant_id, p.row.ingest_id);
      if (!unique.has(k)) unique.set(k, p);
    }
    // Only records that may be stored already are looked for: the first delivery of a record
    // accepted in this consumer's run cannot be (the indexer says which, `unseen`).
    const present = await this.#presentKeys([...unique.values()].filter((p) => !p.unseen));
    const rows: PendingRecord[] = [];
    for (const [k, p] of unique) if (!present.has(k)) rows.push(p);
    if (rows.length > 0) await this.#inserts.writeCompactLines(RECORD_LINE_COLUMNS, await encodeInSlices(rows, ENCODE_SLICE_ROWS, recordLines), rows.length, RECORD_LINES_SETTINGS);
    this.#duplicatesSkipped += pending.length - rows.length;
  }

  /** Keys (tenant, ingestId) of these records already stored, one query per lookupChunk ids. */
  async #presentKeys(items: readonly PendingRecord[]): Promise<Set<string>> {
    if (items.length === 0) return new Set();
    const chunks: PendingRecord[][] = [];
    for (let i = 0; i < items.length; i += this.#lookupChunk) chunks.push(items.slice(i, i + this.#lookupChunk));
    const sql = existingIngestIdsSql(this.#db.name);
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
        return this.#db.runner.query<{ tenant_id: string; ingest_id: string }>(sql, { tenants: [...tenants], ids: chunk.map((p) => p.row.ingest_id), fromMs, toMs });
      }),
    );
    const present = new Set<string>();
    for (const rows of results) for (const r of rows) present.add(recordKey(r.tenant_id, r.ingest_id));
    return present;
  }

  async queryRecords(query: RecordQuery): Promise<Page<RecordSummary>> {
    const { limit, params } = pageParams({
      tenantId: query.tenantId,
      limit: query.limit,
      filters: { database: query.database, collection: query.collection, recordId: query.recordId, snapshotId: query.snapshotId },
      fromMs: query.fromMs,
      toMs: query.toMs,
      cursor: query.cursor,
      cursorParams: ['afterMs', 'afterId'],
    });
    const rows = await this.#db.runner.query<RecordSummaryRow>(recordsPageSql(this.#db.name, (p) => p in params), params);
    return pageOf(rows, limit, toRecordSummary, (r) => [Number(r.accepted_at_ms), r.ingest_id]);
  }

  /** Writes what waits, then refuses further writes. */
  close(): Promise<void> {
    return this.#writes.close();
  }
}

function recordKey(tenantId: string, ingestId: string): string {
  return `${tenantId}\u0000${ingestId}`;
}
