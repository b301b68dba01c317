import path from 'node:path';
import type { Config } from '../config/config.js';
import type { ClickHouseRecordIndex } from '../adapters/index/clickhouse-record-index.js';

export type Index = ClickHouseRecordIndex;

/** The hot index: a ClickHouse server when CLICKHOUSE_URL is set, else chDB in the data directory. */
export async function openIndex(cfg: Config): Promise<{ index: Index; adapter: string }> {
  if (cfg.clickhouse !== undefined) {
    const { ClickHouseIndex } = await import('../adapters/index/clickhouse-index.js');
    const c = cfg.clickhouse;
    const opts: ConstructorParameters<typeof ClickHouseIndex>[0] = { url: c.url, database: c.database, ...(c.username !== undefined ? { username: c.username } : {}), ...(c.password !== undefined ? { password: c.password } : {}) };
    return { index: new ClickHouseIndex(opts), adapter: 'clickhouse' };
  }
  const { ChdbIndex } = await import('../adapters/index/chdb-index.js');
  // The audit trail and the verification history reach the embedded engine through a journal
  // in the same data directory (see AppendJournal).
  return { index: new ChdbIndex({ path: path.join(cfg.dataDir, 'clickhouse'), journalDir: path.join(cfg.dataDir, 'index-journal') }), adapter: 'chdb' };
}
