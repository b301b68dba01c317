import { createHash } from 'node:crypto';
import t from 'tap';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { AnchorReconciler } from '../../src/app/anchor-reconciler.js';
import { Anchorer, requeueFailedSnapshot } from '../../src/app/anchorer.js';
import { formBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { Batch, Manifest, Snapshot } from '../../src/domain/pipeline/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { componentLogger, setLogLevel } from '../../src/util/logger.js';
import { MemoryPinner, MemoryStore, OrderedChain, record, until } from '../harness/pipeline-memory.js';

setLogLevel('silent');

const { backend: hashing } = await loadHashingBackend('js');


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

void t.test('reconciliation: anchors a reorg put in other blocks take those blocks; the walk ends where sequence and block agree', async (t) => {
  const store = new MemoryStore();
  const chain = new OrderedChain();
  chain.release();
  const SEQS = 6;
  for (let seq = 1; seq <= SEQS; seq++) {
    const { batch, snapshot } = anchoredAt(seq);
    store.batches.set(batch.batchId, batch);
    store.snapshots.set(snapshot.snapshotId, snapshot);
    chain.roots.set(batch.merkleRoot, seq);
    chain.last = seq;
    // The last two transactions were mined again, in blocks 105 and 106, after a reorg dropped theirs.
    chain.events.set(batch.merkleRoot, { txHash: batch.txHash ?? '', blockNumber: seq > 4 ? 100 + seq : seq, batchSeq: seq, manifestCid: batch.manifestCid ?? '' });
  }
  const reconciler = new AnchorReconciler(chain, new MemoryPinner(), componentLogger('test'));
  const r = await reconciler.run(store);
  t.same({ remined: r.remined, requeued: r.requeued, moved: r.moved, complete: r.complete }, { remined: 2, requeued: 0, moved: 0, complete: true });
  t.equal(chain.anchorOfCalls, 3, 'the walk read the contract down to the first batch whose block agrees');
  const bySeq = [...store.batches.values()].sort((a, b) => (a.batchSeq ?? 0) - (b.batchSeq ?? 0));
  t.same(bySeq.map((b) => b.blockNumber), [1, 2, 3, 4, 105, 106], 'the re-mined anchors carry their new blocks');
  t.ok(bySeq.every((b) => b.status === 'Anchored'), 'and stay Anchored');
  t.same(
    [...store.snapshots.values()].map((s) => s.chainTxHash),
    bySeq.map((b) => b.txHash),
    'snapshots name the transaction of their batch',
  );
  t.equal(store.lifecycle.length, 0, 'no state changed, so no lifecycle entry');

  chain.anchorOfCalls = 0;
  const again = await reconciler.run(store);
  t.equal(again.remined, 0, 'a second pass finds store and chain agreeing');
  t.equal(chain.anchorOfCalls, 1);
});
