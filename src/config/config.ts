import path from 'node:path';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import { ACCESS_LEVELS, type AccessLevel } from '../domain/keys/types.js';
import { sanitizeUrl } from '../util/redact.js';
import { readHttpConfig, type HttpConfig } from './http-config.js';

/**
 * All configuration, read from the environment in one place and validated before anything
 * starts. Every variable, its default and unit is listed in README.md ("Configuration").
 * An unset *_URL selects the embedded adapter for that port.
 */

export type HashBackendChoice = 'auto' | 'native' | 'wasm' | 'js';
export type Role = 'api' | 'indexer' | 'anchorer';
export const ROLES: readonly Role[] = ['api', 'indexer', 'anchorer'];

export interface NatsConfig {
  readonly url: string;
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  readonly credsFile?: string;
  readonly stream: string;
  readonly replicas: number;
  /** Stream the messages no consumer could process go to. */
  readonly deadLetterStream: string;
  /** Wait for one publish acknowledgement, milliseconds (tried three times under one message id). */
  readonly publishTimeoutMs: number;
}

export interface RedisConfig {
  readonly url: string;
  readonly password?: string;
  readonly keyPrefix: string;
}

export interface ClickHouseConfig {
  readonly url: string;
  readonly username?: string;
  readonly password?: string;
  readonly database: string;
}

export interface ChainConfig {
  /** External node; unset runs the embedded anvil node. */
  readonly rpcUrl?: string;
  /** Expected chain id (checked at start); default 31337 for the embedded node. */
  readonly chainId?: number;
  /** Hex private key of the anchorer (never logged). */
  readonly anchorerKey?: string;
  /** Encrypted JSON keystore file of the anchorer, with its password. */
  readonly keystoreFile?: string;
  readonly keystorePassword?: string;
  /** Deployed anchor contract; unset on the embedded node deploys one on first start. */
  readonly contractAddress?: string;
  /** Block the contract was deployed in: where searches of its events start (0: the genesis). */
  readonly deployBlock: number;
  /** Most blocks one eth_getLogs call covers; fewer once the provider refuses a page for its size. */
  readonly logBlockRange: number;
  readonly confirmations: number;
  /** Explorer link templates: `{address}` and `{tx}` are replaced. */
  readonly explorerAddressUrl?: string;
  readonly explorerTxUrl?: string;
  /** Seconds between state dumps of the embedded anvil node: what a SIGKILL of it can lose. */
  readonly anvilStateIntervalSec: number;
  /** RPC URL the health answer reports for independent checks (external chain). */
  readonly publicRpcUrl?: string;
  /** A transaction not mined after this long is replaced with higher fees, milliseconds. */
  readonly replaceAfterMs: number;
  /** Percent added to both fee caps per replacement (at least 12.5). */
  readonly feeBumpPercent: number;
  /** Floor of maxPriorityFeePerGas, wei. */
  readonly minPriorityFeeWei: bigint;
  /** An anchor transaction is given up after this long from its first broadcast, milliseconds. */
  readonly txTimeoutMs: number;
  /** Loopback port of the embedded anvil node; a free one when unset. */
  readonly anvilPort?: number;
  /** Another anvil binary for the embedded node. */
  readonly anvilBin?: string;
}

