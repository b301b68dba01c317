import { statfs } from 'node:fs/promises';
import type { Config } from '../config/config.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { DEFAULT_INDEXER_OPTIONS } from '../app/indexer.js';
import type { EventBus } from '../app/event-bus.js';
import type { ProcessReadings } from '../app/metrics.js';
import { Readiness } from '../app/readiness.js';
import { PrometheusMetrics } from '../adapters/prometheus/prometheus-metrics.js';
import { EmbeddedQueue } from '../adapters/queue/embedded-queue.js';
import type { StorageGuard } from '../adapters/storage/storage-guard.js';
import { AccessLog } from '../http/access-log.js';
import { startOpsListener } from '../http/ops-listener.js';
import { observeAll, type RequestObserver } from '../http/request-observer.js';
import { fixedFieldsChild, type Logger } from '../util/logger.js';
import type { Closers } from './closers.js';
import { ACCUMULATOR_CONSUMER } from './open-queue.js';
import type { Anchoring } from './start-anchoring.js';

/**
 * The ops side of a process, whatever its roles: the ops listener (/metrics, /livez, /readyz),
 * started first so that liveness answers while the roles start, the metrics and the readiness it
 * serves, and the observer of the public listener's answers (metrics and access log).
 */
export interface Ops {
  readonly port: number;
  readonly metrics: PrometheusMetrics;
  readonly readiness: Readiness;
  /** For the public listener of the api role. */
  readonly observer: RequestObserver | undefined;
}

export async function startOps(cfg: Config, root: Logger, closers: Closers): Promise<Ops> {
  const metrics = new PrometheusMetrics(cfg.roles, root.child({ component: 'metrics' }));
  const readiness = new Readiness();
  const listener = await startOpsListener({ host: cfg.ops.host, port: cfg.ops.port, metrics, readiness, logger: root.child({ component: 'ops' }) });
  // Added first, closed last: /readyz answers 503 (not a refused connection) until the very end.
  closers.add(() => listener.close());
  const observers: RequestObserver[] = [];
  if (metrics.http !== null) observers.push(metrics.http);
  if (cfg.roles.includes('api')) observers.push(new AccessLog(fixedFieldsChild(root, { component: 'access' }), cfg.ops.accessLogSample));
  return { port: listener.port, metrics, readiness, observer: observeAll(observers) };
}

export interface ReadingSources {
  readonly cfg: Config;
  readonly queue: RecordQueue;
  readonly guard: StorageGuard | null;
  readonly store: PipelineStore;
  readonly events: EventBus;
  readonly anchoring: Anchoring | null;
}

/** The consumers whose lag this process reports: those its roles read the queue as. */
function consumersOf(cfg: Config): string[] {
  const out: string[] = [];
  if (cfg.roles.includes('indexer')) out.push(DEFAULT_INDEXER_OPTIONS.consumer);
  if (cfg.roles.includes('anchorer')) out.push(ACCUMULATOR_CONSUMER);
  return out;
}

/** What the gauges of a scrape read, from the parts this process wired. */
export function readingsOf(s: ReadingSources): ProcessReadings {
  const { cfg, queue, guard, store, anchoring } = s;
  const consumers = consumersOf(cfg);
  const lagOf = queue.consumerLag?.bind(queue);
  const countByStatus = store.countByStatus?.bind(store);
  const chain = anchoring?.pipeline.chain;
  const headOf = chain?.headTimestampMs?.bind(chain);
  const embedded = queue instanceof EmbeddedQueue ? queue : null;
  return {
    subscribers: () => s.events.stats(),
    // The storage guard reads the free space every second; without embedded engines, statfs now.
    storageFreeBytes: guard !== null ? () => Promise.resolve(guard.status().freeBytes) : async () => freeBytes(cfg.dataDir),
    ...(embedded === null ? {} : { queueBudget: () => embedded.budget() }),
    ...(lagOf === undefined || consumers.length === 0
      ? {}
      : {
          queueLag: async () => {
            const lags = await Promise.allSettled(consumers.map((c) => lagOf(c)));
            const out: Record<string, number> = {};
            lags.forEach((l, i) => {
              if (l.status === 'fulfilled') out[consumers[i] as string] = l.value;
            });
            return out;
          },
        }),
    ...(anchoring === null
      ? {}
      : {
          openBatch: () => anchoring.openBatch(),
          ...(countByStatus === undefined ? {} : { batchCounts: async () => (anchoring.leading() ? countByStatus() : null) }),
          ...(headOf === undefined ? {} : { chainHeadLagSeconds: async () => Math.max(0, Date.now() - (await headOf())) / 1000 }),
        }),
  };
}

async function freeBytes(dir: string): Promise<number> {
  const s = await statfs(dir);
  return s.bavail * s.bsize;
}
