import { componentLogger, type Logger } from '../../util/logger.js';
import { AppendJournal, InsertSink, type AppendSink } from './append-journal.js';
import type { GroupCommitOptions } from './group-commit.js';
import { appliedVersionsSql, bootstrapSql, migrations, recordMigrationSql } from './migrations/index.js';
import { databaseIdentifier, DEFAULT_DATABASE, type TableName } from './schema.js';
import type { SqlRunner } from './sql-runner.js';
import type { Int64Out } from './values.js';

/**
 * One ClickHouse database on one engine: the runner (which engine is which runner: chdb-runner.ts
 * or http-runner.ts), the schema and its migrations, and the journal through which the
 * append-only tables are written. The stores (one per port) run their own SQL on it.
 */

export interface ClickHouseDatabaseOptions {
  /** Database holding the tables; created by migrate(). Default `dris`. */
  readonly database?: string;
  /**
   * Directory of a local journal for the append-only tables (audit trail, verification history):
   * appends are durable once in it and reach the tables in a few large inserts a second. For the
   * embedded engine, beside its data directory; without it, each group of appends is an insert.
   */
  readonly journalDir?: string;
  /**
   * The engine's data directory, when it is local (the embedded engine). With journalDir, the
   * journaled tables' inserts then skip their fsyncs, and the journal makes their rows durable by
   * flushing this directory's file system instead (see AppendJournal). Unset: those inserts fsync
   * as every other.
   */
  readonly journalTableDir?: string;
  /** Limit of each migration statement, milliseconds (a back-fill copies a whole table). Default 6 h. */
  readonly migrationTimeoutMs?: number;
  readonly logger?: Logger;
}

const DEFAULT_MIGRATION_TIMEOUT_MS = 6 * 3_600_000;

/** The append-only tables the journal may write; their inserts' fsync is decided per start. */
const JOURNALED_TABLES: readonly TableName[] = ['audit_events', 'verifications'];

export class ClickHouseDatabase {
  readonly runner: SqlRunner;
  /** The database's identifier, as spliced into SQL text. */
  readonly name: string;
  readonly #log: Logger;
  readonly #migrationTimeoutMs: number;
  readonly #journal: AppendJournal | null;
  /** fsync_after_insert of the journaled tables: 0 when the journal flushes their files itself. */
  readonly #journaledTablesFsync: 0 | 1 | null;
  #closing: Promise<void> | null = null;

  constructor(runner: SqlRunner, options: ClickHouseDatabaseOptions = {}) {
    this.runner = runner;
    this.name = databaseIdentifier(options.database ?? DEFAULT_DATABASE);
    this.#log = options.logger ?? componentLogger('hot-index');
    this.#migrationTimeoutMs = options.migrationTimeoutMs ?? DEFAULT_MIGRATION_TIMEOUT_MS;
    this.#journal =
      options.journalDir === undefined
        ? null
        : AppendJournal.open(options.journalDir, runner, {
            logger: this.#log.child({ component: 'index-journal' }),
            ...(options.journalTableDir === undefined ? {} : { tableDirs: [options.journalTableDir] }),
          });
    // Only where the engine's directory is known (the embedded engine) is this decided per start.
    this.#journaledTablesFsync = options.journalTableDir === undefined ? null : this.#journal === null ? 1 : 0;
  }

  /** A table of this database, qualified for SQL text. */
  table(name: TableName): string {
    return `${this.name}.${name}`;
  }

  async migrate(): Promise<void> {
    for (const statement of bootstrapSql(this.name)) await this.runner.exec(statement);
    const rows = await this.runner.query<{ version: Int64Out }>(appliedVersionsSql(this.name));
    const applied = new Set(rows.map((r) => Number(r.version)));
    const all = migrations(this.name);
    for (const m of all) {
      if (applied.has(m.version)) continue;
      const started = Date.now();
      await this.runner.exec(m.sql, undefined, { timeoutMs: this.#migrationTimeoutMs });
      await this.runner.exec(recordMigrationSql(this.name), { version: m.version, name: m.name });
      this.#log.info({ version: m.version, migration: m.name, database: this.name, ms: Date.now() - started }, 'schema migration applied');
    }
    // Per start, not a migration: whether these tables' inserts fsync depends on how this
    // process writes them (through a journal that flushes them, or straight).
    const fsync = this.#journaledTablesFsync;
    if (fsync !== null) {
      for (const table of JOURNALED_TABLES) {
        await this.runner.exec(`ALTER TABLE ${this.table(table)} MODIFY SETTING fsync_after_insert = ${fsync}, fsync_part_directory = ${fsync}`);
      }
    }
    const known = Math.max(...all.map((m) => m.version));
    const newer = [...applied].filter((v) => v > known);
    if (newer.length > 0) {
      // Migrations only add; older code keeps working beside a newer schema during an upgrade.
      this.#log.warn({ newer, known }, 'schema has migrations this version does not know');
    }
  }

  async check(): Promise<void> {
    await this.runner.query('SELECT 1 AS ok');
  }

  /**
   * Where the rows of an append-only table go: through the journal when there is one, else
   * straight into the table by `write` (default: one insert), group-committed as `writes` says.
   */
  appendSink(table: TableName, writer: string, writes: GroupCommitOptions, write?: (rows: object[]) => Promise<void>): AppendSink {
    const qualified = this.table(table);
    return this.#journal?.sink(qualified) ?? new InsertSink(writer, writes, write ?? ((rows) => this.runner.insertJsonEachRow(qualified, rows)));
  }

  /** Closes the journal (which copies what it holds), then the engine: after the stores' writers. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      await this.#journal?.close();
      await this.runner.close();
    })();
    return this.#closing;
  }
}