export interface AnchorRetryConfig {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly dataDir: string;
  readonly batchMaxRecords: number;
  readonly batchMaxWaitMs: number;
  readonly hashBackend: HashBackendChoice;
  /** Requests per hour per access level. */
  readonly rateLimits: Readonly<Record<AccessLevel, number>>;
  readonly rateWindowMs: number;
  /** Largest body of a single-record request, bytes. */
  readonly maxBodyBytes: number;
  /** Largest body of a bulk request, bytes. */
  readonly maxBulkBodyBytes: number;
  readonly idempotencyTtlMs: number;
  /** Length of a pending idempotency lease (renewed while its request works), milliseconds. */
  readonly idempotencyLeaseMs: number;
  /** Roles this process runs; all by default (embedded), a subset in a cluster. */
  readonly roles: readonly Role[];
  readonly allowSlowHttp: boolean;
  /** Limits of the HTTP front. */
  readonly http: HttpConfig;
  readonly logLevel: string;
  /** Token of the key-administration endpoints (at least 32 bytes); read from <dataDir>/admin-token when unset. */
  readonly adminToken?: string;
  /** Interface of the administration listener (key and policy administration, detailed health). */
  readonly adminHost: string;
  /** Port of the administration listener; 0 picks a free one (logged as `admin listening`). */
  readonly adminPort: number;
  /** Failed admin-token attempts allowed per client address and minute before answers turn to 429. */
  readonly adminMaxFailures: number;
  /** Interval at which an API process refreshes its view of the key store, milliseconds. */
  readonly keyRefreshMs: number;
  /** Hashing pool threads (0 = hash on the event loop only). */
  readonly hashThreads: number;
  /** Most hashing tasks waiting for a pool thread before answers turn to 503. */
  readonly hashMaxQueue: number;
  /** Most publishes awaiting the queue's acknowledgement before answers turn to 503. */
  readonly maxPendingPublishes: number;
  /** Embedded queue: most bytes of messages not yet processed by every consumer before ingestion answers 503 (0: no bound). */
  readonly queueMaxBytes: number;
  /** Free bytes of the data directory's file system below which ingestion answers 503 (0: only a full disk). */
  readonly minFreeBytes: number;
  readonly nats?: NatsConfig;
  readonly redis?: RedisConfig;
  readonly clickhouse?: ClickHouseConfig;
  readonly evmRpcUrl?: string;
  readonly ipfsApiUrl?: string;
  readonly chain: ChainConfig;
  readonly anchorRetry: AnchorRetryConfig;
  /** A reconciliation of anchors with the contract runs at least this often, milliseconds. */
  readonly anchorReconcileIntervalMs: number;
  /** Deliveries of a queue message a consumer fails on before it goes to the dead letters. */
  readonly maxDeliveries: number;
  /** Lease of the anchoring leader's term with Redis, milliseconds: how long a dead leader holds the role. */
  readonly leaderLeaseMs: number;
  /** Deadline of a manifest fetch from IPFS, milliseconds. */
  readonly ipfsTimeoutMs: number;
  /** How long verification reuses a chain read of one batch root, milliseconds (0: read every time). */
  readonly verifyChainCacheMs: number;
  /**
   * Base URL of the IPFS gateway named in verification answers (`<base>/ipfs/<cid>`): this
   * service's own gateway by default in the embedded mode, none with Kubo unless set.
   */
  readonly ipfsGatewayUrl?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

class Reader {
  readonly problems: FieldError[] = [];
  constructor(private readonly env: Env) {}

  str(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  int(name: string, def: number, min: number, max: number): number {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if (!/^-?\d+$/.test(raw)) {
      this.problems.push({ path: name, code: 'not_an_integer', message: `must be an integer, got ${JSON.stringify(raw)}` });
      return def;
    }
    const n = Number(raw);
    if (n < min || n > max) {
      this.problems.push({ path: name, code: 'out_of_range', message: `must be between ${min} and ${max}` });
      return def;
    }
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    this.problems.push({ path: name, code: 'not_a_boolean', message: 'must be true or false' });
    return def;
  }

  oneOf<T extends string>(name: string, values: readonly T[], def: T): T {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if ((values as readonly string[]).includes(raw)) return raw as T;
    this.problems.push({ path: name, code: 'invalid_value', message: `must be one of ${values.join('|')}` });
    return def;
  }

  url(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.str(name);
    return raw === undefined ? undefined : this.checkUrl(name, raw, protocols) ? raw : undefined;
  }

  /** Comma-separated URLs (the servers of a cluster); each is checked like url(). */
  urls(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.str(name);
    if (raw === undefined) return undefined;
    const parts = raw.split(',').map((p) => p.trim());
    if (parts.some((p) => p === '')) {
      this.problems.push({ path: name, code: 'invalid_url', message: 'must be URLs separated by commas, none empty' });
      return undefined;
    }
    return parts.every((p) => this.checkUrl(name, p, protocols)) ? parts.join(',') : undefined;
  }

  private checkUrl(name: string, raw: string, protocols: readonly string[]): boolean {
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) {
        this.problems.push({ path: name, code: 'invalid_url', message: `protocol must be one of ${protocols.join(' ')}` });
        return false;
      }
      return true;
    } catch {
      this.problems.push({ path: name, code: 'invalid_url', message: 'must be a URL' });
      return false;
    }
  }
}

