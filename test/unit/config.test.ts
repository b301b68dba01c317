import t from 'tap';
import { loadConfig } from '../../src/config/config.js';
import { DrisError } from '../../src/errors/dris-error.js';

t.test('defaults', async (t) => {
  const c = loadConfig({}, '/srv');
  t.equal(c.port, 8080);
  t.equal(c.host, '127.0.0.1');
  t.equal(c.dataDir, '/srv/data');
  t.equal(c.batchMaxRecords, 1000);
  t.equal(c.batchMaxWaitMs, 60_000);
  t.equal(c.hashBackend, 'auto');
  t.same(c.rateLimits, { standard: 1000, premium: 10_000, enterprise: 100_000 });
  t.same(c.roles, ['api', 'indexer', 'anchorer']);
  t.equal(c.maxBodyBytes, 1024 * 1024);
  t.equal(c.maxBulkBodyBytes, 16 * 1024 * 1024);
  t.equal(c.nats, undefined, 'unset URL selects the embedded queue');
  t.equal(c.redis, undefined);
  t.equal(c.clickhouse, undefined);
});

t.test('values and credentials', async (t) => {
  const c = loadConfig({
    PORT: '9000',
    DRIS_RATE_LIMITS: 'standard=5, premium=50',
    DRIS_HASH_BACKEND: 'js',
    NATS_URL: 'nats://127.0.0.1:4222',
    NATS_USER: 'u',
    NATS_PASSWORD: 'p',
    REDIS_URL: 'redis://127.0.0.1:6379/1',
    CLICKHOUSE_URL: 'http://127.0.0.1:8123',
    CLICKHOUSE_USER: 'default',
    DRIS_ROLES: 'indexer',
  });
  t.equal(c.port, 9000);
  t.same(c.rateLimits, { standard: 5, premium: 50, enterprise: 100_000 });
  t.equal(c.hashBackend, 'js');
  t.match(c.nats, { url: 'nats://127.0.0.1:4222', user: 'u', pass: 'p', stream: 'DRIS_RECORDS' });
  t.match(c.redis, { url: 'redis://127.0.0.1:6379/1', keyPrefix: 'dris:' });
  t.match(c.clickhouse, { url: 'http://127.0.0.1:8123', username: 'default', database: 'dris' });
  t.same(c.roles, ['indexer']);
});

t.test('every problem is reported at once, by variable', async (t) => {
  try {
    loadConfig({ PORT: 'eighty', DRIS_BATCH_MAX_RECORDS: '5000', DRIS_HASH_BACKEND: 'gpu', DRIS_RATE_LIMITS: 'gold=1', NATS_URL: 'http://x', DRIS_ROLES: 'api,verifier' });
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof DrisError);
    const e = err as DrisError;
    t.equal(e.code, 'config_invalid');
    t.same(e.fields.map((f) => `${f.path}:${f.code}`).sort(), [
      'DRIS_BATCH_MAX_RECORDS:out_of_range',
      'DRIS_HASH_BACKEND:invalid_value',
      'DRIS_RATE_LIMITS:invalid_value',
      'DRIS_ROLES:invalid_value',
      'NATS_URL:invalid_url',
      'PORT:not_an_integer',
    ]);
  }
});

t.test('chain transaction and embedded node settings', async (t) => {
  const d = loadConfig({}, '/srv').chain;
  t.equal(d.replaceAfterMs, 30_000);
  t.equal(d.feeBumpPercent, 12.5);
  t.equal(d.minPriorityFeeWei, 1_000_000n);
  t.equal(d.txTimeoutMs, 600_000);
  t.equal(d.publicRpcUrl, undefined);
  t.equal(d.anvilPort, undefined);
  t.equal(d.anvilBin, undefined);

  const c = loadConfig(
    {
      DRIS_CHAIN_REPLACE_AFTER_MS: '5000',
      DRIS_CHAIN_FEE_BUMP_PERCENT: '20.5',
      DRIS_CHAIN_MIN_PRIORITY_FEE_WEI: '100000000000000000000',
      DRIS_CHAIN_TX_TIMEOUT_MS: '60000',
      DRIS_PUBLIC_RPC_URL: 'https://rpc.example.org',
      DRIS_ANVIL_PORT: '18545',
      DRIS_ANVIL_BIN: '/opt/anvil',
    },
    '/srv',
  ).chain;
  t.equal(c.replaceAfterMs, 5000);
  t.equal(c.feeBumpPercent, 20.5);
  t.equal(c.minPriorityFeeWei, 100_000_000_000_000_000_000n);
  t.equal(c.txTimeoutMs, 60_000);
  t.equal(c.publicRpcUrl, 'https://rpc.example.org');
  t.equal(c.anvilPort, 18_545);
  t.equal(c.anvilBin, '/opt/anvil');

  try {
    loadConfig({ DRIS_CHAIN_FEE_BUMP_PERCENT: '10', DRIS_CHAIN_MIN_PRIORITY_FEE_WEI: '-1', DRIS_ANVIL_PORT: '70000', DRIS_PUBLIC_RPC_URL: 'ftp://x' }, '/srv');
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof DrisError);
    t.same(
      (err as DrisError).fields.map((f) => [f.path, f.code]).sort(),
      [
        ['DRIS_ANVIL_PORT', 'out_of_range'],
        ['DRIS_CHAIN_FEE_BUMP_PERCENT', 'out_of_range'],
        ['DRIS_CHAIN_MIN_PRIORITY_FEE_WEI', 'invalid_format'],
        ['DRIS_PUBLIC_RPC_URL', 'invalid_url'],
      ],
    );
  }
});

