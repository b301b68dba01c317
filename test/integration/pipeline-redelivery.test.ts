import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { allSnapshots, anchorContract, batchesOf, chainOf, lifecycle } from '../harness/pipeline.js';
import { createKey, eventually, request, startService } from '../harness/service.js';

/**
 * Messages handed out again after a restart, that were already batched: the embedded queue keeps
 * each consumer's ack floor on disk lazily, so a crash can lose its last moves, and a restarted
 * queue counts deliveries from 1 again. Here the accumulator's floor is moved back one message
 * while dris is down, as a crash can leave it: that message comes back alone, so its records
 * would now form batches of another composition than before, and none must be batched twice.
 */

t.test('batched messages delivered again after a restart are not batched twice', async (t) => {
  const env = { DRIS_BATCH_MAX_RECORDS: '100', DRIS_BATCH_MAX_WAIT_MS: '300', DRIS_RATE_LIMITS: 'standard=1000000' };
  let svc = await startService({ env });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const ingest = async (from: number, count: number): Promise<void> => {
    const r = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: Array.from({ length: count }, (_, i) => ({ database: 'd', collection: 'c', recordId: `r-${from + i}`, recordPayload: { i: from + i } })) },
    });
    t.equal(r.status, 202);
  };
  const anchored = (count: number, records: number) =>
    eventually(
      async () => {
        const snaps = await allSnapshots(svc, key);
        return snaps.length === count && snaps.every((s) => s.status === 'Anchored') && snaps.reduce((n, s) => n + s.recordCount, 0) === records ? snaps : undefined;
      },
      90_000,
      300,
    );

  // Two messages of 150 records: batches of 100 straddle them (100 | 50 + 50 | 100).
  await ingest(0, 150);
  await ingest(150, 150);
  await anchored(3, 300);
  await svc.stop();

  const floorFile = path.join(svc.dataDir, 'queue', 'consumers', 'accumulator.json');
  const floor = JSON.parse(await readFile(floorFile, 'utf8')) as { ackFloor: number };
  t.equal(floor.ackFloor, 2, 'both messages were acked');
  await writeFile(floorFile, JSON.stringify({ ackFloor: 1 }));

  svc = await startService({ env, dataDir: svc.dataDir });
  await ingest(300, 1); // after the redelivered ones in the stream: processed once they are
  const snaps = await anchored(4, 301);
  const ids = (await Promise.all(snaps.map(async (s) => (await request<{ recordIds: string[] }>(svc, 'GET', `/api/v1/snapshots/${s.snapshotId}`, { key })).body.recordIds))).flat();
  t.equal(ids.length, 301);
  t.equal(new Set(ids).size, 301, 'every record in exactly one snapshot');
  for (const s of snaps) {
    t.same(
      (await lifecycle(svc, key, s.snapshotId)).map((e) => e.state),
      ['Ingested', 'PendingAnchor', 'Batched', 'Anchored'],
      'formed once, anchored once',
    );
  }
  const batches = await batchesOf(svc, key, snaps);
  t.same(
    batches.map((b) => b.batchSeq),
    [1, 2, 3, 4],
  );
  const chain = await chainOf(svc);
  const reader = await anchorContract(chain.rpcUrl, chain.contractAddress);
  t.teardown(() => reader.close());
  t.equal((await reader.anchoredEvents()).length, 4, 'four anchors, no batch twice');
  const again = JSON.parse(await readFile(floorFile, 'utf8')) as { ackFloor: number };
  t.equal(again.ackFloor, 3, 'the message delivered again was acked again, and the new one');
});
