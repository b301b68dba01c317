import { createHash } from 'node:crypto';
import type { FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { AnchorReceipt, AnchorRequest, Chain, ChainInfo, OnChainAnchor, Pinner, PipelineStore, RecordTrace, SnapshotQuery } from '../../src/domain/pipeline/ports.js';
import type { Batch, BatchRef, BatchStatus, LifecycleEntry, Snapshot } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { DrisError } from '../../src/errors/dris-error.js';

/**
 * The anchoring loop's ports in memory, for the anchorer's unit tests: a pipeline store, a
 * content-addressed pinner, and a chain that applies the contract's rules in call order.
 */

export function record(batch: number, i: number): AcceptedRecord {
  const id = `${batch}-${i}`;
  return {
    hashScheme: 'dris-v1',
    tenantId: 'acme',
    database: 'erp',
    collection: 'invoices',
    recordId: `r-${id}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: createHash('sha256').update(`p${id}`).digest('hex'),
    salt: '0'.repeat(32),
    ingestId: `01J000000000000000000${String(batch).padStart(2, '0')}${String(i).padStart(3, '0')}`,
    clientId: 'app',
    keyId: 'key',
    recordHash: createHash('sha256').update(`r${id}`).digest('hex'),
    acceptedAt: new Date(1_700_000_000_000 + batch).toISOString(),
    payload: '{}',
    idempotencyKey: null,
    correlationId: 'c',
  };
}

function refOf(b: Batch): BatchRef {
  return { batchId: b.batchId, merkleRoot: b.merkleRoot, batchSeq: b.batchSeq, createdAtMs: b.createdAtMs };
}

/** The pipeline store in memory: the latest row of each batch and snapshot. */
export class MemoryStore implements PipelineStore {
  readonly batches = new Map<string, Batch>();
  readonly snapshots = new Map<string, Snapshot>();
  readonly lifecycle: LifecycleEntry[] = [];
  anchoredReads = 0;

  saveFormedBatches(formed: readonly FormedBatch[]): Promise<void> {
    for (const f of formed) {
      for (const s of f.snapshots) this.snapshots.set(s.snapshotId, s);
      this.lifecycle.push(...f.lifecycle);
      this.batches.set(f.batch.batchId, f.batch);
    }
    return Promise.resolve();
  }
  batchedIngestIds(_ingestIds: readonly string[]): Promise<Set<string>> {
    return Promise.resolve(new Set());
  }
  batchesByStatus(status: BatchStatus, limit: number): Promise<Batch[]> {
    return Promise.resolve(
      [...this.batches.values()]
        .filter((b) => b.status === status)
        .sort((a, b) => a.createdAtMs - b.createdAtMs)
        .slice(0, limit),
    );
  }
  latestByStatus(status: BatchStatus, limit: number, olderThan?: BatchRef): Promise<BatchRef[]> {
    const newestFirst = [...this.batches.values()]
      .filter((b) => b.status === status)
      .sort((a, b) => b.createdAtMs - a.createdAtMs || (a.batchId < b.batchId ? 1 : -1))
      .filter((b) => olderThan === undefined || b.createdAtMs < olderThan.createdAtMs || (b.createdAtMs === olderThan.createdAtMs && b.batchId < olderThan.batchId));
    return Promise.resolve(newestFirst.slice(0, limit).map(refOf));
  }
  anchoredBelow(beforeSeq: number | null, limit: number): Promise<BatchRef[]> {
    this.anchoredReads += 1;
    const below = [...this.batches.values()]
      .filter((b) => b.status === 'Anchored' && (beforeSeq === null || (b.batchSeq ?? 0) < beforeSeq))
      .sort((a, b) => (b.batchSeq ?? 0) - (a.batchSeq ?? 0));
    return Promise.resolve(below.slice(0, limit).map(refOf));
  }
  anchoredCountThrough(batchSeq: number): Promise<number> {
    return Promise.resolve([...this.batches.values()].filter((b) => b.status === 'Anchored' && (b.batchSeq ?? 0) <= batchSeq).length);
  }
  fenced(): PipelineStore {
    return this;
  }
  highestEpoch(): Promise<number> {
    return Promise.resolve(0);
  }
  latestAnchoredBatch(): Promise<Batch | null> {
    const anchored = [...this.batches.values()].filter((b) => b.status === 'Anchored').sort((a, b) => (b.batchSeq ?? 0) - (a.batchSeq ?? 0));
    return Promise.resolve(anchored[0] ?? null);
  }
  getBatch(batchId: string): Promise<Batch | null> {
    return Promise.resolve(this.batches.get(batchId) ?? null);
  }
  putBatch(batch: Batch): Promise<void> {
    return this.putBatches([batch]);
  }
  putBatches(batches: readonly Batch[]): Promise<void> {
    for (const b of batches) this.batches.set(b.batchId, b);
    return Promise.resolve();
  }
  snapshotsOfBatch(batchId: string): Promise<Snapshot[]> {
    return Promise.resolve([...this.snapshots.values()].filter((s) => s.batchId === batchId));
  }
  putSnapshots(snapshots: readonly Snapshot[], lifecycle: readonly LifecycleEntry[]): Promise<void> {
    for (const s of snapshots) this.snapshots.set(s.snapshotId, s);
    this.lifecycle.push(...lifecycle);
    return Promise.resolve();
  }
  getSnapshot(_tenantId: string, snapshotId: string): Promise<Snapshot | null> {
    return Promise.resolve(this.snapshots.get(snapshotId) ?? null);
  }
  listSnapshots(_q: SnapshotQuery): Promise<{ items: Snapshot[]; nextCursor: string | null }> {
    return Promise.resolve({ items: [...this.snapshots.values()], nextCursor: null });
  }
  lifecycleOf(_tenantId: string, snapshotId: string): Promise<LifecycleEntry[]> {
    return Promise.resolve(this.lifecycle.filter((e) => e.snapshotId === snapshotId));
  }
  traceRecord(): Promise<RecordTrace[]> {
    return Promise.resolve([]);
  }
}

/** Content-addressed in memory; the CID is a stand-in, the same from cidOf and add. */
export class MemoryPinner implements Pinner {
  readonly blocks = new Map<string, Uint8Array>();
  cidOf(bytes: Uint8Array): Promise<string> {
    return Promise.resolve(`cid-${createHash('sha256').update(bytes).digest('hex').slice(0, 16)}`);
  }
  async add(bytes: Uint8Array): Promise<string> {
    const cid = await this.cidOf(bytes);
    this.blocks.set(cid, bytes);
    return cid;
  }
  async cat(cid: string): Promise<Uint8Array> {
    const b = this.blocks.get(cid);
    if (b === undefined) throw new DrisError('not_found', 'no such block');
    return Promise.resolve(b);
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * The contract's rules, with anchors applied in call order as the chain adapter sends them: an
 * anchor waits for the ones called before it. `gate` holds the first one back; `failOnce` fails a
 * sequence's first anchor without it being mined (a transaction that never confirmed).
 */
export class OrderedChain implements Chain {
  last = 0;
  readonly roots = new Map<string, number>();
  readonly calls: number[] = [];
  readonly failOnce = new Set<number>();
  private tail: Promise<unknown>;
  private open: () => void = () => undefined;

  constructor() {
    this.tail = new Promise<void>((resolve) => {
      this.open = resolve;
    });
  }
  release(): void {
    this.open();
  }
  info(): ChainInfo {
    return { chainId: 31337, contractAddress: '0x0000000000000000000000000000000000000001', rpcUrl: 'http://127.0.0.1:1', anchorerAddress: '0x0000000000000000000000000000000000000002', confirmations: 1 };
  }
  lastSequence(): Promise<number> {
    return Promise.resolve(this.last);
  }
  anchor(r: AnchorRequest): Promise<AnchorReceipt> {
    this.calls.push(r.batchSeq);
    if (this.holdNext) {
      this.holdNext = false;
      this.held.set(r.merkleRoot, r);
      return Promise.reject(new DrisError('timeout', 'not mined before the deadline'));
    }
    const mined = this.tail.then(() => this.mine(r));
    this.tail = mined.catch(() => undefined);
    return mined;
  }
  private mine(r: AnchorRequest): AnchorReceipt {
    if (this.failOnce.delete(r.batchSeq)) throw new DrisError('dependency_unavailable', 'not confirmed');
    if (r.batchSeq !== this.last + 1) throw new DrisError('invalid_state', 'bad sequence', { extra: { reason: 'bad_sequence', expected: this.last + 1, got: r.batchSeq } });
    if (this.roots.has(r.merkleRoot)) throw new DrisError('invalid_state', 'root exists', { extra: { reason: 'root_exists' } });
    this.last = r.batchSeq;
    this.roots.set(r.merkleRoot, r.batchSeq);
    this.events.set(r.merkleRoot, { txHash: `0x${String(r.batchSeq).padStart(64, '0')}`, blockNumber: r.batchSeq, batchSeq: r.batchSeq, manifestCid: r.manifestCid });
    return { txHash: `0x${String(r.batchSeq).padStart(64, '0')}`, blockNumber: r.batchSeq, blockTimestamp: 1_700_000_000 + r.batchSeq, chainId: 31337, contractAddress: this.info().contractAddress, gasUsed: 60_000 + r.batchSeq, feeWei: String(1_000_000 * r.batchSeq) };
  }
  anchorOf(merkleRoot: string): Promise<OnChainAnchor | null> {
    this.anchorOfCalls += 1;
    const seq = this.roots.get(merkleRoot);
    return Promise.resolve(seq === undefined ? null : { batchSeq: seq, merkleRoot, anchoredAt: 1_700_000_000 + seq });
  }
  /** Anchors mined, by root, as their Anchored events tell. */
  readonly events = new Map<string, { txHash: string; blockNumber: number; batchSeq: number; manifestCid: string }>();
  anchorOfCalls = 0;
  /** An anchor the chain keeps to itself for now (its sender gives up), mined by `mineLate`. */
  readonly held = new Map<string, AnchorRequest>();
  holdNext = false;
  mineLate(merkleRoot: string): void {
    const r = this.held.get(merkleRoot);
    if (r === undefined) throw new Error('nothing held');
    this.held.delete(merkleRoot);
    this.mine({ ...r, batchSeq: this.last + 1 });
  }
  findAnchorEvent(merkleRoot: string): Promise<(AnchorReceipt & { batchSeq: number; manifestCid: string }) | null> {
    const e = this.events.get(merkleRoot);
    return Promise.resolve(e === undefined ? null : { ...e, blockTimestamp: 1_700_000_000 + e.batchSeq, chainId: 31337, contractAddress: this.info().contractAddress });
  }
  /** The receipt of a mined anchor's transaction, as its event tells (none for anchors only put in `roots`). */
  receiptOf(txHash: string): Promise<{ blockNumber: number; confirmations: number } | null> {
    for (const e of this.events.values()) if (e.txHash === txHash) return Promise.resolve({ blockNumber: e.blockNumber, confirmations: Math.max(1, this.last - e.batchSeq + 1) });
    return Promise.resolve(null);
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

export async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
