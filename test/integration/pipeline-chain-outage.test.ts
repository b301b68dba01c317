import t from 'tap';
import { ANVIL_DEV_ANCHORER_KEY } from '../../src/adapters/chain/anvil-node.js';
import { deployAnchorContract } from '../../src/adapters/chain/ethers-chain.js';
import { startAnvil } from '../harness/anvil.js';
import { createKey, eventually, request, startService } from '../harness/service.js';

/**
 * An external chain that goes down past the automatic retries: the snapshot goes to Failed, the
 * retry endpoint sends it back, and once the node is up again it is Anchored.
 */

interface Snap {
  snapshotId: string;
  status: string;
  recordIds: string[];
}

t.test('chain down past the retries: Failed, then retry, then Anchored', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const deployment = await deployAnchorContract({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANVIL_DEV_ANCHORER_KEY } });
  const svc = await startService({
    env: {
      EVM_RPC_URL: anvil.rpcUrl,
      DRIS_CHAIN_ID: String(anvil.chainId),
      DRIS_ANCHORER_KEY: ANVIL_DEV_ANCHORER_KEY,
      DRIS_CONTRACT_ADDRESS: deployment.address,
      DRIS_BATCH_MAX_WAIT_MS: '300',
      DRIS_ANCHOR_MAX_ATTEMPTS: '3',
      DRIS_ANCHOR_RETRY_BASE_MS: '200',
      DRIS_RATE_LIMITS: 'standard=1000000',
    },
  });
  t.teardown(() => svc.dispose());
  const key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  const ingest = async (recordId: string): Promise<void> => {
    const r = await request(svc, 'POST', '/api/v1/records', { key, body: { tenantId: 'acme', database: 'd', collection: 'c', recordId, recordPayload: { recordId } } });
    t.equal(r.status, 202);
  };
  const snapshotOf = (recordId: string, status: string) =>
    eventually(
      async () => {
        const r = await request<{ items: Snap[] }>(svc, 'GET', `/api/v1/snapshots?recordId=${recordId}`, { key });
        return r.body.items.find((s) => s.status === status);
      },
      180_000,
      300,
    );

  await ingest('before');
  await snapshotOf('before', 'Anchored');

  await anvil.node.stop();
  await ingest('during');
  const failed = await snapshotOf('during', 'Failed');
  const life = await request<{ items: { state: string }[] }>(svc, 'GET', `/api/v1/snapshots/${failed.snapshotId}/lifecycle`, { key });
  t.equal(life.body.items.at(-1)?.state, 'Failed');

  await anvil.node.start();
  const retry = await request<{ status: string }>(svc, 'POST', `/api/v1/snapshots/${failed.snapshotId}/retry`, { key, body: {} });
  t.equal(retry.status, 202);
  t.equal(retry.body.status, 'PendingAnchor');
  const anchored = await snapshotOf('during', 'Anchored');
  t.equal(anchored.snapshotId, failed.snapshotId);
  const states = (await request<{ items: { state: string }[] }>(svc, 'GET', `/api/v1/snapshots/${failed.snapshotId}/lifecycle`, { key })).body.items.map((e) => e.state);
  t.same(states.slice(-4), ['Failed', 'PendingAnchor', 'Batched', 'Anchored']);
  const batch = await request<{ batchSeq: number }>(svc, 'GET', `/api/v1/batches/${(await request<{ batchId: string }>(svc, 'GET', `/api/v1/snapshots/${failed.snapshotId}`, { key })).body.batchId}`, { key });
  t.equal(batch.body.batchSeq, 2, 'the next sequence after the first batch');
});
