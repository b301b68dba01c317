import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { deployDir, deployTools, run } from '../harness/deploy-tools.js';
import { toolsDir } from '../harness/servers.js';

/**
 * deploy/compose: the fleet's Compose file loads as `docker compose` loads it (compose-go: the
 * Compose Specification's JSON schema, interpolation, consistency), and describes the fleet the
 * issue asks for; the NATS node configuration passes nats-server's own check.
 */

const composeDir = path.join(deployDir, 'compose');
const composeFile = path.join(composeDir, 'compose.yaml');

interface ComposeService {
  image?: string;
  command?: string[] | null;
  entrypoint?: string[] | null;
  environment?: Record<string, string | null>;
  depends_on?: Record<string, { condition: string; required?: boolean }>;
  deploy?: { replicas?: number } | null;
  healthcheck?: { test?: string[]; disable?: boolean };
  volumes?: { type: string; source?: string; target: string; read_only?: boolean }[];
  secrets?: { source: string }[];
  restart?: string;
  ports?: { target: number; published?: string; host_ip?: string }[];
  networks?: Record<string, { aliases?: string[] } | null>;
  build?: { context: string; dockerfile: string };
  stop_grace_period?: string;
}

interface ComposeProject {
  services: Record<string, ComposeService>;
  secrets?: Record<string, { file?: string }>;
}

async function loadCompose(args: readonly string[]) {
  return run(deployTools().deployCheck, ['compose', ...args]);
}

