import { Interface } from 'ethers';
import t, { type Test } from 'tap';
import { ANVIL_DEV_PRIVATE_KEYS } from '../../src/adapters/chain/anvil-node.js';
import { ANCHOR_READER_ABI } from '../../src/adapters/chain/anchor-reader.js';
import { EthersChain, type TxSubmission } from '../../src/adapters/chain/ethers-chain.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import { toDrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil, type TestAnvil } from '../harness/anvil.js';
import { MemoryPinner, MemoryStore, record } from '../harness/pipeline-memory.js';

/**
 * The chain loses blocks that held anchors: some whose receipts the anchorer has seen (recorded
 * Anchored), and the anchors in its window, sent and not mined, which the node forgets too (a node
 * restarted from an older state dump, as the cluster chaos run does to anvil; here anvil's
 * evm_revert to a snapshot, then its pool emptied). The real Anchorer on the real chain adapter,
 * with the transaction timeout at its default of 10 minutes, must notice within seconds: every
 * batch ends Anchored, and the contract holds exactly one anchor per batch, under the sequence the
 * store records. Once with the same term throughout, once with the term ending around the loss and
 * a new one starting.
 */

setLogLevel('silent');
ensureContractArtifact();

const [ANCHORER_KEY] = ANVIL_DEV_PRIVATE_KEYS;
/** Far below the default transaction timeout (600 s), which the lost anchors waited out before. */
const RECOVERY_DEADLINE_MS = 60_000;
const MINED = 4;
const IN_FLIGHT = 4;

const { backend: hashing } = await loadHashingBackend('js');

const formed = (n: number): FormedBatch => formBatch(Array.from({ length: 3 }, (_, i) => record(n, i)), hashing, 1_700_000_000_000 + n);

async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Rig {
  readonly anvil: TestAnvil;
  readonly chain: EthersChain;
  readonly store: MemoryStore;
  readonly anchorer: Anchorer;
  readonly batches: FormedBatch[];
  /** Times the chain adapter reported that the chain went back (Chain.onReset). */
  readonly resets: () => number;
}

async function rig(t: Test, count = MINED + IN_FLIGHT, anvilOptions: Parameters<typeof startAnvil>[0] = {}): Promise<Rig> {
  const anvil = await startAnvil(anvilOptions);
  t.teardown(() => anvil.stop());
  // Defaults for the timeout, the replacement delay and the poll interval: as deployed.
  const chain = await EthersChain.connect({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANCHORER_KEY ?? '' }, deployIfMissing: true });
  t.teardown(() => chain.close());
  let resets = 0;
  chain.onReset(() => (resets += 1));
  const store = new MemoryStore();
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 6, baseDelayMs: 200, maxDelayMs: 2_000, idleMs: 100 });
  const batches = Array.from({ length: count }, (_, i) => formed(i + 1));
  return { anvil, chain, store, anchorer, batches, resets: () => resets };
}

const anchoredCount = (store: MemoryStore): number => [...store.batches.values()].filter((b) => b.status === 'Anchored').length;

/**
 * Anchors the first batches (mined, recorded Anchored), then sends the next ones with mining
 * stopped, and returns the snapshot of the chain before any of them.
 */
async function anchorThenHold(r: Rig): Promise<string> {
  const { anvil, store, anchorer, batches } = r;
  const before = await anvil.rpc<string>('evm_snapshot');
  const first = batches.slice(0, MINED);
  await store.saveFormedBatches(first);
  anchorer.enqueue(first);
  await waitFor(() => anchoredCount(store) === MINED, 'the first batches anchored', 30_000);

  await anvil.rpc('evm_setAutomine', [false]);
  const rest = batches.slice(MINED);
  await store.saveFormedBatches(rest);
  anchorer.enqueue(rest);
  await waitFor(
    async () => Number.parseInt((await anvil.rpc<{ pending: string }>('txpool_status')).pending, 16) === IN_FLIGHT,
    'the window of anchors in the pool',
    30_000,
  );
  return before;
}

