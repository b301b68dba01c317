import { freemem } from 'node:os';
import { MIN_ADMIN_TOKEN_BYTES, type Config } from '../config/config.js';
import type { AdmissionStore } from '../domain/limits/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { Authenticator } from '../app/authenticator.js';
import type { Anchorer } from '../app/anchorer.js';
import { EvidenceAccess } from '../app/evidence-access.js';
import type { HealthMonitor, Probe } from '../app/health.js';
import { recoverIdempotencyAnswers } from '../app/idempotency-recovery.js';
import { IngestService } from '../app/ingest-service.js';
import { KeyAdmin, resolveAdminToken } from '../app/key-admin.js';
import { Verifier } from '../app/verifier.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { EventBus } from '../app/event-bus.js';
import { startAdminListener } from '../http/admin-listener.js';
import { publicRouter } from '../http/public-router.js';
import type { RequestObserver } from '../http/request-observer.js';
import { UwsHttpServer } from '../http/uws-server.js';
import { findNativeAddon } from '../adapters/hashing/native-backend.js';
import type { Logger } from '../util/logger.js';
import { withTimeout } from '../util/with-timeout.js';
import type { Closers } from './closers.js';
import type { Hashing } from './open-hashing.js';
import { openAdmission } from './open-admission.js';
import type { Storage } from './open-index.js';
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
  readonly storage: Storage;
  readonly queue: RecordQueue;
  readonly store: PipelineStore;
  readonly events: EventBus;
  readonly health: HealthMonitor;
  /** Told of every answer of the public listener (metrics, access log). */
  readonly observer: RequestObserver | undefined;
  /** Set when this process also runs the anchorer role. */
  readonly anchoring: { readonly anchorer: Anchorer; readonly pipeline: Pipeline } | null;
}