void t.test('compose.yaml is a valid Compose project with the example variables', async (t) => {
  const r = await loadCompose(['--env-file', path.join(composeDir, 'env.example'), composeFile]);
  t.equal(r.code, 0, r.stderr);
  const project = JSON.parse(r.stdout) as ComposeProject;
  const svc = (name: string): ComposeService => {
    const s = project.services[name];
    if (s === undefined) throw new Error(`no service ${name}`);
    return s;
  };

  t.test('NATS: three JetStream nodes behind one name, fsync before acknowledgement', async (t) => {
    for (const n of ['nats-1', 'nats-2', 'nats-3']) {
      const s = svc(n);
      t.equal(s.environment?.['NATS_SERVER_NAME'], n);
      t.ok(s.networks?.['default']?.aliases?.includes('nats'), `${n} answers as nats`);
      t.ok(s.volumes?.some((v) => v.target === '/etc/nats/nats.conf' && v.read_only === true));
      t.ok(s.volumes?.some((v) => v.type === 'volume' && v.source === `${n}-data` && v.target === '/data'), 'own JetStream volume');
      t.ok(s.healthcheck?.test?.some((a) => a.includes('/healthz?js-enabled-only=true')));
    }
    const conf = await readFile(path.join(composeDir, 'nats', 'nats-cluster.conf'), 'utf8');
    t.match(conf, /^\s*sync_interval: always$/m);
    t.equal([...conf.matchAll(/nats-route:\/\/nats-\d:6222/g)].length, 3);
  });

  t.test('Redis with AOF fsynced on every write; ClickHouse server; Kubo; anvil for development', async (t) => {
    t.match(svc('redis').command?.join(' '), /--appendonly yes --appendfsync always/);
    t.match(svc('clickhouse').image, /^clickhouse\/clickhouse-server:/);
    t.match(svc('kubo').image, /^ipfs\/kubo:/);
    t.match(svc('anvil').image, /^ghcr\.io\/foundry-rs\/foundry:/);
    t.same(svc('anvil').entrypoint, ['anvil']);
  });

  t.test('dris: one image, api x2, indexer x2, anchorer x2, after a one-shot init job', async (t) => {
    const init = svc('dris-init');
    t.equal(init.restart, 'no');
    t.match(init.entrypoint?.join(' '), /dris-init\.sh/);
    t.equal(init.build?.dockerfile, 'deploy/docker/Dockerfile');
    const initScript = await readFile(path.join(composeDir, 'init', 'dris-init.sh'), 'utf8');
    t.match(initScript, /dris-entrypoint migrate/);
    t.match(initScript, /dris-entrypoint chain deploy/);
    for (const [role, replicas] of [
      ['api', 2],
      ['indexer', 2],
      ['anchorer', 2],
    ] as const) {
      const s = svc(role);
      t.equal(s.image, init.image, `${role}: the dris image`);
      t.equal(s.environment?.['DRIS_ROLES'], role);
      t.equal(s.deploy?.replicas, replicas, `${role} x${replicas}`);
      t.equal(s.environment?.['NATS_REPLICAS'], '3', 'stream R3');
      t.equal(s.environment?.['NATS_URL'], 'nats://nats:4222');
      t.equal(s.environment?.['CLICKHOUSE_URL'], 'http://clickhouse:8123', 'the ClickHouse server, not the bridge');
      t.equal(s.environment?.['DRIS_OPS_PORT'], '9464');
      t.equal(s.environment?.['DRIS_ENV_FILES'], '/var/lib/dris-chain/contract.env', 'contract address from the init job');
      if (role === 'anchorer') {
        t.equal(s.environment?.['DRIS_ANCHORER_KEY_FILE'], '/run/secrets/anchorer_key', 'key from a secret, not the environment');
        t.ok(s.secrets?.some((x) => x.source === 'anchorer_key'));
      } else {
        t.equal(s.environment?.['DRIS_ANCHORER_KEY_FILE'], undefined, `${role}: never signs, holds no key`);
        t.notOk(s.secrets?.some((x) => x.source === 'anchorer_key'), `${role}: no key secret`);
      }
      t.equal(s.environment?.['DRIS_ANCHORER_KEY'], undefined);
      t.equal(s.depends_on?.['dris-init']?.condition, 'service_completed_successfully');
      for (const dep of ['nats-1', 'nats-2', 'nats-3', 'redis', 'clickhouse', 'kubo']) {
        t.equal(s.depends_on?.[dep]?.condition, 'service_healthy', `${role} waits for ${dep}`);
      }
      t.equal(s.restart, 'unless-stopped', 'restarted after exit 74');
      t.equal(s.stop_grace_period, '45s');
      t.same(s.ports ?? [], [], `${role} publishes no port: api through HAProxy, admin and ops stay private`);
    }
    t.equal(svc('anchorer').environment?.['DRIS_LEADER_LEASE_MS'], '10000');
    t.equal(project.secrets?.['anchorer_key']?.file, path.join(composeDir, 'secrets', 'anchorer-key'));
  });

  t.test('HAProxy in front of the api processes, checked on /readyz of the ops port', async (t) => {
    const h = svc('haproxy');
    t.ok(h.ports?.some((p) => p.target === 8080 && p.published === '8080'));
    const cfg = await readFile(path.join(composeDir, 'haproxy', 'haproxy.cfg'), 'utf8');
    t.match(cfg, /server-template api- \d+ api:8080/);
    t.match(cfg, /http-check send meth GET uri \/readyz/);
    t.match(cfg, /default-server check port 9464/);
    t.match(cfg, /http-request disable-l7-retry if METH_POST/, 'a POST that reached a process is never replayed');
  });

  t.test('Prometheus with the alert rules, Grafana with the datasource and dashboard', async (t) => {
    const p = svc('prometheus');
    t.ok(p.volumes?.some((v) => v.source === path.join(deployDir, 'prometheus', 'alerts.yaml') && v.target.startsWith('/etc/prometheus/rules/')));
    t.ok(p.volumes?.some((v) => v.source === path.join(composeDir, 'prometheus', 'prometheus.yml')));
    const g = svc('grafana');
    t.ok(g.volumes?.some((v) => v.source === path.join(deployDir, 'grafana', 'dashboards') && v.target === '/var/lib/grafana/dashboards'));
    t.ok(g.volumes?.some((v) => v.source === path.join(composeDir, 'grafana', 'provisioning') && v.target === '/etc/grafana/provisioning'));
    t.equal(g.environment?.['GF_SECURITY_ADMIN_PASSWORD'], 'change-me-grafana-password', 'from the env file');
  });

  t.test('no secret value is written in the Compose file itself', async (t) => {
    const text = await readFile(composeFile, 'utf8');
    for (const m of text.matchAll(/^\s*([A-Z_]*(?:PASSWORD|TOKEN|KEY))\s*:\s*(.+)$/gm)) {
      t.match(m[2], /^\$\{[A-Z_]+(?::\?[^}]*)?\}$/, `${m[1]} is interpolated from .env`);
    }
  });
});

