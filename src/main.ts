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
import { openQueue } from './composition/open-queue.js';
import { startAnchoring } from './composition/start-anchoring.js';
import { startApi } from './composition/start-api.js';

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
  /**
   * Settles with the first fatal storage fault (a log whose flush failed): the service already
   * refuses new records (503), and must stop and restart to recover from disk.
   */
  readonly failed: Promise<DrisError>;
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

/** Wires the roles of `cfg.roles` in order: storage, hashing, index, queue, indexer, anchoring, api. */
async function wire(cfg: Config, root: Logger, closers: Closers, markFailed: (err: DrisError) => void): Promise<{ port: number | null; adminPort: number | null }> {
  const log = root.child({ component: 'main' });
  const startedAtMs = Date.now();
  const version = packageVersion();
  // Queue segments and the index hold full payloads: only the service's user may read them.
  mkdirSync(cfg.dataDir, { recursive: true, mode: 0o700 });
  chmodSync(cfg.dataDir, 0o700);
  log.info({ config: describeConfig(cfg), version }, 'starting');
  const guard = await guardDataDir(cfg, closers, markFailed, root);
  const hashing = await openHashing(cfg, closers, log);
  // Domain events (src/app/events.ts): created once, given to every use case.
  const { events, stats } = openEventSeam(root.child({ component: 'events' }));
  closers.add(() => events.close());
  const { storage, adapter: indexAdapter } = await openStorage(cfg, root.child({ component: 'hot-index' }));
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
  if (!cfg.roles.includes('api')) return { port: null, adminPort: null };
  return startApi({ ...context, log, version, startedAtMs, hashing, storage, stats, anchoring });
}

export async function startService(cfg: Config): Promise<RunningService> {
  // Before anything is opened: an incoherent setup (docs/operations.md, start-up guards) stops here.
  const warnings = assertCoherentSetup(cfg);
  const root = rootLoggerOf(cfg);
  const configLog = root.child({ component: 'config' });
  for (const w of warnings) configLog.warn({ variable: w.path, code: w.code }, w.message);
  const closers = new Closers(root.child({ component: 'main' }));
  let markFailed: (err: DrisError) => void = () => undefined;
  const failed = new Promise<DrisError>((resolve) => {
    markFailed = resolve;
  });
  try {
    const { port, adminPort } = await wire(cfg, root, closers, (err) => markFailed(err));
    // Every role is running: what a supervisor of a process without a listener waits for.
    root.child({ component: 'main' }).info({ roles: cfg.roles }, 'started');
    return { port, adminPort, failed, close: () => closers.closeAll() };
  } catch (err) {
    await closers.closeAll();
    if (err instanceof DrisError) throw err;
    throw new DrisError('dependency_unavailable', 'start-up failed', { cause: err });
  }
}
