import type { ExecOptions, InsertSettings, SqlParams, SqlRunner } from './sql-runner.js';

/**
 * A SqlRunner that reports how long each query and insert took, for the index query latency
 * metric. Each is named from a small fixed set, never from the SQL text: a SELECT by the first
 * table it reads (`records`, `batches`, ...), an insert `insert_<table>`, anything else `other`.
 * DDL (exec) is not timed: migrations are not queries.
 */

/** What the names are made of: the tables and views of the schema. */
const TABLES = new Set([
  'records',
  'record_leaves',
  'record_evidence',
  'record_evidence_by_hash',
  'record_evidence_packed',
  'batch_blocks',
  'record_lookup',
  'api_keys',
  'audit_events',
  'verifications',
  'retrieval_policies',
  'batches',
  'snapshots',
  'snapshot_lifecycle',
  'schema_migrations',
]);

const FROM_TABLE = /\bFROM\s+[`"]?[A-Za-z0-9_]+[`"]?\.[`"]?([A-Za-z0-9_]+)/i;

/** The name a query is timed under. */
export function queryName(sql: string): string {
  const table = FROM_TABLE.exec(sql)?.[1];
  return table !== undefined && TABLES.has(table) ? table : 'other';
}

/** The name an insert into `table` (database-qualified) is timed under. */
export function insertName(table: string): string {
  const name = table.slice(table.lastIndexOf('.') + 1).replace(/[`"]/g, '');
  return TABLES.has(name) ? `insert_${name}` : 'other';
}

export type QueryTimer = (query: string, seconds: number) => void;

export class TimedSqlRunner implements SqlRunner {
  readonly parallelQueries: number;
  readonly pointReadSettings?: string;
  readonly localFiles?: boolean;

  constructor(
    private readonly inner: SqlRunner,
    private readonly observe: QueryTimer,
  ) {
    this.parallelQueries = inner.parallelQueries;
    if (inner.pointReadSettings !== undefined) this.pointReadSettings = inner.pointReadSettings;
    if (inner.localFiles !== undefined) this.localFiles = inner.localFiles;
  }

  exec(sql: string, params?: SqlParams, options?: ExecOptions): Promise<void> {
    return this.inner.exec(sql, params, options);
  }

  query<T>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.#timed(queryName(sql), () => this.inner.query<T>(sql, params));
  }

  queryValues(sql: string, params?: SqlParams): Promise<string[]> {
    return this.#timed(queryName(sql), () => this.inner.queryValues(sql, params));
  }

  insertJsonEachRow(table: string, rows: readonly object[]): Promise<void> {
    return this.#timed(insertName(table), () => this.inner.insertJsonEachRow(table, rows));
  }

  insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void> {
    return this.#timed(insertName(table), () => this.inner.insertJsonLines(table, lines, settings));
  }

  insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void> {
    return this.#timed(insertName(table), () => this.inner.insertCompactLines(table, columns, lines, settings));
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  async #timed<T>(name: string, work: () => Promise<T>): Promise<T> {
    const started = performance.now();
    try {
      return await work();
    } finally {
      this.observe(name, (performance.now() - started) / 1000);
    }
  }
}
