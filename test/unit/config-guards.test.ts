import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { assertCoherentSetup, loadConfig, reviewSetup, type Env } from '../../src/config/config.js';
import { DrisError } from '../../src/errors/dris-error.js';

/**
 * Start-up guards (src/config/setup-guards.ts): each incoherent setup is refused with
 * config_invalid and the variable to change; the coherent ones (the embedded default, a full
 * cluster, a process with every role on some external engines) start.
 */

const KEY = `0x${'ab'.repeat(32)}`;
const CONTRACT = `0x${'1'.repeat(40)}`;

/** What every process of a fleet shares (as the local fleet and the deploy files give it). */
const CLUSTER: Env = {
  NATS_URL: 'nats://n1:4222,nats://n2:4222,nats://n3:4222',
  NATS_REPLICAS: '3',
  REDIS_URL: 'redis://redis:6379/0',
  CLICKHOUSE_URL: 'http://clickhouse:8123',
  EVM_RPC_URL: 'http://chain:8545',
  DRIS_CONTRACT_ADDRESS: CONTRACT,
  IPFS_API_URL: 'http://kubo:5001',
};

/** The engine variables of CLUSTER each role needs once roles are split (the others it may drop). */
const NEEDS: Record<string, readonly string[]> = {
  api: ['NATS_URL', 'CLICKHOUSE_URL', 'REDIS_URL', 'EVM_RPC_URL', 'DRIS_CONTRACT_ADDRESS', 'IPFS_API_URL'],
  indexer: ['NATS_URL', 'CLICKHOUSE_URL'],
  anchorer: ['NATS_URL', 'CLICKHOUSE_URL', 'REDIS_URL', 'EVM_RPC_URL', 'DRIS_CONTRACT_ADDRESS', 'IPFS_API_URL'],
};

function envOf(roles: string | undefined, extra: Env = {}, drop: readonly string[] = []): Env {
  const env: Record<string, string | undefined> = { ...CLUSTER, ...extra };
  if (roles !== undefined) env['DRIS_ROLES'] = roles;
  if (roles === undefined || roles.split(',').includes('anchorer')) env['DRIS_ANCHORER_KEY'] = KEY;
  for (const d of drop) delete env[d];
  return env;
}

const problemsOf = (env: Env): string[] => reviewSetup(loadConfig(env, '/srv')).problems.map((p) => `${p.path}:${p.code}`);
const warningsOf = (env: Env): string[] => reviewSetup(loadConfig(env, '/srv')).warnings.map((p) => `${p.path}:${p.code}`);

t.test('coherent setups pass without warnings', async (t) => {
  const setups: Record<string, Env> = {
    'embedded default, every role': {},
    'every role, external queue and admission store, the rest embedded': { NATS_URL: 'nats://127.0.0.1:4222', REDIS_URL: 'redis://127.0.0.1:6379' },
    'every role on every external part': envOf(undefined),
    'full cluster, api': envOf('api', { HOST: '0.0.0.0' }),
    'full cluster, indexer': envOf('indexer'),
    'full cluster, anchorer': envOf('anchorer'),
    'full cluster, api and anchorer together': envOf('api,anchorer'),
    'every role named explicitly': { DRIS_ROLES: 'anchorer, indexer,api' },
  };
  for (const [name, env] of Object.entries(setups)) {
    t.same(problemsOf(env), [], `${name}: no problem`);
    t.same(warningsOf(env), [], `${name}: no warning`);
    t.same(assertCoherentSetup(loadConfig(env, '/srv')), [], `${name}: starts`);
  }
});

t.test('an indexer or anchorer process with listener settings is not refused', async (t) => {
  const listeners = { HOST: '0.0.0.0', PORT: '9000', DRIS_ADMIN_HOST: '0.0.0.0', DRIS_ADMIN_PORT: '9001', DRIS_ADMIN_TOKEN: 'z'.repeat(32) };
  t.same(problemsOf({ ...envOf('indexer', listeners, ['REDIS_URL', 'EVM_RPC_URL', 'DRIS_CONTRACT_ADDRESS', 'IPFS_API_URL']) }), [], 'an indexer needs only the queue and the index');
  t.same(problemsOf(envOf('anchorer', listeners)), []);
});

t.test('split roles: each shared part left embedded is refused, by variable', async (t) => {
  for (const role of ['api', 'indexer', 'anchorer']) {
    for (const variable of Object.keys(CLUSTER)) {
      if (variable === 'NATS_REPLICAS') continue;
      const needed = NEEDS[role]?.includes(variable) === true;
      // An anchorer's contract is required whatever its roles (the external chain deploys none).
      const code = role === 'anchorer' && variable === 'DRIS_CONTRACT_ADDRESS' ? 'required' : 'required_by_roles';
      const expected = needed ? [`${variable}:${code}`] : [];
      t.same(problemsOf(envOf(role, {}, [variable])), expected, `DRIS_ROLES=${role} without ${variable}`);
    }
  }
});

