import { DrisError } from '../../errors/dris-error.js';
import type { Logger } from '../../util/logger.js';
import type { ClickHouseDatabase } from './database.js';
import type { TableName } from './schema.js';
import type { InsertSettings } from './sql-runner.js';

/**
 * Inserts into one table, counted for the stores' statistics. A failure is logged with its code
 * only (an insert's error can quote the rows, payloads included) and passed on.
 */
export class CountedInsert {
  readonly #db: ClickHouseDatabase;
  readonly #table: TableName;
  readonly #log: Logger;
  readonly #failure: string;
  #inserts = 0;
  #rows = 0;

  /** `failure`: the log message of a failed insert. */
  constructor(db: ClickHouseDatabase, table: TableName, log: Logger, failure: string) {
    this.#db = db;
    this.#table = table;
    this.#log = log;
    this.#failure = failure;
  }

  /** INSERT statements that succeeded. */
  get inserts(): number {
    return this.#inserts;
  }

  /** Rows those statements held. */
  get rows(): number {
    return this.#rows;
  }

  async write(rows: readonly object[]): Promise<void> {
    try {
      await this.#db.runner.insertJsonEachRow(this.#db.table(this.#table), rows);
    } catch (err) {
      this.#log.warn({ rows: rows.length, code: err instanceof DrisError ? err.code : undefined }, this.#failure);
      throw err;
    }
    this.#inserts += 1;
    this.#rows += rows.length;
  }

  /** One INSERT of `rows` rows already in JSONCompactEachRow text, values in `columns` order, with engine settings of its own. */
  async writeCompactLines(columns: readonly string[], lines: Buffer, rows: number, settings?: InsertSettings): Promise<void> {
    try {
      await this.#db.runner.insertCompactLines(this.#db.table(this.#table), columns, lines, settings);
    } catch (err) {
      this.#log.warn({ rows, code: err instanceof DrisError ? err.code : undefined }, this.#failure);
      throw err;
    }
    this.#inserts += 1;
    this.#rows += rows;
  }
}
