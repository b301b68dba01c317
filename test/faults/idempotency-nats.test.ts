import t from 'tap';
import { startNats, startRedis } from '../harness/servers.js';
import { natsCrash } from './helpers/crash.js';
import { killLoop } from './helpers/kill-loop.js';

/**
 * Idempotency under faults on a real nats-server (JetStream, sync_interval always) and Redis
 * (appendonly, appendfsync always) (issue 14): kill -9 under load, and the same key in flight at
 * a SIGKILL then a paused nats-server. Each has servers of its own; they run side by side because
 * most of their time is spent waiting for JetStream to give back, after its ack wait (60 s), what
 * the killed processes held unacknowledged.
 */

t.jobs = 2;

t.test('nats+redis: kill -9 under load', { buffered: true }, async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const redis = await startRedis({ durable: true });
  t.teardown(() => redis.stop());
  await killLoop(t, { name: 'nats+redis', env: { NATS_URL: nats.url, REDIS_URL: redis.url }, kills: 5, clients: 16 });
});

t.test('nats+redis: the same key in flight at SIGKILL, then an indeterminate publish failure', { buffered: true }, async (t) => {
  await natsCrash(t);
});
