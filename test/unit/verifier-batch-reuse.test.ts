import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { Verifier } from '../../src/app/verifier.js';
import { formBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { PipelineStore } from '../../src/domain/pipeline/ports.js';
import { HASH_SCHEME, type AcceptedRecord, type RecordEnvelope } from '../../src/domain/records/types.js';
import type { BatchAnchor, BlockRef, EvidenceIndex, RecordsPrefetch, StoredRecord, VerificationHistory } from '../../src/domain/verification/ports.js';
import { EventlessChain } from '../harness/eventless-chain.js';
/**
 * Stored-mode verification reuses an Anchored batch's row beyond the chain cache, but only while
 * the chain, confirmed as often as before, holds the batch's root at its sequence; otherwise the
 * answer is given on a row read again.
 */

const hashing = new JsHashingBackend();
const nowMs = Date.parse('2026-01-02T03:04:05Z');

function accepted(i: number): AcceptedRecord {
  const envelope: RecordEnvelope = {
    hashScheme: HASH_SCHEME,
    tenantId: 'acme',
    database: 'erp',
    collection: 'invoices',
    recordId: `r-${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: hashing.sha256Hex(Buffer.from(hashing.canonicalize({ amount: i }), 'utf8')),
    salt: `${i}`.padStart(32, '0'),
  };
  return {
    ...envelope,
    ingestId: `0000000000ingest${i}`,
    clientId: 'app',
    keyId: 'k',
    recordHash: hashing.recordHashes([envelope])[0] as string,
    acceptedAt: new Date(nowMs).toISOString(),
    payload: hashing.canonicalize({ amount: i }),
    idempotencyKey: null,
    correlationId: 'c',
  };
}

const records = [0, 1, 2].map(accepted);
const formed = formBatch(records, hashing, nowMs);
const first = records[0] as AcceptedRecord;
const leaf = formed.assignments.find((a) => a.ingestId === first.ingestId);
if (leaf === undefined) throw new Error('no leaf for the first record');
const { leaves: _leaves, ingestIds: _ids, tenants: _tenants, ...formedBatch } = formed.batch;
const anchored: BatchAnchor = { ...formedBatch, status: 'Anchored', batchSeq: 7, txHash: '0xabc', blockNumber: 12, chainId: 31337, contractAddress: '0x0000000000000000000000000000000000000001', anchoredAtMs: nowMs };
const stored: StoredRecord = {
  ingestId: first.ingestId,
  clientId: first.clientId,
  envelope: { ...first },
  recordHash: first.recordHash,
  acceptedAtMs: nowMs,
  snapshotId: leaf.snapshotId,
  batchId: leaf.batchId,
  leafIndex: leaf.leafIndex,
  treeSize: leaf.treeSize,
  merkleProof: leaf.proof,
};

class FakeEvidence implements EvidenceIndex {
  batch: BatchAnchor | null = anchored;
  batchReads = 0;
  findRecord(): Promise<StoredRecord[]> {
    return Promise.resolve([stored]);
  }
  findBatch(): Promise<BatchAnchor | null> {
    this.batchReads += 1;
    return Promise.resolve(this.batch);
  }
  /** The batch ids of each warmBatches call. */
  readonly warmed: string[][] = [];
  anchoredBatches(limit: number): Promise<BatchAnchor[]> {
    return Promise.resolve(this.batch?.status === 'Anchored' ? [this.batch].slice(0, limit) : []);
  }
  warmBatches(batchIds: readonly string[]): Promise<void> {
    this.warmed.push([...batchIds]);
    return Promise.resolve();
  }
  /** The budget of each prefetchRecords call. */
  readonly prefetched: number[] = [];
  prefetchRecords(maxBytes: number): Promise<RecordsPrefetch> {
    this.prefetched.push(maxBytes);
    return Promise.resolve({ bytes: Math.min(maxBytes, 1000), tableBytes: 1000 });
  }
  findByHash(): Promise<StoredRecord[]> {
    return Promise.resolve([]);
  }
  payloadOf(): Promise<string | null> {
    return Promise.resolve(null);
  }
}

class FakeChain extends EventlessChain {
  anchor: { batchSeq: number; anchoredAtSec: number } | null = { batchSeq: 7, anchoredAtSec: nowMs / 1000 };
  reads = 0;
  heads = 0;
  height = 12;
  /** Which branch the blocks are of: a reorg gives every block another hash. */
  branch = 0;
  /** While set, head reads wait for it. */
  gate: Promise<void> | null = null;
  anchorOf(): Promise<{ batchSeq: number; anchoredAtSec: number } | null> {
    this.reads += 1;
    return Promise.resolve(this.anchor);
  }
  /** The root's anchor changes only on another branch of the chain. */
  reorg(anchor: { batchSeq: number; anchoredAtSec: number } | null): void {
    this.branch += 1;
    this.anchor = anchor;
  }
  #block(n: number): BlockRef {
    return { number: n, hash: `0x${this.branch.toString(16).padStart(8, '0')}${n.toString(16).padStart(56, '0')}` };
  }
  async head(): Promise<BlockRef> {
    this.heads += 1;
    if (this.gate !== null) await this.gate;
    this.height += 1;
    return this.#block(this.height);
  }
  blockAt(n: number): Promise<BlockRef | null> {
    return Promise.resolve(n > this.height ? null : this.#block(n));
  }
  headBlock(): Promise<number> {
    return Promise.resolve(12);
  }
}

const history: VerificationHistory = { append: () => Promise.resolve(), query: () => Promise.resolve({ items: [], nextCursor: null }) };
const caller = { principal: { keyId: 'k', tenantId: 'acme', clientId: 'app', level: 'standard' as const, tenants: new Set(['acme']) }, correlationId: 'c' };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

function setup(chainCacheMs: number): { verifier: Verifier; evidence: FakeEvidence; chain: FakeChain } {
  const evidence = new FakeEvidence();
  const chain = new FakeChain();
  // Stored-mode verification reads no snapshot: the pipeline store is never called.
  const store = {} as PipelineStore;
  const verifier = new Verifier({ hashing, evidence, store, chain, pinner: null, history }, { chainCacheMs, ipfsTimeoutMs: 1000 });
  return { verifier, evidence, chain };
}

t.test('an anchored batch row outlives the chain cache while the chain confirms it', async (t) => {
  const { verifier, evidence, chain } = setup(20);
  const verify = (): ReturnType<Verifier['verifyRecord']> => verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' });
  t.match(await verify(), { verified: true, verificationStatus: 'pass', reasonCategory: 'verified_anchored', batchSeq: 7, chainTxHash: '0xabc' });
  t.equal(evidence.batchReads, 1);
  t.equal(chain.reads, 1);

  await sleep(60);
  t.match(await verify(), { verified: true, reasonCategory: 'verified_anchored' });
  t.equal(evidence.batchReads, 1, 'the row is reused');
  t.equal(chain.heads, 2, 'the chain is read again once its cache expired');
  t.equal(chain.reads, 1, 'an anchor holds while the chain keeps the block it was read in');

  // A reorg took the root off the chain; reconciliation sent the batch back to be anchored.
  evidence.batch = { ...anchored, status: 'Pending', batchSeq: null, txHash: null, blockNumber: null, anchoredAtMs: null };
  chain.reorg(null);
  await sleep(60);
  t.match(await verify(), { verified: false, verificationStatus: 'pending', reasonCategory: 'pending_anchor' }, 'answered on the row as it is now');
  t.equal(evidence.batchReads, 2);
});

t.test('a batch adopted under another sequence is read again, not reported as a mismatch', async (t) => {
  const { verifier, evidence, chain } = setup(20);
  const verify = (): ReturnType<Verifier['verifyRecord']> => verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' });
  t.match(await verify(), { verified: true, batchSeq: 7 });
  evidence.batch = { ...anchored, batchSeq: 9, txHash: '0xdef' };
  chain.reorg({ batchSeq: 9, anchoredAtSec: nowMs / 1000 });
  await sleep(60);
  t.match(await verify(), { verified: true, reasonCategory: 'verified_anchored', batchSeq: 9, chainTxHash: '0xdef' });
  t.equal(evidence.batchReads, 2);
});

t.test('with no chain cache, every verification reads the batch', async (t) => {
  const { verifier, evidence } = setup(0);
  for (let i = 0; i < 3; i++) t.match(await verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' }), { verified: true });
  t.equal(evidence.batchReads, 3);
});

t.test('the chain in steady use is read again behind the answers, never used past the chain cache', async (t) => {
  const { verifier, chain } = setup(200);
  const verify = (): ReturnType<Verifier['verifyRecord']> => verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' });
  t.match(await verify(), { verified: true });
  t.equal(chain.heads, 1);
  let open: () => void = () => undefined;
  chain.gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  await sleep(120);
  // In the second half of the cache's life: answered at once while the chain is read again.
  t.match(await verify(), { verified: true, reasonCategory: 'verified_anchored' });
  t.equal(chain.heads, 2);
  t.match(await verify(), { verified: true });
  t.equal(chain.heads, 2, 'one read of the head in flight');
  await sleep(100);
  // Expired: this one waits for the read.
  let answered = false;
  const late = verify().then((r) => {
    answered = true;
    return r;
  });
  await sleep(20);
  t.notOk(answered, 'not answered on a chain read older than the cache allows');
  open();
  t.match(await late, { verified: true });
  t.equal(chain.heads, 2);
  t.equal(chain.reads, 1, 'the anchor was read once');
});

t.test('the warm-up reads the newest anchored batches ahead: a first verification reads neither their row nor their anchor', async (t) => {
  const { verifier, evidence, chain } = setup(60_000);
  t.match(await verifier.warmUp({ batches: 10 }), { batches: 1, ms: Number });
  t.same(evidence.warmed, [[anchored.batchId]]);
  t.equal(evidence.batchReads, 0);
  t.equal(chain.reads, 1, 'the anchor is read during the warm-up');
  t.match(await verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' }), { verified: true, reasonCategory: 'verified_anchored', batchSeq: 7 });
  t.equal(evidence.batchReads, 0, 'the row read ahead answered');
  t.equal(chain.reads, 1, 'the anchor read ahead answered');
});

t.test('no warm-up of 0 batches; with chain reads not reused, the warm-up keeps no row and reads no anchor', async (t) => {
  const none = setup(60_000);
  t.same(await none.verifier.warmUp({ batches: 0 }), { batches: 0, prefetchedBytes: 0, ms: 0 });
  t.same(none.evidence.prefetched, [], 'no read-ahead of the records without a budget');
  t.same(none.evidence.warmed, []);
  const fresh = setup(0);
  await fresh.verifier.warmUp({ batches: 10 });
  t.equal(fresh.chain.reads, 0);
  await fresh.verifier.verifyRecord(caller, { collection: 'invoices', recordId: 'r-0' });
  t.equal(fresh.evidence.batchReads, 1, 'read when asked, as without a warm-up');
  t.equal(fresh.chain.reads, 1);
});

t.test("the warm-up brings the records' storage into memory within its budget, alongside the batches; a failure there costs only that", async (t) => {
  const { verifier, evidence } = setup(60_000);
  t.match(await verifier.warmUp({ batches: 10, prefetchBytes: 500 }), { batches: 1, prefetchedBytes: 500 });
  t.same(evidence.prefetched, [500]);
  t.same(evidence.warmed, [[anchored.batchId]]);
  const alone = setup(60_000);
  t.match(await alone.verifier.warmUp({ batches: 0, prefetchBytes: 5000 }), { batches: 0, prefetchedBytes: 1000 });
  t.same(alone.evidence.warmed, [], 'no batch read ahead');
  const failing = setup(60_000);
  failing.evidence.prefetchRecords = () => Promise.reject(new Error('disk'));
  t.match(await failing.verifier.warmUp({ batches: 10, prefetchBytes: 500 }), { batches: 1, prefetchedBytes: 0 });
  t.same(failing.evidence.warmed, [[anchored.batchId]], 'the batches are read ahead all the same');
});

t.test('a batch not anchored is not warmed', async (t) => {
  const { verifier, evidence } = setup(60_000);
  evidence.batch = { ...anchored, status: 'Pending' };
  t.match(await verifier.warmUp({ batches: 10 }), { batches: 0, ms: Number });
  t.same(evidence.warmed, []);
});
