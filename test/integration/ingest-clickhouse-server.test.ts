import t from 'tap';
import { startClickHouseBridge } from '../harness/clickhouse-bridge-process.js';
import { ingestSuite } from './ingest-suite.js';

// The black-box ingest suite with the hot index on a ClickHouse server (CLICKHOUSE_URL): the
// test-only bridge over chDB, with credentials required.
ingestSuite(t, {
  name: 'clickhouse server',
  env: async () => {
    const bridge = await startClickHouseBridge({ users: { dris: 'ingest-test-secret' } });
    t.teardown(() => bridge.stop());
    return { CLICKHOUSE_URL: bridge.url, CLICKHOUSE_USER: 'dris', CLICKHOUSE_PASSWORD: 'ingest-test-secret' };
  },
});
