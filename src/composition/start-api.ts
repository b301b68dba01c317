import { MIN_ADMIN_TOKEN_BYTES, type Config } from '../config/config.js';
import type { AdmissionStore } from '../domain/limits/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { Authenticator } from '../app/authenticator.js';
import type { Anchorer } from '../app/anchorer.js';
import { EvidenceAccess } from '../app/evidence-access.js';
import { chainFacts, HealthMonitor, type Probe } from '../app/health.js';
import { recoverIdempotencyAnswers } from '../app/idempotency-recovery.js';
import { IngestService } from '../app/ingest-service.js';
import { KeyAdmin, resolveAdminToken } from '../app/key-admin.js';
import { Verifier } from '../app/verifier.js';
import { ClickHouseEvidenceStore, DEFAULT_HISTORY_WRITES } from '../adapters/index/clickhouse-evidence-store.js';
import type { ClickHousePipelineStore } from '../adapters/index/clickhouse-pipeline-store.js';
import { startAdminListener } from '../http/admin-listener.js';
import { buildOpenApi } from '../http/openapi.js';
import { pipelineRoutes } from '../http/pipeline-routes.js';
import { Router } from '../http/router.js';
import { buildRoutes } from '../http/routes.js';
import { swaggerAssets } from '../http/swagger.js';
import { UwsHttpServer, uwsIsNative } from '../http/uws-server.js';
import { verifyRoutes } from '../http/verify-routes.js';
import type { Logger } from '../util/logger.js';
import type { Closers } from './closers.js';
import type { Hashing } from './open-hashing.js';
import { openAdmission } from './open-admission.js';
import type { Index } from './open-index.js';
import { openChainReader, openVerifierPinner, type Pipeline } from './open-pipeline.js';

export interface ApiInputs {
  readonly cfg: Config;
  readonly root: Logger;
  readonly log: Logger;
  readonly closers: Closers;
  readonly probes: Probe[];
  readonly version: string;
  readonly startedAtMs: number;
  readonly hashing: Hashing;
  readonly index: Index;
  readonly queue: RecordQueue;
  readonly store: ClickHousePipelineStore;
  /** Set when this process also runs the anchorer role. */
  readonly anchoring: { readonly anchorer: Anchorer; readonly pipeline: Pipeline } | null;
}

function healthOf(w: ApiInputs): HealthMonitor {
  const { cfg, hashing } = w;
  const chainInfo = w.anchoring?.pipeline.chain.info();
  return new HealthMonitor({
    version: w.version,
    startedAtMs: w.startedAtMs,
    roles: cfg.roles,
    hashBackend: {
      active: hashing.backend.name,
      requested: cfg.hashBackend,
      unavailable: Object.fromEntries(hashing.tried.map((t) => [t.name, t.error instanceof Error ? t.error.message : String(t.error)])),
    },
    http: { engine: 'uWebSockets.js', native: uwsIsNative() },
    ...(chainInfo === undefined ? {} : { chain: chainFacts(chainInfo, cfg.chain.publicRpcUrl) }),
    probes: w.probes,
    timeoutMs: 2000,
  });
}

/** Verification, with the chain and IPFS it reads; `gatewayBase` is known once the server listens. */
async function openVerification(w: ApiInputs, gatewayBase: () => string | undefined): Promise<{ verifier: Verifier; evidence: ClickHouseEvidenceStore; access: EvidenceAccess }> {
  const { cfg, index, closers } = w;
  const evidence = new ClickHouseEvidenceStore(index.runner, index.database, { history: index.appendSink('verifications', DEFAULT_HISTORY_WRITES) });
  closers.add(() => evidence.close());
  // Policies change rarely and are read by every answer carrying evidence: cached like keys.
  const access = new EvidenceAccess(evidence, index, { refreshMs: cfg.keyRefreshMs });
  const reader = await openChainReader(cfg, w.anchoring?.pipeline.chain.info(), w.log);
  if (reader !== null) closers.add(() => reader.close());
  const pipelinePinner = w.anchoring?.pipeline.pinner;
  const pinner = pipelinePinner ?? (await openVerifierPinner(cfg, w.root));
  if (pinner !== null && pipelinePinner === undefined) closers.add(() => pinner.close());
  const verifier = new Verifier(
    { hashing: w.hashing.backend, evidence, store: w.store, chain: reader, pinner, history: evidence },
    {
      chainCacheMs: cfg.verifyChainCacheMs,
      ipfsTimeoutMs: cfg.ipfsTimeoutMs,
      gatewayUrl: (cid) => {
        const base = gatewayBase();
        return base === undefined ? undefined : `${base}/ipfs/${cid}`;
      },
      ...(cfg.chain.explorerAddressUrl === undefined ? {} : { explorerAddressUrl: cfg.chain.explorerAddressUrl }),
      ...(cfg.chain.explorerTxUrl === undefined ? {} : { explorerTxUrl: cfg.chain.explorerTxUrl }),
    },
  );
  return { verifier, evidence, access };
}

