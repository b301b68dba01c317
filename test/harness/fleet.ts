import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startClickHouseBridge, type BridgeProcess } from './clickhouse-bridge-process.js';
import { startFleetChain, type FleetChain } from './fleet-chain.js';
import { drisProcess, type DrisProcess, type FleetRole, type LeadershipEvent } from './fleet-process.js';
import { startLoadBalancer, type LoadBalancer } from './haproxy.js';
import { startKubo, type KuboTestDaemon } from './kubo.js';
import { startNatsCluster, type NatsCluster } from './nats-cluster.js';
import { freePort, makeTempDir, removeTempDir, startRedis, type RedisTestServer } from './servers.js';
import { createKey, type CreatedKey } from './service.js';

/**
 * The local fleet: everything a multi-process dris needs, on one machine, on loopback.
 *
 *   3-node NATS JetStream cluster (stream R3, sync_interval always) · Redis (AOF, appendfsync always)
 *   · ClickHouse HTTP interface (the test bridge over chDB, or the server at `clickhouse.url`)
 *   · Kubo · anvil (own process, contract deployed with `dris chain deploy`)
 *   · HAProxy -> api × N · indexer × N · anchorer × N (one leader, elected through Redis)
 *
 * `npm run cluster` (test/harness/cluster-main.ts) and the cluster test suite both start it here.
 */

export interface FleetOptions {
  /** Data of every component; a temp directory (removed by stop()) when unset. */
  readonly dir?: string;
  /** Wipe `dir` first. */
  readonly fresh?: boolean;
  /** Public port of the load balancer; a free one when 0 or unset. */
  readonly port?: number;
  readonly apis?: number;
  readonly indexers?: number;
  readonly anchorers?: number;
  /** Extra environment of every dris process (e.g. DRIS_RATE_LIMITS); wins over the fleet's defaults. */
  readonly env?: Readonly<Record<string, string>>;
  /** An external ClickHouse server instead of the bridge over chDB. */
  readonly clickhouse?: { readonly url: string; readonly user?: string; readonly password?: string; readonly database?: string };
  /** Progress lines. */
  readonly log?: (line: string) => void;
}

export interface Fleet {
  readonly dir: string;
  /** The load balancer: the fleet's public URL. */
  readonly url: string;
  /** The administration listener of the first api process, and the fleet's admin token. */
  readonly adminUrl: string;
  readonly adminPort: number;
  readonly adminToken: string;
  /** Environment every dris process shares (adapters' URLs and credentials). */
  readonly env: Readonly<Record<string, string>>;
  readonly nats: NatsCluster;
  readonly redis: RedisTestServer;
  readonly clickhouse: { readonly url: string; readonly bridge: BridgeProcess | null };
  readonly kubo: KuboTestDaemon;
  readonly chain: FleetChain;
  readonly lb: LoadBalancer;
  readonly processes: readonly DrisProcess[];
  byRole(role: FleetRole): DrisProcess[];
  /** Leadership as the anchorers logged it, oldest first. */
  readonly leadership: readonly LeadershipEvent[];
  /** The running anchorer that leads now, from its log, or null. */
  leader(): DrisProcess | null;
  /** An API key made through the administration listener. */
  createKey(input: { tenantId: string; clientId: string; level?: string; alsoTenants?: string[] }): Promise<CreatedKey>;
  /** Stops everything, the load balancer first and the NATS nodes last; removes a temp directory. */
  stop(): Promise<void>;
}

interface Secrets {
  readonly adminToken: string;
  readonly natsPassword: string;
  readonly redisPassword: string;
  readonly clickhousePassword: string;
}

/** Generated once per fleet directory, 0600, reused by later runs on the same data. */
async function secretsOf(dir: string): Promise<Secrets> {
  const file = path.join(dir, 'secrets.json');
  if (existsSync(file)) return JSON.parse(await readFile(file, 'utf8')) as Secrets;
  const s: Secrets = {
    adminToken: randomBytes(32).toString('base64url'),
    natsPassword: randomBytes(18).toString('base64url'),
    redisPassword: randomBytes(18).toString('base64url'),
    clickhousePassword: randomBytes(18).toString('base64url'),
  };
  await writeFile(file, `${JSON.stringify(s, null, 2)}\n`, { mode: 0o600 });
  return s;
}

/**
 * Few threads and short waits: the fleet runs eleven processes on whatever cores the machine has
 * (two here), and a batch should reach the chain in seconds, not the production minute.
 */
const FLEET_DEFAULTS: Readonly<Record<string, string>> = {
  HOST: '127.0.0.1',
  DRIS_LOG_LEVEL: 'info',
  DRIS_HASH_THREADS: '1',
  DRIS_BATCH_MAX_WAIT_MS: '2000',
  DRIS_LEADER_LEASE_MS: '5000',
  NATS_REPLICAS: '3',
};

