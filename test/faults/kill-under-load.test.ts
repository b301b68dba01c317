import t from 'tap';
import { startNats, startRedis } from '../harness/servers.js';
import { killLoop } from './helpers/kill-loop.js';

/**
 * kill -9 under load (issue 14): embedded, then on a real nats-server (JetStream, sync_interval
 * always) and Redis (appendonly, appendfsync always). 16 clients, five SIGKILLs each.
 */

t.test('embedded: kill -9 under load', async (t) => {
  await killLoop(t, { name: 'embedded', env: {}, kills: 5, clients: 16 });
});

t.test('nats+redis: kill -9 under load', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const redis = await startRedis({ durable: true });
  t.teardown(() => redis.stop());
  await killLoop(t, { name: 'nats+redis', env: { NATS_URL: nats.url, REDIS_URL: redis.url }, kills: 5, clients: 16 });
});