/** Shortest admin token accepted, bytes: 256 bits, as many as the generated one carries. */
export const MIN_ADMIN_TOKEN_BYTES = 32;
export const DEFAULT_ADMIN_PORT = 8081;

export const DEFAULT_RATE_LIMITS: Readonly<Record<AccessLevel, number>> = { standard: 1000, premium: 10_000, enterprise: 100_000 };

function parseRateLimits(r: Reader): Record<AccessLevel, number> {
  const limits: Record<AccessLevel, number> = { ...DEFAULT_RATE_LIMITS };
  const raw = r.str('DRIS_RATE_LIMITS');
  if (raw === undefined) return limits;
  for (const part of raw.split(',')) {
    const m = /^\s*([a-z]+)\s*=\s*(\d+)\s*$/.exec(part);
    const level = m?.[1];
    const value = m?.[2];
    if (level === undefined || value === undefined || !(ACCESS_LEVELS as readonly string[]).includes(level)) {
      r.problems.push({ path: 'DRIS_RATE_LIMITS', code: 'invalid_value', message: `entry ${JSON.stringify(part)} must be level=count with level one of ${ACCESS_LEVELS.join('|')}` });
      continue;
    }
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 1) {
      r.problems.push({ path: 'DRIS_RATE_LIMITS', code: 'out_of_range', message: `${level} must be a positive integer` });
      continue;
    }
    limits[level as AccessLevel] = n;
  }
  return limits;
}

function parseRoles(r: Reader): Role[] {
  const raw = r.str('DRIS_ROLES');
  if (raw === undefined) return [...ROLES];
  const roles: Role[] = [];
  for (const part of raw.split(',').map((s) => s.trim()).filter((s) => s !== '')) {
    if (!(ROLES as readonly string[]).includes(part)) {
      r.problems.push({ path: 'DRIS_ROLES', code: 'invalid_value', message: `unknown role ${JSON.stringify(part)}; roles are ${ROLES.join(',')}` });
      continue;
    }
    if (!roles.includes(part as Role)) roles.push(part as Role);
  }
  if (roles.length === 0) r.problems.push({ path: 'DRIS_ROLES', code: 'invalid_value', message: 'needs at least one role' });
  return roles;
}

function withOptional<T extends object>(base: T, extras: Record<string, string | number | undefined>): T {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(extras)) if (v !== undefined) out[k] = v;
  return out as T;
}

/** Where the anchorer's signing key comes from: the raw key, else the keystore file and its password. */
export function anchorerKeySource(c: ChainConfig): { readonly privateKey: string } | { readonly keystorePath: string; readonly keystorePassword: string } {
  return c.anchorerKey !== undefined ? { privateKey: c.anchorerKey } : { keystorePath: c.keystoreFile ?? '', keystorePassword: c.keystorePassword ?? '' };
}

/** DRIS_CHAIN_FEE_BUMP_PERCENT: a decimal of at least 12.5 (nodes refuse smaller replacements). */
function feeBumpPercent(r: Reader): number {
  const raw = r.str('DRIS_CHAIN_FEE_BUMP_PERCENT');
  if (raw === undefined) return 12.5;
  const v = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(v >= 12.5 && v <= 1000)) {
    r.problems.push({ path: 'DRIS_CHAIN_FEE_BUMP_PERCENT', code: 'out_of_range', message: 'must be a number from 12.5 to 1000' });
    return 12.5;
  }
  return v;
}

/** DRIS_CHAIN_MIN_PRIORITY_FEE_WEI: a non-negative integer, wei (beyond the safe-integer range). */
function minPriorityFeeWei(r: Reader): bigint {
  const raw = r.str('DRIS_CHAIN_MIN_PRIORITY_FEE_WEI');
  if (raw === undefined) return 1_000_000n;
  if (!/^\d{1,30}$/.test(raw)) {
    r.problems.push({ path: 'DRIS_CHAIN_MIN_PRIORITY_FEE_WEI', code: 'invalid_format', message: 'must be a whole number of wei' });
    return 1_000_000n;
  }
  return BigInt(raw);
}

