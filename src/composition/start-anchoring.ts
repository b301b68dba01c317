import type { Config } from '../config/config.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import type { LeaderElector } from '../domain/pipeline/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { Accumulator } from '../app/accumulator.js';
import { Anchorer } from '../app/anchorer.js';
import type { Probe } from '../app/health.js';
import type { OpenBatch } from '../app/metrics.js';
import { fenceTerm, LeaderLoop } from '../app/leader-loop.js';
import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { EventBus } from '../app/event-bus.js';
import { definedOnly } from '../util/defined.js';
import type { Logger } from '../util/logger.js';
import type { Closers } from './closers.js';
import { openPipeline, type Pipeline } from './open-pipeline.js';
import { ACCUMULATOR_CONSUMER } from './open-queue.js';

/**
 * How long a stored batch write (formed batches, or batches recorded Anchored) waits for more
 * batches to join it, milliseconds. Every write is an insert per table, and each insert a part the
 * engine merges later: under load, grouping about four batches per write cut the embedded
 * default's CPU per record by a tenth (docs/benchmarks.md). It adds at most this much to a
 * record's way from 202 to Anchored, twice.
 */
const WRITE_GROUP_WAIT_MS = 250;

export interface AnchoringInputs {
  readonly cfg: Config;
  readonly root: Logger;
  readonly closers: Closers;
  readonly probes: Probe[];
  readonly queue: RecordQueue;
  readonly store: PipelineStore;
  readonly hashing: HashingBackend;
  readonly events: EventBus;
}

/** Only the elected leader accumulates and anchors: with Redis, one of the anchorer processes; embedded, always this one. */
async function openElector(cfg: Config, root: Logger): Promise<LeaderElector> {
  if (cfg.redis === undefined) return new (await import('../adapters/election/embedded-elector.js')).EmbeddedElector();
  const { RedisElector } = await import('../adapters/election/redis-elector.js');
  return RedisElector.connect({
    url: cfg.redis.url,
    keyPrefix: cfg.redis.keyPrefix,
    leaseMs: cfg.leaderLeaseMs,
    logger: root.child({ component: 'leader-election' }),
    ...definedOnly({ password: cfg.redis.password }),
  });
}

export interface Anchoring {
  readonly anchorer: Anchorer;
  readonly pipeline: Pipeline;
  /** Whether this process leads (accumulates and anchors) now. */
  leading(): boolean;
  /** The open batch of this term's accumulator; null while not leading. */
  openBatch(): OpenBatch | null;
}

/** The anchorer role: IPFS and the chain, the anchorer, and the leader loop that runs the accumulator. */
export async function startAnchoring(w: AnchoringInputs): Promise<Anchoring> {
  const { cfg, queue, store, hashing, events } = w;
  const pipeline = await openPipeline(cfg, w.root);
  w.closers.add(() => pipeline.close());
  w.probes.push({ name: 'ipfs', adapter: pipeline.adapters.ipfs, check: () => pipeline.pinner.check() });
  w.probes.push({ name: 'chain', adapter: pipeline.adapters.chain, check: () => pipeline.chain.check() });
  const anchorer = new Anchorer(store, pipeline.pinner, pipeline.chain, hashing, {
    maxAttempts: cfg.anchorRetry.maxAttempts,
    baseDelayMs: cfg.anchorRetry.baseDelayMs,
    maxDelayMs: cfg.anchorRetry.maxDelayMs,
    idleMs: 1000,
    reconcileIntervalMs: cfg.anchorReconcileIntervalMs,
    markGroupWaitMs: WRITE_GROUP_WAIT_MS,
  }, { events });
  // One per term: its writes go through the term's fenced store.
  let accumulator: Accumulator | null = null;
  const elector = await openElector(cfg, w.root);
  w.closers.add(() => elector.close());
  const leader = new LeaderLoop(
    elector,
    {
      start: async (term) => {
        // Embedded, the data directory's lock rules out another leader: nothing to wait out.
        const fenced = await fenceTerm(store, term, cfg.redis === undefined ? 0 : cfg.leaderLeaseMs);
        await anchorer.start(fenced.epoch, fenced.store);
        const formed = new Accumulator(queue, fenced.store, hashing, { consumer: ACCUMULATOR_CONSUMER, maxRecords: cfg.batchMaxRecords, maxWaitMs: cfg.batchMaxWaitMs, retryMs: 1000, groupWaitMs: WRITE_GROUP_WAIT_MS }, { events });
        accumulator = formed;
        formed.start();
      },
      stop: async () => {
        await accumulator?.stop();
        accumulator = null;
        await anchorer.stop();
      },
    },
    { retryMs: Math.max(100, Math.floor(cfg.leaderLeaseMs / 5)) },
    { events },
  );
  await leader.start();
  // Stopping the loop ends the term and releases the lease (LeaderLoop.stop resigns), so another
  // anchorer takes over at once rather than after the lease lapses.
  w.closers.add(() => leader.stop());
  return {
    anchorer,
    pipeline,
    leading: () => leader.isLeader,
    openBatch: () => (leader.isLeader ? (accumulator?.openBatch() ?? { records: 0, ageSeconds: 0 }) : null),
  };
}