/** The blocks of every anchor are lost, and the pool with them; mining resumes. */
async function loseBlocks(t: Test, anvil: TestAnvil, snapshot: string): Promise<void> {
  t.equal(await anvil.rpc('evm_revert', [snapshot]), true, 'the chain went back to before the anchors');
  await anvil.rpc('anvil_dropAllTransactions');
  await anvil.rpc('evm_setAutomine', [true]);
}

/** Every batch Anchored, and the chain as the store says: one anchor per batch, under its sequence. */
async function assertAllAnchoredOnce(t: Test, r: Rig): Promise<void> {
  const { anvil, chain, store, batches } = r;
  const total = batches.length;
  const lostAt = Date.now();
  await waitFor(async () => anchoredCount(store) === total && (await chain.lastSequence()) === total, 'every batch anchored again', RECOVERY_DEADLINE_MS);
  t.comment(`every batch anchored ${Date.now() - lostAt} ms after the blocks were lost`);
  t.ok(r.resets() >= 1, 'the chain adapter found that the chain went back');
  t.equal(await chain.lastSequence(), total, 'the contract went exactly as far as there are batches');

  const iface = new Interface(ANCHOR_READER_ABI);
  const topic = iface.getEvent('Anchored')?.topicHash ?? '';
  const logs = await anvil.rpc<{ topics: string[]; transactionHash: string }[]>('eth_getLogs', [{ address: chain.contractAddress, topics: [topic], fromBlock: '0x0', toBlock: 'latest' }]);
  const events = logs.map((l) => ({ seq: Number(BigInt(l.topics[1] ?? '0')), root: (l.topics[2] ?? '').slice(2), tx: l.transactionHash }));
  t.same(
    events.map((e) => e.seq),
    Array.from({ length: total }, (_, i) => i + 1),
    'one Anchored event per sequence on the chain as it stands',
  );
  const seqs: number[] = [];
  for (const f of batches) {
    const b = await store.getBatch(f.batch.batchId);
    const onChain = await chain.anchorOf(f.batch.merkleRoot);
    const e = events.filter((x) => x.root === f.batch.merkleRoot);
    t.equal(b?.status, 'Anchored');
    t.equal(e.length, 1, 'the root is anchored once');
    t.equal(onChain?.batchSeq, b?.batchSeq, 'under the sequence the store records');
    t.equal(b?.txHash, e[0]?.tx, 'in the transaction the store records');
    seqs.push(b?.batchSeq ?? 0);
  }
  t.same(
    [...seqs].sort((a, b) => a - b),
    Array.from({ length: total }, (_, i) => i + 1),
    'batchSeq 1..n, none twice',
  );
}

void t.test('anchors mined and in flight lost with their blocks: anchored again within seconds, once each', async (t) => {
  const r = await rig(t);
  await r.anchorer.start(1);
  t.teardown(() => r.anchorer.stop());
  const snapshot = await anchorThenHold(r);
  await loseBlocks(t, r.anvil, snapshot);
  await assertAllAnchoredOnce(t, r);
});

void t.test('the term ends while anchors are in flight and their blocks are lost; the next term anchors everything once', async (t) => {
  const r = await rig(t);
  await r.anchorer.start(1);
  let stopped = false;
  t.teardown(() => (stopped ? undefined : r.anchorer.stop()));
  const snapshot = await anchorThenHold(r);
  // The term ends (the election store lost it) with its window unmined; the blocks go after.
  const ending = r.anchorer.stop();
  await loseBlocks(t, r.anvil, snapshot);
  const endedIn = await Promise.race([ending.then(() => 'ended' as const), new Promise<'hung'>((res) => setTimeout(() => res('hung'), 10_000).unref())]);
  t.equal(endedIn, 'ended', 'the term ends without waiting for its anchors to be mined');
  stopped = true;
  await r.anchorer.start(2);
  t.teardown(() => r.anchorer.stop());
  await assertAllAnchoredOnce(t, r);
});

