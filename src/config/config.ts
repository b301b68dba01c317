import path from 'node:path';
import { DrisError } from '../errors/dris-error.js';
import { ACCESS_LEVELS, type AccessLevel } from '../domain/keys/types.js';
import { readChainConfig } from './chain-config.js';
import { readEngines } from './engines-config.js';
import { readHttpConfig } from './http-config.js';
import { readOpsConfig } from './ops-config.js';
import { Reader, withOptional, type Env } from './reader.js';
import { LOG_LEVELS, ROLES, type Config, type HashBackendChoice, type LogLevel, type Role } from './types.js';

/**
 * All configuration, read from the environment in one place (this folder) and validated before
 * anything starts. Every variable, its default and unit is listed in README.md ("Configuration").
 * An unset *_URL selects the embedded adapter for that port. Nothing outside src/config reads the
 * environment: the composition root passes the values down.
 */

export type * from './types.js';
export { LOG_LEVELS, ROLES } from './types.js';
export { anchorerKeySource } from './chain-config.js';
export { describeConfig } from './describe-config.js';
export { assertCoherentSetup, reviewSetup, type SetupReview } from './setup-guards.js';
export { DEFAULT_OPS_PORT } from './ops-config.js';
export type { Env } from './reader.js';

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

const MiB = 1024 * 1024;

/** The service's own settings, beside the engines, the chain and the HTTP limits. */
function readService(r: Reader, cwd: string): Omit<Config, 'http' | 'ops' | 'chain' | 'nats' | 'redis' | 'clickhouse' | 'evmRpcUrl' | 'ipfsApiUrl' | 'ipfsGatewayUrl' | 'adminToken' | 'nativeAddon'> {
  return {
    port: r.int('PORT', 8080, 0, 65535),
    host: r.str('HOST') ?? '127.0.0.1',
    adminHost: r.str('DRIS_ADMIN_HOST') ?? '127.0.0.1',
    adminPort: r.int('DRIS_ADMIN_PORT', DEFAULT_ADMIN_PORT, 0, 65535),
    adminMaxFailures: r.int('DRIS_ADMIN_MAX_FAILURES', 10, 1, 10_000),
    dataDir: path.resolve(cwd, r.str('DRIS_DATA_DIR') ?? './data'),
    batchMaxRecords: r.int('DRIS_BATCH_MAX_RECORDS', 1000, 1, 1000),
    batchMaxWaitMs: r.int('DRIS_BATCH_MAX_WAIT_MS', 60_000, 10, 3_600_000),
    hashBackend: r.oneOf<HashBackendChoice>('DRIS_HASH_BACKEND', ['auto', 'native', 'wasm', 'js'], 'auto'),
    rateLimits: parseRateLimits(r),
    rateWindowMs: r.int('DRIS_RATE_WINDOW_MS', 3_600_000, 1000, 86_400_000),
    maxBodyBytes: r.int('DRIS_MAX_BODY_BYTES', MiB, 1024, 64 * MiB),
    maxBulkBodyBytes: r.int('DRIS_MAX_BULK_BODY_BYTES', 16 * MiB, 1024, 256 * MiB),
    idempotencyTtlMs: r.int('DRIS_IDEMPOTENCY_TTL_MS', 86_400_000, 1000, 7 * 86_400_000),
    idempotencyLeaseMs: r.int('DRIS_IDEMPOTENCY_LEASE_MS', 10_000, 300, 600_000),
    roles: parseRoles(r),
    allowSlowHttp: r.bool('DRIS_ALLOW_SLOW_HTTP', false),
    frontOnly: r.bool('DRIS_FRONT_ONLY', false),
    logLevel: readLogLevel(r),
    keyRefreshMs: r.int('DRIS_KEY_REFRESH_MS', 5000, 100, 600_000),
    hashThreads: r.int('DRIS_HASH_THREADS', 2, 0, 64),
    hashMaxQueue: r.int('DRIS_HASH_MAX_QUEUE', 4096, 1, 1_000_000),
    maxPendingPublishes: r.int('DRIS_MAX_PENDING_PUBLISHES', 50_000, 1, 10_000_000),
    queueMaxBytes: r.int('DRIS_QUEUE_MAX_BYTES', 10 * 1024 * MiB, 0, Number.MAX_SAFE_INTEGER),
    minFreeBytes: r.int('DRIS_MIN_FREE_BYTES', 512 * MiB, 0, Number.MAX_SAFE_INTEGER),
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
    verifyWarmBatches: r.int('DRIS_VERIFY_WARM_BATCHES', 10_000, 0, 16_000),
    verifyPrefetchMiB: r.int('DRIS_VERIFY_PREFETCH_MIB', 8192, 0, 1_048_576),
    indexCompactIdleMs: r.int('DRIS_INDEX_COMPACT_IDLE_MS', 300_000, 0, 86_400_000),
  };
}

