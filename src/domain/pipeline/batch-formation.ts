import type { HashingBackend } from '../hashing/port.js';
import { HASH_LEN, type FlatProofs } from '../hashing/merkle.js';
import type { AcceptedRecord } from '../records/types.js';
import type { Batch, LeafAssignment, LifecycleEntry, Manifest, PreviousBatch, Snapshot } from './types.js';

/**
 * Forming a batch from accumulated records: pure and deterministic, so the same records always
 * form the same batch (same id, same leaf order, same root) — which is what makes re-forming a
 * batch after a crash idempotent.
 */

export interface FormedBatch {
  readonly batch: Batch;
  readonly snapshots: readonly Snapshot[];
  readonly assignments: readonly LeafAssignment[];
  readonly lifecycle: readonly LifecycleEntry[];
  /** The records in leaf order. */
  readonly records: readonly AcceptedRecord[];
}

function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex');
}

/** Leaf order: by tenant, then ingestId (acceptance time, then randomness): a total order. */
function leafOrder(a: AcceptedRecord, b: AcceptedRecord): number {
  if (a.tenantId !== b.tenantId) return a.tenantId < b.tenantId ? -1 : 1;
  return a.ingestId < b.ingestId ? -1 : a.ingestId > b.ingestId ? 1 : 0;
}

export function formBatch(records: readonly AcceptedRecord[], hashing: HashingBackend, nowMs: number): FormedBatch {
  if (records.length === 0) throw new RangeError('a batch needs at least one record');
  const ordered = [...new Map(records.map((r) => [r.ingestId, r])).values()].sort(leafOrder);
  const ids = ordered.map((r) => r.ingestId);
  const batchId = `b_${hashing.sha256Hex(Buffer.from(ids.join('\n'), 'utf8')).slice(0, 32)}`;
  const leaves = ordered.map((r) => Buffer.from(r.recordHash, 'hex'));
  const proofs = hashing.allProofs(leaves);
  const proofHex = hex(proofs.hashes);
  const merkleRoot = hex(proofs.root);
  const treeSize = ordered.length;

  const byTenant = new Map<string, { records: AcceptedRecord[]; first: number }>();
  ordered.forEach((r, i) => {
    const g = byTenant.get(r.tenantId) ?? { records: [], first: i };
    g.records.push(r);
    byTenant.set(r.tenantId, g);
  });

  const snapshots: Snapshot[] = [];
  const assignments: LeafAssignment[] = [];
  const lifecycle: LifecycleEntry[] = [];
  for (const [tenantId, g] of byTenant) {
    const snapshotId = `s_${hashing.sha256Hex(Buffer.from(`${batchId}\n${tenantId}`, 'utf8')).slice(0, 32)}`;
    // snapshotHash commits to the snapshot's records in leaf order (see docs/decisions.md).
    const snapshotHash = hashing.sha256Hex(
      Buffer.from(hashing.canonicalize({ hashScheme: 'dris-v1', tenantId, batchId, recordHashes: g.records.map((r) => r.recordHash) }), 'utf8'),
    );
    snapshots.push({
      snapshotId,
      tenantId,
      batchId,
      status: 'Batched',
      recordIds: g.records.map((r) => r.recordId),
      ingestIds: g.records.map((r) => r.ingestId),
      recordCount: g.records.length,
      snapshotHash,
      merkleRoot: null,
      anchorTimestampMs: null,
      onChainConfirmed: false,
      chainTxHash: null,
      createdAtMs: nowMs,
    });
    g.records.forEach((r, k) => {
      const leafIndex = g.first + k;
      assignments.push({ ingestId: r.ingestId, tenantId, snapshotId, batchId, leafIndex, treeSize, proof: proofOf(proofs, proofHex, leafIndex) });
    });
    const firstAccepted = Math.min(...g.records.map((r) => Date.parse(r.acceptedAt)));
    lifecycle.push(
      { snapshotId, tenantId, state: 'Ingested', atMs: firstAccepted, reason: `${g.records.length} records accepted`, attempt: 0 },
      { snapshotId, tenantId, state: 'PendingAnchor', atMs: nowMs, reason: 'batch closed; snapshot created', attempt: 0 },
      { snapshotId, tenantId, state: 'Batched', atMs: nowMs + 1, reason: `assigned to batch ${batchId}`, attempt: 0 },
    );
  }
  const batch: Batch = {
    batchId,
    createdAtMs: nowMs,
    status: 'Pending',
    treeSize,
    merkleRoot,
    leaves: ordered.map((r) => r.recordHash),
    ingestIds: ids,
    tenants: [...byTenant.keys()],
    batchSeq: null,
    manifestCid: null,
    previous: null,
    chainId: null,
    contractAddress: null,
    txHash: null,
    blockNumber: null,
    anchoredAtMs: null,
    attempts: 0,
    lastError: null,
  };
  return { batch, snapshots, assignments, lifecycle, records: ordered };
}

/** The audit path of a leaf as hex, cut from the hex of all paths (one conversion per batch, not per hash). */
function proofOf(proofs: FlatProofs, allHex: string, index: number): string[] {
  const from = proofs.offsets[index];
  const to = proofs.offsets[index + 1];
  if (from === undefined || to === undefined) throw new RangeError(`leaf index ${index} outside 0..${proofs.treeSize - 1}`);
  const width = HASH_LEN * 2;
  const out: string[] = [];
  for (let k = from; k < to; k++) out.push(allHex.slice(k * width, (k + 1) * width));
  return out;
}

export function buildManifest(batch: Batch, batchSeq: number, previous: PreviousBatch | null): Manifest {
  return {
    hashScheme: 'dris-v1',
    merkleAlgorithm: 'rfc9162-sha256',
    batchId: batch.batchId,
    batchSeq,
    createdAt: new Date(batch.createdAtMs).toISOString(),
    treeSize: batch.treeSize,
    merkleRoot: batch.merkleRoot,
    previous,
    leaves: batch.leaves,
  };
}