interface Infrastructure {
  nats: NatsCluster;
  redis: RedisTestServer;
  clickhouse: { url: string; user: string; password: string; database?: string; bridge: BridgeProcess | null };
  kubo: KuboTestDaemon;
  chain: FleetChain;
}

async function startInfrastructure(dir: string, secrets: Secrets, options: FleetOptions, say: (line: string) => void, started: (() => Promise<void>)[]): Promise<Infrastructure> {
  say('starting a 3-node NATS JetStream cluster');
  const nats = await startNatsCluster({ dir, user: 'dris', password: secrets.natsPassword });
  started.push(() => nats.stop());
  say('starting Redis (AOF, appendfsync always)');
  const redis = await startRedis({ durable: true, dir: await dirOf(dir, 'redis'), password: secrets.redisPassword });
  started.push(() => redis.stop());
  let clickhouse: Infrastructure['clickhouse'];
  if (options.clickhouse !== undefined) {
    const c = options.clickhouse;
    clickhouse = { url: c.url, user: c.user ?? 'default', password: c.password ?? '', bridge: null, ...(c.database === undefined ? {} : { database: c.database }) };
    say(`using the ClickHouse server at ${new URL(c.url).host}`);
  } else {
    say('starting the ClickHouse HTTP interface (test bridge over chDB)');
    const bridge = await startClickHouseBridge({ dir: await dirOf(dir, 'clickhouse'), users: { dris: secrets.clickhousePassword } });
    started.push(() => bridge.stop());
    clickhouse = { url: bridge.url, user: 'dris', password: secrets.clickhousePassword, bridge };
  }
  say('starting Kubo (offline, loopback)');
  const kubo = await startKubo({ dir: await dirOf(dir, 'kubo') });
  started.push(() => kubo.stop());
  say('starting anvil and deploying the anchor contract (dris chain deploy)');
  const chain = await startFleetChain(await dirOf(dir, 'anvil'), path.join(await dirOf(dir, 'logs'), 'anvil.log'), say);
  started.push(() => chain.node.stop());
  return { nats, redis, clickhouse, kubo, chain };
}

async function dirOf(parent: string, name: string): Promise<string> {
  const d = path.join(parent, name);
  await mkdir(d, { recursive: true, mode: 0o700 });
  return d;
}

function sharedEnv(infra: Infrastructure, secrets: Secrets, extra: Readonly<Record<string, string>>): Record<string, string> {
  const c = infra.clickhouse;
  return {
    ...FLEET_DEFAULTS,
    NATS_URL: infra.nats.url,
    NATS_USER: infra.nats.user,
    NATS_PASSWORD: infra.nats.password,
    REDIS_URL: infra.redis.url,
    REDIS_PASSWORD: secrets.redisPassword,
    CLICKHOUSE_URL: c.url,
    CLICKHOUSE_USER: c.user,
    CLICKHOUSE_PASSWORD: c.password,
    ...(c.database === undefined ? {} : { CLICKHOUSE_DATABASE: c.database }),
    EVM_RPC_URL: infra.chain.rpcUrl,
    DRIS_CHAIN_ID: String(infra.chain.chainId),
    DRIS_CONTRACT_ADDRESS: infra.chain.contractAddress,
    DRIS_CONTRACT_DEPLOY_BLOCK: String(infra.chain.deployBlock),
    IPFS_API_URL: infra.kubo.apiUrl,
    DRIS_IPFS_GATEWAY_URL: infra.kubo.gatewayUrl,
    DRIS_ADMIN_TOKEN: secrets.adminToken,
    ...extra,
  };
}

/** What every dris process of one fleet is made with, besides its name, role and ports. */
interface ProcessPlan {
  readonly dir: string;
  readonly env: Readonly<Record<string, string>>;
  readonly anchorerKey: string;
  readonly onLeadership: (e: LeadershipEvent) => void;
}

/** Ports a process of this role listens on, each free when chosen. */
async function portsOf(role: FleetRole): Promise<Record<string, string>> {
  return {
    ...(role === 'api' ? { PORT: String(await freePort()), DRIS_ADMIN_PORT: String(await freePort()) } : {}),
    DRIS_OPS_PORT: String(await freePort()),
  };
}

async function processOf(plan: ProcessPlan, name: string, role: FleetRole): Promise<DrisProcess> {
  return drisProcess({
    name,
    role,
    dataDir: await dirOf(plan.dir, name),
    // The signing key only where it signs: api and indexer processes never hold it.
    env: { ...plan.env, ...(await portsOf(role)), DRIS_ROLES: role, ...(role === 'anchorer' ? { DRIS_ANCHORER_KEY: plan.anchorerKey } : {}) },
    logFile: path.join(await dirOf(plan.dir, 'logs'), `${name}.log`),
    onLeadership: plan.onLeadership,
  });
}