/** DRIS_LOG_LEVEL: a pino level, default info. */
export function readLogLevel(r: Reader): LogLevel {
  return r.oneOf<LogLevel>('DRIS_LOG_LEVEL', LOG_LEVELS, 'info');
}

/** DRIS_NATIVE_ADDON: another file of the native hashing addon, resolved from the working directory. */
export function readNativeAddon(r: Reader, cwd: string): string | undefined {
  const raw = r.str('DRIS_NATIVE_ADDON');
  return raw === undefined ? undefined : path.resolve(cwd, raw);
}

/** DRIS_ADMIN_TOKEN: refused when shorter than MIN_ADMIN_TOKEN_BYTES (the value itself is never quoted). */
function readAdminToken(r: Reader): string | undefined {
  const adminToken = r.str('DRIS_ADMIN_TOKEN');
  if (adminToken !== undefined && Buffer.byteLength(adminToken, 'utf8') < MIN_ADMIN_TOKEN_BYTES) {
    r.problems.push({ path: 'DRIS_ADMIN_TOKEN', code: 'too_short', message: `must be at least ${MIN_ADMIN_TOKEN_BYTES} bytes (e.g. openssl rand -base64 32)` });
  }
  return adminToken;
}

/** Throws DrisError('config_invalid') listing every problem `r` collected. */
export function assertNoProblems(r: Reader): void {
  if (r.problems.length > 0) {
    throw new DrisError('config_invalid', `invalid configuration: ${r.problems.map((p) => `${p.path} ${p.message}`).join('; ')}`, {
      fields: r.problems,
    });
  }
}

/** Reads and validates the configuration; throws DrisError('config_invalid') listing every problem. */
export function loadConfig(env: Env = process.env, cwd: string = process.cwd()): Config {
  const r = new Reader(env);
  const engines = readEngines(r);
  const evmRpcUrl = r.url('EVM_RPC_URL', ['http:', 'https:', 'ws:', 'wss:']);
  const ipfsApiUrl = r.url('IPFS_API_URL', ['http:', 'https:']);
  const chain = readChainConfig(r, evmRpcUrl);
  const adminToken = readAdminToken(r);
  const service = readService(r, cwd);
  const cfg: Config = {
    ...withOptional(
      { ...service, chain, http: readHttpConfig(r, Math.max(service.maxBodyBytes, service.maxBulkBodyBytes)), ops: readOpsConfig(r) },
      { adminToken, evmRpcUrl, ipfsApiUrl, ipfsGatewayUrl: r.str('DRIS_IPFS_GATEWAY_URL')?.replace(/\/+$/, ''), nativeAddon: readNativeAddon(r, cwd) },
    ),
    ...engines,
  };
  if (cfg.adminPort !== 0 && cfg.adminPort === cfg.port) {
    r.problems.push({ path: 'DRIS_ADMIN_PORT', code: 'invalid_value', message: 'must differ from PORT: administration has a listener of its own' });
  }
  checkOpsPort(r, cfg);
  assertNoProblems(r);
  return cfg;
}

/** The ops listener needs a port of its own (0, a free one, never collides). */
function checkOpsPort(r: Reader, cfg: Config): void {
  const ops = cfg.ops.port;
  if (ops === 0) return;
  if (ops === cfg.port) r.problems.push({ path: 'DRIS_OPS_PORT', code: 'invalid_value', message: 'must differ from PORT: the ops endpoints have a listener of their own' });
  else if (ops === cfg.adminPort) r.problems.push({ path: 'DRIS_OPS_PORT', code: 'invalid_value', message: 'must differ from DRIS_ADMIN_PORT' });
}
