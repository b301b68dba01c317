import { createHash } from 'node:crypto';
import path from 'node:path';
import { Interface, solidityPackedKeccak256, toBeHex, zeroPadValue } from 'ethers';
import t from 'tap';
import { startEmbeddedChain } from '../../src/adapters/chain/embedded-chain.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { ClickHousePipelineStore } from '../../src/adapters/clickhouse/pipeline-store.js';
import { EmbeddedPinner } from '../../src/adapters/ipfs/embedded-pinner.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { REQUEUED_REASON } from '../../src/app/anchor-transitions.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ANCHOR_READER_ABI } from '../../src/adapters/chain/anchor-reader.js';
import { tempDir, trackNode } from '../harness/anvil.js';

/**
 * A recent anchor lost with more than 10 000 batches in the store: the embedded anvil, SIGKILLed,
 * comes back from its last state dump without the latest anchors. The real Anchorer, on real
 * anvil and chDB, must find them (reconciliation from the newest batch down), anchor them again
 * under the sequences they had, and then anchor later batches normally: batchSeq without gaps, one
 * transaction per batch.
 *
 * The 10 000 older anchors are seeded rather than sent (that would take minutes): their rows
 * straight into the pipeline store, their anchors straight into the contract's storage
 * (anvil_setStorageAt: `_lastSeq` beside the anchorer in slot 0, `_anchors[root]` in the mapping
 * at slot 2), then dumped by a SIGTERM of anvil. Only the recent anchors are real transactions.
 */

setLogLevel('silent');

const OLD = 10_000;
const RECENT = 20;
const LATER = 5;
const DEADLINE_MS = 120_000;
/** DrisAnchor's storage: slot 0 = anchorer (20 bytes) | _lastSeq (8 bytes) << 160; slot 2 = _anchors. */
const ANCHORS_SLOT = 2n;

const { backend: hashing } = await loadHashingBackend('js');