/**
 * The dris processes, not yet started: api processes get fixed ports so that restarts keep them,
 * and every process an ops port of its own (/metrics, /livez, /readyz), fixed too.
 */
async function planProcesses(plan: ProcessPlan, counts: Record<FleetRole, number>): Promise<DrisProcess[]> {
  const out: DrisProcess[] = [];
  for (const role of ['api', 'indexer', 'anchorer'] as const) {
    for (let i = 1; i <= counts[role]; i++) out.push(await processOf(plan, `${role}-${i}`, role));
  }
  return out;
}

/** Starts made with fresh ports after a port was taken, before the process gives up. */
const PORT_ATTEMPTS = 3;

/**
 * Starts processes[i]. A port chosen free can be taken before the process binds it (by any
 * outgoing connection on the machine, whose local port comes from the same range), and the
 * process then exits with `cannot listen`: it is made again with fresh ports and started again.
 * The load balancer learns the api ports only after every process is up.
 */
async function startPlanned(plan: ProcessPlan, processes: DrisProcess[], i: number): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const p = processes[i] as DrisProcess;
    try {
      await p.start();
      return;
    } catch (err) {
      if (attempt >= PORT_ATTEMPTS || !(err instanceof Error) || !err.message.includes('cannot listen on')) throw err;
      // Never started: this only closes its log, which the next one opens again.
      await p.stop();
      processes[i] = await processOf(plan, p.name, p.role);
    }
  }
}

export async function startFleet(options: FleetOptions = {}): Promise<Fleet> {
  const say = options.log ?? ((): void => undefined);
  const temp = options.dir === undefined;
  const dir = options.dir ?? (await makeTempDir('dris-fleet-'));
  if (options.fresh === true && !temp) await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const secrets = await secretsOf(dir);
  const started: (() => Promise<void>)[] = [];
  const processes: DrisProcess[] = [];
  let lb: LoadBalancer | null = null;
  const stopAll = async (): Promise<void> => {
    if (lb !== null) await lb.stop();
    for (const role of ['api', 'indexer', 'anchorer'] as const) await Promise.all(processes.filter((p) => p.role === role).map((p) => p.stop()));
    for (const stop of started.reverse()) await stop().catch((err: unknown) => say(`stopping: ${err instanceof Error ? err.message : String(err)}`));
    started.length = 0;
    if (temp) await removeTempDir(dir);
  };
  try {
    const infra = await startInfrastructure(dir, secrets, options, say, started);
    const env = sharedEnv(infra, secrets, options.env ?? {});
    const leadership: LeadershipEvent[] = [];
    const counts = { api: options.apis ?? 2, indexer: options.indexers ?? 2, anchorer: options.anchorers ?? 2 };
    const plan: ProcessPlan = { dir, env, anchorerKey: infra.chain.anchorerKey, onLeadership: (e) => leadership.push(e) };
    processes.push(...(await planProcesses(plan, counts)));
    const [first, ...rest] = processes;
    if (first === undefined) throw new Error('a fleet needs at least one api process');
    say(`starting ${first.name} (it migrates the index schema)`);
    await startPlanned(plan, processes, 0);
    say(`starting ${rest.map((p) => p.name).join(', ')}`);
    await Promise.all(rest.map((_, k) => startPlanned(plan, processes, k + 1)));
    const apis = processes.filter((p) => p.role === 'api');
    say('starting HAProxy in front of the api processes');
    lb = await startLoadBalancer({ dir: await dirOf(dir, 'haproxy'), port: options.port ?? 0, servers: apis.map((p) => ({ name: p.name, port: Number(p.env['PORT']), opsPort: Number(p.env['DRIS_OPS_PORT']) })) });
    await lb.waitUp();
    // processes[0], not `first`: a start on a taken port made it again.
    const admin = (processes[0] as DrisProcess).handle;
    const balancer = lb;
    return {
      dir,
      url: lb.url,
      adminUrl: admin.adminUrl,
      adminPort: admin.adminPort,
      adminToken: secrets.adminToken,
      env,
      nats: infra.nats,
      redis: infra.redis,
      clickhouse: { url: infra.clickhouse.url, bridge: infra.clickhouse.bridge },
      kubo: infra.kubo,
      chain: infra.chain,
      lb: balancer,
      processes,
      byRole: (role) => processes.filter((p) => p.role === role),
      leadership,
      leader() {
        const last = new Map<string, LeadershipEvent>();
        for (const e of leadership) last.set(e.process, e);
        const leading = processes.filter((p) => p.role === 'anchorer' && p.running && last.get(p.name)?.kind === 'leading');
        return leading.length === 1 ? (leading[0] ?? null) : null;
      },
      createKey: (input) => createKey({ adminUrl: admin.adminUrl, adminToken: secrets.adminToken }, input),
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
