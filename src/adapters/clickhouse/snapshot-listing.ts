import { DrisError } from '../../errors/dris-error.js';
import type { SnapshotQuery } from '../../domain/pipeline/ports.js';
import type { ListedSnapshot } from '../../domain/pipeline/types.js';
import { pointReadSettings } from './point-read.js';
import { LISTED_SNAPSHOT_COLUMNS, toListedSnapshot, type ListedSnapshotRow } from './pipeline-rows.js';
import { MAX_PAGE_LIMIT } from './schema.js';
import type { SqlRunner } from './sql-runner.js';
import { Conditions, decodeCursor, encodeCursor, n, type Int64Out } from './values.js';

/**
 * The snapshot listing: a page's ids, states and versions on the narrow columns first, then the
 * rest of each row, record ids included, for the row versions not already held.
 *
 * A row version never changes once written (a state change writes a row of a higher version), so
 * the whole rows of versions read lately are kept, a bounded number, and a version read again is
 * not read from the engine again. That is what a client following the tail of the listing does:
 * it cannot hold a cursor past the last page, so each poll re-reads that page, and each snapshot
 * on it carries up to 1000 record ids. The last page of a tenant with a million records (1014
 * snapshots) cost 25 ms of CPU read whole, 10 of them on the narrow columns.
 */

/** Row versions kept whole: a few last pages of the default size, at up to 1000 record ids each. */
export const LISTED_ROWS_KEPT = 256;

/** A row of the page as first read: what picks the page, and which version of each row it holds (decimal text; `version` itself would name the alias in ORDER BY). */
interface PageRow {
  snapshot_id: string;
  batch_id: string;
  status: string;
  row_version: string;
  created_at_ms: Int64Out;
}

/** Of these rows (their batch and state), those whose batch is committed (`ClickHousePipelineStore`). */
export type CommittedBatches = (rows: readonly Pick<ListedSnapshotRow, 'batch_id' | 'status'>[]) => Promise<Set<string>>;

export class SnapshotListing {
  readonly #runner: SqlRunner;
  readonly #db: string;
  readonly #committed: CommittedBatches;
  readonly #capacity: number;
  /** By tenant, snapshot id and version; in the order last used, the oldest first. */
  readonly #kept = new Map<string, ListedSnapshot>();

  constructor(runner: SqlRunner, db: string, committed: CommittedBatches, capacity = LISTED_ROWS_KEPT) {
    this.#runner = runner;
    this.#db = db;
    this.#committed = committed;
    this.#capacity = capacity;
  }

  async list(q: SnapshotQuery): Promise<{ items: ListedSnapshot[]; nextCursor: string | null }> {
    const limit = Math.min(Math.max(1, Math.trunc(q.limit)), MAX_PAGE_LIMIT);
    const c = new Conditions(['tenant_id = {tenantId:String}'], { tenantId: q.tenantId, limit: limit + 1 })
      .add('has(record_ids, {recordId:String})', 'recordId', q.recordId)
      .add('status = {status:String}', 'status', q.status);
    if (q.cursor !== undefined) {
      let after: [number, string];
      try {
        after = decodeCursor(q.cursor);
      } catch {
        throw new DrisError('validation_failed', 'invalid cursor', { fields: [{ path: 'cursor', code: 'invalid_format', message: 'is not a cursor of this listing' }] });
      }
      c.add(`(created_at > fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC') OR (created_at = fromUnixTimestamp64Milli({afterMs:Int64}, 'UTC') AND snapshot_id > {afterId:String}))`, 'afterMs', after[0]);
      c.params['afterId'] = after[1];
    }
    // The narrow columns only: FINAL would otherwise read the record ids of every snapshot of the tenant.
    const rows = await this.#runner.query<PageRow>(
      `SELECT snapshot_id, batch_id, status, toString(version) AS row_version, toUnixTimestamp64Milli(created_at) AS created_at_ms
       FROM ${this.#db}.snapshots FINAL WHERE ${c.text()} ORDER BY created_at, snapshot_id LIMIT {limit:UInt32}`,
      c.params,
    );
    const page = rows.slice(0, limit);
    const whole = await this.#whole(q.tenantId, page);
    const committed = await this.#committed(page);
    const items: ListedSnapshot[] = [];
    for (const r of page) {
      const s = whole.get(r.snapshot_id);
      // Rewritten since the page was read: shown as it is now, if it still belongs on the page.
      if (s === undefined || !committed.has(s.batchId) || (q.status !== undefined && s.status !== q.status)) continue;
      items.push(s);
    }
    // The cursor follows the page as read, uncommitted snapshots included: a page may come out short.
    const last = page.at(-1);
    return { items, nextCursor: rows.length > limit && last !== undefined ? encodeCursor(n(last.created_at_ms), last.snapshot_id) : null };
  }

  /** The page's rows whole, by snapshot id: those kept, and the others read by key in one query. */
  async #whole(tenantId: string, page: readonly PageRow[]): Promise<Map<string, ListedSnapshot>> {
    const out = new Map<string, ListedSnapshot>();
    const missing: string[] = [];
    for (const r of page) {
      const key = keyOf(tenantId, r.snapshot_id, r.row_version);
      const s = this.#kept.get(key);
      if (s === undefined) {
        missing.push(r.snapshot_id);
        continue;
      }
      this.#kept.delete(key);
      this.#kept.set(key, s);
      out.set(r.snapshot_id, s);
    }
    if (missing.length === 0) return out;
    // The newest version of each by LIMIT 1 BY: FINAL would merge the key ranges of every part.
    const rows = await this.#runner.query<ListedSnapshotRow & { row_version: string }>(
      `SELECT ${LISTED_SNAPSHOT_COLUMNS}, toString(version) AS row_version FROM ${this.#db}.snapshots
       WHERE tenant_id = {tenantId:String} AND snapshot_id IN {ids:Array(String)}
       ORDER BY snapshot_id, version DESC LIMIT 1 BY snapshot_id
       SETTINGS ${pointReadSettings(this.#runner.pointReadSettings)}`,
      { tenantId, ids: missing },
    );
    for (const r of rows) {
      const s = toListedSnapshot(r);
      out.set(r.snapshot_id, s);
      this.#keep(keyOf(tenantId, r.snapshot_id, r.row_version), s);
    }
    return out;
  }

  #keep(key: string, s: ListedSnapshot): void {
    this.#kept.set(key, s);
    while (this.#kept.size > this.#capacity) {
      const oldest = this.#kept.keys().next();
      if (oldest.done === true) break;
      this.#kept.delete(oldest.value);
    }
  }
}

function keyOf(tenantId: string, snapshotId: string, version: string): string {
  return `${tenantId}\u0000${snapshotId}\u0000${version}`;
}
