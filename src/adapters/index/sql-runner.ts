/**
 * What the hot index needs from a ClickHouse engine, and nothing more: the embedded engine (chDB)
 * and a server (@clickhouse/client) each implement it in a few lines, and all index logic lives
 * above it, in ClickHouseRecordIndex. Implementations translate their vendor's errors into
 * DrisError ('dependency_unavailable' | 'timeout' | 'internal_error') before they leave.
 */

/** Values of `{name:Type}` placeholders. Int64 values may be numbers below 2^53. */
export type SqlParamValue = string | number | bigint | boolean | null | readonly string[] | readonly number[];
export type SqlParams = Readonly<Record<string, SqlParamValue>>;

export interface SqlRunner {
  /** Runs a statement whose result is not read (DDL, INSERT ... VALUES with parameters). */
  exec(sql: string, params?: SqlParams): Promise<void>;
  /**
   * Runs a SELECT and returns its rows as JSON objects (JSONEachRow). 64-bit integers may come
   * back as numbers or as strings depending on the engine's settings: callers convert.
   */
  query<T>(sql: string, params?: SqlParams): Promise<T[]>;
  /** One INSERT of all rows in JSONEachRow; `table` is database-qualified. */
  insertJsonEachRow(table: string, rows: readonly object[]): Promise<void>;
  close(): Promise<void>;
}
