import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import t, { type Test } from 'tap';
import { ANVIL_DEV_ANCHORER_KEY } from '../../src/adapters/chain/anvil-node.js';
import { EthersChain, deployAnchorContract } from '../../src/adapters/chain/ethers-chain.js';
import { RedisElector } from '../../src/adapters/election/redis-elector.js';
import { LeaderLoop } from '../../src/app/leader-loop.js';
import type { Leadership } from '../../src/domain/pipeline/ports.js';
import type { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil } from '../harness/anvil.js';
import { startRedis, type RedisTestServer } from '../harness/servers.js';

/**
 * Leader election of the anchoring role on a real Redis: one leader at a time, a greater epoch for
 * every term, takeover when the leader resigns, when its lease is taken over, and when it stops
 * renewing (its term ends before the lease lapses, so terms never overlap); and, on a real anvil,
 * the fence that does not depend on the election: a stale leader's anchor is refused by the
 * contract's sequence check.
 */

setLogLevel('silent');

const LEASE_MS = 1000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function within<T>(what: string, ms: number, check: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function lostAt(term: Leadership): Promise<number> {
  return new Promise((resolve) => {
    if (term.lost.aborted) resolve(Date.now());
    else term.lost.addEventListener('abort', () => resolve(Date.now()), { once: true });
  });
}

async function redisFor(t: Test): Promise<RedisTestServer> {
  const server = await startRedis();
  t.teardown(() => server.stop());
  return server;
}

async function electorFor(t: Test, url: string, options: { renewEveryMs?: number; keyPrefix: string }): Promise<RedisElector> {
  const e = await RedisElector.connect({ url, leaseMs: LEASE_MS, ...options });
  t.teardown(() => e.close());
  return e;
}

t.test('one leader at a time; takeover on resign, on a lease taken over, on a leader that stops renewing', async (t) => {
  const redis = await redisFor(t);
  const keyPrefix = `t${randomBytes(3).toString('hex')}:`;
  const a = await electorFor(t, redis.url, { keyPrefix });
  const b = await electorFor(t, redis.url, { keyPrefix });

  const ta = await a.tryAcquire();
  if (ta === null) throw new Error('the first campaigner should lead');
  t.equal(await b.tryAcquire(), null, 'a second campaigner does not lead while the first renews');
  await sleep(LEASE_MS * 2.5);
  t.equal(ta.lost.aborted, false, 'renewals keep the term past several leases');
  t.equal(await b.tryAcquire(), null);

  await a.resign();
  t.equal(ta.lost.aborted, true, 'resigning ends the term at once');
  const tb = await b.tryAcquire();
  if (tb === null) throw new Error('b should lead once a resigned');
  t.ok(tb.epoch > ta.epoch, `a new term has a greater epoch (${ta.epoch} -> ${tb.epoch})`);

  // b's lease lapses while b is cut off (here: the key is removed) and a takes it: b learns at its
  // next renewal that the lease is another's, and stops.
  const raw = new Redis(redis.url);
  t.teardown(() => raw.quit());
  await raw.del(`${keyPrefix}anchorer:leader`);
  const ta2 = await a.tryAcquire();
  if (ta2 === null) throw new Error('a should take the free lease');
  t.ok(ta2.epoch > tb.epoch);
  await within('b to notice', LEASE_MS, () => (tb.lost.aborted ? true : undefined));
  t.equal((tb.lost.reason as DrisError).code, 'invalid_state', 'the term ends with a coded reason');
  t.equal(await b.tryAcquire(), null, 'and b does not lead again while a renews');

  // A leader that stops renewing (a process stalled) gives its term up before its lease lapses on
  // the server, so the next leader's term cannot overlap it.
  await a.resign();
  const stalled = await electorFor(t, redis.url, { keyPrefix, renewEveryMs: 60_000 });
  const ts = await stalled.tryAcquire();
  if (ts === null) throw new Error('the stalled elector should lead first');
  const acquiredAt = Date.now();
  const stalledLost = lostAt(ts);
  const tn = await within('a takeover after the lease lapsed', LEASE_MS * 3, async () => (await b.tryAcquire()) ?? undefined);
  const takenAt = Date.now();
  const endedAt = await stalledLost;
  t.ok(endedAt <= takenAt, 'the stalled term ended before the next one began');
  t.ok(endedAt - acquiredAt < LEASE_MS, 'and before its lease would lapse');
  t.ok(takenAt - acquiredAt >= LEASE_MS - 50, 'the next leader waited for the lease to lapse');
  t.ok(tn.epoch > ts.epoch);
});

t.test('the leader loses its term within the lease when Redis goes away, and a leader is elected when it is back', async (t) => {
  const redis = await redisFor(t);
  const keyPrefix = `t${randomBytes(3).toString('hex')}:`;
  const a = await electorFor(t, redis.url, { keyPrefix });
  const ta = await a.tryAcquire();
  if (ta === null) throw new Error('a should lead');
  const ended = lostAt(ta);
  const killedAt = Date.now();
  await redis.kill('SIGKILL');
  const endedAt = await ended;
  t.ok(endedAt - killedAt <= LEASE_MS, `the term ended ${endedAt - killedAt} ms after Redis went away`);
  await t.rejects(a.tryAcquire(), { code: 'dependency_unavailable' }, 'no campaign without Redis');
  await redis.restart();
  const back = await within('a leader once Redis is back', 10_000, async () => {
    try {
      return (await a.tryAcquire()) ?? undefined;
    } catch {
      return undefined;
    }
  });
  t.ok(back.epoch >= 1, 'a term again (the epoch restarts with a Redis that kept no data)');
});

t.test('leader loops: the role runs in one process at a time and moves on when the leader stops', async (t) => {
  const redis = await redisFor(t);
  const keyPrefix = `t${randomBytes(3).toString('hex')}:`;
  const intervals: { who: string; epoch: number; from: number; to: number | null }[] = [];
  const task = (who: string): ConstructorParameters<typeof LeaderLoop>[1] => ({
    start: (term) => {
      intervals.push({ who, epoch: term.epoch, from: Date.now(), to: null });
      return Promise.resolve();
    },
    stop: () => {
      const open = intervals.findLast((i) => i.who === who && i.to === null);
      if (open !== undefined) open.to = Date.now();
      return Promise.resolve();
    },
  });
  const loops: LeaderLoop[] = [];
  for (const who of ['p1', 'p2', 'p3']) {
    const loop = new LeaderLoop(await electorFor(t, redis.url, { keyPrefix }), task(who), { retryMs: 100 });
    await loop.start();
    t.teardown(() => loop.stop());
    loops.push(loop);
  }
  t.equal(loops.filter((l) => l.isLeader).length, 1, 'exactly one leads');
  for (let round = 0; round < 2; round++) {
    const leader = loops.find((l) => l.isLeader);
    if (leader === undefined) throw new Error('no leader');
    await leader.stop();
    await within('a new leader', LEASE_MS * 3, () => (loops.some((l) => l !== leader && l.isLeader) ? true : undefined));
  }
  t.equal(intervals.length, 3, 'three terms, one after another');
  t.same(
    intervals.map((i) => i.epoch),
    [...intervals.map((i) => i.epoch)].sort((x, y) => x - y),
    'epochs grow term after term',
  );
  t.equal(new Set(intervals.map((i) => i.who)).size, 3, 'each process led once');
  for (let i = 1; i < intervals.length; i++) {
    const ended = intervals[i - 1]?.to ?? Number.POSITIVE_INFINITY;
    t.ok(ended <= (intervals[i]?.from ?? 0), 'no two terms overlap');
  }
});

t.test('the fence: a stale leader anchoring a sequence the new leader used is refused by the contract', async (t) => {
  ensureContractArtifact();
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const signer = { privateKey: ANVIL_DEV_ANCHORER_KEY };
  const deployment = await deployAnchorContract({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer });
  const connect = async (): Promise<EthersChain> => {
    const c = await EthersChain.connect({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer, contractAddress: deployment.address, pollIntervalMs: 50 });
    t.teardown(() => c.close());
    return c;
  };
  const stale = await connect();
  const current = await connect();
  const request = (root: string): Parameters<EthersChain['anchor']>[0] => ({
    batchSeq: 1,
    merkleRoot: root,
    recordCount: 1000,
    batchId: `b_${root.slice(0, 32)}`,
    manifestCid: 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku',
  });
  // Both read the same last sequence while each believed it led; the new leader anchors first.
  t.equal(await stale.lastSequence(), 0);
  const newRoot = randomBytes(32).toString('hex');
  const staleRoot = randomBytes(32).toString('hex');
  await current.anchor(request(newRoot));
  await t.rejects(stale.anchor(request(staleRoot)), { code: 'invalid_state', extra: { reason: 'bad_sequence', expected: 2, got: 1 } }, 'the stale anchor is refused');
  t.equal(await current.lastSequence(), 1);
  t.equal(await current.anchorOf(staleRoot), null, 'nothing of the stale leader reached the contract');
  t.equal((await current.anchorOf(newRoot))?.batchSeq, 1);
});
