import path from 'node:path';
import type { Config } from '../config/config.js';
import { openClickHouseStorage, type OpenedStorage } from '../adapters/clickhouse/open-storage.js';
import type { ClickHouseStorage } from '../adapters/clickhouse/storage.js';
import type { QueryTimer } from '../adapters/clickhouse/timed-runner.js';
import type { Logger } from '../util/logger.js';

export type Storage = ClickHouseStorage;

/**
 * The hot index and the stores beside it: a ClickHouse server when CLICKHOUSE_URL is set, else
 * chDB in the data directory (not migrated: callers migrate).
 */
export function openStorage(cfg: Config, logger?: Logger, onQuery?: QueryTimer): Promise<OpenedStorage> {
  const c = cfg.clickhouse;
  const log = { ...(logger === undefined ? {} : { logger }), ...(onQuery === undefined ? {} : { onQuery }) };
  if (c !== undefined) {
    return openClickHouseStorage({ database: c.database, engine: { kind: 'server', url: c.url, ...(c.username !== undefined ? { username: c.username } : {}), ...(c.password !== undefined ? { password: c.password } : {}) }, ...log });
  }
  // The audit trail and the verification history reach the embedded engine through a journal
  // in the same data directory (see AppendJournal).
  return openClickHouseStorage({
    engine: { kind: 'embedded', path: path.join(cfg.dataDir, 'clickhouse'), compactIdleMs: cfg.indexCompactIdleMs },
    journalDir: path.join(cfg.dataDir, 'index-journal'),
    ...log,
  });
}