t.test('administration listener and token', async (t) => {
  const d = loadConfig({}, '/srv');
  t.equal(d.adminHost, '127.0.0.1', 'loopback by default');
  t.equal(d.adminPort, 8081);
  t.equal(d.adminMaxFailures, 10);
  t.equal(d.adminToken, undefined, 'read from the data directory');
  const c = loadConfig({ DRIS_ADMIN_HOST: '10.1.2.3', DRIS_ADMIN_PORT: '0', DRIS_ADMIN_MAX_FAILURES: '3', DRIS_ADMIN_TOKEN: 'x'.repeat(32) }, '/srv');
  t.match(c, { adminHost: '10.1.2.3', adminPort: 0, adminMaxFailures: 3, adminToken: 'x'.repeat(32) });

  const short = 'y'.repeat(31);
  try {
    loadConfig({ DRIS_ADMIN_TOKEN: short, PORT: '9000', DRIS_ADMIN_PORT: '9000' }, '/srv');
    t.fail('should throw');
  } catch (err) {
    t.ok(err instanceof DrisError);
    const e = err as DrisError;
    t.same(e.fields.map((f) => `${f.path}:${f.code}`).sort(), ['DRIS_ADMIN_PORT:invalid_value', 'DRIS_ADMIN_TOKEN:too_short']);
    t.notOk(e.message.includes(short), 'the token is never quoted');
    t.match(e.message, /DRIS_ADMIN_TOKEN must be at least 32 bytes/);
  }
  // Bytes, not characters: 16 two-byte characters are enough.
  t.equal(loadConfig({ DRIS_ADMIN_TOKEN: 'é'.repeat(16) }, '/srv').adminToken, 'é'.repeat(16));
});

t.test('NATS_URL lists the servers of a cluster', async (t) => {
  const c = loadConfig({ NATS_URL: 'nats://127.0.0.1:4222, nats://127.0.0.1:4223,nats://127.0.0.1:4224', NATS_REPLICAS: '3' }, '/srv');
  t.equal(c.nats?.url, 'nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224');
  t.equal(c.nats?.replicas, 3);
  for (const bad of ['nats://127.0.0.1:4222,,nats://127.0.0.1:4223', 'nats://127.0.0.1:4222,http://127.0.0.1:4223', 'nats://a:1,not a url']) {
    try {
      loadConfig({ NATS_URL: bad }, '/srv');
      t.fail(`should refuse ${bad}`);
    } catch (err) {
      t.same((err as DrisError).fields.map((f) => `${f.path}:${f.code}`), ['NATS_URL:invalid_url'], bad);
    }
  }
});

t.test('an external chain needs the anchorer key only in a process that anchors', async (t) => {
  const api = loadConfig({ EVM_RPC_URL: 'http://127.0.0.1:8545', DRIS_CONTRACT_ADDRESS: `0x${'1'.repeat(40)}`, DRIS_ROLES: 'api' }, '/srv');
  t.equal(api.chain.anchorerKey, undefined, 'an api process reads the chain without a key');
  for (const roles of [undefined, 'anchorer', 'api,anchorer']) {
    try {
      loadConfig({ EVM_RPC_URL: 'http://127.0.0.1:8545', ...(roles === undefined ? {} : { DRIS_ROLES: roles }) }, '/srv');
      t.fail(`roles ${roles ?? '(all)'} should need the key`);
    } catch (err) {
      t.same((err as DrisError).fields.map((f) => `${f.path}:${f.code}`), ['DRIS_ANCHORER_KEY:required'], roles ?? '(all)');
    }
  }
});

t.test('verification warm-up: 10 000 batches by default, 0 turns it off, at most what its caches hold', async (t) => {
  t.equal(loadConfig({}, '/srv').verifyWarmBatches, 10_000);
  t.equal(loadConfig({ DRIS_VERIFY_WARM_BATCHES: '0' }, '/srv').verifyWarmBatches, 0);
  t.equal(loadConfig({ DRIS_VERIFY_WARM_BATCHES: '16000' }, '/srv').verifyWarmBatches, 16_000);
  t.equal(loadConfig({}, '/srv').verifyPrefetchMiB, 8192);
  t.equal(loadConfig({ DRIS_VERIFY_PREFETCH_MIB: '0' }, '/srv').verifyPrefetchMiB, 0);
  for (const bad of ['-1', '16001', 'many']) {
    t.throws(() => loadConfig({ DRIS_VERIFY_WARM_BATCHES: bad }, '/srv'), { code: 'config_invalid', fields: [{ path: 'DRIS_VERIFY_WARM_BATCHES' }] }, bad);
  }
  for (const bad of ['-1', '1048577', '1.5']) {
    t.throws(() => loadConfig({ DRIS_VERIFY_PREFETCH_MIB: bad }, '/srv'), { code: 'config_invalid', fields: [{ path: 'DRIS_VERIFY_PREFETCH_MIB' }] }, bad);
  }
});
