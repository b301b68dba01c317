import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeConfig, type Config } from './config/config.js';
import { DrisError } from './errors/dris-error.js';
import type { RecordIndex, RecordQueue } from './domain/records/ports.js';
import type { AdmissionStore } from './domain/limits/ports.js';
import type { KeyStore } from './domain/keys/types.js';
import type { AuditLog } from './domain/audit/ports.js';
import { Authenticator } from './app/authenticator.js';
import { IngestService } from './app/ingest-service.js';
import { Indexer, DEFAULT_INDEXER_OPTIONS } from './app/indexer.js';
import { KeyAdmin, resolveAdminToken } from './app/key-admin.js';
import { healthReporter, type Probe } from './app/health.js';
import { InlineHasher } from './app/inline-hasher.js';
import { loadHashingBackend } from './adapters/hashing/select-backend.js';
import { EmbeddedQueue } from './adapters/queue/embedded-queue.js';
import { EmbeddedAdmissionStore } from './adapters/limits/embedded-admission-store.js';
import { ProcessLock } from './adapters/process-lock.js';
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
  close(): Promise<void>;
}

type Index = RecordIndex & KeyStore & AuditLog;

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
  return { index: new ChdbIndex({ path: path.join(cfg.dataDir, 'clickhouse') }), adapter: 'chdb' };
}

async function openQueue(cfg: Config): Promise<{ queue: RecordQueue; adapter: string }> {
  if (cfg.nats !== undefined) {
    const { NatsQueue } = await import('./adapters/queue/nats-queue.js');
    const n = cfg.nats;
    const queue = await NatsQueue.connect({
      servers: n.url,
      stream: n.stream,
      replicas: n.replicas,
      maxPendingPublishes: cfg.maxPendingPublishes,
      ...(n.user !== undefined ? { user: n.user } : {}),
      ...(n.pass !== undefined ? { pass: n.pass } : {}),
      ...(n.token !== undefined ? { token: n.token } : {}),
      ...(n.credsFile !== undefined ? { credsFile: n.credsFile } : {}),
    });
    return { queue, adapter: 'nats' };
  }
  const queue = EmbeddedQueue.open({ dir: path.join(cfg.dataDir, 'queue'), consumers: [DEFAULT_INDEXER_OPTIONS.consumer], maxPendingPublishes: cfg.maxPendingPublishes });
  return { queue, adapter: 'embedded' };
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
  mkdirSync(cfg.dataDir, { recursive: true });
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

  try {
    // Embedded engines keep state in the data directory: only one process may own it.
    const embedded = cfg.nats === undefined || cfg.redis === undefined || cfg.clickhouse === undefined;
    if (embedded) {
      const lock = ProcessLock.acquire(path.join(cfg.dataDir, 'dris.lock'));
      closers.push(() => lock.release());
    }

    const hashing = await loadHashingBackend(cfg.hashBackend);
    for (const t of hashing.tried) log.info({ backend: t.name, err: t.error }, 'hash backend unavailable');
    log.info({ backend: hashing.backend.name, requested: cfg.hashBackend }, 'hash backend selected');
    const hasher = new InlineHasher(hashing.backend);

    const { index, adapter: indexAdapter } = await openIndex(cfg);
    closers.push(() => index.close());
    await index.migrate();

    const { queue, adapter: queueAdapter } = await openQueue(cfg);
    closers.push(() => queue.close());

    const probes: Probe[] = [
      { name: 'queue', adapter: queueAdapter, check: () => queue.check() },
      { name: 'index', adapter: indexAdapter, check: () => index.check() },
    ];

    let indexer: Indexer | null = null;
    if (cfg.roles.includes('indexer')) {
      indexer = new Indexer(queue, index);
      indexer.start();
      const running = indexer;
      closers.push(() => running.stop());
    }

    let port: number | null = null;
    if (cfg.roles.includes('api')) {
      const { store: admission, adapter: admissionAdapter } = await openAdmission(cfg);
      closers.push(() => admission.close());
      probes.push({ name: 'admission', adapter: admissionAdapter, check: () => admission.check() });

      const keys = new KeyAdmin(index, index);
      const bootstrapFile = await keys.bootstrap(cfg.dataDir);
      if (bootstrapFile !== null) log.info({ file: bootstrapFile }, 'no API keys existed: a standard key for tenant default was written to this file (mode 0600)');
      const admin = resolveAdminToken(cfg.dataDir, cfg.adminToken);
      if (admin.file !== null) log.info({ file: admin.file }, 'key administration token file');

      const authenticator = new Authenticator(index, { refreshMs: cfg.keyRefreshMs });
      const ingest = new IngestService({ hasher, queue, idempotency: admission, idempotencyTtlMs: cfg.idempotencyTtlMs });
      const health = healthReporter({
        version,
        startedAtMs,
        roles: cfg.roles,
        hashBackend: {
          active: hashing.backend.name,
          requested: cfg.hashBackend,
          unavailable: Object.fromEntries(hashing.tried.map((t) => [t.name, t.error instanceof Error ? t.error.message : String(t.error)])),
        },
        http: { engine: 'uWebSockets.js', native: uwsIsNative() },
        probes,
        timeoutMs: 2000,
      });
      const router = new Router(
        buildRoutes({
          ingest,
          index,
          keys,
          health,
          swagger: swaggerAssets(buildOpenApi(version)),
          maxBodyBytes: cfg.maxBodyBytes,
          maxBulkBodyBytes: cfg.maxBulkBodyBytes,
          onKeyChanged: (keyId) => authenticator.invalidate(keyId),
        }),
      );
      const server = new UwsHttpServer({
        host: cfg.host,
        port: cfg.port,
        router,
        authenticator,
        rateLimiter: admission,
        rateLimits: cfg.rateLimits,
        rateWindowMs: cfg.rateWindowMs,
        adminToken: admin.token,
        maxInFlight: 10_000,
        allowSlowHttp: cfg.allowSlowHttp,
      });
      port = await server.listen();
      closers.push(() => server.close());
      log.info({ host: cfg.host, port }, 'listening');
    }
    return { port, close };
  } catch (err) {
    await close();
    if (err instanceof DrisError) throw err;
    throw new DrisError('dependency_unavailable', 'start-up failed', { cause: err });
  }
}
