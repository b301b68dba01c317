import t from 'tap';
import { startKubo } from '../harness/kubo.js';
import { allSnapshots, anchorContract, assertGapFreeAnchors, batchesOf, chainOf, getBatch, lifecycle, rootOfLeaves, type ManifestBody } from '../harness/pipeline.js';
import { createKey, eventually, request, startService } from '../harness/service.js';

/**
 * IPFS down, then back: dris pins manifests on a real Kubo daemon (IPFS_API_URL). With the daemon
 * stopped, records are still accepted and batched, and the anchorer retries with backoff instead
 * of anchoring a root whose manifest is not pinned; once Kubo is back on the same repo and port,
 * every snapshot reaches Anchored, each batch in one transaction, with gap-free sequences and the
 * on-chain root equal to the root of the manifest Kubo serves.
 */

t.test('IPFS down then back: retries, then every snapshot Anchored', async (t) => {
  const kubo = await startKubo();
  t.teardown(() => kubo.stop());
  const svc = await startService({
    env: {
      IPFS_API_URL: kubo.apiUrl,
      DRIS_BATCH_MAX_RECORDS: '100',
      DRIS_BATCH_MAX_WAIT_MS: '300',
      DRIS_ANCHOR_RETRY_BASE_MS: '100',
      DRIS_ANCHOR_RETRY_MAX_MS: '800',
      // Enough attempts to outlast the outage below, so nothing goes to Failed.
      DRIS_ANCHOR_MAX_ATTEMPTS: '100',
      DRIS_RATE_LIMITS: 'standard=1000000',
    },
  });
  t.teardown(() => svc.dispose());
  const acme = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const globex = (await createKey(svc, { tenantId: 'globex', clientId: 'app' })).apiKey;
  const bulk = async (key: string, tenantId: string, from: number, count: number): Promise<void> => {
    const r = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId, records: Array.from({ length: count }, (_, i) => ({ database: 'd', collection: 'c', recordId: `r-${from + i}`, recordPayload: { i: from + i } })) },
    });
    t.equal(r.status, 202);
    t.equal(r.body.accepted, count);
  };

  // The Kubo path works before the outage.
  await bulk(acme, 'acme', 0, 1);
  await eventually(async () => ((await allSnapshots(svc, acme)).some((s) => s.status === 'Anchored') ? true : undefined), 60_000, 200);

  await kubo.kill('SIGTERM');
  await bulk(acme, 'acme', 1, 150);
  await bulk(globex, 'globex', 0, 60);

  // Batches form and wait; the anchorer retries them with backoff, recording each attempt.
  const waiting = await eventually(
    async () => {
      const snaps = (await allSnapshots(svc, acme)).filter((s) => s.status !== 'Anchored');
      if (snaps.length === 0) return undefined;
      const batches = await batchesOf(svc, acme, snaps);
      return batches.every((b) => b.attempts >= 3) ? { snaps, batches } : undefined;
    },
    60_000,
    200,
  );
  for (const s of waiting.snaps) t.equal(s.status, 'Batched', 'a snapshot waits as Batched while IPFS is down');
  for (const b of waiting.batches) {
    t.equal(b.status, 'Pending');
    t.equal(b.lastError, 'dependency_unavailable', 'the attempt failed on the unreachable IPFS node');
    t.equal(b.batchSeq, null, 'nothing anchored without a pinned manifest');
    t.equal(b.chainTxHash, null);
  }
  const chain = await chainOf(svc);
  const reader = await anchorContract(chain.rpcUrl, chain.contractAddress);
  t.teardown(() => reader.close());
  t.equal(await reader.lastSequence(), 1, 'the chain holds only the batch anchored before the outage');

  await kubo.restart();

  const all = await eventually(
    async () => {
      const snaps = [...(await allSnapshots(svc, acme)), ...(await allSnapshots(svc, globex))];
      return snaps.length > 0 && snaps.every((s) => s.status === 'Anchored') && snaps.some((s) => s.tenantId === 'globex') ? snaps : undefined;
    },
    90_000,
    300,
  );
  t.equal(all.filter((s) => s.tenantId === 'acme').reduce((n, s) => n + s.recordCount, 0), 151, 'every acme record is in an anchored snapshot');
  t.equal(all.filter((s) => s.tenantId === 'globex').reduce((n, s) => n + s.recordCount, 0), 60, 'every globex record too');

  const batches = [...(await batchesOf(svc, acme, all.filter((s) => s.tenantId === 'acme')))];
  for (const b of await batchesOf(svc, globex, all.filter((s) => s.tenantId === 'globex'))) {
    if (!batches.some((x) => x.batchId === b.batchId)) batches.push(b);
  }
  batches.sort((a, b) => (a.batchSeq ?? 0) - (b.batchSeq ?? 0));
  await assertGapFreeAnchors(t, batches, reader);

  for (const b of batches) {
    t.equal(b.status, 'Anchored');
    if (b.ipfsCid === null || b.chainTxHash === null) throw new Error('an anchored batch without a CID or transaction');
    // Read back from Kubo itself: the manifest is pinned there, and its leaves give the root.
    const pinned = await fetch(`${kubo.apiUrl}/api/v0/pin/ls?arg=${b.ipfsCid}&type=recursive`, { method: 'POST' });
    t.equal(pinned.status, 200, 'the manifest is pinned on Kubo');
    const res = await fetch(`${kubo.apiUrl}/api/v0/cat?arg=${b.ipfsCid}`, { method: 'POST' });
    t.equal(res.status, 200);
    const manifest = (await res.json()) as ManifestBody;
    t.equal(manifest.batchSeq, b.batchSeq);
    t.equal(manifest.leaves.length, b.recordCount);
    const root = rootOfLeaves(manifest.leaves);
    t.equal(root, b.merkleRoot, 'the manifest leaves give the batch root');
    t.equal(await reader.seqOf(root), b.batchSeq, 'the contract holds that root at that sequence');
    const receipt = await reader.provider.getTransactionReceipt(b.chainTxHash);
    t.equal(receipt?.status, 1);
    t.equal(receipt?.logs.length, 1, 'one Anchored event in the transaction');
  }

  // The batches that waited out the outage took several attempts; their snapshots' lifecycle
  // went Batched -> Anchored directly (retries are attempts, not transitions), on the last attempt.
  for (const b of waiting.batches) {
    const after = await getBatch(svc, acme, b.batchId);
    t.ok(after.attempts > 3, `batch ${after.batchSeq ?? '?'} needed ${after.attempts} attempts`);
  }
  const waited = waiting.snaps[0];
  if (waited === undefined) throw new Error('no snapshot waited');
  const life = await lifecycle(svc, acme, waited.snapshotId);
  t.same(
    life.map((e) => e.state),
    ['Ingested', 'PendingAnchor', 'Batched', 'Anchored'],
  );
  t.ok((life.at(-1)?.attempt ?? 0) > 3, 'the Anchored entry names the attempt that succeeded');
});
