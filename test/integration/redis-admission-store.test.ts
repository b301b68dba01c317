import t from 'tap';
import { Redis } from 'ioredis';
import { RedisAdmissionStore } from '../../src/adapters/limits/redis-admission-store.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { freePort, startRedis, type RedisTestServer } from '../harness/servers.js';
import { idempotencyContract } from '../harness/idempotency-contract.js';

setLogLevel('silent');

/** The parts of a tap test the helpers use. */
interface Teardown {
  teardown(fn: () => unknown): void;
}
interface Asserts {
  ok(value: unknown, message: string): boolean;
  fail(message: string): boolean;
}

async function rejectsWith(t: Asserts, p: Promise<unknown>, codes: readonly string[], name: string): Promise<void> {
  try {
    await p;
    t.fail(`${name}: expected a rejection`);
  } catch (err) {
    t.ok(err instanceof DrisError, `${name}: is a DrisError`);
    t.ok(codes.includes((err as DrisError).code), `${name}: code ${(err as DrisError).code} in ${codes.join('|')}`);
  }
}

async function setup(t: Teardown): Promise<{ server: RedisTestServer; store: RedisAdmissionStore; raw: Redis }> {
  const server = await startRedis();
  t.teardown(() => server.stop());
  const store = await RedisAdmissionStore.connect({ url: server.url });
  t.teardown(() => store.close());
  const raw = new Redis(server.url);
  t.teardown(() => raw.quit());
  return { server, store, raw };
}

const HOUR = 3_600_000;

t.test('rate limit: exactly `limit` per fixed window, with remaining and reset', async (t) => {
  const { store, raw } = await setup(t);
  const windowStart = 1_700_000_000_000 - (1_700_000_000_000 % HOUR);
  const now = windowStart + 1234;

  const decisions = [];
  for (let i = 0; i < 7; i++) decisions.push(await store.take('key-1', 5, HOUR, now + i));
  t.same(
    decisions.map((d) => [d.allowed, d.remaining]),
    [
      [true, 4],
      [true, 3],
      [true, 2],
      [true, 1],
      [true, 0],
      [false, 0],
      [false, 0],
    ],
  );
  for (const d of decisions) {
    t.equal(d.limit, 5);
    t.equal(d.resetAtMs, windowStart + HOUR);
  }
  t.equal(await raw.get(`dris:rl:key-1:${Math.floor(now / HOUR)}`), '5', 'denied requests are not counted');
  const pttl = await raw.pttl(`dris:rl:key-1:${Math.floor(now / HOUR)}`);
  t.ok(pttl > 0 && pttl <= HOUR + 60_000, 'the counter expires after its window');

  const other = await store.take('key-2', 5, HOUR, now);
  t.same([other.allowed, other.remaining], [true, 4], 'buckets are independent');

  const next = await store.take('key-1', 5, HOUR, windowStart + HOUR);
  t.same([next.allowed, next.remaining, next.resetAtMs], [true, 4, windowStart + 2 * HOUR], 'a new window starts fresh');

  const zero = await store.take('key-3', 0, HOUR, now);
  t.same([zero.allowed, zero.remaining], [false, 0], 'a zero limit admits nothing');
});

t.test('rate limit: concurrent requests never overshoot', async (t) => {
  const { store } = await setup(t);
  const now = 1_700_000_000_000;
  const decisions = await Promise.all(Array.from({ length: 100 }, () => store.take('busy', 10, 60_000, now)));
  t.equal(decisions.filter((d) => d.allowed).length, 10);
  t.same(
    decisions
      .filter((d) => d.allowed)
      .map((d) => d.remaining)
      .sort((a, b) => a - b),
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
  );
});

idempotencyContract(t, 'redis', async (t) => (await setup(t)).store);

t.test('idempotency: a pending lease carries the lease as its TTL, an answer the window', async (t) => {
  const { store, raw } = await setup(t);
  await store.reserveMany([{ key: 'k', fingerprint: 'f' }], 'tok', 10_000);
  const lease = await raw.pttl('dris:idem:k');
  t.ok(lease > 0 && lease <= 10_000, `lease TTL ${lease}`);
  await store.complete('k', { state: 'done', fingerprint: 'f', status: 202, body: '{}' }, 86_400_000);
  const window = await raw.pttl('dris:idem:k');
  t.ok(window > 86_000_000, `answer TTL ${window}`);
});

t.test('failures become DrisErrors', async (t) => {
  const port = await freePort();
  await rejectsWith(t, RedisAdmissionStore.connect({ url: `redis://127.0.0.1:${port}`, connectTimeoutMs: 1000 }), ['dependency_unavailable'], 'unreachable at start');

  const { server, store } = await setup(t);
  await store.check();
  await server.stop();
  await rejectsWith(t, store.check(), ['dependency_unavailable', 'timeout'], 'check with Redis down');
  await rejectsWith(t, store.take('b', 5, HOUR, Date.now()), ['dependency_unavailable', 'timeout'], 'rate limit with Redis down');
  await rejectsWith(t, store.reserveMany([{ key: 'k', fingerprint: 'fp' }], 'tok', HOUR), ['dependency_unavailable', 'timeout'], 'reserve with Redis down');
});

t.test('the store reconnects after Redis restarts', async (t) => {
  const { server, store } = await setup(t);
  await store.check();
  await server.restart();
  let recovered = false;
  for (let i = 0; i < 200 && !recovered; i++) {
    try {
      await store.check();
      recovered = true;
    } catch (err) {
      t.ok(err instanceof DrisError, 'failures while reconnecting are DrisErrors');
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  t.ok(recovered, 'check succeeds again');
  const d = await store.take('after-restart', 2, HOUR, Date.now());
  t.same([d.allowed, d.remaining], [true, 1]);
  t.same(await store.reserveMany([{ key: 'after', fingerprint: 'fp' }], 'tok', HOUR), [{ reserved: true }]);
});
