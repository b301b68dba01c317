import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { anchorerKeySource, describeConfig, MIN_ADMIN_TOKEN_BYTES, type Config } from './config/config.js';
import { DrisError } from './errors/dris-error.js';
import type { RecordQueue } from './domain/records/ports.js';
import type { ClickHouseRecordIndex } from './adapters/index/clickhouse-record-index.js';
import type { Chain, LeaderElector, Pinner } from './domain/pipeline/ports.js';
import type { AdmissionStore } from './domain/limits/ports.js';
import { Authenticator } from './app/authenticator.js';
import { IngestService } from './app/ingest-service.js';
import { Indexer, DEFAULT_INDEXER_OPTIONS } from './app/indexer.js';
import { Accumulator } from './app/accumulator.js';
import { Anchorer } from './app/anchorer.js';
import { fenceTerm, LeaderLoop } from './app/leader-loop.js';
import { ClickHousePipelineStore } from './adapters/index/clickhouse-pipeline-store.js';
import { pipelineRoutes } from './http/pipeline-routes.js';
import { verifyRoutes } from './http/verify-routes.js';
import { Verifier } from './app/verifier.js';
import { ClickHouseEvidenceStore, DEFAULT_HISTORY_WRITES } from './adapters/index/clickhouse-evidence-store.js';
import type { ChainReader } from './domain/verification/ports.js';
import type { Route } from './http/router.js';
import { KeyAdmin, resolveAdminToken } from './app/key-admin.js';
import { chainFacts, HealthMonitor, type Probe } from './app/health.js';
import { startAdminListener } from './http/admin-listener.js';
import { EvidenceAccess } from './app/evidence-access.js';
import { InlineHasher } from './app/inline-hasher.js';
import type { RecordHasher } from './app/ingest-service.js';
import { HashingService } from './adapters/hashing/hashing-service.js';
import { HashPool } from './adapters/hashing/hash-pool.js';
import { loadHashingBackend } from './adapters/hashing/select-backend.js';
import { EmbeddedQueue } from './adapters/queue/embedded-queue.js';
import { EmbeddedAdmissionStore } from './adapters/limits/embedded-admission-store.js';
import { recoverIdempotencyAnswers } from './app/idempotency-recovery.js';
import { ProcessLock } from './adapters/process-lock.js';
import { StorageGuard } from './adapters/storage/storage-guard.js';
import { onStorageFault } from './adapters/storage/storage-faults.js';
import { Router } from './http/router.js';
import { buildRoutes } from './http/routes.js';
import { buildOpenApi } from './http/openapi.js';
import { swaggerAssets } from './http/swagger.js';
import { UwsHttpServer, uwsIsNative } from './http/uws-server.js';
import { componentLogger } from './util/logger.js';

/** The one place where adapters are chosen from configuration and wired to the application. */

export interface RunningService {
  /** Bound HTTP port, or null when this process does not run the api role. */
  readonly port: number | null;
  /** Bound port of the administration listener (api role only). */
  readonly adminPort: number | null;
  /**
   * Settles with the first fatal storage fault (a log whose flush failed): the service already
   * refuses new records (503), and must stop and restart to recover from disk.
   */
  readonly failed: Promise<DrisError>;
  close(): Promise<void>;
}

type Index = ClickHouseRecordIndex;

