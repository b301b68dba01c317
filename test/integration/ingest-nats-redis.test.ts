import t from 'tap';
import { startNats, startRedis } from '../harness/servers.js';
import { ingestSuite } from './ingest-suite.js';

// The cluster adapters: a real nats-server 2.12 (JetStream, sync_interval always) and Redis.
ingestSuite(t, {
  name: 'nats+redis',
  env: async () => {
    const nats = await startNats();
    const redis = await startRedis();
    t.teardown(async () => {
      await nats.stop();
      await redis.stop();
    });
    return { NATS_URL: nats.url, REDIS_URL: redis.url };
  },
});