t.test('every problem at once, each naming its variable and what to change', async (t) => {
  const cfg = loadConfig({ DRIS_ROLES: 'api,anchorer' }, '/srv');
  let caught: unknown;
  try {
    assertCoherentSetup(cfg);
  } catch (err) {
    caught = err;
  }
  t.ok(caught instanceof DrisError, 'refused');
  const e = caught as DrisError;
  t.equal(e.code, 'config_invalid');
  t.same(
    e.fields.map((f) => `${f.path}:${f.code}`),
    ['NATS_URL:required_by_roles', 'CLICKHOUSE_URL:required_by_roles', 'REDIS_URL:required_by_roles', 'EVM_RPC_URL:required_by_roles', 'IPFS_API_URL:required_by_roles'],
    'the embedded chain deploys its own contract: no DRIS_CONTRACT_ADDRESS problem beside EVM_RPC_URL',
  );
  for (const f of e.fields) {
    t.match(f.message, new RegExp(`Set ${f.path} to `), `${f.path}: says what to set`);
    t.match(f.message, /unset DRIS_ROLES/, `${f.path}: or how to run alone`);
    t.match(f.message, /DRIS_ROLES=api,anchorer/, `${f.path}: names the roles that need it`);
  }
  const redis = e.fields.find((f) => f.path === 'REDIS_URL');
  t.match(redis?.message, /idempotency/, 'REDIS_URL: the api role\'s reason');
  t.match(redis?.message, /leader/, 'REDIS_URL: the anchorer role\'s reason');
});

t.test('an api process on the embedded queue beside other processes', async (t) => {
  t.same(problemsOf(envOf('api', {}, ['NATS_URL'])), ['NATS_URL:required_by_roles']);
  t.same(problemsOf(envOf('api,indexer', {}, ['NATS_URL'])), ['NATS_URL:required_by_roles'], 'with the indexer too: no anchorer can share its queue');
  t.same(
    problemsOf({ DRIS_ROLES: 'api,indexer' }),
    ['NATS_URL:required_by_roles', 'CLICKHOUSE_URL:required_by_roles', 'REDIS_URL:required_by_roles', 'EVM_RPC_URL:required_by_roles', 'DRIS_CONTRACT_ADDRESS:required_by_roles', 'IPFS_API_URL:required_by_roles'],
    'api and indexer on every embedded part',
  );
});

t.test('the api role measured alone is accepted only when said outright, and only alone', async (t) => {
  t.same(problemsOf({ DRIS_ROLES: 'api', DRIS_FRONT_ONLY: 'true' }), [], 'the front alone on the embedded parts');
  t.not(problemsOf({ DRIS_ROLES: 'api' }).length, 0, 'without DRIS_FRONT_ONLY the same setup is refused');
  t.same(problemsOf({ DRIS_ROLES: 'api,indexer', DRIS_FRONT_ONLY: 'true' }).filter((p) => p.startsWith('DRIS_FRONT_ONLY')), ['DRIS_FRONT_ONLY:invalid_value'], 'with another role');
  t.same(problemsOf({ DRIS_FRONT_ONLY: 'true' }), ['DRIS_FRONT_ONLY:invalid_value'], 'with every role');
  t.same(problemsOf({ DRIS_ROLES: 'indexer', DRIS_FRONT_ONLY: 'true' }).filter((p) => p.startsWith('DRIS_FRONT_ONLY')), ['DRIS_FRONT_ONLY:invalid_value'], 'with a role that is not the front');
});

t.test('anchorers: Redis for the election, an external chain and IPFS', async (t) => {
  t.same(problemsOf(envOf('anchorer', {}, ['REDIS_URL'])), ['REDIS_URL:required_by_roles'], 'anchorer without Redis');
  t.same(problemsOf(envOf('anchorer', {}, ['EVM_RPC_URL', 'DRIS_CONTRACT_ADDRESS'])), ['EVM_RPC_URL:required_by_roles'], 'several anchorers each with an embedded chain');
  t.same(problemsOf(envOf('anchorer', {}, ['IPFS_API_URL'])), ['IPFS_API_URL:required_by_roles'], 'each with an embedded IPFS blockstore');
  t.same(problemsOf(envOf('indexer,anchorer', {}, ['REDIS_URL', 'IPFS_API_URL'])), ['REDIS_URL:required_by_roles', 'IPFS_API_URL:required_by_roles']);
});