void t.test('production: without the dev-chain profile there is no anvil, and nothing needs it', async (t) => {
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-compose-prod-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const example = await readFile(path.join(composeDir, 'env.example'), 'utf8');
  const prod = example
    .split('\n')
    .filter((l) => !/^(COMPOSE_PROFILES|EVM_RPC_URL|DRIS_CHAIN_ID)=/.test(l))
    .concat(['EVM_RPC_URL=https://rpc.example.org', 'DRIS_CHAIN_ID=11155111', 'DRIS_CONTRACT_ADDRESS=0x5FbDB2315678afecb367f032d93F642f64180aa3', 'DRIS_CONTRACT_DEPLOY_BLOCK=42'])
    .join('\n');
  await writeFile(path.join(dir, 'prod.env'), prod);
  const r = await loadCompose(['--env-file', path.join(dir, 'prod.env'), composeFile]);
  t.equal(r.code, 0, r.stderr);
  const project = JSON.parse(r.stdout) as ComposeProject;
  t.equal(project.services['anvil'], undefined, 'no development chain');
  for (const name of ['dris-init', 'api', 'indexer', 'anchorer']) {
    const s = project.services[name];
    t.equal(s?.environment?.['EVM_RPC_URL'], 'https://rpc.example.org', `${name} anchors on the real chain`);
    t.equal(s?.environment?.['DRIS_CHAIN_ID'], '11155111');
    const anvilDep = s?.depends_on?.['anvil'];
    t.ok(anvilDep === undefined || anvilDep.required === false, `${name} does not require anvil`);
  }
  t.equal(project.services['dris-init']?.environment?.['DRIS_CONTRACT_ADDRESS'], '0x5FbDB2315678afecb367f032d93F642f64180aa3', 'the init job deploys nothing');
});

void t.test('a missing required variable, a schema violation and an undefined dependency are refused', async (t) => {
  const noEnv = await loadCompose([composeFile]);
  t.equal(noEnv.code, 1, 'passwords are required variables');

  const dir = await mkdtemp(path.join(tmpdir(), 'dris-compose-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const bad = path.join(dir, 'compose.yaml');
  await writeFile(bad, 'services:\n  api:\n    image: [dris]\n');
  t.equal((await loadCompose([bad])).code, 1, 'an image that is not a string');
  await writeFile(bad, 'services:\n  api:\n    image: dris\n    replcas: 2\n');
  t.equal((await loadCompose([bad])).code, 1, 'unknown service key');
  await writeFile(bad, 'services:\n  api:\n    image: dris\n    depends_on: [nats]\n');
  t.equal((await loadCompose([bad])).code, 1, 'dependency on an undefined service');
  await writeFile(bad, 'services:\n  api:\n    image: dris\n    depends_on: [nats]\n  nats:\n    image: nats\n');
  t.equal((await loadCompose([bad])).code, 0, 'the same file made consistent');
});

void t.test('the NATS node configuration passes nats-server -t, and a broken one does not', async (t) => {
  const natsServer = path.join(toolsDir(), 'bin', 'nats-server');
  const env = { NATS_SERVER_NAME: 'nats-1', NATS_PASSWORD: 'secret' };
  const ok = await run(natsServer, ['-t', '-c', path.join(composeDir, 'nats', 'nats-cluster.conf')], { env });
  t.equal(ok.code, 0, ok.stderr);
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-nats-conf-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const conf = (await readFile(path.join(composeDir, 'nats', 'nats-cluster.conf'), 'utf8')).replace(/^(\s*)sync_interval: always$/m, '$1sync_interval: sometimes');
  await writeFile(path.join(dir, 'nats.conf'), conf);
  t.equal((await run(natsServer, ['-t', '-c', path.join(dir, 'nats.conf')], { env })).code, 1);
});