function record(n: number): AcceptedRecord {
  return {
    hashScheme: 'dris-v1',
    tenantId: 'acme',
    database: 'erp',
    collection: 'invoices',
    recordId: `r-${n}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: createHash('sha256').update(`p-${n}`).digest('hex'),
    salt: '0'.repeat(32),
    ingestId: `01JLOST${String(n).padStart(19, '0')}`,
    clientId: 'app',
    keyId: 'key',
    recordHash: createHash('sha256').update(`r-${n}`).digest('hex'),
    acceptedAt: new Date(1_750_000_000_000 + n).toISOString(),
    payload: `{"n":${n}}`,
    idempotencyKey: null,
    correlationId: `c-${n}`,
  };
}

const formed = (n: number): FormedBatch => formBatch([record(n)], hashing, 1_750_000_000_000 + n);

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + DEADLINE_MS;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

t.test('a lost recent anchor behind 10 000 anchored batches is anchored again, and later batches follow without a gap', async (t) => {
  const dir = await tempDir('dris-lost-anchor-');
  t.teardown(() => dir.remove());
  const embedded = await startEmbeddedChain({ dataDir: path.join(dir.dir, 'data'), stateIntervalSec: 3600, pollIntervalMs: 50 });
  trackNode(embedded.node);
  t.teardown(() => embedded.close());
  const { node, chain } = embedded;
  const contract = chain.contractAddress;
  const rpc = async (calls: readonly (readonly [string, readonly unknown[]])[]): Promise<unknown[]> => {
    const res = await fetch(node.rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(calls.map(([method, params], id) => ({ jsonrpc: '2.0', id, method, params }))),
    });
    const body = (await res.json()) as { id: number; result?: unknown; error?: { message?: string } }[];
    const failed = body.find((b) => b.error !== undefined);
    if (failed !== undefined) throw new Error(`anvil: ${failed.error?.message ?? 'error'}`);
    return body.sort((a, b) => a.id - b.id).map((b) => b.result);
  };

  // The store: 10 000 batches anchored long ago, then RECENT batches waiting to be anchored.
  const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: path.join(dir.dir, 'clickhouse') } });
  t.teardown(() => index.close());
  await index.database.migrate();
  const store = new ClickHousePipelineStore(index.database).fenced(1);
  const old = Array.from({ length: OLD }, (_, i) => formed(i + 1));
  for (let from = 0; from < OLD; from += 2_000) {
    await store.saveFormedBatches(
      old.slice(from, from + 2_000).map((f, i) => {
        const seq = from + i + 1;
        const anchoredAtMs = (1_750_000_000 + seq) * 1000;
        const txHash = `0x${createHash('sha256').update(`tx-${seq}`).digest('hex')}`;
        return {
          ...f,
          batch: { ...f.batch, status: 'Anchored', batchSeq: seq, manifestCid: `bafyseeded${seq}`, chainId: 31337, contractAddress: contract, txHash, blockNumber: 1, anchoredAtMs, attempts: 1 },
          snapshots: f.snapshots.map((s) => ({ ...s, status: 'Anchored', merkleRoot: f.batch.merkleRoot, anchorTimestampMs: anchoredAtMs, onChainConfirmed: true, chainTxHash: txHash })),
        };
      }),
    );
  }
  const recent = Array.from({ length: RECENT }, (_, i) => formed(OLD + i + 1));
  await store.saveFormedBatches(recent);

  // The chain: the same 10 000 anchors in the contract's storage.
  const [slot0] = (await rpc([['eth_getStorageAt', [contract, '0x0', 'latest']]])) as [string];
  const anchorerBits = BigInt(slot0) & ((1n << 160n) - 1n);
  const word = (v: bigint): string => zeroPadValue(toBeHex(v), 32);
  for (let from = 0; from < OLD; from += 500) {
    await rpc(
      old.slice(from, from + 500).map((f, i) => {
        const seq = BigInt(from + i + 1);
        const slot = solidityPackedKeccak256(['bytes32', 'uint256'], [`0x${f.batch.merkleRoot}`, ANCHORS_SLOT]);
        return ['anvil_setStorageAt', [contract, slot, word(((1_750_000_000n + seq) << 64n) | seq)]] as const;
      }),
    );
  }
  await rpc([['anvil_setStorageAt', [contract, '0x0', word((BigInt(OLD) << 160n) | anchorerBits)]]]);
  t.equal(await chain.lastSequence(), OLD, 'the contract holds 10 000 anchors');
  t.equal((await chain.anchorOf(old[OLD - 1]?.batch.merkleRoot ?? ''))?.batchSeq, OLD);
  t.equal((await chain.anchorOf(old[0]?.batch.merkleRoot ?? ''))?.batchSeq, 1);

  // A SIGTERM dumps that state; the supervisor starts anvil again on it.
  // The supervisor swaps in the adapter of the node's new life, then resets: only then is it done.
  let resets = 0;
  chain.onReset(() => (resets += 1));
  const restarted = async (before: number | undefined, resetsBefore: number): Promise<void> => {
    await until('anvil restarted', async () => (node.pid !== before && node.running ? true : undefined));
    await until('the adapter of the new life in place', async () => (resets > resetsBefore ? true : undefined));
    await until('the chain answering', () => chain.lastSequence().then(() => true, () => undefined));
  };
  const dumped = node.pid;
  const resetsAtDump = resets;
  process.kill(dumped ?? 0, 'SIGTERM');
  await restarted(dumped, resetsAtDump);
  t.equal(await chain.lastSequence(), OLD, 'the seeded anchors are in the dumped state');

  // The real anchorer anchors the recent batches: sequences 10 001 to 10 020.
  const pinner = await EmbeddedPinner.open({ directory: path.join(dir.dir, 'ipfs') });
  t.teardown(() => pinner.close());
  let anchorReads = 0;
  const counted = Object.assign(Object.create(chain) as typeof chain, {
    anchorOf: (root: string) => {
      anchorReads += 1;
      return chain.anchorOf(root);
    },
  });
  const anchorer = new Anchorer(new ClickHousePipelineStore(index.database), pinner, counted, hashing, {
    maxAttempts: 100,
    baseDelayMs: 100,
    maxDelayMs: 1000,
    idleMs: 100,
  });
  await anchorer.start(1);
  t.teardown(() => anchorer.stop());
  const anchoredCount = async (): Promise<{ n: number; distinct: number; min: number; max: number }> => {
    const [r] = await index.database.runner.query<{ n: string | number; d: string | number; lo: string | number | null; hi: string | number | null }>(
      `SELECT count() AS n, uniqExact(batch_seq) AS d, min(batch_seq) AS lo, max(batch_seq) AS hi FROM dris.batches FINAL WHERE status = 'Anchored'`,
    );
    return { n: Number(r?.n ?? 0), distinct: Number(r?.d ?? 0), min: Number(r?.lo ?? 0), max: Number(r?.hi ?? 0) };
  };
  await until('the recent batches anchored', async () => ((await anchoredCount()).n === OLD + RECENT ? true : undefined));
  t.equal(await chain.lastSequence(), OLD + RECENT);
  const seqsBefore = new Map<string, number | null>();
  for (const f of recent) seqsBefore.set(f.batch.batchId, (await store.getBatch(f.batch.batchId))?.batchSeq ?? null);
  t.same([...seqsBefore.values()], recent.map((_, i) => OLD + i + 1), 'anchored under 10 001..10 020');

  // anvil SIGKILLed: it comes back from the dump, without the recent anchors.
  const killed = node.pid;
  const readsBefore = anchorReads;
  const resetsAtKill = resets;
  process.kill(killed ?? 0, 'SIGKILL');
  await restarted(killed, resetsAtKill);
  const later = Array.from({ length: LATER }, (_, i) => formed(OLD + RECENT + i + 1));
  await store.saveFormedBatches(later);
  anchorer.enqueue(later);

  const total = OLD + RECENT + LATER;
  const final = await until('every batch anchored again', async () => {
    const c = await anchoredCount();
    const last = await chain.lastSequence().catch(() => -1);
    return c.n === total && last === total ? c : undefined;
  });
  t.same(final, { n: total, distinct: total, min: 1, max: total }, 'batchSeq 1..n without a gap, each once');
  t.equal(await chain.lastSequence(), total, 'the contract went exactly as far');
  t.ok(anchorReads - readsBefore < 200, `reconciliation read a few anchors, not 10 000 (${anchorReads - readsBefore})`);

  for (const f of recent) {
    const b = await store.getBatch(f.batch.batchId);
    t.equal(b?.batchSeq, seqsBefore.get(f.batch.batchId), 'a lost batch is anchored again under the sequence it had');
    const life = await store.lifecycleOf('acme', f.snapshots[0]?.snapshotId ?? '');
    t.same(
      life.map((e) => e.state),
      ['Ingested', 'PendingAnchor', 'Batched', 'Anchored', 'Batched', 'Anchored'],
      'anchored, lost, re-queued, anchored again',
    );
    t.equal(life[4]?.reason, REQUEUED_REASON);
  }
  for (const [i, f] of later.entries()) t.equal((await store.getBatch(f.batch.batchId))?.batchSeq, OLD + RECENT + i + 1, 'a later batch after them');
  const [requeued] = await index.database.runner.query<{ n: string | number }>(`SELECT count() AS n FROM dris.snapshot_lifecycle WHERE reason = {r:String}`, { r: REQUEUED_REASON });
  t.equal(Number(requeued?.n), RECENT, 'no older batch was touched');

  // On the chain: one Anchored event per real anchor, each in the transaction the store records.
  const iface = new Interface(ANCHOR_READER_ABI);
  const topic = iface.getEvent('Anchored')?.topicHash ?? '';
  const [logs] = (await rpc([['eth_getLogs', [{ address: contract, topics: [topic], fromBlock: '0x0', toBlock: 'latest' }]]])) as [{ topics: string[]; transactionHash: string }[]];
  const events = logs.map((l) => ({ seq: Number(BigInt(l.topics[1] ?? '0')), root: (l.topics[2] ?? '').slice(2), tx: l.transactionHash }));
  t.same(
    events.map((e) => e.seq),
    Array.from({ length: RECENT + LATER }, (_, i) => OLD + i + 1),
    'one event per sequence on the chain as it stands: none lost, none twice',
  );
  t.equal(new Set(events.map((e) => e.tx)).size, RECENT + LATER, 'one transaction per batch');
  for (const f of [...recent, ...later]) {
    const b = await store.getBatch(f.batch.batchId);
    const e = events.find((x) => x.root === f.batch.merkleRoot);
    t.equal(b?.txHash, e?.tx, 'the store records the transaction that holds the event');
  }
});