/** Reads and validates the configuration; throws DrisError('config_invalid') listing every problem. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const r = new Reader(env);
  const MiB = 1024 * 1024;

  // Several servers of one cluster may be listed: the client starts with any that answers.
  const natsUrl = r.urls('NATS_URL', ['nats:', 'tls:', 'ws:', 'wss:']);
  const redisUrl = r.url('REDIS_URL', ['redis:', 'rediss:']);
  const chUrl = r.url('CLICKHOUSE_URL', ['http:', 'https:']);
  const evmRpcUrl = r.url('EVM_RPC_URL', ['http:', 'https:', 'ws:', 'wss:']);
  const ipfsApiUrl = r.url('IPFS_API_URL', ['http:', 'https:']);

  const nats: NatsConfig | undefined =
    natsUrl === undefined
      ? undefined
      : withOptional(
          {
            url: natsUrl,
            stream: r.str('NATS_STREAM') ?? 'DRIS_RECORDS',
            replicas: r.int('NATS_REPLICAS', 1, 1, 5),
            deadLetterStream: r.str('NATS_DEAD_LETTER_STREAM') ?? 'DRIS_DEAD_LETTER',
            publishTimeoutMs: r.int('NATS_PUBLISH_TIMEOUT_MS', 5000, 100, 120_000),
          },
          { user: r.str('NATS_USER'), pass: r.str('NATS_PASSWORD'), token: r.str('NATS_TOKEN'), credsFile: r.str('NATS_CREDS_FILE') },
        );
  const redis: RedisConfig | undefined =
    redisUrl === undefined
      ? undefined
      : withOptional({ url: redisUrl, keyPrefix: r.str('REDIS_KEY_PREFIX') ?? 'dris:' }, { password: r.str('REDIS_PASSWORD') });
  const clickhouse: ClickHouseConfig | undefined =
    chUrl === undefined
      ? undefined
      : withOptional(
          { url: chUrl, database: r.str('CLICKHOUSE_DATABASE') ?? 'dris' },
          { username: r.str('CLICKHOUSE_USER'), password: r.str('CLICKHOUSE_PASSWORD') },
        );

  const chainIdRaw = r.str('DRIS_CHAIN_ID');
  const chain = withOptional(
    {
      confirmations: r.int('DRIS_CONFIRMATIONS', 1, 0, 1000),
      anvilStateIntervalSec: r.int('DRIS_ANVIL_STATE_INTERVAL_S', 1, 1, 86_400),
      replaceAfterMs: r.int('DRIS_CHAIN_REPLACE_AFTER_MS', 30_000, 1000, 86_400_000),
      feeBumpPercent: feeBumpPercent(r),
      minPriorityFeeWei: minPriorityFeeWei(r),
      txTimeoutMs: r.int('DRIS_CHAIN_TX_TIMEOUT_MS', 600_000, 10_000, 86_400_000),
      deployBlock: r.int('DRIS_CONTRACT_DEPLOY_BLOCK', 0, 0, Number.MAX_SAFE_INTEGER),
      logBlockRange: r.int('DRIS_CHAIN_LOG_BLOCK_RANGE', 10_000, 1, 1_000_000),
    } as ChainConfig,
    {
      publicRpcUrl: r.url('DRIS_PUBLIC_RPC_URL', ['http:', 'https:']),
      anvilPort: r.str('DRIS_ANVIL_PORT') === undefined ? undefined : r.int('DRIS_ANVIL_PORT', 0, 1, 65535),
      anvilBin: r.str('DRIS_ANVIL_BIN'),
      rpcUrl: evmRpcUrl,
      anchorerKey: r.str('DRIS_ANCHORER_KEY'),
      keystoreFile: r.str('DRIS_ANCHORER_KEYSTORE'),
      keystorePassword: r.str('DRIS_ANCHORER_KEYSTORE_PASSWORD'),
      contractAddress: r.str('DRIS_CONTRACT_ADDRESS'),
      explorerAddressUrl: r.str('DRIS_EXPLORER_ADDRESS_URL'),
      explorerTxUrl: r.str('DRIS_EXPLORER_TX_URL'),
    },
  );
  const chainWithId: ChainConfig = chainIdRaw === undefined ? chain : { ...chain, chainId: r.int('DRIS_CHAIN_ID', 31337, 1, Number.MAX_SAFE_INTEGER) };
  if (chain.anchorerKey !== undefined && !/^(0x)?[0-9a-fA-F]{64}$/.test(chain.anchorerKey)) {
    r.problems.push({ path: 'DRIS_ANCHORER_KEY', code: 'invalid_format', message: 'must be a 32-byte hex private key' });
  }
  if (chain.contractAddress !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(chain.contractAddress)) {
    r.problems.push({ path: 'DRIS_CONTRACT_ADDRESS', code: 'invalid_format', message: 'must be a 20-byte hex address' });
  }
  // Only an anchorer signs: an api process reads the chain with EVM_RPC_URL and holds no key.
  const anchors = (r.str('DRIS_ROLES') ?? 'anchorer').split(',').some((role) => role.trim() === 'anchorer');
  if (evmRpcUrl !== undefined && anchors && chain.anchorerKey === undefined && chain.keystoreFile === undefined) {
    r.problems.push({ path: 'DRIS_ANCHORER_KEY', code: 'required', message: 'an external chain (EVM_RPC_URL) needs DRIS_ANCHORER_KEY or DRIS_ANCHORER_KEYSTORE' });
  }

  const hostRaw = r.str('HOST') ?? '127.0.0.1';
  const adminToken = r.str('DRIS_ADMIN_TOKEN');
  if (adminToken !== undefined && Buffer.byteLength(adminToken, 'utf8') < MIN_ADMIN_TOKEN_BYTES) {
    // The value itself is never quoted: configuration errors are printed and logged.
    r.problems.push({ path: 'DRIS_ADMIN_TOKEN', code: 'too_short', message: `must be at least ${MIN_ADMIN_TOKEN_BYTES} bytes (e.g. openssl rand -base64 32)` });
  }
  const maxBodyBytes = r.int('DRIS_MAX_BODY_BYTES', MiB, 1024, 64 * MiB);
  const maxBulkBodyBytes = r.int('DRIS_MAX_BULK_BODY_BYTES', 16 * MiB, 1024, 256 * MiB);
  const cfg = withOptional(
    {
      port: r.int('PORT', 8080, 0, 65535),
      host: hostRaw,
      adminHost: r.str('DRIS_ADMIN_HOST') ?? '127.0.0.1',
      adminPort: r.int('DRIS_ADMIN_PORT', DEFAULT_ADMIN_PORT, 0, 65535),
      adminMaxFailures: r.int('DRIS_ADMIN_MAX_FAILURES', 10, 1, 10_000),
      dataDir: path.resolve(cwd, r.str('DRIS_DATA_DIR') ?? './data'),
      batchMaxRecords: r.int('DRIS_BATCH_MAX_RECORDS', 1000, 1, 1000),
      batchMaxWaitMs: r.int('DRIS_BATCH_MAX_WAIT_MS', 60_000, 10, 3_600_000),
      hashBackend: r.oneOf<HashBackendChoice>('DRIS_HASH_BACKEND', ['auto', 'native', 'wasm', 'js'], 'auto'),
      rateLimits: parseRateLimits(r),
      rateWindowMs: r.int('DRIS_RATE_WINDOW_MS', 3_600_000, 1000, 86_400_000),
      maxBodyBytes,
      maxBulkBodyBytes,
      idempotencyTtlMs: r.int('DRIS_IDEMPOTENCY_TTL_MS', 86_400_000, 1000, 7 * 86_400_000),
      idempotencyLeaseMs: r.int('DRIS_IDEMPOTENCY_LEASE_MS', 10_000, 300, 600_000),
      roles: parseRoles(r),
      allowSlowHttp: r.bool('DRIS_ALLOW_SLOW_HTTP', false),
      http: readHttpConfig(r, Math.max(maxBodyBytes, maxBulkBodyBytes)),
      logLevel: r.oneOf('DRIS_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], 'info'),
      keyRefreshMs: r.int('DRIS_KEY_REFRESH_MS', 5000, 100, 600_000),
      hashThreads: r.int('DRIS_HASH_THREADS', 2, 0, 64),
      hashMaxQueue: r.int('DRIS_HASH_MAX_QUEUE', 4096, 1, 1_000_000),
      maxPendingPublishes: r.int('DRIS_MAX_PENDING_PUBLISHES', 50_000, 1, 10_000_000),
      queueMaxBytes: r.int('DRIS_QUEUE_MAX_BYTES', 10 * 1024 * MiB, 0, Number.MAX_SAFE_INTEGER),
      minFreeBytes: r.int('DRIS_MIN_FREE_BYTES', 512 * MiB, 0, Number.MAX_SAFE_INTEGER),
      chain: chainWithId,
      anchorRetry: {
        maxAttempts: r.int('DRIS_ANCHOR_MAX_ATTEMPTS', 6, 1, 1000),
        baseDelayMs: r.int('DRIS_ANCHOR_RETRY_BASE_MS', 1000, 1, 3_600_000),
        maxDelayMs: r.int('DRIS_ANCHOR_RETRY_MAX_MS', 60_000, 1, 86_400_000),
      },
      anchorReconcileIntervalMs: r.int('DRIS_ANCHOR_RECONCILE_INTERVAL_MS', 300_000, 1000, 86_400_000),
      maxDeliveries: r.int('DRIS_MAX_DELIVERIES', 10, 2, 1000),
      ipfsTimeoutMs: r.int('DRIS_IPFS_TIMEOUT_MS', 10_000, 100, 600_000),
      leaderLeaseMs: r.int('DRIS_LEADER_LEASE_MS', 10_000, 500, 600_000),
      verifyChainCacheMs: r.int('DRIS_VERIFY_CHAIN_CACHE_MS', 5_000, 0, 3_600_000),
    } satisfies Omit<Config, 'adminToken' | 'nats' | 'redis' | 'clickhouse' | 'evmRpcUrl' | 'ipfsApiUrl' | 'ipfsGatewayUrl'>,
    { adminToken, evmRpcUrl, ipfsApiUrl, ipfsGatewayUrl: r.str('DRIS_IPFS_GATEWAY_URL')?.replace(/\/+$/, '') },
  ) as Config;

  if (cfg.adminPort !== 0 && cfg.adminPort === cfg.port) {
    r.problems.push({ path: 'DRIS_ADMIN_PORT', code: 'invalid_value', message: 'must differ from PORT: administration has a listener of its own' });
  }
  if (r.problems.length > 0) {
    throw new DrisError('config_invalid', `invalid configuration: ${r.problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, {
      fields: r.problems,
    });
  }
  const out: Record<string, unknown> = { ...cfg };
  if (nats !== undefined) out['nats'] = nats;
  if (redis !== undefined) out['redis'] = redis;
  if (clickhouse !== undefined) out['clickhouse'] = clickhouse;
  return out as unknown as Config;
}

/**
 * What the start-up log may show of the configuration: endpoints through the URL sanitiser (no
 * userinfo, no keys in paths or queries), no tokens, passwords or keys at all.
 */