export function packageVersion(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  for (const up of ['..', '../..']) {
    try {
      return (JSON.parse(readFileSync(path.join(here, up, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      // next candidate
    }
  }
  return '0.0.0';
}

export async function openIndex(cfg: Config): Promise<{ index: Index; adapter: string }> {
  if (cfg.clickhouse !== undefined) {
    const { ClickHouseIndex } = await import('./adapters/index/clickhouse-index.js');
    const c = cfg.clickhouse;
    const opts: ConstructorParameters<typeof ClickHouseIndex>[0] = { url: c.url, database: c.database, ...(c.username !== undefined ? { username: c.username } : {}), ...(c.password !== undefined ? { password: c.password } : {}) };
    return { index: new ClickHouseIndex(opts), adapter: 'clickhouse' };
  }
  const { ChdbIndex } = await import('./adapters/index/chdb-index.js');
  // The audit trail and the verification history reach the embedded engine through a journal
  // in the same data directory (see AppendJournal).
  return { index: new ChdbIndex({ path: path.join(cfg.dataDir, 'clickhouse'), journalDir: path.join(cfg.dataDir, 'index-journal') }), adapter: 'chdb' };
}

async function openQueue(cfg: Config, guard: StorageGuard | null): Promise<{ queue: RecordQueue; adapter: string }> {
  if (cfg.nats !== undefined) {
    const { NatsQueue } = await import('./adapters/queue/nats-queue.js');
    const n = cfg.nats;
    const queue = await NatsQueue.connect({
      servers: n.url,
      stream: n.stream,
      replicas: n.replicas,
      deadLetterStream: n.deadLetterStream,
      publishTimeoutMs: n.publishTimeoutMs,
      maxPendingPublishes: cfg.maxPendingPublishes,
      ...(n.user !== undefined ? { user: n.user } : {}),
      ...(n.pass !== undefined ? { pass: n.pass } : {}),
      ...(n.token !== undefined ? { token: n.token } : {}),
      ...(n.credsFile !== undefined ? { credsFile: n.credsFile } : {}),
    });
    return { queue, adapter: 'nats' };
  }
  const queue = EmbeddedQueue.open({
    dir: path.join(cfg.dataDir, 'queue'),
    consumers: [DEFAULT_INDEXER_OPTIONS.consumer, ACCUMULATOR_CONSUMER],
    maxPendingPublishes: cfg.maxPendingPublishes,
    maxBytes: cfg.queueMaxBytes,
    ...(guard === null ? {} : { admit: () => guard.admit() }),
  });
  return { queue, adapter: 'embedded' };
}

const ACCUMULATOR_CONSUMER = 'accumulator';

interface Pipeline {
  readonly pinner: Pinner;
  readonly chain: Chain;
  readonly gateway: Route[];
  readonly adapters: { readonly ipfs: string; readonly chain: string };
  close(): Promise<void>;
}

/** IPFS and the chain: embedded (blockstore + anvil under DRIS_DATA_DIR) unless URLs are configured. */
async function openPipeline(cfg: Config): Promise<Pipeline> {
  const closers: (() => Promise<void>)[] = [];
  let pinner: Pinner;
  let gateway: Route[] = [];
  if (cfg.ipfsApiUrl !== undefined) {
    const { KuboPinner } = await import('./adapters/ipfs/kubo-pinner.js');
    pinner = new KuboPinner({ url: cfg.ipfsApiUrl });
  } else {
    const { EmbeddedPinner } = await import('./adapters/ipfs/embedded-pinner.js');
    const { ipfsGatewayRoutes } = await import('./http/ipfs-gateway-routes.js');
    const embedded = await EmbeddedPinner.open({ directory: path.join(cfg.dataDir, 'ipfs') });
    pinner = embedded;
    gateway = ipfsGatewayRoutes(embedded);
  }
  closers.push(() => pinner.close());
  let chain: Chain;
  const c = cfg.chain;
  const common = {
    confirmations: c.confirmations,
    replaceAfterMs: c.replaceAfterMs,
    feeBumpPercent: c.feeBumpPercent,
    minPriorityFeeWei: c.minPriorityFeeWei,
    txTimeoutMs: c.txTimeoutMs,
    logBlockRange: c.logBlockRange,
    ...(c.explorerAddressUrl !== undefined ? { explorerAddressUrl: c.explorerAddressUrl } : {}),
    ...(c.explorerTxUrl !== undefined ? { explorerTxUrl: c.explorerTxUrl } : {}),
  };
  try {
    if (c.rpcUrl !== undefined) {
      const { EthersChain } = await import('./adapters/chain/ethers-chain.js');
      chain = await EthersChain.connect({
        ...common,
        rpcUrl: c.rpcUrl,
        chainId: c.chainId ?? 31337,
        signer: anchorerKeySource(c),
        deployBlock: c.deployBlock,
        ...(c.contractAddress !== undefined ? { contractAddress: c.contractAddress } : {}),
        ...(c.publicRpcUrl !== undefined ? { publicRpcUrl: c.publicRpcUrl } : {}),
      });
      closers.push(() => chain.close());
    } else {
      const { startEmbeddedChain } = await import('./adapters/chain/embedded-chain.js');
      const embedded = await startEmbeddedChain({
        ...common,
        dataDir: cfg.dataDir,
        stateIntervalSec: c.anvilStateIntervalSec,
        ...(c.chainId !== undefined ? { chainId: c.chainId } : {}),
        ...(c.anvilPort !== undefined ? { port: c.anvilPort } : {}),
        ...(c.anvilBin !== undefined ? { binaryPath: c.anvilBin } : {}),
      });
      chain = embedded.chain;
      closers.push(() => embedded.close());
    }
  } catch (err) {
    for (const close of closers.reverse()) await close();
    throw err;
  }
  return {
    pinner,
    chain,
    gateway,
    adapters: { ipfs: cfg.ipfsApiUrl === undefined ? 'embedded' : 'kubo', chain: c.rpcUrl === undefined ? 'embedded-anvil' : 'json-rpc' },
    close: async () => {
      for (const close of closers.reverse()) await close();
    },
  };
}

/**
 * Verification reads the chain itself, with no key: through the anchorer's node when this process
 * anchors, else through EVM_RPC_URL and DRIS_CONTRACT_ADDRESS when both are configured.
 */
async function openChainReader(cfg: Config, info: { rpcUrl: string; contractAddress: string; chainId: number; deployBlock?: number } | undefined): Promise<ChainReader | null> {
  const rpcUrl = info?.rpcUrl ?? cfg.chain.rpcUrl;
  const contractAddress = info?.contractAddress ?? cfg.chain.contractAddress;
  if (rpcUrl === undefined || contractAddress === undefined) {
    componentLogger('main').warn('verification has no chain access in this process (set EVM_RPC_URL and DRIS_CONTRACT_ADDRESS)');
    return null;
  }
  const { AnchorReader } = await import('./adapters/chain/anchor-reader.js');
  const expectedChainId = info?.chainId ?? cfg.chain.chainId;
  return AnchorReader.connect({
    rpcUrl,
    contractAddress,
    timeoutMs: 5_000,
    fromBlock: info?.deployBlock ?? cfg.chain.deployBlock,
    maxBlockRange: cfg.chain.logBlockRange,
    ...(expectedChainId === undefined ? {} : { expectedChainId }),
  });
}

/** An API process without the anchorer role reads manifests through Kubo when configured. */
async function openVerifierPinner(cfg: Config): Promise<Pinner | null> {
  if (cfg.ipfsApiUrl === undefined) return null;
  const { KuboPinner } = await import('./adapters/ipfs/kubo-pinner.js');
  return new KuboPinner({ url: cfg.ipfsApiUrl });
}

async function openAdmission(cfg: Config): Promise<{ store: AdmissionStore; adapter: string }> {
  if (cfg.redis !== undefined) {
    const { RedisAdmissionStore } = await import('./adapters/limits/redis-admission-store.js');
    const r = cfg.redis;
    const store = await RedisAdmissionStore.connect({ url: r.url, keyPrefix: r.keyPrefix, ...(r.password !== undefined ? { password: r.password } : {}) });
    return { store, adapter: 'redis' };
  }
  return { store: await EmbeddedAdmissionStore.open({ dir: path.join(cfg.dataDir, 'admission') }), adapter: 'embedded' };
}

export async function startService(cfg: Config): Promise<RunningService> {
  const log = componentLogger('main');
  const startedAtMs = Date.now();
  const version = packageVersion();
  // Queue segments and the index hold full payloads: only the service's user may read them.
  mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(cfg.dataDir, 0o700);
  log.info({ config: describeConfig(cfg), version }, 'starting');

  const closers: (() => Promise<void> | void)[] = [];
  const close = async (): Promise<void> => {
    for (const c of closers.reverse()) {
      try {
        await c();
      } catch (err) {
        log.warn({ err }, 'error while closing');
      }
    }
    closers.length = 0;
  };
  let markFailed: (err: DrisError) => void = () => undefined;
  const failed = new Promise<DrisError>((resolve) => {
    markFailed = resolve;
  });

  try {
    // Embedded engines keep state in the data directory: only one process may own it.
    const embedded = cfg.nats === undefined || cfg.redis === undefined || cfg.clickhouse === undefined;
    if (embedded) {
      const lock = ProcessLock.acquire(path.join(cfg.dataDir, 'dris.lock'));
      closers.push(() => lock.release());
    }
    // Embedded engines write to the data directory: its free space gates ingestion.
    const guard = embedded ? await StorageGuard.start({ dir: cfg.dataDir, minFreeBytes: cfg.minFreeBytes }) : null;
    if (guard !== null) closers.push(() => guard.close());
    const unsubscribe = onStorageFault((fault) => {
      if (fault.kind === 'full') {
        guard?.noteFull();
        return;
      }
      guard?.noteFatal(fault.error);
      markFailed(fault.error);
    });
    closers.push(() => {
      unsubscribe();
    });

    const hashing = await loadHashingBackend(cfg.hashBackend);
    for (const t of hashing.tried) log.info({ backend: t.name, err: t.error }, 'hash backend unavailable');
    log.info({ backend: hashing.backend.name, requested: cfg.hashBackend }, 'hash backend selected');
    // Small bodies hash inline (a pool round trip costs more); large ones in worker threads, so a
    // 16 MiB bulk request never stalls the event loop. DRIS_HASH_THREADS=0 hashes inline only.
    let hasher: RecordHasher = new InlineHasher(hashing.backend);
    if (cfg.hashThreads > 0 && cfg.roles.includes('api')) {
      const pool = new HashPool({ backend: hashing.backend.name, threads: cfg.hashThreads, maxQueue: cfg.hashMaxQueue });
      closers.push(() => pool.close());
      hasher = new HashingService({ backend: hashing.backend, pool });
    }

    const { index, adapter: indexAdapter } = await openIndex(cfg);
    closers.push(() => index.close());
    await index.migrate();

    const { queue, adapter: queueAdapter } = await openQueue(cfg, guard);
    closers.push(() => queue.close());

    const probes: Probe[] = [
      { name: 'queue', adapter: queueAdapter, check: () => queue.check() },
      { name: 'index', adapter: indexAdapter, check: () => index.check() },
    ];
    if (guard !== null) probes.push({ name: 'storage', adapter: 'local-disk', check: () => guard.check() });

    let indexer: Indexer | null = null;
    if (cfg.roles.includes('indexer')) {
      indexer = new Indexer(queue, index, { ...DEFAULT_INDEXER_OPTIONS, maxDeliveries: cfg.maxDeliveries }, index);
      indexer.start();
      const running = indexer;
      closers.push(() => running.stop());
    }

    const store = new ClickHousePipelineStore(index.runner, index.database);
    let anchorer: Anchorer | null = null;
    let pipeline: Pipeline | null = null;
    if (cfg.roles.includes('anchorer')) {
      const opened = await openPipeline(cfg);
      pipeline = opened;
      closers.push(() => opened.close());
      probes.push({ name: 'ipfs', adapter: opened.adapters.ipfs, check: () => opened.pinner.check() });
      probes.push({ name: 'chain', adapter: opened.adapters.chain, check: () => opened.chain.check() });
      const active = new Anchorer(store, opened.pinner, opened.chain, hashing.backend, {
        maxAttempts: cfg.anchorRetry.maxAttempts,
        baseDelayMs: cfg.anchorRetry.baseDelayMs,
        maxDelayMs: cfg.anchorRetry.maxDelayMs,
        idleMs: 1000,
        reconcileIntervalMs: cfg.anchorReconcileIntervalMs,
      });
      anchorer = active;
      // One per term: its writes go through the term's fenced store.
      let accumulator: Accumulator | null = null;
      // Only the elected leader accumulates and anchors: with Redis, one of the anchorer processes;
      // embedded, always this one.
      const elector: LeaderElector =
        cfg.redis === undefined
          ? new (await import('./adapters/election/embedded-elector.js')).EmbeddedElector()
          : await (await import('./adapters/election/redis-elector.js')).RedisElector.connect({
              url: cfg.redis.url,
              keyPrefix: cfg.redis.keyPrefix,
              leaseMs: cfg.leaderLeaseMs,
              ...(cfg.redis.password !== undefined ? { password: cfg.redis.password } : {}),
            });
      closers.push(() => elector.close());
      const leader = new LeaderLoop(
        elector,
        {
          start: async (term) => {
            // Embedded, the data directory's lock rules out another leader: nothing to wait out.
            const fenced = await fenceTerm(store, term, cfg.redis === undefined ? 0 : cfg.leaderLeaseMs);
            await active.start(fenced.epoch, fenced.store);
            const formed = new Accumulator(queue, fenced.store, hashing.backend, { consumer: ACCUMULATOR_CONSUMER, maxRecords: cfg.batchMaxRecords, maxWaitMs: cfg.batchMaxWaitMs, retryMs: 1000 }, (f) => active.enqueue(f));
            accumulator = formed;
            formed.start();
          },
          stop: async () => {
            await accumulator?.stop();
            accumulator = null;
            await active.stop();
          },
        },
        { retryMs: Math.max(100, Math.floor(cfg.leaderLeaseMs / 5)) },
      );
      await leader.start();
      closers.push(() => leader.stop());
    }

    const chainInfo = pipeline?.chain.info();
    let port: number | null = null;
    let adminPort: number | null = null;
    if (cfg.roles.includes('api')) {
      const { store: admission, adapter: admissionAdapter } = await openAdmission(cfg);
      closers.push(() => admission.close());
      probes.push({ name: 'admission', adapter: admissionAdapter, check: () => admission.check() });

      const keys = new KeyAdmin(index, index);
      const bootstrapFile = await keys.bootstrap(cfg.dataDir);
      if (bootstrapFile !== null) log.info({ file: bootstrapFile }, 'no API keys existed: a standard key for tenant default was written to this file (mode 0600)');
      const admin = resolveAdminToken(cfg.dataDir, cfg.adminToken, MIN_ADMIN_TOKEN_BYTES);
      if (admin.file !== null) log.info({ file: admin.file }, 'key administration token file');

      const authenticator = new Authenticator(index, { refreshMs: cfg.keyRefreshMs });
      const ingest = new IngestService({ hasher, queue, idempotency: admission, idempotencyTtlMs: cfg.idempotencyTtlMs, idempotencyLeaseMs: cfg.idempotencyLeaseMs });
      // Before the first request: a key whose record was stored just before a crash gets its answer.
      await recoverIdempotencyAnswers(queue, admission, cfg.idempotencyTtlMs);
      const health = new HealthMonitor({
        version,
        startedAtMs,
        roles: cfg.roles,
        hashBackend: {
          active: hashing.backend.name,
          requested: cfg.hashBackend,
          unavailable: Object.fromEntries(hashing.tried.map((t) => [t.name, t.error instanceof Error ? t.error.message : String(t.error)])),
        },
        http: { engine: 'uWebSockets.js', native: uwsIsNative() },
        ...(chainInfo === undefined ? {} : { chain: chainFacts(chainInfo, cfg.chain.publicRpcUrl) }),
        probes,
        timeoutMs: 2000,
      });
      const evidence = new ClickHouseEvidenceStore(index.runner, index.database, { history: index.appendSink('verifications', DEFAULT_HISTORY_WRITES) });
      closers.push(() => evidence.close());
      // Policies change rarely and are read by every answer carrying evidence: cached like keys.
      const evidenceAccess = new EvidenceAccess(evidence, index, { refreshMs: cfg.keyRefreshMs });
      const reader = await openChainReader(cfg, chainInfo);
      if (reader !== null) closers.push(() => reader.close());
      const verifierPinner = pipeline?.pinner ?? (await openVerifierPinner(cfg));
      if (verifierPinner !== null && pipeline === null) closers.push(() => verifierPinner.close());
      let boundPort: number | null = null;
      const embeddedGateway = (pipeline?.gateway.length ?? 0) > 0;
      const verifier = new Verifier(
        { hashing: hashing.backend, evidence, store, chain: reader, pinner: verifierPinner, history: evidence },
        {
          chainCacheMs: cfg.verifyChainCacheMs,
          ipfsTimeoutMs: cfg.ipfsTimeoutMs,
          gatewayUrl: (cid) => {
            const base = cfg.ipfsGatewayUrl ?? (embeddedGateway && boundPort !== null ? `http://${cfg.host}:${boundPort}` : undefined);
            return base === undefined ? undefined : `${base}/ipfs/${cid}`;
          },
          ...(cfg.chain.explorerAddressUrl === undefined ? {} : { explorerAddressUrl: cfg.chain.explorerAddressUrl }),
          ...(cfg.chain.explorerTxUrl === undefined ? {} : { explorerTxUrl: cfg.chain.explorerTxUrl }),
        },
      );
      const router = new Router([
        ...pipelineRoutes({ store, anchorer, maxBodyBytes: cfg.maxBodyBytes, audit: index, evidence: evidenceAccess }),
        ...verifyRoutes({ verifier, evidence, history: evidence, audit: index, policies: evidenceAccess, maxBodyBytes: cfg.maxBodyBytes }),
        ...(pipeline?.gateway ?? []),
        ...buildRoutes({
          ingest,
          index,
          health,
          evidence: evidenceAccess,
          swagger: swaggerAssets(buildOpenApi(version)),
          maxBodyBytes: cfg.maxBodyBytes,
          maxBulkBodyBytes: cfg.maxBulkBodyBytes,
        }),
      ]);
      const adminListener = await startAdminListener({
        host: cfg.adminHost,
        port: cfg.adminPort,
        token: admin.token,
        maxFailures: cfg.adminMaxFailures,
        allowSlowHttp: cfg.allowSlowHttp,
        keys,
        health,
        audit: index,
        policies: evidenceAccess,
        authenticator,
        rateLimiter: admission,
        rateLimits: cfg.rateLimits,
        rateWindowMs: cfg.rateWindowMs,
      });
      adminPort = adminListener.port;
      closers.push(() => adminListener.close());
      const server = new UwsHttpServer({
        host: cfg.host,
        port: cfg.port,
        router,
        authenticator,
        rateLimiter: admission,
        rateLimits: cfg.rateLimits,
        rateWindowMs: cfg.rateWindowMs,
        maxInFlight: cfg.http.maxInFlight,
        allowSlowHttp: cfg.allowSlowHttp,
        limits: cfg.http,
      });
      port = await server.listen();
      boundPort = port;
      closers.push(() => server.close());
      log.info({ host: cfg.host, port, httpGuard: server.guarded }, 'listening');
    }
    // Every role is running: what a supervisor of a process without a listener waits for.
    log.info({ roles: cfg.roles }, 'started');
    return { port, adminPort, failed, close };
  } catch (err) {
    await close();
    if (err instanceof DrisError) throw err;
    throw new DrisError('dependency_unavailable', 'start-up failed', { cause: err });
  }
}
