import type { ClickHouseServerOptions } from './http-runner.js';
import type { SqlRunner } from './sql-runner.js';
import { ClickHouseStorage, type ClickHouseStorageOptions } from './storage.js';
import { TimedSqlRunner, type QueryTimer } from './timed-runner.js';

/** Which engine the storage runs on: the engine is the runner its database gets. */
export type ClickHouseEngine =
  | {
      /** ClickHouse in this process (chDB), persisted in `path` (e.g. `${DRIS_DATA_DIR}/clickhouse`). */
      readonly kind: 'embedded';
      readonly path: string;
      /** A query or insert still running after this long is reported as 'timeout'. Default 30 s. */
      readonly queryTimeoutMs?: number;
      /** Merge the look-up tables into one part once writes to them stop this long, milliseconds (idle-compaction.ts); 0 or unset: never. */
      readonly compactIdleMs?: number;
    }
  | ({ readonly kind: 'server' } & ClickHouseServerOptions);

export interface OpenStorageOptions extends Omit<ClickHouseStorageOptions, 'journalTableDir' | 'compactIdleMs'> {
  readonly engine: ClickHouseEngine;
  /** Replaces the engine's own runner, with the engine's defaults kept (tests). */
  readonly runner?: SqlRunner;
  /** Told how long each query and insert took (the index query latency metric). */
  readonly onQuery?: QueryTimer;
}

export interface OpenedStorage {
  readonly storage: ClickHouseStorage;
  /** The engine's adapter name, as health reports it: `chdb` or `clickhouse`. */
  readonly adapter: string;
}

/**
 * Opens the ClickHouse storage (not migrated) on the engine chosen. Each engine's client is loaded
 * only when chosen: chDB is a native module of its own, and a server needs none of it.
 */
export async function openClickHouseStorage(options: OpenStorageOptions): Promise<OpenedStorage> {
  const { engine, runner, onQuery, ...common } = options;
  const timed = (r: SqlRunner): SqlRunner => (onQuery === undefined ? r : new TimedSqlRunner(r, onQuery));
  if (engine.kind === 'server') {
    const { ClickHouseClientRunner, SERVER_LOOKUP_CHUNK } = await import('./http-runner.js');
    const client = runner ?? new ClickHouseClientRunner({ ...engine, ...(options.logger === undefined ? {} : { logger: options.logger.child({ component: 'clickhouse-client' }) }) });
    return { storage: new ClickHouseStorage(timed(client), { ...common, lookupChunk: common.lookupChunk ?? SERVER_LOOKUP_CHUNK }), adapter: 'clickhouse' };
  }
  const { ChdbSqlRunner } = await import('./chdb-runner.js');
  const embedded = runner ?? new ChdbSqlRunner(engine.path, engine.queryTimeoutMs);
  // The engine's files are local: a journal flushes their file system instead of fsyncing each insert.
  return {
    storage: new ClickHouseStorage(timed(embedded), { ...common, journalTableDir: engine.path, ...(engine.compactIdleMs === undefined ? {} : { compactIdleMs: engine.compactIdleMs }) }),
    adapter: 'chdb',
  };
}