t.test('an external chain needs its contract wherever anchoring runs, all roles included', async (t) => {
  const external = { EVM_RPC_URL: 'http://chain:8545', DRIS_ANCHORER_KEY: KEY };
  t.same(problemsOf(external), ['DRIS_CONTRACT_ADDRESS:required'], 'every role, external chain, no contract');
  t.same(problemsOf({ ...external, DRIS_CONTRACT_ADDRESS: CONTRACT }), []);
  t.same(problemsOf(envOf('anchorer', {}, ['DRIS_CONTRACT_ADDRESS'])), ['DRIS_CONTRACT_ADDRESS:required'], 'an anchorer process');
  t.same(problemsOf(envOf('api,anchorer', {}, ['DRIS_CONTRACT_ADDRESS'])), ['DRIS_CONTRACT_ADDRESS:required'], 'one problem, not one per role');
  t.same(problemsOf({}), [], 'the embedded chain deploys its own');
});

t.test('the signing key outside an anchorer is a warning, never a refusal', async (t) => {
  t.same(warningsOf(envOf('api', { DRIS_ANCHORER_KEY: KEY })), ['DRIS_ANCHORER_KEY:unused_secret']);
  t.same(warningsOf(envOf('indexer', { DRIS_ANCHORER_KEYSTORE: '/etc/dris/k.json', DRIS_ANCHORER_KEYSTORE_PASSWORD: 'pw' })), [
    'DRIS_ANCHORER_KEYSTORE:unused_secret',
    'DRIS_ANCHORER_KEYSTORE_PASSWORD:unused_secret',
  ]);
  t.same(problemsOf(envOf('indexer', { DRIS_ANCHORER_KEY: KEY })), []);
  t.same(warningsOf(envOf('anchorer')), [], 'an anchorer holds it without a word');
  t.same(warningsOf({ DRIS_ANCHORER_KEY: KEY }), [], 'so does a process with every role');
  const cfg = loadConfig(envOf('api', { DRIS_ANCHORER_KEY: KEY }), '/srv');
  t.same(assertCoherentSetup(cfg).map((w) => w.path), ['DRIS_ANCHORER_KEY'], 'returned to be logged');
  t.notOk(JSON.stringify(reviewSetup(cfg)).includes(KEY.slice(2)), 'the key itself is never quoted');
});

t.test('a wildcard HOST named as the embedded gateway is a warning', async (t) => {
  t.same(warningsOf({ HOST: '0.0.0.0' }), ['DRIS_IPFS_GATEWAY_URL:unreachable_url']);
  t.same(warningsOf({ HOST: '::' }), ['DRIS_IPFS_GATEWAY_URL:unreachable_url']);
  t.same(warningsOf({ HOST: '0.0.0.0', DRIS_IPFS_GATEWAY_URL: 'https://dris.example.org' }), [], 'a gateway URL configured');
  t.same(warningsOf({ HOST: '0.0.0.0', IPFS_API_URL: 'http://kubo:5001' }), [], 'no embedded gateway with Kubo');
  t.same(warningsOf({ HOST: '10.0.0.5' }), [], 'a concrete address');
  t.same(warningsOf({}), [], 'loopback, the default');
  t.same(problemsOf({ HOST: '0.0.0.0' }), [], 'never a refusal');
});

t.test('dris serve refuses before anything is opened', async (t) => {
  const cli = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/dris.js');
  const parent = mkdtempSync(path.join(tmpdir(), 'dris-guards-'));
  t.teardown(() => rmSync(parent, { recursive: true, force: true }));
  const dataDir = path.join(parent, 'data');
  const env = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', DRIS_DATA_DIR: dataDir, PORT: '0', DRIS_ADMIN_PORT: '0', DRIS_ROLES: 'api', NATS_URL: 'nats://127.0.0.1:9' };
  const r = spawnSync(process.execPath, [cli, 'serve'], { encoding: 'utf8', env, timeout: 30_000 });
  t.equal(r.status, 1, 'exit status 1');
  t.match(r.stderr, /^dris: config_invalid: /);
  for (const variable of ['CLICKHOUSE_URL', 'REDIS_URL', 'EVM_RPC_URL', 'DRIS_CONTRACT_ADDRESS', 'IPFS_API_URL']) t.match(r.stderr, `${variable}: `, `names ${variable}`);
  t.notMatch(r.stderr, /NATS_URL: /, 'the queue is shared: not named');
  t.notOk(existsSync(dataDir), 'the data directory was not even created');
});