interface ApiParts {
  readonly admission: AdmissionStore;
  readonly keys: KeyAdmin;
  readonly adminToken: string;
  readonly authenticator: Authenticator;
  readonly ingest: IngestService;
}

/** Admission, keys (bootstrapped on first start), the admin token, and ingestion (its lost answers recovered). */
async function openApiParts(w: ApiInputs): Promise<ApiParts> {
  const { cfg, index, log } = w;
  const { store: admission, adapter } = await openAdmission(cfg, w.root);
  w.closers.add(() => admission.close());
  w.probes.push({ name: 'admission', adapter, check: () => admission.check() });
  const keys = new KeyAdmin(index, index);
  const bootstrapFile = await keys.bootstrap(cfg.dataDir);
  if (bootstrapFile !== null) log.info({ file: bootstrapFile }, 'no API keys existed: a standard key for tenant default was written to this file (mode 0600)');
  const admin = resolveAdminToken(cfg.dataDir, cfg.adminToken, MIN_ADMIN_TOKEN_BYTES);
  if (admin.file !== null) log.info({ file: admin.file }, 'key administration token file');
  const authenticator = new Authenticator(index, { refreshMs: cfg.keyRefreshMs });
  const idempotencyLog = w.root.child({ component: 'idempotency' });
  const ingest = new IngestService({
    hasher: w.hashing.hasher,
    queue: w.queue,
    idempotency: admission,
    idempotencyTtlMs: cfg.idempotencyTtlMs,
    idempotencyLeaseMs: cfg.idempotencyLeaseMs,
    logger: idempotencyLog,
  });
  // Before the first request: a key whose record was stored just before a crash gets its answer.
  await recoverIdempotencyAnswers(w.queue, admission, cfg.idempotencyTtlMs, Date.now, idempotencyLog);
  return { admission, keys, adminToken: admin.token, authenticator, ingest };
}

/** The api role: the public HTTP server and the administration listener. */
export async function startApi(w: ApiInputs): Promise<{ port: number; adminPort: number }> {
  const { cfg } = w;
  const parts = await openApiParts(w);
  const health = healthOf(w);
  let boundPort: number | null = null;
  const embeddedGateway = (w.anchoring?.pipeline.gateway.length ?? 0) > 0;
  const gatewayBase = (): string | undefined => cfg.ipfsGatewayUrl ?? (embeddedGateway && boundPort !== null ? `http://${cfg.host}:${boundPort}` : undefined);
  const { verifier, evidence, access } = await openVerification(w, gatewayBase);
  const router = new Router([
    ...pipelineRoutes({ store: w.store, anchorer: w.anchoring?.anchorer ?? null, maxBodyBytes: cfg.maxBodyBytes, audit: w.index, evidence: access }),
    ...verifyRoutes({ verifier, evidence, history: evidence, audit: w.index, policies: access, maxBodyBytes: cfg.maxBodyBytes }),
    ...(w.anchoring?.pipeline.gateway ?? []),
    ...buildRoutes({
      ingest: parts.ingest,
      index: w.index,
      health,
      evidence: access,
      swagger: swaggerAssets(buildOpenApi(w.version)),
      maxBodyBytes: cfg.maxBodyBytes,
      maxBulkBodyBytes: cfg.maxBulkBodyBytes,
    }),
  ]);
  const rate = { rateLimiter: parts.admission, rateLimits: cfg.rateLimits, rateWindowMs: cfg.rateWindowMs, allowSlowHttp: cfg.allowSlowHttp, authenticator: parts.authenticator };
  const adminListener = await startAdminListener({
    host: cfg.adminHost,
    port: cfg.adminPort,
    token: parts.adminToken,
    maxFailures: cfg.adminMaxFailures,
    keys: parts.keys,
    health,
    audit: w.index,
    policies: access,
    ...rate,
  });
  w.closers.add(() => adminListener.close());
  const server = new UwsHttpServer({ host: cfg.host, port: cfg.port, router, maxInFlight: cfg.http.maxInFlight, limits: cfg.http, ...rate });
  const port = await server.listen();
  boundPort = port;
  w.closers.add(() => server.close());
  w.log.info({ host: cfg.host, port, httpGuard: server.guarded }, 'listening');
  return { port, adminPort: adminListener.port };
}
