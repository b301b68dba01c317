import type { AuditEvent, AuditLog, AuditQuery } from '../../domain/audit/ports.js';
import { VERIFICATION_ACTION_OF_MODE, VERIFICATION_ACTIONS, VERIFY_RECORD_ACTION } from '../../domain/audit/verification-events.js';
import type { Page } from '../../domain/records/types.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import type { AppendSink } from './append-journal.js';
import { CountedInsert } from './counted-insert.js';
import type { ClickHouseDatabase } from './database.js';
import type { GroupCommitOptions } from './group-commit.js';
import { dateTime64Text, pageOf, pageParams, type Int64Out } from './values.js';

/**
 * The audit trail: events appended to audit_events (through the database's journal when it has
 * one, else in group-committed inserts), and read newest first together with the verification
 * history's rows, which are the trail's verification events.
 */

export interface AuditStoreOptions {
  /** Coalescing of append() calls (without a journal). */
  readonly writes?: Partial<GroupCommitOptions>;
  readonly logger?: Logger;
}

export const DEFAULT_AUDIT_WRITES: GroupCommitOptions = { maxBatchRows: 5_000, maxDelayMs: 5, maxPendingRows: 50_000 };

export interface AuditWriteStats {
  readonly auditInserts: number;
  readonly auditRowsInserted: number;
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

export class ClickHouseAuditLog implements AuditLog {
  readonly #db: ClickHouseDatabase;
  readonly #sink: AppendSink;
  readonly #inserts: CountedInsert;

  constructor(db: ClickHouseDatabase, options: AuditStoreOptions = {}) {
    this.#db = db;
    this.#inserts = new CountedInsert(db, 'audit_events', options.logger ?? componentLogger('hot-index'), 'audit insert failed');
    this.#sink = db.appendSink('audit_events', 'audit writer', { ...DEFAULT_AUDIT_WRITES, ...options.writes }, (rows) => this.#inserts.write(rows));
  }

  /** Inserts of this store's own writer: none when the database's journal writes the trail. */
  stats(): AuditWriteStats {
    return { auditInserts: this.#inserts.inserts, auditRowsInserted: this.#inserts.rows };
  }

  /** Writes what waits (without a journal), then refuses further appends. */
  close(): Promise<void> {
    return this.#sink.close();
  }

  async append(events: readonly AuditEvent[]): Promise<void> {
    await this.#sink.append(events.map(toAuditRow));
  }

  async query(query: AuditQuery): Promise<Page<AuditEvent>> {
    const { limit, params } = pageParams({
      tenantId: query.tenantId,
      limit: query.limit,
      filters: { action: query.action, keyId: query.keyId, clientId: query.clientId },
      fromMs: query.fromMs,
      toMs: query.toMs,
      cursor: query.cursor,
      cursorParams: ['beforeMs', 'beforeId'],
    });
    // The journal holds the verification history too, so this waits for both tables.
    await this.#sink.settled();
    const sources = query.action === undefined ? 'both' : VERIFICATION_ACTIONS.includes(query.action) ? 'verifications' : 'events';
    const rows = await this.#db.runner.query<AuditRow>(auditPageSql(this.#db, sources, (p) => p in params), params);
    return pageOf(rows, limit, toAuditEvent, (r) => [Number(r.at_ms), r.event_id]);
  }
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

// ---- SQL ----------------------------------------------------------------------------------------

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

/**
 * A page of a tenant's trail, newest first, from the table an action filter names or from both.
 * Params: tenantId, limit UInt32, and those of the filters present (`has` tells which): action,
 * keyId, clientId, fromMs, toMs, beforeMs and beforeId (the cursor). Rows: AuditRow.
 */
function auditPageSql(db: ClickHouseDatabase, sources: 'events' | 'verifications' | 'both', has: (param: string) => boolean): string {
  const where = (id: string, action: string): string => {
    const w = ['tenant_id = {tenantId:String}'];
    if (has('action')) w.push(`${action} = {action:String}`);
    if (has('keyId')) w.push('key_id = {keyId:String}');
    if (has('clientId')) w.push('client_id = {clientId:String}');
    if (has('fromMs')) w.push(`at >= fromUnixTimestamp64Milli({fromMs:Int64}, 'UTC')`);
    if (has('toMs')) w.push(`at < fromUnixTimestamp64Milli({toMs:Int64}, 'UTC')`);
    if (has('beforeMs')) {
      w.push(`at <= fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC')`);
      w.push(`(at < fromUnixTimestamp64Milli({beforeMs:Int64}, 'UTC') OR ${id} < {beforeId:String})`);
    }
    return w.join('\n  AND ');
  };
  const events = `SELECT ${AUDIT_COLUMNS}
FROM ${db.table('audit_events')}
WHERE ${where('event_id', 'action')}
  AND action NOT IN (${VERIFICATION_ACTIONS_SQL})
ORDER BY at DESC, event_id DESC
LIMIT 1 BY event_id
LIMIT {limit:UInt32}`;
  const verifications = `SELECT ${VERIFICATION_AUDIT_COLUMNS}
FROM ${db.table('verifications')}
WHERE ${where('verification_id', VERIFICATION_ACTION_SQL)}
ORDER BY at DESC, verification_id DESC
LIMIT 1 BY verification_id
LIMIT {limit:UInt32}`;
  if (sources === 'events') return events;
  if (sources === 'verifications') return verifications;
  return `SELECT * FROM
(
${events}
UNION ALL
${verifications}
)
ORDER BY at_ms DESC, event_id DESC
LIMIT {limit:UInt32}`;
}
