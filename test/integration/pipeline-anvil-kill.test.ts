import { readFile } from 'node:fs/promises';
import path from 'node:path';
import t from 'tap';
import { allSnapshots, anchorContract, assertGapFreeAnchors, batchesOf, chainOf, lifecycle, rootOfLeaves, type AnchorContractReader, type ManifestBody, type SnapshotBody } from '../harness/pipeline.js';
import { createKey, eventually, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * The embedded anvil killed with SIGKILL: anchors since its last state dump are gone. dris
 * supervises its anvil child, restarts it on the same state and port, and reconciles: every batch
 * it believed Anchored is checked against the contract, the lost ones are anchored again in
 * order, and the contract's sequence stays gap-free. The same holds when dris and its anvil are
 * both SIGKILLed and dris is started again.
 *
 * DRIS_ANVIL_STATE_INTERVAL_S is long here so that only a SIGTERM dumps the state: what a SIGKILL
 * loses is then exactly what came after the last SIGTERM, not a race with the periodic dump.
 */

const REQUEUED = 'anchor missing on-chain; re-queued';

function killPid(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

async function anvilPid(svc: ServiceHandle): Promise<number> {
  return Number((await readFile(path.join(svc.dataDir, 'anvil', 'anvil.pid'), 'utf8')).trim());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('anvil SIGKILLed: supervised restart and reconciliation; then dris and anvil SIGKILLed: reconciliation at start', async (t) => {
  const env = {
    DRIS_BATCH_MAX_RECORDS: '100',
    DRIS_BATCH_MAX_WAIT_MS: '300',
    DRIS_ANCHOR_RETRY_BASE_MS: '100',
    DRIS_ANCHOR_RETRY_MAX_MS: '1000',
    DRIS_ANCHOR_MAX_ATTEMPTS: '100',
    DRIS_ANVIL_STATE_INTERVAL_S: '3600',
    DRIS_RATE_LIMITS: 'standard=1000000',
  };
  let svc = await startService({ env });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  let next = 0;
  const ingest = async (count: number): Promise<void> => {
    const ids = Array.from({ length: count }, (_, i) => `r-${next + i}`);
    next += count;
    const r = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: ids.map((recordId, i) => ({ database: 'd', collection: 'c', recordId, recordPayload: { i } })) },
    });
    t.equal(r.status, 202);
    t.equal(r.body.accepted, count);
  };
  /** Every snapshot Anchored, `count` of them, and the given ones re-queued once before that. */
  const settled = (count: number, requeued: readonly string[]): Promise<SnapshotBody[]> =>
    eventually(
      async () => {
        const snaps = await allSnapshots(svc, key);
        if (snaps.length !== count || !snaps.every((s) => s.status === 'Anchored')) return undefined;
        for (const id of requeued) {
          const life = await lifecycle(svc, key, id);
          if (!life.some((e) => e.reason === REQUEUED) || life.at(-1)?.state !== 'Anchored') return undefined;
        }
        return snaps;
      },
      120_000,
      300,
    );
  const restartedAnvil = (before: number): Promise<number> =>
    eventually(
      async () => {
        const pid = await anvilPid(svc);
        if (pid === before || !alive(pid)) return undefined;
        const health = await request<{ dependencies?: unknown }>(svc, 'GET', '/api/Admin/health');
        return health.status === 200 ? pid : undefined;
      },
      60_000,
      200,
    );

  /** What must hold at the end of each act: gap-free sequences, one transaction each, roots equal. */
  const verify = async (snaps: readonly SnapshotBody[], reader: AnchorContractReader): Promise<void> => {
    const batches = await batchesOf(svc, key, snaps);
    const events = await assertGapFreeAnchors(t, batches, reader);
    for (const b of batches) {
      if (b.ipfsCid === null || b.chainTxHash === null) throw new Error('an anchored batch without a CID or transaction');
      const manifest = await request<ManifestBody>(svc, 'GET', `/ipfs/${b.ipfsCid}`);
      t.equal(manifest.status, 200);
      t.equal(manifest.body.batchSeq, b.batchSeq, 'the manifest names the sequence the batch holds');
      const root = rootOfLeaves(manifest.body.leaves);
      t.equal(root, b.merkleRoot, 'the manifest leaves give the batch root');
      t.equal(await reader.seqOf(root), b.batchSeq, 'the contract holds that root at that sequence');
      const event = events.find((e) => e.batchSeq === b.batchSeq);
      t.equal(event?.txHash, b.chainTxHash, 'the batch records the transaction that holds its event');
      t.equal((await reader.provider.getTransactionReceipt(b.chainTxHash))?.logs.length, 1, 'one Anchored event in the transaction');
    }
  };

  // Act 1: anchored, then dumped by a SIGTERM of anvil, which the supervisor restarts.
  await ingest(100);
  await settled(1, []);
  const chain = await chainOf(svc);
  const first = await anvilPid(svc);
  killPid(first, 'SIGTERM');
  const second = await restartedAnvil(first);

  // Act 2: two batches anchored after that dump, then anvil SIGKILLed: both are lost.
  await ingest(200);
  const beforeKill = await settled(3, []);
  killPid(second, 'SIGKILL');
  await ingest(50); // a batch formed around the restart: it must not take a lost batch's place
  const third = await restartedAnvil(second);
  t.not(third, second, 'dris restarted its anvil itself');
  const lostIds = beforeKill.slice(1).map((s) => s.snapshotId);
  const afterKill = await settled(4, lostIds);
  let reader = await anchorContract(chain.rpcUrl, chain.contractAddress);
  t.teardown(() => reader.close());
  await verify(afterKill, reader);
  for (const id of lostIds) {
    const states = (await lifecycle(svc, key, id)).map((e) => e.state);
    t.same(states, ['Ingested', 'PendingAnchor', 'Batched', 'Anchored', 'Batched', 'Anchored'], 'anchored, lost, re-queued, anchored again');
  }
  const newcomer = afterKill.find((s) => s.recordCount === 50);
  const seqs = new Map((await batchesOf(svc, key, afterKill)).map((b) => [b.batchId, b.batchSeq]));
  t.same(
    beforeKill.map((s) => seqs.get(s.batchId)),
    [1, 2, 3],
    'the lost batches are anchored again under the sequences they had',
  );
  t.equal(seqs.get(newcomer?.batchId ?? ''), 4, 'the newcomer comes after them');
  t.same(
    (await lifecycle(svc, key, newcomer?.snapshotId ?? '')).map((e) => e.state),
    ['Ingested', 'PendingAnchor', 'Batched', 'Anchored'],
    'the batch formed during the outage is anchored once, after the lost ones',
  );

  const lifecycleLengths = new Map<string, number>();
  for (const s of afterKill) lifecycleLengths.set(s.snapshotId, (await lifecycle(svc, key, s.snapshotId)).length);

  // Act 3: a SIGTERM dump (acts 1-2 persisted), one more batch, then dris and its anvil both
  // SIGKILLed, as in a power loss: the new dris reconciles at start.
  const fourth = await anvilPid(svc);
  killPid(fourth, 'SIGTERM');
  const fifth = await restartedAnvil(fourth);
  await ingest(100);
  const beforeCrash = await settled(5, []);
  const lastId = beforeCrash.find((s) => !afterKill.some((a) => a.snapshotId === s.snapshotId))?.snapshotId ?? '';
  await svc.kill('SIGKILL');
  t.ok(alive(fifth), 'the anvil of a SIGKILLed dris keeps running');
  killPid(fifth, 'SIGKILL');
  reader.close();

  svc = await startService({ env, dataDir: svc.dataDir });
  const afterCrash = await settled(5, [lastId]);
  const restarted = await chainOf(svc);
  t.equal(restarted.contractAddress, chain.contractAddress, 'the same contract, from the dumped state');
  reader = await anchorContract(restarted.rpcUrl, restarted.contractAddress);
  await verify(afterCrash, reader);
  t.same(
    (await lifecycle(svc, key, lastId)).map((e) => e.state),
    ['Ingested', 'PendingAnchor', 'Batched', 'Anchored', 'Batched', 'Anchored'],
    'the batch lost with the crash is anchored again',
  );
  for (const s of afterKill) {
    t.equal((await lifecycle(svc, key, s.snapshotId)).length, lifecycleLengths.get(s.snapshotId), 'a batch held by the dump is left alone');
  }
});
