import type { Test } from 'tap';
import { allSnapshots, batchesOf } from '../../harness/pipeline.js';
import { createKey, eventually, request, startService } from '../../harness/service.js';
import { bulkRequest, listAll, newStats, reckon, sendUntilAccepted, singleRequest, type Acked, type KeyedRequest, type Listed } from './keyed-load.js';

/**
 * kill -9 under load: 16 clients send keyed single and bulk requests, retrying each with its key
 * after a connection error or a 5xx, while the service is SIGKILLed every few seconds and started
 * again on its data (and its NATS and Redis). Then every record answered 202 must be listed once,
 * with its hash, nothing else stored, everything anchored, and the batch sequence without gaps.
 */

export interface KillLoopOptions {
  readonly name: string;
  /** Environment of the service beside the test's own (NATS_URL, REDIS_URL...). */
  readonly env: Readonly<Record<string, string>>;
  readonly kills: number;
  readonly clients: number;
}

const TENANT = 'acme';
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function killLoop(t: Test, o: KillLoopOptions): Promise<void> {
  const env = {
    DRIS_BATCH_MAX_WAIT_MS: '1000',
    DRIS_RATE_LIMITS: 'standard=100000000',
    // Short leases: a request of a killed process holds its keys (in Redis) for no longer.
    DRIS_IDEMPOTENCY_LEASE_MS: '2000',
    ...o.env,
  };
  let svc = await startService({ env });
  const dataDir = svc.dataDir;
  t.teardown(() => svc.dispose());
  const apiKey = (await createKey(svc, { tenantId: TENANT, clientId: 'loader' })).apiKey;

  const stats = newStats();
  const acked = new Map<string, Acked[]>();
  const sent = new Map<string, KeyedRequest>();
  let loading = true;
  // Every request ends within this bound, the kills included; a request not accepted by then fails the test.
  const requestDeadline = (): number => Date.now() + 60_000;
  const client = async (c: number): Promise<void> => {
    for (let n = 0; loading; n++) {
      const key = `${o.name}-c${c}-n${n}`;
      const req = n % 4 === 3 ? bulkRequest(TENANT, key, 2 + ((c + n) % 19)) : singleRequest(TENANT, key, n);
      sent.set(key, req);
      const answer = await sendUntilAccepted(() => svc, apiKey, req, stats, requestDeadline());
      if (answer !== null) acked.set(key, answer);
    }
  };
  const clients = Array.from({ length: o.clients }, (_, c) => client(c));

  let kills = 0;
  const startedAt = Date.now();
  for (let k = 0; k < o.kills; k++) {
    await sleep(1500 + Math.floor(Math.random() * 1500));
    await svc.kill('SIGKILL');
    kills += 1;
    svc = await startService({ env, dataDir });
  }
  await sleep(1500);
  loading = false;
  await Promise.all(clients);
  const loadSeconds = (Date.now() - startedAt) / 1000;

  // Every key answered again gives the record its first 202 named (a sample, bounded in count).
  let inconsistent = 0;
  const sample = [...acked.entries()].filter((_, i) => i % 10 === 0).slice(0, 200);
  for (const [key, first] of sample) {
    const again = await sendUntilAccepted(() => svc, apiKey, sent.get(key) as KeyedRequest, stats, requestDeadline());
    if (again === null || JSON.stringify(again.map((a) => a.ingestId)) !== JSON.stringify(first.map((a) => a.ingestId))) inconsistent += 1;
  }

  const verifyFrom = Date.now();
  const expected = [...acked.values()].reduce((n, a) => n + a.length, 0);
  let listed: Listed[] = [];
  await eventually(
    async () => {
      listed = await listAll(svc, apiKey, TENANT);
      return listed.length >= expected ? true : undefined;
    },
    90_000,
    500,
  ).catch(() => undefined);
  // A little longer: a record stored twice would be indexed by now too.
  await sleep(1000);
  listed = await listAll(svc, apiKey, TENANT);
  const r = reckon(acked, listed);
  const indexedAfter = (Date.now() - verifyFrom) / 1000;
  r.inconsistentAnswers = inconsistent;
  t.comment(
    `${o.name}: ${kills} SIGKILLs in ${loadSeconds.toFixed(1)} s; ${stats.requests} requests (${stats.attempts} attempts, ${stats.connectionErrors} connection errors, ${stats.retryableAnswers} 5xx/409 retried, ${stats.replayed} answered as replays); ` +
      `${r.acknowledged} records acknowledged, ${r.listed} listed, ${r.lost} lost, ${r.storedTwice} stored twice, ${r.unacknowledged} never acknowledged, ${inconsistent} of ${sample.length} re-sent keys answered differently`,
  );
  t.equal(kills, o.kills, 'the service was killed every time');
  t.same(stats.unexpected.slice(0, 5), [], 'every answer was 202 or retryable');
  t.ok(r.acknowledged > 0, 'records were acknowledged');
  t.equal(r.lost, 0, 'no acknowledged record lost');
  t.equal(r.storedTwice, 0, 'no record stored twice');
  t.equal(r.unacknowledged, 0, 'no record stored that no answer named');
  t.equal(inconsistent, 0, 'a key answers with the record its first 202 named');

  // Anchored afterwards, on one chain of batches without a gap.
  const anchored = await eventually(
    async () => {
      const all = await listAll(svc, apiKey, TENANT);
      return all.every((l) => l.status === 'Anchored') ? all.length : undefined;
    },
    120_000,
    1000,
  ).catch(() => -1);
  t.equal(anchored, r.listed, 'every record anchored');
  const anchoredAfter = (Date.now() - verifyFrom) / 1000;
  const snapshots = await allSnapshots(svc, apiKey, TENANT);
  const batches = await batchesOf(svc, apiKey, snapshots);
  const seqs = batches.map((b) => b.batchSeq ?? 0);
  t.same(seqs, Array.from({ length: seqs.length }, (_, i) => i + 1), 'batchSeq 1..n without gaps');
  t.comment(`${o.name}: ${snapshots.length} snapshots in ${batches.length} batches, batchSeq 1..${seqs.at(-1) ?? 0}; listed ${indexedAfter.toFixed(1)} s and anchored ${anchoredAfter.toFixed(1)} s after the load`);
  const health = await request(svc, 'GET', '/api/Admin/health');
  t.equal(health.status, 200, 'healthy at the end');
}
