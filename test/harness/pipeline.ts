import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { Contract, JsonRpcProvider } from 'ethers';
import { adminRequest, repoRoot, request, type ServiceHandle } from './service.js';

/**
 * What the pipeline tests check from outside dris: snapshots and batches through the HTTP API,
 * roots recomputed from manifests with a plain RFC 9162 implementation, and the anchor contract
 * read directly from the chain.
 */

export interface SnapshotBody {
  snapshotId: string;
  tenantId: string;
  status: string;
  batchId: string;
  recordCount: number;
  onChainConfirmed: boolean;
  chainTxHash?: string;
  merkleRoot?: string;
}

export interface BatchBody {
  batchId: string;
  batchSeq: number | null;
  status: string;
  merkleRoot: string;
  recordCount: number;
  chainTxHash: string | null;
  ipfsCid: string | null;
  contractAddress: string | null;
  blockNumber: number | null;
  attempts: number;
  lastError: string | null;
  previous: { batchId: string; merkleRoot: string; cid: string } | null;
}

export interface ManifestBody {
  batchId: string;
  batchSeq: number;
  merkleRoot: string;
  treeSize: number;
  leaves: string[];
  previous: { batchId: string; merkleRoot: string; cid: string } | null;
}

export interface LifecycleItem {
  state: string;
  reason: string;
  attempt: number;
}

const sha = (...parts: Buffer[]): Buffer => createHash('sha256').update(Buffer.concat(parts)).digest();

/** RFC 9162 tree hash, written out plainly as the RFC states it (independent of dris's code). */
function mth(leaves: Buffer[]): Buffer {
  if (leaves.length === 0) return sha();
  if (leaves.length === 1) return sha(Buffer.from([0]), leaves[0] as Buffer);
  let k = 1;
  while (k * 2 < leaves.length) k *= 2;
  return sha(Buffer.from([1]), mth(leaves.slice(0, k)), mth(leaves.slice(k)));
}

/** The root of a manifest's leaves (hex record hashes), lowercase hex. */
export function rootOfLeaves(leaves: readonly string[]): string {
  return mth(leaves.map((l) => Buffer.from(l, 'hex'))).toString('hex');
}

/** Every snapshot of a tenant, all pages. */
export async function allSnapshots(svc: { url: string }, key: string, tenantId?: string): Promise<SnapshotBody[]> {
  const out: SnapshotBody[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `limit=1000${tenantId === undefined ? '' : `&tenantId=${tenantId}`}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const r = await request<{ items: SnapshotBody[]; nextCursor: string | null }>(svc, 'GET', `/api/v1/snapshots?${q}`, { key });
    if (r.status !== 200) throw new Error(`snapshot listing answered ${r.status}`);
    out.push(...r.body.items);
    cursor = r.body.nextCursor;
  } while (cursor !== null);
  return out;
}

export async function getBatch(svc: { url: string }, key: string, batchId: string): Promise<BatchBody> {
  const r = await request<BatchBody>(svc, 'GET', `/api/v1/batches/${batchId}`, { key });
  if (r.status !== 200) throw new Error(`batch ${batchId} answered ${r.status}`);
  return r.body;
}

export async function lifecycle(svc: { url: string }, key: string, snapshotId: string): Promise<LifecycleItem[]> {
  const r = await request<{ items: LifecycleItem[] }>(svc, 'GET', `/api/v1/snapshots/${snapshotId}/lifecycle`, { key });
  if (r.status !== 200) throw new Error(`lifecycle of ${snapshotId} answered ${r.status}`);
  return r.body.items;
}

/** The distinct batches of these snapshots, in batchSeq order. */
export async function batchesOf(svc: { url: string }, key: string, snapshots: readonly SnapshotBody[]): Promise<BatchBody[]> {
  const ids = [...new Set(snapshots.map((s) => s.batchId))];
  const batches: BatchBody[] = [];
  for (const id of ids) batches.push(await getBatch(svc, key, id));
  return batches.sort((a, b) => (a.batchSeq ?? 0) - (b.batchSeq ?? 0));
}

export interface AnchorContractReader {
  readonly provider: JsonRpcProvider;
  readonly contract: Contract;
  lastSequence(): Promise<number>;
  /** The batchSeq the contract holds for a root, 0 when none. */
  seqOf(rootHex: string): Promise<number>;
  /** Every Anchored event of the contract: one per anchor transaction that counts. */
  anchoredEvents(): Promise<{ batchSeq: number; merkleRoot: string; txHash: string }[]>;
  close(): void;
}

export async function anchorContract(rpcUrl: string, address: string): Promise<AnchorContractReader> {
  const artifact = JSON.parse(await readFile(path.join(repoRoot, 'contracts', 'artifacts', 'DrisAnchor.json'), 'utf8')) as { abi: never };
  const provider = new JsonRpcProvider(rpcUrl, undefined, { staticNetwork: true, cacheTimeout: -1 });
  const contract = new Contract(address, artifact.abi, provider);
  return {
    provider,
    contract,
    lastSequence: async () => Number((await contract.getFunction('lastSequence').staticCall()) as bigint),
    seqOf: async (rootHex) => Number(((await contract.getFunction('anchorOf').staticCall(`0x${rootHex}`)) as [bigint, bigint])[0]),
    anchoredEvents: async () => {
      const filter = contract.filters['Anchored'];
      if (filter === undefined) throw new Error('the ABI has no Anchored event');
      const logs = await contract.queryFilter(filter, 0, 'latest');
      return logs.map((l) => {
        const parsed = contract.interface.parseLog({ topics: [...l.topics], data: l.data });
        if (parsed === null) throw new Error('unparsable Anchored log');
        return { batchSeq: Number(parsed.args.getValue('batchSeq') as bigint), merkleRoot: (parsed.args.getValue('merkleRoot') as string).slice(2), txHash: l.transactionHash };
      });
    },
    close: () => provider.destroy(),
  };
}

/**
 * The chain section of the detailed health report (administration listener): the node this
 * service anchors through, which the public health answer does not name.
 */
export async function chainOf(svc: ServiceHandle): Promise<{ rpcUrl: string; contractAddress: string }> {
  const health = await adminRequest<{ chain?: { rpcUrl: string; contractAddress: string } }>(svc, 'GET', '/admin/v1/health');
  if (health.body.chain === undefined) throw new Error('the health answer has no chain section');
  return health.body.chain;
}

/** The assertions every anchoring run ends with; only `equal` and `same` of a tap test are used. */
interface Asserts {
  equal(found: unknown, wanted: unknown, message: string): unknown;
  same(found: unknown, wanted: unknown, message: string): unknown;
}

/**
 * Gap-free anchoring: batchSeq 1..n, the contract exactly that far, one Anchored event per batch
 * (none lost, none twice) and one transaction per batch. Returns the events for further checks.
 */
export async function assertGapFreeAnchors(t: Asserts, batches: readonly BatchBody[], reader: AnchorContractReader): Promise<Awaited<ReturnType<AnchorContractReader['anchoredEvents']>>> {
  t.same(
    batches.map((b) => b.batchSeq),
    batches.map((_, i) => i + 1),
    'batchSeq 1..n without a gap',
  );
  t.equal(await reader.lastSequence(), batches.length, 'the contract went exactly as far');
  const events = await reader.anchoredEvents();
  t.same(
    events.map((e) => e.batchSeq),
    batches.map((b) => b.batchSeq),
    'one Anchored event per batch on the chain as it stands: none lost, none twice',
  );
  t.equal(new Set(batches.map((b) => b.chainTxHash)).size, batches.length, 'one transaction per batch');
  return events;
}
