import t from 'tap';
import { ClickHouseClientRunner } from '../../src/adapters/clickhouse/http-runner.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { newIngestId } from '../../src/domain/records/ids.js';
import { setLogLevel } from '../../src/util/logger.js';
import { startClickHouseBridge } from '../harness/clickhouse-bridge-process.js';
import { record } from './index-fixtures.js';
import { indexSuite } from './index-suite.js';

/**
 * The hot index on a ClickHouse server (the adapter dris uses with CLICKHOUSE_URL, through
 * @clickhouse/client over HTTP), checked by the same suite as the embedded engine. The server is
 * the test-only bridge serving the ClickHouse HTTP interface over chDB (no ClickHouse server can
 * be installed on these machines), with credentials required.
 */

setLogLevel('silent');

const users = { dris: 'index-test-secret' };
const bridge = await startClickHouseBridge({ users });
t.teardown(() => bridge.stop());

const options = { url: bridge.url, username: 'dris', password: users.dris };
indexSuite(t, { name: 'clickhouse server', open: async () => ({ index: (await openClickHouseStorage({ engine: { kind: 'server', ...options } })).storage, raw: new ClickHouseClientRunner(options) }) });

void t.test('a write of 10k records with real ingest ids stays within the server request limits', async (t) => {
  // ULID ingest ids are 26 characters; as a URL parameter an array of 5000 of them is ~175 KB,
  // beyond the server's default http_max_field_value_size (128 KiB).
  const { storage: index } = await openClickHouseStorage({ engine: { kind: 'server', ...options } });
  t.teardown(() => index.close());
  await index.database.migrate();
  const at = Date.parse('2025-06-01T00:00:00.000Z');
  const recs = Array.from({ length: 10_000 }, (_, i) => record('tenant-ulid', { atMs: at + i, ingestId: newIngestId(at + i) }));
  await index.records.insertRecords(recs);
  await index.records.insertRecords(recs.slice(0, 6_000));
  t.same(index.stats().recordRowsInserted, 10_000);
  t.same(index.stats().recordDuplicatesSkipped, 6_000);
});
