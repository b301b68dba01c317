import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertCoherentSetup, describeConfig, type Config } from './config/config.js';
import { DrisError } from './errors/dris-error.js';
import type { Probe } from './app/health.js';
import { Indexer, DEFAULT_INDEXER_OPTIONS } from './app/indexer.js';
import type { Logger } from './util/logger.js';
import { rootLoggerOf } from './composition/root-logger.js';
import { Closers } from './composition/closers.js';
import { guardDataDir } from './composition/guard-data-dir.js';
import { openHashing } from './composition/open-hashing.js';
import { openStorage } from './composition/open-index.js';
import { openEventSeam } from './app/pipeline-stats.js';
import { subscribeMetrics } from './app/metrics.js';
import type { Readiness } from './app/readiness.js';
import { openHealth } from './composition/open-health.js';
import { openQueue } from './composition/open-queue.js';
import { startAnchoring } from './composition/start-anchoring.js';
import { startApi } from './composition/start-api.js';
import { readingsOf, startOps, type Ops } from './composition/start-ops.js';

/**
 * The composition root: the one place where adapters are chosen from configuration and wired to
 * the application, for `dris serve` and, through src/composition/tools.ts, for every other CLI
 * command. The wiring of each part lives in src/composition/; this file orders them.
 */

export { openStorage } from './composition/open-index.js';
export { rootLoggerOf } from './composition/root-logger.js';
export * from './composition/tools.js';

export interface RunningService {
  /** Bound HTTP port, or null when this process does not run the api role. */
  readonly port: number | null;
  /** Bound port of the administration listener (api role only). */
  readonly adminPort: number | null;
  /** Bound port of the ops listener (/metrics, /livez, /readyz), whatever the roles. */
  readonly opsPort: number;
  /**
   * Settles with the first fatal storage fault (a log whose flush failed): the service already
   * refuses new records (503), and must stop and restart to recover from disk.
   */
  readonly failed: Promise<DrisError>;
  /**
   * The graceful stop (docs/operations.md, "Stopping"): not ready at once, the listeners stop
   * accepting and answer what is in flight (for up to half of DRIS_SHUTDOWN_TIMEOUT_MS), then the
   * leader steps down, consumers finish and ack, and everything closes. The caller bounds the
   * whole by DRIS_SHUTDOWN_TIMEOUT_MS.
   */
  close(): Promise<void>;
}

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

interface Wired {
  readonly port: number | null;
  readonly adminPort: number | null;
}

/**
 * Wires the roles of `cfg.roles` in order: storage, hashing, index, queue, indexer, anchoring, api
 * (the ops listener already answers); readiness follows the probes once all are running.
 */
async function wire(cfg: Config, root: Logger, closers: Closers, markFailed: (err: DrisError) => void, ops: Ops): Promise<Wired> {
  const log = root.child({ component: 'main' });
  const startedAtMs = Date.now();
  const version = packageVersion();
  // Queue segments and the index hold full payloads: only the service's user may read them.
  mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(cfg.dataDir, 0o700);
  log.info({ config: describeConfig(cfg), version }, 'starting');
  const guard = await guardDataDir(cfg, closers, markFailed, root);
  const hashing = await openHashing(cfg, closers, log);
  ops.metrics.buildInfo(version, cfg.roles, hashing.backend.name);
  // Domain events (src/app/events.ts): created once, given to every use case.
  const { events, stats } = openEventSeam(root.child({ component: 'events' }));
  closers.add(() => events.close());
  subscribeMetrics(events, ops.metrics);
  const { storage, adapter: indexAdapter } = await openStorage(cfg, root.child({ component: 'hot-index' }), (query, seconds) => ops.metrics.indexQuery(query, seconds));
  closers.add(() => storage.close());
  await storage.database.migrate();
  const { queue, adapter: queueAdapter } = await openQueue(cfg, guard, root);
  closers.add(() => queue.close());
  const probes: Probe[] = [
    { name: 'queue', adapter: queueAdapter, check: () => queue.check() },
    { name: 'index', adapter: indexAdapter, check: () => storage.database.check() },
  ];
  if (guard !== null) probes.push({ name: 'storage', adapter: 'local-disk', check: () => guard.check() });
  if (cfg.roles.includes('indexer')) {
    const indexer = new Indexer(queue, storage.records, { ...DEFAULT_INDEXER_OPTIONS, maxDeliveries: cfg.maxDeliveries }, storage.audit, { events, logger: root.child({ component: 'indexer' }) });
    indexer.start();
    closers.add(() => indexer.stop());
  }
  const store = storage.pipeline;
  const context = { cfg, root, closers, probes, queue, store, events };
  const anchoring = cfg.roles.includes('anchorer') ? await startAnchoring({ ...context, hashing: hashing.backend }) : null;
  const health = openHealth({ cfg, version, startedAtMs, hashing, probes, stats, chain: anchoring?.pipeline.chain.info() });
  ops.metrics.readings(readingsOf({ cfg, queue, guard, store, events, anchoring }));
  const listening = cfg.roles.includes('api') ? await startApi({ ...context, log, version, startedAtMs, hashing, storage, health, observer: ops.observer, anchoring }) : { port: null, adminPort: null };
  ops.readiness.started(health);
  return listening;
}

/** The graceful stop: readiness false at once, then the drains (half the bound), then every closer. */
async function shutdown(cfg: Config, readiness: Readiness, closers: Closers, log: Logger): Promise<void> {
  const startedAt = Date.now();
  readiness.stopping();
  log.info({ timeoutMs: cfg.ops.shutdownTimeoutMs }, 'stopping: not ready; draining');
  await closers.closeAll(startedAt + Math.floor(cfg.ops.shutdownTimeoutMs / 2));
  log.info({ ms: Date.now() - startedAt }, 'stopped');
}

export async function startService(cfg: Config): Promise<RunningService> {
  // Before anything is opened: an incoherent setup (docs/operations.md, start-up guards) stops here.
  const warnings = assertCoherentSetup(cfg);
  const root = rootLoggerOf(cfg);
  const configLog = root.child({ component: 'config' });
  for (const w of warnings) configLog.warn({ variable: w.path, code: w.code }, w.message);
  const log = root.child({ component: 'main' });
  const closers = new Closers(log);
  let markFailed: (err: DrisError) => void = () => undefined;
  const failed = new Promise<DrisError>((resolve) => {
    markFailed = resolve;
  });
  try {
    const ops = await startOps(cfg, root, closers);
    const { port, adminPort } = await wire(cfg, root, closers, (err) => markFailed(err), ops);
    // Every role is running: what a supervisor of a process without a listener waits for.
    log.info({ roles: cfg.roles, opsPort: ops.port }, 'started');
    let closing: Promise<void> | null = null;
    return { port, adminPort, opsPort: ops.port, failed, close: () => (closing ??= shutdown(cfg, ops.readiness, closers, log)) };
  } catch (err) {
    await closers.closeAll();
    if (err instanceof DrisError) throw err;
    throw new DrisError('dependency_unavailable', 'start-up failed', { cause: err });
  }
}
