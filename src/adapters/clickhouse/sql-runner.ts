/**
 * What the ClickHouse storage needs from an engine, and nothing more: the embedded engine (chDB,
 * chdb-runner.ts) and a server (@clickhouse/client, http-runner.ts) each implement it in a few
 * lines, and all storage logic lives above it, in ClickHouseDatabase and the stores. The engine
 * is chosen by which runner the database is given. Implementations translate their vendor's
 * errors into DrisError ('dependency_unavailable' | 'timeout' | 'internal_error') before they
 * leave.
 */

/** Values of `{name:Type}` placeholders. Int64 values may be numbers below 2^53. */
export type SqlParamValue = string | number | bigint | boolean | null | readonly string[] | readonly number[] | readonly bigint[];
export type SqlParams = Readonly<Record<string, SqlParamValue>>;
/** Engine settings of one insert (names are identifiers, values plain). */
export type InsertSettings = Readonly<Record<string, string | number | boolean>>;

export interface ExecOptions {
  /**
   * Limit of this statement instead of the runner's own, milliseconds: a migration that copies a
   * table takes as long as the table is large.
   */
  readonly timeoutMs?: number;
}

export interface SqlRunner {
  /**
   * Queries with parameters the engine works on at once; more wait their turn. Callers that batch
   * reads keep no more than this many in flight, so what arrives meanwhile joins the next batch
   * instead of queueing behind it.
   */
  readonly parallelQueries: number;
  /**
   * Settings this engine adds to key look-ups of a few granules (`name = value, ...`), beyond
   * those every engine takes: what makes such a read cheaper on one engine version may be
   * unknown to another.
   */
  readonly pointReadSettings?: string;
  /**
   * The engine's files are on this machine, at the paths `system.parts` names (the embedded
   * engine): they may be read ahead into the page cache (table-prefetch.ts).
   */
  readonly localFiles?: boolean;
  /** Runs a statement whose result is not read (DDL, INSERT ... VALUES with parameters). */
  exec(sql: string, params?: SqlParams, options?: ExecOptions): Promise<void>;
  /**
   * Runs a SELECT and returns its rows as JSON objects (JSONEachRow). 64-bit integers may come
   * back as numbers or as strings depending on the engine's settings: callers convert.
   */
  query<T>(sql: string, params?: SqlParams): Promise<T[]>;
  /**
   * Runs a SELECT of one String column and returns each value as it is (TabSeparatedRaw), for
   * values that are JSON text themselves: JSONEachRow would escape each into a string, for the
   * caller to parse twice. The values must hold no line break, as compact JSON text holds none.
   */
  queryValues(sql: string, params?: SqlParams): Promise<string[]>;
  /** One INSERT of all rows in JSONEachRow; `table` is database-qualified. */
  insertJsonEachRow(table: string, rows: readonly object[]): Promise<void>;
  /** One INSERT of rows already in JSONEachRow text (one JSON object per line), with settings of its own. */
  insertJsonLines(table: string, lines: Buffer, settings?: InsertSettings): Promise<void>;
  /**
   * One INSERT of rows already in JSONCompactEachRow text (one JSON array per line, its values in
   * `columns` order; the table's other columns take their defaults), with settings of its own.
   * Without member names the engine matches no names per value: about a tenth less of its CPU
   * for the records insert. `columns` are identifiers written by code, never input.
   */
  insertCompactLines(table: string, columns: readonly string[], lines: Buffer, settings?: InsertSettings): Promise<void>;
  close(): Promise<void>;
}
