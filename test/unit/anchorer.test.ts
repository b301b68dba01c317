import { createHash } from 'node:crypto';
import t from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Anchorer, requeueFailedSnapshot } from '../../src/app/anchorer.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { AnchorReceipt, AnchorRequest, Chain, ChainInfo, OnChainAnchor, Pinner, PipelineStore, RecordTrace, SnapshotQuery } from '../../src/domain/pipeline/ports.js';
import type { Batch, BatchRef, BatchStatus, LifecycleEntry, Manifest, Snapshot } from '../../src/domain/pipeline/types.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

const { backend: hashing } = await loadHashingBackend('js');

function record(batch: number, i: number): AcceptedRecord {
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
class MemoryStore implements PipelineStore {
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
  batchedIngestIds(): Promise<Set<string>> {
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
class MemoryPinner implements Pinner {
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
class OrderedChain implements Chain {
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
    return { txHash: `0x${String(r.batchSeq).padStart(64, '0')}`, blockNumber: r.batchSeq, blockTimestamp: 1_700_000_000 + r.batchSeq, chainId: 31337, contractAddress: this.info().contractAddress };
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
  receiptOf(): Promise<null> {
    return Promise.resolve(null);
  }
  check(): Promise<void> {
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

void t.test('a window of anchors: one fails, those sent after it go back uncounted, the sequences and previous links stay a chain', async (t) => {
  const store = new MemoryStore();
  const pinner = new MemoryPinner();
  const chain = new OrderedChain();
  chain.failOnce.add(1);
  const anchorer = new Anchorer(store, pinner, chain, hashing, { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 20 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());

  const formed = [1, 2, 3, 4].map((b) => formBatch(Array.from({ length: 5 }, (_, i) => record(b, i)), hashing, 1_700_000_000_000 + b));
  await store.saveFormedBatches(formed);
  anchorer.enqueue(formed);
  await until(() => chain.calls.length >= 4, 'four anchors sent before the first is mined');
  t.same(chain.calls, [1, 2, 3, 4], 'a window of four, each on the sequence after the one before');
  chain.release();
  await until(() => [...store.batches.values()].every((b) => b.status === 'Anchored'), 'every batch Anchored');

  const bySeq = [...store.batches.values()].sort((a, b) => (a.batchSeq ?? 0) - (b.batchSeq ?? 0));
  t.same(bySeq.map((b) => b.batchSeq), [1, 2, 3, 4], 'no sequence lost or taken twice');
  t.equal(chain.last, 4);
  const first = formed[0]?.batch.batchId;
  t.same(
    bySeq.map((b) => [b.batchId === first, b.attempts]),
    [...bySeq.map((b) => [b.batchId === first, b.batchId === first ? 2 : 1])],
    'only the batch whose anchor failed counts a failed attempt',
  );
  for (const [i, b] of bySeq.entries()) {
    const manifest = JSON.parse(Buffer.from(await pinner.cat(b.manifestCid ?? '')).toString('utf8')) as Manifest;
    t.equal(manifest.batchSeq, b.batchSeq, `the manifest of sequence ${b.batchSeq} names it`);
    const before = bySeq[i - 1];
    t.same(manifest.previous, before === undefined ? null : { batchId: before.batchId, merkleRoot: before.merkleRoot, cid: before.manifestCid }, 'and the batch anchored before it');
    t.same(b.previous, manifest.previous);
  }
  const anchoredEntries = store.lifecycle.filter((e) => e.state === 'Anchored');
  t.equal(anchoredEntries.length, 4, 'one Anchored entry per snapshot');
  t.ok([...store.snapshots.values()].every((s) => s.status === 'Anchored' && s.onChainConfirmed), 'snapshots recorded Anchored from those handed over');
});

void t.test('batches handed over are not read back from the store, nor anchored twice when the store lists them too', async (t) => {
  const store = new MemoryStore();
  const pinner = new MemoryPinner();
  const chain = new OrderedChain();
  chain.release();
  let pendingReads = 0;
  const read = store.batchesByStatus.bind(store);
  store.batchesByStatus = (status, limit) => {
    if (status === 'Pending') pendingReads += 1;
    return read(status, limit);
  };
  let snapshotReads = 0;
  store.snapshotsOfBatch = () => {
    snapshotReads += 1;
    return Promise.resolve([]);
  };
  const anchorer = new Anchorer(store, pinner, chain, hashing, { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 60_000 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());
  await until(() => pendingReads >= 1, 'the first read of pending batches');
  const before = pendingReads;

  for (let round = 0; round < 3; round++) {
    const formed = [1, 2].map((b) => formBatch(Array.from({ length: 3 }, (_, i) => record(10 * round + b, i)), hashing, 1_700_000_000_000 + 10 * round + b));
    await store.saveFormedBatches(formed);
    anchorer.enqueue(formed);
    anchorer.enqueue(formed);
    await until(() => formed.every((f) => store.batches.get(f.batch.batchId)?.status === 'Anchored'), `round ${round} anchored`);
  }
  t.equal(pendingReads, before, 'no read of pending batches while handed-over ones keep coming');
  t.equal(snapshotReads, 0, 'snapshots taken as handed over');
  t.same(chain.calls, [1, 2, 3, 4, 5, 6], 'one anchor per batch');
});

void t.test('a retry written to the store by a process without the anchorer is taken up by the leader', async (t) => {
  const store = new MemoryStore();
  const chain = new OrderedChain();
  chain.release();
  const [formed] = [formBatch(Array.from({ length: 3 }, (_, i) => record(90, i)), hashing, 1_700_000_000_090)];
  if (formed === undefined) throw new Error('no batch');
  await store.saveFormedBatches([formed]);
  await store.putBatch({ ...formed.batch, status: 'Failed', attempts: 6, lastError: 'chain unreachable' });
  const failed = formed.snapshots.map((s) => ({ ...s, status: 'Failed' as const }));
  await store.putSnapshots(failed, []);
  const snapshotId = failed[0]?.snapshotId ?? '';

  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 20 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());

  const { snapshot, batchId } = await requeueFailedSnapshot(store, 'acme', snapshotId);
  t.equal(snapshot.status, 'PendingAnchor');
  t.equal(batchId, formed.batch.batchId);
  await until(() => store.batches.get(batchId)?.status === 'Anchored', 'the retried batch Anchored');
  t.equal(store.snapshots.get(snapshotId)?.status, 'Anchored');
  const states = store.lifecycle.filter((e) => e.snapshotId === snapshotId).map((e) => e.state);
  t.same(states.slice(-3), ['PendingAnchor', 'Batched', 'Anchored'], 'sent back, taken up, anchored');

  // Only a Failed snapshot can be sent back.
  const again = await requeueFailedSnapshot(store, 'acme', snapshotId).then(
    () => null,
    (e: unknown) => e,
  );
  t.equal(again instanceof DrisError ? again.code : null, 'invalid_state');
  const unknown = await requeueFailedSnapshot(store, 'acme', 'nope').then(
    () => null,
    (e: unknown) => e,
  );
  t.equal(unknown instanceof DrisError ? unknown.code : null, 'not_found');
});

/** A batch as the store holds it once anchored at `seq`, made up (one leaf); its snapshot too. */
function anchoredAt(seq: number): { batch: Batch; snapshot: Snapshot } {
  const leaf = createHash('sha256').update(`leaf-${seq}`).digest('hex');
  const batchId = `b-${String(seq).padStart(6, '0')}`;
  const root = Buffer.from(hashing.merkleRoot([Buffer.from(leaf, 'hex')])).toString('hex');
  const batch: Batch = {
    batchId,
    createdAtMs: 1_700_000_000_000 + seq,
    status: 'Anchored',
    treeSize: 1,
    merkleRoot: root,
    leaves: [leaf],
    ingestIds: [`i-${seq}`],
    tenants: ['acme'],
    batchSeq: seq,
    manifestCid: `cid-${seq}`,
    previous: null,
    chainId: 31337,
    contractAddress: '0x0000000000000000000000000000000000000001',
    txHash: `0x${String(seq).padStart(64, '0')}`,
    blockNumber: seq,
    anchoredAtMs: (1_700_000_000 + seq) * 1000,
    attempts: 1,
    lastError: null,
  };
  const snapshot: Snapshot = {
    snapshotId: `s-${seq}`,
    tenantId: 'acme',
    batchId,
    status: 'Anchored',
    recordIds: [`r-${seq}`],
    ingestIds: [`i-${seq}`],
    recordCount: 1,
    snapshotHash: leaf,
    merkleRoot: root,
    anchorTimestampMs: batch.anchoredAtMs,
    onChainConfirmed: true,
    chainTxHash: batch.txHash,
    createdAtMs: batch.createdAtMs,
  };
  return { batch, snapshot };
}

void t.test('reconciliation walks back from the newest anchor: lost recent anchors are found behind 10 000 older ones, at one read each', async (t) => {
  const store = new MemoryStore();
  const chain = new OrderedChain();
  chain.release();
  const KEPT = 10_000;
  const LOST = 30;
  for (let seq = 1; seq <= KEPT + LOST; seq++) {
    const { batch, snapshot } = anchoredAt(seq);
    store.batches.set(batch.batchId, batch);
    store.snapshots.set(snapshot.snapshotId, snapshot);
    // The chain kept the older anchors only: it was restored from a state before the last ones.
    if (seq <= KEPT) {
      chain.roots.set(batch.merkleRoot, seq);
      chain.last = seq;
    }
  }
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 30, maxDelayMs: 100, idleMs: 20 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());
  t.equal(chain.anchorOfCalls, LOST + 1, 'the reconciliation at start: one contract read per lost batch, and one where store and chain agree');
  t.equal(store.anchoredReads, 1, 'one page of the store');
  await until(() => chain.last === KEPT + LOST && [...store.batches.values()].every((b) => b.status === 'Anchored'), 'the lost batches anchored again');
  t.same(chain.calls, Array.from({ length: LOST }, (_, i) => KEPT + 1 + i), 'each lost batch anchored again once, in order, under the sequence it had');
  for (let seq = KEPT + 1; seq <= KEPT + LOST; seq++) {
    const b = store.batches.get(`b-${String(seq).padStart(6, '0')}`);
    t.equal(b?.batchSeq, seq);
    t.equal(chain.roots.get(b?.merkleRoot ?? ''), seq);
  }
  const requeued = store.lifecycle.filter((e) => e.reason === 'anchor missing on-chain; re-queued');
  t.equal(requeued.length, LOST, 'only the lost snapshots went back');
});

void t.test('a batch given up whose anchor is mined later becomes Anchored; the next batch follows it without a gap', async (t) => {
  const store = new MemoryStore();
  const pinner = new MemoryPinner();
  const chain = new OrderedChain();
  chain.release();
  const anchorer = new Anchorer(store, pinner, chain, hashing, { maxAttempts: 1, baseDelayMs: 30, maxDelayMs: 100, idleMs: 20 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());

  const [late] = [formBatch(Array.from({ length: 3 }, (_, i) => record(70, i)), hashing, 1_700_000_000_070)];
  if (late === undefined) throw new Error('no batch');
  chain.holdNext = true;
  await store.saveFormedBatches([late]);
  anchorer.enqueue([late]);
  await until(() => store.batches.get(late.batch.batchId)?.status === 'Failed', 'the batch given up');
  t.equal(chain.last, 0, 'nothing on chain yet');

  // Its transaction is mined after all.
  chain.mineLate(late.batch.merkleRoot);
  const [next] = [formBatch(Array.from({ length: 2 }, (_, i) => record(71, i)), hashing, 1_700_000_000_071)];
  if (next === undefined) throw new Error('no batch');
  await store.saveFormedBatches([next]);
  anchorer.enqueue([next]);
  await until(() => store.batches.get(next.batch.batchId)?.status === 'Anchored', 'the next batch anchored');

  const recovered = store.batches.get(late.batch.batchId);
  t.equal(recovered?.status, 'Anchored', 'the Failed batch is Anchored');
  t.equal(recovered?.batchSeq, 1);
  t.equal(recovered?.txHash, `0x${'1'.padStart(64, '0')}`, 'with the transaction that holds its event');
  t.equal(recovered?.anchoredAtMs, (1_700_000_000 + 1) * 1000, 'and its block time');
  t.equal(recovered?.lastError, null);
  const snaps = late.snapshots.map((s) => store.snapshots.get(s.snapshotId));
  t.ok(snaps.every((s) => s?.status === 'Anchored' && s.onChainConfirmed), 'its snapshots Anchored');
  t.same(
    store.lifecycle.filter((e) => e.snapshotId === late.snapshots[0]?.snapshotId).map((e) => e.state),
    ['Ingested', 'PendingAnchor', 'Batched', 'Failed', 'Anchored'],
    'Failed, then Anchored when found on chain',
  );
  const after = store.batches.get(next.batch.batchId);
  t.equal(after?.batchSeq, 2, 'the next batch takes the sequence after it');
  t.same(after?.previous, { batchId: late.batch.batchId, merkleRoot: late.batch.merkleRoot, cid: recovered?.manifestCid }, 'and names it as previous');
  t.same(chain.calls, [1, 2], 'one transaction per batch');
});

void t.test('a batch given up whose anchor is mined later is found by the periodic reconciliation when nothing else is anchored', async (t) => {
  const store = new MemoryStore();
  const chain = new OrderedChain();
  chain.release();
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 1, baseDelayMs: 30, maxDelayMs: 100, idleMs: 20, reconcileIntervalMs: 50 });
  await anchorer.start();
  t.teardown(() => anchorer.stop());
  const [late] = [formBatch(Array.from({ length: 2 }, (_, i) => record(80, i)), hashing, 1_700_000_000_080)];
  if (late === undefined) throw new Error('no batch');
  chain.holdNext = true;
  await store.saveFormedBatches([late]);
  anchorer.enqueue([late]);
  await until(() => store.batches.get(late.batch.batchId)?.status === 'Failed', 'the batch given up');
  chain.mineLate(late.batch.merkleRoot);
  await until(() => store.batches.get(late.batch.batchId)?.status === 'Anchored', 'the batch found on chain');
  t.equal(store.batches.get(late.batch.batchId)?.batchSeq, 1);
});
