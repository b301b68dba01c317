import path from 'node:path';
import type { Config } from '../config/config.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { DEFAULT_INDEXER_OPTIONS } from '../app/indexer.js';
import { EmbeddedQueue } from '../adapters/queue/embedded-queue.js';
import type { StorageGuard } from '../adapters/storage/storage-guard.js';
import { definedOnly } from '../util/defined.js';
import type { Logger } from '../util/logger.js';

/** The durable consumer the accumulator reads the queue as. */
export const ACCUMULATOR_CONSUMER = 'accumulator';

/** The queue: NATS JetStream when NATS_URL is set, else the embedded log in the data directory. */
export async function openQueue(cfg: Config, guard: StorageGuard | null, root: Logger): Promise<{ queue: RecordQueue; adapter: string }> {
  if (cfg.nats !== undefined) {
    const { NatsQueue } = await import('../adapters/queue/nats-queue.js');
    const n = cfg.nats;
    const queue = await NatsQueue.connect({
      servers: n.url,
      stream: n.stream,
      replicas: n.replicas,
      deadLetterStream: n.deadLetterStream,
      publishTimeoutMs: n.publishTimeoutMs,
      maxPendingPublishes: cfg.maxPendingPublishes,
      logger: root.child({ component: 'nats-queue' }),
      ...definedOnly({ user: n.user, pass: n.pass, token: n.token, credsFile: n.credsFile }),
    });
    return { queue, adapter: 'nats' };
  }
  const queue = EmbeddedQueue.open({
    dir: path.join(cfg.dataDir, 'queue'),
    consumers: [DEFAULT_INDEXER_OPTIONS.consumer, ACCUMULATOR_CONSUMER],
    maxPendingPublishes: cfg.maxPendingPublishes,
    maxBytes: cfg.queueMaxBytes,
    logger: root.child({ component: 'embedded-queue' }),
    ...(guard === null ? {} : { admit: () => guard.admit() }),
  });
  return { queue, adapter: 'embedded' };
}