/** Verification, with the chain and IPFS it reads; `gatewayBase` is known once the server listens. */
async function openVerification(w: ApiInputs, gatewayBase: () => string | undefined): Promise<{ verifier: Verifier; access: EvidenceAccess }> {
  const { cfg, closers } = w;
  const { evidence, history, audit, policies } = w.storage;
  // Policies change rarely and are read by every answer carrying evidence: cached like keys.
  const access = new EvidenceAccess(policies, audit, { refreshMs: cfg.keyRefreshMs });
  const reader = await openChainReader(cfg, w.anchoring?.pipeline.chain.info(), w.log);
  if (reader !== null) closers.add(() => reader.close());
  const pipelinePinner = w.anchoring?.pipeline.pinner;
  const pinner = pipelinePinner ?? (await openVerifierPinner(cfg, w.root));
  if (pinner !== null && pipelinePinner === undefined) closers.add(() => pinner.close());
  const verifier = new Verifier(
    { hashing: w.hashing.backend, evidence, store: w.store, chain: reader, pinner, history, events: w.events },
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
  return { verifier, access };
}

/**
 * Verification's read-ahead of the newest batches and of the records' storage
 * (verification-warm-up.ts), behind the answers from the moment the server listens; a graceful
 * stop ends it between two reads, before the index closes, waiting for the read under way no
 * later than the drain deadline. A failure costs only the read-ahead: each verification still
 * reads what it needs.
 */
function warmVerificationBehind(w: ApiInputs, verifier: Verifier): void {
  // Page cache is memory too: at most half of what the system has to spare now.
  const prefetchBytes = Math.min(w.cfg.verifyPrefetchMiB * 1024 * 1024, Math.floor(freemem() / 2));
  if (w.cfg.verifyWarmBatches === 0 && prefetchBytes === 0) return;
  const stop = new AbortController();
  const warming = verifier.warmUp({ batches: w.cfg.verifyWarmBatches, prefetchBytes, signal: stop.signal }).then(
    () => undefined,
    (err: unknown) => w.log.warn({ err }, 'verification warm-up stopped'),
  );
  w.closers.addDrain(async (deadlineAtMs) => {
    stop.abort();
    // Past the deadline the index closes under the read still under way; warming logs its failure.
    await withTimeout(warming, Math.max(0, deadlineAtMs - Date.now()), 'the verification warm-up').catch(() => undefined);
  });
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
  const { cfg, log } = w;
  const { keys: keyStore, audit } = w.storage;
  const { store: admission, adapter } = await openAdmission(cfg, w.root);
  w.closers.add(() => admission.close());
  w.probes.push({ name: 'admission', adapter, check: () => admission.check() });
  const keys = new KeyAdmin(keyStore, audit);
  const bootstrapFile = await keys.bootstrap(cfg.dataDir);
  if (bootstrapFile !== null) log.info({ file: bootstrapFile }, 'no API keys existed: a standard key for tenant default was written to this file (mode 0600)');
  const admin = resolveAdminToken(cfg.dataDir, cfg.adminToken, MIN_ADMIN_TOKEN_BYTES);
  if (admin.file !== null) log.info({ file: admin.file }, 'key administration token file');
  const authenticator = new Authenticator(keyStore, { refreshMs: cfg.keyRefreshMs });
  const idempotencyLog = w.root.child({ component: 'idempotency' });
  const ingest = new IngestService({
    hasher: w.hashing.hasher,
    queue: w.queue,
    idempotency: admission,
    idempotencyTtlMs: cfg.idempotencyTtlMs,
    idempotencyLeaseMs: cfg.idempotencyLeaseMs,
    logger: idempotencyLog,
    events: w.events,
  });
  // Before the first request: a key whose record was stored just before a crash gets its answer.
  await recoverIdempotencyAnswers(w.queue, admission, cfg.idempotencyTtlMs, Date.now, idempotencyLog);
  return { admission, keys, adminToken: admin.token, authenticator, ingest };
}

/** The api role: the public HTTP server and the administration listener. */
export async function startApi(w: ApiInputs): Promise<{ port: number; adminPort: number }> {
  const { cfg } = w;
  const parts = await openApiParts(w);
  const health = w.health;
  let boundPort: number | null = null;
  const gateway = w.anchoring?.pipeline.gateway ?? null;
  const embeddedGateway = gateway !== null;
  const gatewayBase = (): string | undefined => cfg.ipfsGatewayUrl ?? (embeddedGateway && boundPort !== null ? `http://${cfg.host}:${boundPort}` : undefined);
  const { verifier, access } = await openVerification(w, gatewayBase);
  const { evidence, history, audit } = w.storage;
  const router = publicRouter({
    api: { ingest: parts.ingest, index: w.storage.records, store: w.store, anchorer: w.anchoring?.anchorer ?? null, audit, evidence, history, policies: access, verifier, health, events: w.events },
    gateway,
    version: w.version,
    limits: { record: cfg.maxBodyBytes, bulk: cfg.maxBulkBodyBytes },
  });
  const rate = { rateLimiter: parts.admission, rateLimits: cfg.rateLimits, rateWindowMs: cfg.rateWindowMs, allowSlowHttp: cfg.allowSlowHttp, authenticator: parts.authenticator, nativeAddonFile: findNativeAddon() };
  const adminListener = await startAdminListener({
    host: cfg.adminHost,
    port: cfg.adminPort,
    token: parts.adminToken,
    maxFailures: cfg.adminMaxFailures,
    keys: parts.keys,
    health,
    audit,
    policies: access,
    ...rate,
  });
  w.closers.add(() => adminListener.close());
  const server = new UwsHttpServer({ host: cfg.host, port: cfg.port, router, maxInFlight: cfg.http.maxInFlight, limits: cfg.http, observer: w.observer, ...rate });
  const port = await server.listen();
  boundPort = port;
  w.closers.add(() => server.close());
  // A graceful stop's first step: no new connections, and what is in flight gets its answer
  // while the queue, the index and the admission store are still open.
  w.closers.addDrain(async (deadlineAtMs) => {
    server.stopAccepting();
    adminListener.stopAccepting();
    const inFlight = server.requestsInFlight;
    const drained = (await server.drained(deadlineAtMs)) && (await adminListener.drained(deadlineAtMs));
    if (drained) w.log.info({ inFlight }, 'listeners closed; requests in flight answered');
    else w.log.warn({ inFlight, left: server.requestsInFlight }, 'listeners closed; requests still in flight at the drain deadline');
  });
  w.log.info({ host: cfg.host, port, httpGuard: server.guarded }, 'listening');
  warmVerificationBehind(w, verifier);
  return { port, adminPort: adminListener.port };
}