export function describeConfig(cfg: Config): Record<string, unknown> {
  const url = (u: string | undefined): string => (u === undefined ? '' : sanitizeUrl(u));
  return {
    port: cfg.port,
    host: cfg.host,
    adminHost: cfg.adminHost,
    adminPort: cfg.adminPort,
    adminTokenSource: cfg.adminToken === undefined ? 'file' : 'environment',
    dataDir: cfg.dataDir,
    roles: cfg.roles,
    batchMaxRecords: cfg.batchMaxRecords,
    batchMaxWaitMs: cfg.batchMaxWaitMs,
    hashBackend: cfg.hashBackend,
    rateLimits: cfg.rateLimits,
    queue: cfg.nats === undefined ? 'embedded' : `nats ${cfg.nats.url.split(',').map(url).join(',')}`,
    admission: cfg.redis === undefined ? 'embedded' : `redis ${url(cfg.redis.url)}`,
    index: cfg.clickhouse === undefined ? 'embedded (chdb)' : `clickhouse ${url(cfg.clickhouse.url)}`,
    chain: cfg.chain.rpcUrl === undefined ? 'embedded (anvil)' : url(cfg.chain.rpcUrl),
    ...(cfg.chain.publicRpcUrl === undefined ? {} : { publicRpcUrl: url(cfg.chain.publicRpcUrl) }),
    ipfs: cfg.ipfsApiUrl === undefined ? 'embedded' : `kubo ${url(cfg.ipfsApiUrl)}`,
    ...(cfg.ipfsGatewayUrl === undefined ? {} : { ipfsGatewayUrl: url(cfg.ipfsGatewayUrl) }),
    anchorRetry: cfg.anchorRetry,
    queueMaxBytes: cfg.queueMaxBytes,
    minFreeBytes: cfg.minFreeBytes,
  };
}
