import t from 'tap';
import { ANVIL_DEV_PRIVATE_KEYS } from '../../src/adapters/chain/anvil-node.js';
import { EthersChain } from '../../src/adapters/chain/ethers-chain.js';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { Anchorer } from '../../src/app/anchorer.js';
import { formBatch, type FormedBatch } from '../../src/domain/pipeline/batch-formation.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil } from '../harness/anvil.js';
import { MemoryPinner, MemoryStore, record } from '../harness/pipeline-memory.js';

/**
 * A reorg that drops the block of an anchor and re-includes its transaction in a later block: the
 * contract holds the root at the same sequence, the store's block is stale. Here on a real anvil:
 * the chain goes back to before the anchor (evm_revert), an empty block is mined, and the anchor's
 * signed transaction is broadcast again and mined one block later than before. A reconciliation
 * must record the block (and transaction) the anchor is now in, on the batch and its snapshots.
 */

setLogLevel('silent');
ensureContractArtifact();

const [ANCHORER_KEY] = ANVIL_DEV_PRIVATE_KEYS;
const { backend: hashing } = await loadHashingBackend('js');
const formed = (n: number): FormedBatch => formBatch(Array.from({ length: 3 }, (_, i) => record(n, i)), hashing, 1_700_000_000_000 + n);

async function waitFor(cond: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

void t.test('an anchor mined again in a later block after a reorg: the reconciliation records that block', async (t) => {
  const anvil = await startAnvil({});
  t.teardown(() => anvil.stop());
  const chain = await EthersChain.connect({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANCHORER_KEY ?? '' }, deployIfMissing: true });
  t.teardown(() => chain.close());
  const store = new MemoryStore();
  const anchorer = new Anchorer(store, new MemoryPinner(), chain, hashing, { maxAttempts: 3, baseDelayMs: 200, maxDelayMs: 1_000, idleMs: 100 });
  await anchorer.start(1);
  t.teardown(() => anchorer.stop());

  const [first, second] = [formed(1), formed(2)];
  if (first === undefined || second === undefined) throw new Error('unreachable');
  await store.saveFormedBatches([first]);
  anchorer.enqueue([first]);
  await waitFor(() => store.batches.get(first.batch.batchId)?.status === 'Anchored', 'the first batch anchored', 30_000);
  const beforeSecond = await anvil.rpc<string>('evm_snapshot');
  await store.saveFormedBatches([second]);
  anchorer.enqueue([second]);
  await waitFor(() => store.batches.get(second.batch.batchId)?.status === 'Anchored', 'the second batch anchored', 30_000);
  const recorded = store.batches.get(second.batch.batchId);
  const txHash = recorded?.txHash ?? '';
  t.ok(recorded?.blockNumber !== null && recorded?.blockNumber !== undefined, 'the second anchor recorded with its block');
  const raw = await anvil.rpc<string>('eth_getRawTransactionByHash', [txHash]);

  // The reorg: the anchor's block is dropped, another block takes its height, and the same signed
  // transaction is mined in the block after.
  t.equal(await anvil.rpc('evm_revert', [beforeSecond]), true);
  await anvil.rpc('evm_mine');
  t.equal(await anvil.rpc<string>('eth_sendRawTransaction', [raw]), txHash, 'the same transaction, broadcast again');
  const receipt = await chain.receiptOf(txHash);
  const newBlock = receipt?.blockNumber ?? -1;
  t.equal(newBlock, (recorded?.blockNumber ?? 0) + 1, 'mined one block later than recorded');
  t.equal(await chain.lastSequence(), 2, 'the contract holds both anchors, at the same sequences');

  const r = await anchorer.reconcile();
  t.same({ remined: r.remined, requeued: r.requeued, moved: r.moved, complete: r.complete }, { remined: 1, requeued: 0, moved: 0, complete: true });
  const now = store.batches.get(second.batch.batchId);
  t.equal(now?.blockNumber, newBlock, 'the batch names the block its anchor is in');
  t.equal(now?.txHash, txHash);
  t.equal(now?.status, 'Anchored');
  t.equal(now?.batchSeq, 2);
  const block = await anvil.rpc<{ timestamp: string }>('eth_getBlockByNumber', [`0x${newBlock.toString(16)}`, false]);
  t.equal(now?.anchoredAtMs, Number.parseInt(block.timestamp, 16) * 1000, 'and the time of that block');
  const snapshots = [...store.snapshots.values()].filter((s) => s.batchId === second.batch.batchId);
  t.ok(snapshots.length > 0 && snapshots.every((s) => s.chainTxHash === txHash && s.anchorTimestampMs === now?.anchoredAtMs), 'its snapshots too');
  t.equal(store.batches.get(first.batch.batchId)?.blockNumber !== newBlock, true, 'the first batch is left as it was');

  const again = await anchorer.reconcile();
  t.equal(again.remined, 0, 'the next pass finds store and chain agreeing');
});