void t.test('anvil SIGKILLed and restarted from an older state dump, as in the cluster chaos run: everything anchored once', async (t) => {
  // No periodic dump: the state file is the one the SIGTERM below writes, and nothing later.
  const r = await rig(t, 12, { stateIntervalSec: 3600 });
  const { anvil, store, anchorer, batches } = r;
  await anchorer.start(1);
  t.teardown(() => anchorer.stop());
  const send = async (from: number, to: number): Promise<void> => {
    const some = batches.slice(from, to);
    await store.saveFormedBatches(some);
    anchorer.enqueue(some);
  };
  await send(0, 4);
  await waitFor(() => anchoredCount(store) === 4, 'the first batches anchored', 30_000);
  await anvil.node.stop();
  await anvil.node.start();
  // Anchored after the dump: lost with the SIGKILL.
  await send(4, 8);
  await waitFor(() => anchoredCount(store) === 8, 'the next batches anchored', 30_000);
  await anvil.rpc('evm_setAutomine', [false]);
  await send(8, 12);
  await waitFor(async () => Number.parseInt((await anvil.rpc<{ pending: string }>('txpool_status')).pending, 16) === 4, 'the window of anchors in the pool', 30_000);
  await anvil.node.kill('SIGKILL');
  await new Promise((res) => setTimeout(res, 1_000));
  await anvil.node.start();
  t.equal(await r.chain.lastSequence(), 4, 'the node came back without the anchors after its dump');
  await assertAllAnchoredOnce(t, r);
});

void t.test('the chain adapter: an anchor given up is not sent again; a health check notices lost blocks with nothing awaited', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const submissions: TxSubmission[] = [];
  const chain = await EthersChain.connect({
    rpcUrl: anvil.rpcUrl,
    chainId: anvil.chainId,
    signer: { privateKey: ANCHORER_KEY ?? '' },
    deployIfMissing: true,
    // Replaced after 1 s unmined: a follow left running would show as a second submission.
    replaceAfterMs: 1_000,
    pollIntervalMs: 100,
    // Anchors only (the deployment is reported too).
    onTransaction: (s) => void (s.batchSeq === undefined ? undefined : submissions.push(s)),
  });
  t.teardown(() => chain.close());
  let resets = 0;
  chain.onReset(() => (resets += 1));
  const [a, b] = [formed(1), formed(2)];
  const request = (f: FormedBatch, batchSeq: number) => ({ batchSeq, merkleRoot: f.batch.merkleRoot, recordCount: 3, batchId: f.batch.batchId, manifestCid: 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku' });

  await anvil.rpc('evm_setAutomine', [false]);
  const term = new AbortController();
  const given = chain.anchor(request(a, 1), { signal: term.signal }).then(
    () => 'mined',
    (err: unknown) => String(toDrisError(err).extra['reason']),
  );
  await waitFor(() => submissions.length === 1, 'the anchor broadcast', 10_000);
  term.abort();
  t.equal(await given, 'abandoned', 'the anchor given up rejects at once');
  await new Promise((r) => setTimeout(r, 2_500));
  t.equal(submissions.length, 1, 'and no version of it is sent after (past the replacement delay twice)');
  const refused = await chain.anchor(request(b, 1), { signal: term.signal }).then(
    () => 'sent',
    (err: unknown) => String(toDrisError(err).extra['reason']),
  );
  t.equal(refused, 'abandoned', 'an anchor of a term that ended is not sent');
  t.equal(submissions.length, 1);

  // The next sender takes the nonce over: one anchor on chain.
  await anvil.rpc('anvil_dropAllTransactions');
  await anvil.rpc('evm_setAutomine', [true]);
  const snapshot = await anvil.rpc<string>('evm_snapshot');
  await chain.anchor(request(a, 1));
  t.equal(await chain.lastSequence(), 1);

  // Blocks lost with nothing awaited: the next health check finds the head behind.
  t.equal(await anvil.rpc('evm_revert', [snapshot]), true);
  t.equal(resets, 0, 'nothing noticed yet');
  await chain.check();
  await waitFor(() => resets === 1, 'the rewind noticed by a health check', 10_000);
  t.equal(await chain.lastSequence(), 0, 'the anchor is gone from the contract');
  await chain.anchor(request(a, 1));
  t.equal(await chain.lastSequence(), 1, 'and anchored again on a nonce read afresh');
});
