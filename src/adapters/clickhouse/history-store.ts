import type { Page } from '../../domain/records/types.js';
import type { HistoryQuery, VerificationHistory } from '../../domain/verification/ports.js';
import type { ReasonCategory, VerificationHistoryEntry, VerificationMode, VerificationStatus } from '../../domain/verification/types.js';
import type { AppendSink } from './append-journal.js';
import type { ClickHouseDatabase } from './database.js';
import type { GroupCommitOptions } from './group-commit.js';
import { MAX_PAGE_LIMIT } from './schema.js';
import { Conditions, dateTime64Text, decodeCursor, pageOf, type Int64Out } from './values.js';

/**
 * The verification history in the verifications table: appended (through the database's journal
 * when it has one, else in group-committed inserts) and read newest first, a page at a time.
 */

export const DEFAULT_HISTORY_WRITES: GroupCommitOptions = { maxBatchRows: 5_000, maxDelayMs: 5, maxPendingRows: 50_000 };

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

const HISTORY_COLUMNS = `verification_id, toUnixTimestamp64Milli(at) AS at_ms, tenant_id, client_id, key_id, mode, database,
  collection, record_id, record_version, snapshot_id, batch_id, verified, verification_status, reason_category, correlation_id`;

function toHistoryEntry(r: HistoryRow): VerificationHistoryEntry {
  return {
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
  };
}

function toHistoryRow(e: VerificationHistoryEntry): object {
  return {
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
  };
}

export class ClickHouseVerificationHistory implements VerificationHistory {
  readonly #db: ClickHouseDatabase;
  readonly #sink: AppendSink;

  constructor(db: ClickHouseDatabase, writes: GroupCommitOptions = DEFAULT_HISTORY_WRITES) {
    this.#db = db;
    this.#sink = db.appendSink('verifications', 'verifications writer', writes);
  }

  async append(entries: readonly VerificationHistoryEntry[]): Promise<void> {
    await this.#sink.append(entries.map(toHistoryRow));
  }

  /** Writes what waits (without a journal), then refuses further appends. */
  close(): Promise<void> {
    return this.#sink.close();
  }

  async query(q: HistoryQuery): Promise<Page<VerificationHistoryEntry>> {
    const limit = Math.min(Math.max(1, Math.trunc(q.limit)), MAX_PAGE_LIMIT);
    await this.#sink.settled();
    const c = new Conditions(['tenant_id = {tenantId:String}'], { tenantId: q.tenantId, limit: limit + 1 })
      .add('record_id = {recordId:String}', 'recordId', q.recordId)
      .add('collection = {collection:String}', 'collection', q.collection)
      .add('snapshot_id = {snapshotId:String}', 'snapshotId', q.snapshotId)
      .add('verification_status = {outcome:String}', 'outcome', q.outcome)
      .add(`at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`, 'fromMs', q.fromMs)
      .add(`at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`, 'toMs', q.toMs);
    if (q.cursor !== undefined) {
      const [beforeMs, beforeId] = decodeCursor(q.cursor);
      c.add(`at <= fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')`, 'beforeMs', beforeMs).add(
        `(at < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC') OR verification_id < {beforeId:String})`,
        'beforeId',
        beforeId,
      );
    }
    const rows = await this.#db.runner.query<HistoryRow>(
      `SELECT ${HISTORY_COLUMNS} FROM ${this.#db.table('verifications')} WHERE ${c.text()}
       ORDER BY at DESC, verification_id DESC LIMIT 1 BY verification_id LIMIT {limit:UInt32}`,
      c.params,
    );
    return pageOf(rows, limit, toHistoryEntry, (r) => [Number(r.at_ms), r.verification_id]);
  }
}
