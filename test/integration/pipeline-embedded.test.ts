import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Contract, JsonRpcProvider } from 'ethers';
import t from 'tap';
import { createKey, eventually, repoRoot, request, startService, type ServiceHandle } from '../harness/service.js';
import { chainOf, rootOfLeaves } from '../harness/pipeline.js';

/**
 * The pipeline on the embedded default, through the HTTP API only: batches close at 1000 records
 * or on the timer, every snapshot reaches Anchored, and every root read from the contract equals
 * the root recomputed (independently of dris, in the harness) from the manifest served at /ipfs/{cid}.
 */

interface SnapshotBody {
  snapshotId: string;
  status: string;
  batchId: string;
  recordCount: number;
  onChainConfirmed: boolean;
  chainTxHash?: string;
  merkleRoot?: string;
}
interface BatchBody {
  batchId: string;
  batchSeq: number;
  status: string;
  merkleRoot: string;
  recordCount: number;
  chainTxHash: string;
  ipfsCid: string;
  contractAddress: string;
  blockNumber: number;
  previous: { batchId: string; merkleRoot: string; cid: string } | null;
}

let svc: ServiceHandle;
let key: string;
let otherKey: string;

t.before(async () => {
  svc = await startService({ env: { DRIS_BATCH_MAX_WAIT_MS: '1500', DRIS_RATE_LIMITS: 'standard=1000000' } });
  key = (await createKey(svc, { tenantId: 'acme', clientId: 'app' })).apiKey;
  otherKey = (await createKey(svc, { tenantId: 'globex', clientId: 'app' })).apiKey;
});
t.teardown(() => svc.dispose());

const rec = (i: number, collection: string): Record<string, unknown> => ({ database: 'erp', collection, recordId: `r-${i}`, recordPayload: { i, text: `record ${i}` } });

async function snapshots(k: string, query = ''): Promise<SnapshotBody[]> {
  const r = await request<{ items: SnapshotBody[] }>(svc, 'GET', `/api/v1/snapshots?limit=1000${query}`, { key: k });
  if (r.status !== 200) throw new Error(`${r.status} ${r.text}`);
  return r.body.items;
}

t.test('2500 records end as anchored batches of 1000, 1000 and 500', async (t) => {
  for (const [from, count] of [
    [0, 1000],
    [1000, 1000],
    [2000, 500],
  ] as const) {
    const r = await request<{ accepted: number }>(svc, 'POST', '/api/v1/records/bulk', {
      key,
      body: { tenantId: 'acme', records: Array.from({ length: count }, (_, i) => rec(from + i, 'bulk')) },
    });
    t.equal(r.status, 202);
    t.equal(r.body.accepted, count);
  }
  const snaps = await eventually(
    async () => {
      const s = await snapshots(key);
      return s.length === 3 && s.every((x) => x.status === 'Anchored') ? s : undefined;
    },
    90_000,
    500,
  );
  t.same(snaps.map((s) => s.recordCount).sort((a, b) => b - a), [1000, 1000, 500]);
  t.ok(snaps.every((s) => s.onChainConfirmed && /^0x[0-9a-f]{64}$/.test(s.chainTxHash ?? '')));

  const chain = await chainOf(svc);
  const artifact = JSON.parse(await readFile(path.join(repoRoot, 'contracts', 'artifacts', 'DrisAnchor.json'), 'utf8')) as { abi: never };
  const provider = new JsonRpcProvider(chain.rpcUrl);
  t.teardown(() => provider.destroy());
  const contract = new Contract(chain.contractAddress, artifact.abi, provider);

  const batches: BatchBody[] = [];
  for (const s of snaps) {
    const b = await request<BatchBody>(svc, 'GET', `/api/v1/batches/${s.batchId}`, { key });
    t.equal(b.status, 200);
    batches.push(b.body);
  }
  batches.sort((a, b) => a.batchSeq - b.batchSeq);
  t.same(batches.map((b) => b.batchSeq), [1, 2, 3], 'no gap in the sequence');
  t.equal(new Set(batches.map((b) => b.chainTxHash)).size, 3, 'one transaction per batch');
  t.equal(batches[0]?.previous, null);
  for (const [i, b] of batches.entries()) {
    const manifest = await request<{ batchId: string; batchSeq: number; merkleRoot: string; treeSize: number; leaves: string[]; previous: unknown }>(svc, 'GET', `/ipfs/${b.ipfsCid}`);
    t.equal(manifest.status, 200);
    t.equal(manifest.body.batchSeq, b.batchSeq);
    t.equal(manifest.body.leaves.length, b.recordCount);
    const recomputed = rootOfLeaves(manifest.body.leaves);
    t.equal(recomputed, b.merkleRoot, 'manifest leaves give the batch root');
    const [seq] = (await contract.getFunction('anchorOf').staticCall(`0x${recomputed}`)) as [bigint, bigint];
    t.equal(Number(seq), b.batchSeq, 'the contract holds the recomputed root at this sequence');
    const receipt = await provider.getTransactionReceipt(b.chainTxHash);
    t.equal(receipt?.logs.length, 1, 'one Anchored event in the transaction');
    if (i > 0) t.same(manifest.body.previous, { batchId: batches[i - 1]?.batchId, merkleRoot: batches[i - 1]?.merkleRoot, cid: batches[i - 1]?.ipfsCid });
  }
  t.equal(Number(await contract.getFunction('lastSequence').staticCall()), 3);
});

t.test('a lone record is anchored when the timer fires, with its lifecycle and timeline', async (t) => {
  const r = await request(svc, 'POST', '/api/v1/records', { key, body: { tenantId: 'acme', ...rec(1, 'lone') } });
  t.equal(r.status, 202);
  const snap = await eventually(
    async () => {
      const s = await snapshots(key, '&recordId=r-1');
      return s.find((x) => x.recordCount === 1 && x.status === 'Anchored');
    },
    60_000,
    300,
  );
  const life = await request<{ items: { state: string }[] }>(svc, 'GET', `/api/v1/snapshots/${snap.snapshotId}/lifecycle`, { key });
  t.same(life.body.items.map((e) => e.state), ['Ingested', 'PendingAnchor', 'Batched', 'Anchored']);
  const tl = await request<{ items: { events: { event: string }[] }[] }>(svc, 'GET', '/api/v1/timeline/record?collection=lone&recordId=r-1', { key });
  t.equal(tl.status, 200);
  t.same(tl.body.items[0]?.events.map((e) => e.event), ['Accepted', 'Indexed', 'PendingAnchor', 'Batched', 'Anchored']);
  const retry = await request<{ error: string }>(svc, 'POST', `/api/v1/snapshots/${snap.snapshotId}/retry`, { key, body: {} });
  t.equal(retry.status, 409, 'only a Failed snapshot can be retried');
  t.equal(retry.body.error, 'invalid_state');
  t.equal((await request(svc, 'POST', '/api/v1/snapshots/s_unknown/retry', { key, body: {} })).status, 404);
  // Another tenant sees neither the snapshot nor its batch.
  t.equal((await request(svc, 'GET', `/api/v1/snapshots/${snap.snapshotId}`, { key: otherKey })).status, 404);
  t.equal((await request(svc, 'GET', `/api/v1/batches/${snap.batchId}`, { key: otherKey })).status, 404);
  t.equal((await request(svc, 'GET', '/api/v1/snapshots?tenantId=acme', { key: otherKey })).status, 403);
});
