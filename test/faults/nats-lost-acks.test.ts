import t from 'tap';
import { allSnapshots, anchorContract, assertGapFreeAnchors, batchesOf, chainOf } from '../harness/pipeline.js';
import { startNats, startRedis } from '../harness/servers.js';
import { createKey, eventually, request, startService } from '../harness/service.js';
import { startAckDropper } from './helpers/nats-ack-dropper.js';

/**
 * Acks that never reach JetStream after a batch is stored (a NATS node dying with them in flight):
 * the accumulator's acks time out. The records of that batch must not be formed into another batch
 * with the records that come next, which would anchor them under two roots.
 */

t.test('records whose acks were lost after their batch was stored are batched once', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const dropper = await startAckDropper(nats.url);
  t.teardown(() => dropper.close());
  const refused: number[] = [];
  const svc = await startService({
    env: { NATS_URL: dropper.url, REDIS_URL: redis.url, DRIS_BATCH_MAX_RECORDS: '1000', DRIS_BATCH_MAX_WAIT_MS: '300', DRIS_RATE_LIMITS: 'standard=1000000' },
    onLog: (rec, at) => {
      if (rec['component'] === 'accumulator' && Number(rec['level']) >= 40) refused.push(at);
    },
  });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const ingest = async (from: number, count: number): Promise<void> => {
    const r = await request(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: Array.from({ length: count }, (_, i) => ({ database: 'd', collection: 'c', recordId: `r-${from + i}`, recordPayload: { i: from + i } })) },
    });
    t.equal(r.status, 202);
  };

  dropper.dropping = true;
  await ingest(0, 50);
  // The timed batch is stored, then its acks time out (the queue's API timeout, 5 s).
  await eventually(async () => ((await allSnapshots(svc, key)).length === 1 && refused.length > 0 ? true : undefined), 30_000, 100);
  t.ok(dropper.dropped > 0, 'acks were swallowed');
  dropper.dropping = false;

  await ingest(50, 50);
  const snaps = await eventually(
    async () => {
      const all = await allSnapshots(svc, key);
      return all.length >= 2 && all.every((s) => s.status === 'Anchored') ? all : undefined;
    },
    60_000,
    200,
  );
  // A batch formed again would come a flush after the second.
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const final = await allSnapshots(svc, key);
  t.equal(final.length, snaps.length, 'no later batch');
  t.same(
    final.map((s) => s.recordCount),
    [50, 50],
    'a batch of each request, the first not again in the second',
  );
  const ids = (await Promise.all(final.map(async (s) => (await request<{ recordIds: string[] }>(svc, 'GET', `/api/v1/snapshots/${s.snapshotId}`, { key })).body.recordIds))).flat();
  t.equal(ids.length, 100, 'no record in two snapshots');
  t.equal(new Set(ids).size, 100, 'every record in one');
  const chain = await chainOf(svc);
  const reader = await anchorContract(chain.rpcUrl, chain.contractAddress);
  t.teardown(() => reader.close());
  await assertGapFreeAnchors(t, await batchesOf(svc, key, final), reader);
});
