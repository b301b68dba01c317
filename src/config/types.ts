import type { AccessLevel } from '../domain/keys/types.js';
import type { HttpConfig } from './http-config.js';
import type { OpsConfig } from './ops-config.js';

/** The shape of the configuration (config.ts reads it; README.md "Configuration" lists every variable). */

export type HashBackendChoice = 'auto' | 'native' | 'wasm' | 'js';
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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
  /** The native hashing addon's file (DRIS_NATIVE_ADDON); unset: the one built under native/. */
  readonly nativeAddon?: string;
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
  /**
   * DRIS_ROLES=api alone on embedded parts, consumed by nobody: the HTTP front and its durable
   * append measured on their own (the bench's api-role figures). Refused by the start-up guards
   * unless this is set, and refused with any other role set.
   */
  readonly frontOnly: boolean;
  readonly allowSlowHttp: boolean;
  /** Limits of the HTTP front. */
  readonly http: HttpConfig;
  /** The ops listener (metrics, probes), the access log and the bound of a graceful stop. */
  readonly ops: OpsConfig;
  readonly logLevel: LogLevel;
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
  /** Hashing pool threads (0 = hash on the event loop only; on one CPU the loop hashes too: `hashThreadsFor`). */
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
   * Anchored batches whose verification reads are read ahead at start, newest first (0: none). At
   * most 16 000: the tree tops kept (64 MiB) hold that many 1000-leaf batches, and reading ahead
   * more would evict what was read.
   */
  readonly verifyWarmBatches: number;
  /**
   * Embedded engine: MiB of the records' look-up table read ahead into the page cache at start,
   * newest parts first (0: none). The service asks for no more than half of the memory the
   * system reports available then. Default 8192.
   */
  readonly verifyPrefetchMiB: number;
  /**
   * Embedded engine: once no record has reached the look-up table for this long, milliseconds, its
   * parts are merged into one (look-ups cost per part); 0 never. Default 5 minutes.
   */
  readonly indexCompactIdleMs: number;
  /**
   * Base URL of the IPFS gateway named in verification answers (`<base>/ipfs/<cid>`): this
   * service's own gateway by default in the embedded mode, none with Kubo unless set.
   */
  readonly ipfsGatewayUrl?: string;
}
