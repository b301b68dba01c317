import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFile, rm, truncate } from 'node:fs/promises';
import path from 'node:path';
import { encryptKeystoreJsonSync, JsonRpcProvider, Network, Wallet } from 'ethers';
import { ANVIL_DEV_PRIVATE_KEYS, AnvilNode, freeLoopbackPort } from '../../src/adapters/chain/anvil-node.js';
import { readChainRecord, startEmbeddedChain } from '../../src/adapters/chain/embedded-chain.js';
import { EthersChain, deployAnchorContract, type EthersChainOptions, type TxSubmission } from '../../src/adapters/chain/ethers-chain.js';
import type { AnchorRequest } from '../../src/domain/pipeline/ports.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil, tempDir, trackNode, type TestAnvil } from '../harness/anvil.js';

setLogLevel('silent');
ensureContractArtifact();

const [ANCHORER_KEY, OTHER_KEY, THIRD_KEY] = ANVIL_DEV_PRIVATE_KEYS;
const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';

function root(): string {
  return randomBytes(32).toString('hex');
}

function request(batchSeq: number, merkleRoot = root()): AnchorRequest {
  return { batchSeq, merkleRoot, recordCount: 1000, batchId: `0192f3a4-1b2c-7d8e-9f00-${String(batchSeq).padStart(12, '0')}`, manifestCid: CID };
}

/** Guards against a hang, not a timing assertion: fails only if the condition never holds. */
async function waitFor(cond: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function rpc<T>(url: string, method: string, params: readonly unknown[] = []): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  return ((await res.json()) as { result: T }).result;
}

/** The parts of a tap test the helpers use. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

async function anvilFor(t: Teardown, options: Parameters<typeof startAnvil>[0] = {}): Promise<TestAnvil> {
  const a = await startAnvil(options);
  t.teardown(() => a.stop());
  return a;
}

async function connect(t: Teardown, a: TestAnvil, options: Partial<EthersChainOptions> = {}): Promise<EthersChain> {
  const chain = await EthersChain.connect({
    rpcUrl: a.rpcUrl,
    chainId: a.chainId,
    signer: { privateKey: ANCHORER_KEY },
    pollIntervalMs: 50,
    ...options,
  });
  t.teardown(() => chain.close());
  return chain;
}

function providerFor(t: Teardown, a: TestAnvil): JsonRpcProvider {
  const network = Network.from(a.chainId);
  const p = new JsonRpcProvider(a.rpcUrl, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
  t.teardown(() => p.destroy());
  return p;
}

t.test('deploys on a fresh chain, anchors, reads back, refuses what the contract refuses', async (t) => {
  const a = await anvilFor(t);
  const chain = await connect(t, a, { deployIfMissing: true, explorerTxUrl: 'https://explorer.invalid/tx/{tx}' });
  const deployment = chain.deployment;
  if (deployment === null) throw new Error('expected a deployment');
  const info = chain.info();
  t.equal(info.contractAddress, deployment.address);
  t.equal(info.chainId, 31337);
  t.equal(info.rpcUrl, a.rpcUrl, 'a loopback node is reported as is');
  t.equal(info.anchorerAddress, new Wallet(ANCHORER_KEY).address);
  t.equal(info.confirmations, 1);
  t.equal(info.explorerTxUrl, 'https://explorer.invalid/tx/{tx}');
  t.notOk('explorerAddressUrl' in info, 'absent templates are absent');
  t.equal(await chain.lastSequence(), 0);

  const again = await connect(t, a, { contractAddress: deployment.address.toLowerCase() });
  t.equal(again.deployment, null, 'a configured address is used, not redeployed');
  t.equal(again.info().contractAddress, deployment.address, 'the address is reported checksummed');
  await again.close();

  const roots = [root(), root(), root()];
  const receipts = [];
  for (const [i, r] of roots.entries()) receipts.push(await chain.anchor(request(i + 1, r)));
  t.equal(await chain.lastSequence(), 3);
  t.equal(new Set(receipts.map((r) => r.txHash)).size, 3, 'one transaction per batch');
  for (const [i, r] of roots.entries()) {
    const receipt = receipts[i];
    const onChain = await chain.anchorOf(r);
    t.same(onChain, { batchSeq: i + 1, merkleRoot: r, anchoredAt: receipt?.blockTimestamp }, `anchor ${i + 1} reads back`);
    t.equal(receipt?.chainId, 31337);
    t.equal(receipt?.contractAddress, deployment.address);
    const inChain = await chain.receiptOf(receipt?.txHash ?? '');
    t.equal(inChain?.blockNumber, receipt?.blockNumber);
    t.ok((inChain?.confirmations ?? 0) >= 1);
  }
  t.equal(await chain.anchorOf(root()), null, 'an unknown root has no anchor');
  t.equal(await chain.receiptOf(`0x${'ab'.repeat(32)}`), null, 'an unknown transaction is not in the chain');

  const found = await chain.findAnchorEvent(roots[1] ?? '');
  t.match(found, { txHash: receipts[1]?.txHash, batchSeq: 2, merkleRoot: roots[1], recordCount: 1000, manifestCid: CID, blockTimestamp: receipts[1]?.blockTimestamp });

  await t.rejects(chain.anchor(request(2)), { name: 'DrisError', code: 'invalid_state', extra: { reason: 'bad_sequence', expected: 4, got: 2 } }, 'a stale sequence');
  await t.rejects(chain.anchor(request(6)), { code: 'invalid_state', extra: { reason: 'bad_sequence', expected: 4 } }, 'a gap');
  await t.rejects(chain.anchor(request(4, roots[0])), { code: 'invalid_state', extra: { reason: 'root_exists', batchSeq: 1 } }, 'the same root twice');
  t.equal(await chain.lastSequence(), 3, 'refusals cost nothing and change nothing');

  const stranger = await connect(t, a, { contractAddress: deployment.address, signer: { privateKey: THIRD_KEY } });
  await t.rejects(stranger.anchor(request(4)), { code: 'invalid_state', extra: { reason: 'not_anchorer' } }, 'a key that is not the anchorer');

  await t.rejects(chain.anchor({ ...request(4), merkleRoot: `0x${root()}` }), { code: 'validation_failed' });
  await t.rejects(chain.anchorOf('AB'.repeat(32)), { code: 'validation_failed' });

  // The serial stream: concurrent callers are ordered, each with its own transaction.
  const concurrent = await Promise.all([chain.anchor(request(4)), chain.anchor(request(5)), chain.anchor(request(6))]);
  t.equal(await chain.lastSequence(), 6);
  t.ok(concurrent[0].blockNumber < concurrent[1].blockNumber && concurrent[1].blockNumber < concurrent[2].blockNumber, 'mined in order');

  const tight = await connect(t, a, { contractAddress: deployment.address, maxQueued: 0 });
  const first = tight.anchor(request(7));
  await t.rejects(tight.anchor(request(8)), { code: 'overloaded' }, 'the backlog is bounded');
  await first;
  t.equal(await chain.lastSequence(), 7);
});

t.test('configuration errors', async (t) => {
  const a = await anvilFor(t, { chainId: 31338 });
  await t.rejects(
    EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: 31337, signer: { privateKey: ANCHORER_KEY }, deployIfMissing: true }),
    { code: 'config_invalid', extra: { expected: 31337, actual: 31338 } },
    'a node on another chain id',
  );
  await t.rejects(
    EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { privateKey: ANCHORER_KEY }, contractAddress: new Wallet(OTHER_KEY).address }),
    { code: 'config_invalid' },
    'no contract at the configured address',
  );
  await t.rejects(EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { privateKey: ANCHORER_KEY } }), { code: 'config_invalid' }, 'no address and no deployment');

  const badKey = 'zz'.repeat(32);
  const err = await EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { privateKey: badKey }, deployIfMissing: true }).catch((e: unknown) => e);
  t.ok(err instanceof DrisError && err.code === 'config_invalid', 'a malformed key');
  t.notOk(err instanceof Error && err.message.includes(badKey), 'the key is not echoed');

  // A keystore with cheap scrypt parameters, so the test stays fast.
  const keystoreJson = encryptKeystoreJsonSync({ address: new Wallet(OTHER_KEY).address, privateKey: OTHER_KEY }, 'pw', { scrypt: { N: 1024 } });
  const deployment = await deployAnchorContract({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { keystoreJson, keystorePassword: 'pw' } });
  t.equal(deployment.deployer, new Wallet(OTHER_KEY).address, 'deployed with the keystore key');
  t.equal(deployment.anchorer, deployment.deployer, 'the deployer anchors by default');
  const viaKeystore = await connect(t, a, { chainId: 31338, contractAddress: deployment.address, signer: { keystoreJson, keystorePassword: 'pw' } });
  t.equal((await viaKeystore.anchor(request(1))).contractAddress, deployment.address);
  await t.rejects(
    EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { keystoreJson, keystorePassword: 'wrong' }, contractAddress: deployment.address }),
    { code: 'config_invalid' },
    'a wrong keystore password',
  );
  const notContract = await deployAnchorContract({ rpcUrl: a.rpcUrl, chainId: 31338, signer: { privateKey: ANCHORER_KEY }, anchorerAddress: new Wallet(THIRD_KEY).address });
  t.equal(notContract.anchorer, new Wallet(THIRD_KEY).address, 'deployed for another anchorer');
});

t.test('anvil SIGKILLed and restarted: dumped anchors survive, lost ones read as missing, then node down', async (t) => {
  // No periodic dump within the test: only SIGTERM dumps, so what survives is deterministic.
  const a = await anvilFor(t, { stateIntervalSec: 3600 });
  const chain = await connect(t, a, { deployIfMissing: true, unreachableAfterMs: 2_000, rpcTimeoutMs: 5_000 });
  const kept = [root(), root()];
  const keptReceipts = [await chain.anchor(request(1, kept[0])), await chain.anchor(request(2, kept[1]))];
  await a.node.stop();
  await a.node.start();
  t.equal(await chain.lastSequence(), 2, 'a SIGTERM dumps the state');

  const lostRoot = root();
  const lost = await chain.anchor(request(3, lostRoot));
  await a.node.kill('SIGKILL');
  await a.node.start();

  t.equal(await chain.lastSequence(), 2, 'the anchor after the last dump is gone');
  t.equal(await chain.anchorOf(lostRoot), null, 'anchorOf reports the lost anchor missing');
  t.equal(await chain.receiptOf(lost.txHash), null, 'receiptOf reports its transaction missing');
  for (const [i, r] of kept.entries()) {
    t.equal((await chain.anchorOf(r))?.batchSeq, i + 1, `dumped anchor ${i + 1} survives`);
    t.equal((await chain.receiptOf(keptReceipts[i]?.txHash ?? ''))?.blockNumber, keptReceipts[i]?.blockNumber, `its transaction too`);
  }

  // Reconciliation's next step: the same batch again. The nonce the adapter holds is past the
  // chain's now; it must notice and resync rather than queue a transaction that never mines.
  // (Same nonce, fees and data can give the very same signed transaction, hence no hash check.)
  const again = await chain.anchor(request(3, lostRoot));
  t.equal((await chain.anchorOf(lostRoot))?.batchSeq, 3, 're-anchored with the same batchSeq');
  t.not(await chain.receiptOf(again.txHash), null);

  await a.node.kill('SIGKILL');
  await t.rejects(chain.check(), { code: 'dependency_unavailable' }, 'check with the node down');
  await t.rejects(chain.lastSequence(), { code: 'dependency_unavailable' });
  await t.rejects(chain.anchorOf(lostRoot), { code: 'dependency_unavailable' });
  await t.rejects(chain.anchor(request(4)), { code: 'dependency_unavailable' }, 'anchor with the node down');
  await t.rejects(
    EthersChain.connect({ rpcUrl: a.rpcUrl, chainId: a.chainId, signer: { privateKey: ANCHORER_KEY }, deployIfMissing: true }),
    { code: 'dependency_unavailable' },
    'connect with the node down',
  );
  const nowhere = `http://127.0.0.1:${await freeLoopbackPort()}`;
  await t.rejects(EthersChain.connect({ rpcUrl: nowhere, chainId: 31337, signer: { privateKey: ANCHORER_KEY }, deployIfMissing: true }), {
    code: 'dependency_unavailable',
  });

  await a.node.start();
  await chain.check();
  t.equal(await chain.lastSequence(), 2, 'back once the node is (the SIGKILL lost the re-anchor too)');
});

t.test('a stuck transaction is replaced with higher fees; exactly one version is mined', async (t) => {
  const a = await anvilFor(t);
  const provider = providerFor(t, a);
  const submissions: TxSubmission[] = [];
  const chain = await connect(t, a, { deployIfMissing: true, replaceAfterMs: 150, onTransaction: (s) => void submissions.push(s) });
  await chain.anchor(request(1));
  submissions.length = 0;

  await a.rpc('evm_setAutomine', [false]);
  t.teardown(() => a.rpc('evm_setAutomine', [true]).catch(() => undefined));
  const r = root();
  const pending = chain.anchor(request(2, r));
  await waitFor(() => submissions.length >= 2, 'a replacement');
  await a.rpc('evm_mine', []);
  const receipt = await pending;
  await a.rpc('evm_setAutomine', [true]);

  const [original, replacement] = submissions;
  t.equal(replacement?.nonce, original?.nonce, 'the replacement reuses the nonce');
  t.ok((replacement?.maxFeePerGas ?? 0n) * 1000n >= (original?.maxFeePerGas ?? 0n) * 1125n, 'maxFeePerGas raised by at least 12.5 %');
  t.ok((replacement?.maxPriorityFeePerGas ?? 0n) * 1000n >= (original?.maxPriorityFeePerGas ?? 0n) * 1125n, 'maxPriorityFeePerGas raised by at least 12.5 %');
  const hashes = [...new Set(submissions.map((s) => s.txHash))];
  t.ok(hashes.length >= 2);
  const mined = (await Promise.all(hashes.map((h) => provider.getTransactionReceipt(h)))).filter((x) => x !== null);
  t.equal(mined.length, 1, 'exactly one version is in the chain');
  t.equal(mined[0]?.hash, receipt.txHash, 'and it is the one reported');
  t.equal(await chain.lastSequence(), 2);
  t.equal((await chain.anchorOf(r))?.batchSeq, 2);
  t.ok(submissions.every((s) => s.batchSeq === 2));
});

t.test('overlapping anchors: later sequences go out before earlier ones are mined; a refusal refuses those after it', async (t) => {
  const a = await anvilFor(t);
  const submissions: TxSubmission[] = [];
  const chain = await connect(t, a, { deployIfMissing: true, onTransaction: (s) => void submissions.push(s) });
  const first = root();
  await chain.anchor(request(1, first));
  submissions.length = 0;

  await a.rpc('evm_setAutomine', [false]);
  t.teardown(() => a.rpc('evm_setAutomine', [true]).catch(() => undefined));
  const pending = [chain.anchor(request(2)), chain.anchor(request(3)), chain.anchor(request(4))];
  await waitFor(() => submissions.length >= 3, 'three anchors sent with none mined');
  t.same(submissions.map((s) => s.batchSeq), [2, 3, 4], 'sent in call order');
  const nonce = submissions[0]?.nonce ?? -1;
  t.same(submissions.map((s) => s.nonce), [nonce, nonce + 1, nonce + 2], 'on consecutive nonces');
  // A submission is reported before its broadcast: mine only once the node holds all three.
  const anchorer = new Wallet(ANCHORER_KEY ?? '').address;
  await waitFor(async () => Number(await a.rpc<string>('eth_getTransactionCount', [anchorer, 'pending'])) === nonce + 3, 'the node holds the three');
  await a.rpc('evm_mine', []);
  const receipts = await Promise.all(pending);
  t.equal(new Set(receipts.map((r) => r.blockNumber)).size, 1, 'all three in one block');
  t.equal(await chain.lastSequence(), 4);
  await a.rpc('evm_setAutomine', [true]);

  submissions.length = 0;
  const refused = chain.anchor(request(5, first));
  const after = chain.anchor(request(6));
  await t.rejects(refused, { code: 'invalid_state', extra: { reason: 'root_exists', batchSeq: 1 } });
  await t.rejects(after, { code: 'invalid_state', extra: { reason: 'bad_sequence', expected: 5, got: 6 } }, 'its sequence gap is not one of the stream');
  t.equal(submissions.length, 0, 'neither was sent');
  t.equal(await chain.lastSequence(), 4);
  const next = await chain.anchor(request(5));
  t.equal(next.txHash.length, 66, 'the stream goes on at the sequence and nonce left free');
});

t.test('confirmations: the anchor resolves once its block has enough on top', async (t) => {
  const a = await anvilFor(t);
  const provider = providerFor(t, a);
  const deployer = await connect(t, a, { deployIfMissing: true });
  const submissions: TxSubmission[] = [];
  const chain = await connect(t, a, {
    contractAddress: deployer.info().contractAddress,
    confirmations: 2,
    onTransaction: (s) => void submissions.push(s),
  });
  let settled = false;
  const pending = chain.anchor(request(1)).finally(() => {
    settled = true;
  });
  await waitFor(async () => {
    const h = submissions[0]?.txHash;
    return h !== undefined && (await provider.getTransactionReceipt(h)) !== null;
  }, 'the transaction to be mined');
  t.equal(settled, false, 'one confirmation is not enough');
  await a.rpc('evm_mine', []);
  const receipt = await pending;
  t.ok(((await chain.receiptOf(receipt.txHash))?.confirmations ?? 0) >= 2);
});

t.test('a reorg that drops an anchor: receiptOf and anchorOf report it missing', async (t) => {
  const a = await anvilFor(t);
  const chain = await connect(t, a, { deployIfMissing: true });
  const kept = await chain.anchor(request(1));
  const droppedRoot = root();
  const dropped = await chain.anchor(request(2, droppedRoot));
  t.not(await chain.receiptOf(dropped.txHash), null);

  // anvil_reorg replaces the last block with one without the anchor, at the same height.
  await a.rpc('anvil_reorg', [1, []]);
  t.equal(await chain.receiptOf(dropped.txHash), null, 'the dropped transaction is reported missing');
  t.equal(await chain.anchorOf(droppedRoot), null, 'so is its anchor');
  t.equal(await chain.lastSequence(), 1);
  t.not(await chain.receiptOf(kept.txHash), null, 'the anchor below the reorg stands');

  const again = await chain.anchor(request(2, droppedRoot));
  t.equal((await chain.anchorOf(droppedRoot))?.batchSeq, 2, 'anchored again with the same batchSeq');
  t.not(await chain.receiptOf(again.txHash), null);
});

t.test('embedded chain: deploys once, keeps its address, survives a torn state file and a lost one', async (t) => {
  const tmp = await tempDir();
  t.teardown(() => tmp.remove());
  const start = async (): Promise<Awaited<ReturnType<typeof startEmbeddedChain>>> => {
    const e = await startEmbeddedChain({ dataDir: tmp.dir });
    trackNode(e.node);
    return e;
  };

  let e = await start();
  const deployed = e.chain.deployment;
  if (deployed === null) throw new Error('expected a deployment on first start');
  t.equal((await readChainRecord(e.recordFile))?.contractAddress, deployed.address, 'the address is recorded');
  t.match(e.chain.info(), { chainId: 31337, contractAddress: deployed.address, rpcUrl: e.node.rpcUrl });
  const r1 = root();
  await e.chain.anchor(request(1, r1));
  await e.close();

  e = await start();
  t.equal(e.chain.deployment, null, 'no second deployment');
  t.equal(e.chain.info().contractAddress, deployed.address);
  t.equal(await e.chain.lastSequence(), 1);
  const r2 = root();
  await e.chain.anchor(request(2, r2));
  await e.close();

  // A dump torn by a SIGKILL: the copy taken at the previous start is loaded instead.
  const stateFile = path.join(tmp.dir, 'anvil', 'state.json');
  await truncate(stateFile, Math.floor((await readFile(stateFile)).length / 2));
  e = await start();
  t.equal(await e.chain.lastSequence(), 1, 'the last good state is loaded');
  t.equal(await e.chain.anchorOf(r2), null, 'what came after it reads as missing');
  t.equal((await e.chain.anchorOf(r1))?.batchSeq, 1);
  await e.close();

  await rm(path.join(tmp.dir, 'anvil'), { recursive: true, force: true });
  e = await start();
  t.not(e.chain.deployment, null, 'a chain that lost everything gets the contract again');
  t.equal((await readChainRecord(e.recordFile))?.contractAddress, e.chain.info().contractAddress, 'the record follows');
  t.equal(await e.chain.lastSequence(), 0);
  await e.close();
});

t.test('an anvil left running on the state directory is stopped, its state dumped, before another starts', async (t) => {
  const tmp = await tempDir();
  t.teardown(() => tmp.remove());
  const orphan = new AnvilNode({ stateDir: tmp.dir, stateIntervalSec: 3600 });
  trackNode(orphan);
  t.teardown(() => orphan.stop());
  await orphan.start();
  for (let i = 0; i < 3; i++) await rpc(orphan.rpcUrl, 'evm_mine');

  const next = new AnvilNode({ stateDir: tmp.dir });
  trackNode(next);
  t.teardown(() => next.stop());
  await next.start();
  await waitFor(() => !orphan.running, 'the orphan to exit');
  t.equal(Number(await rpc<string>(next.rpcUrl, 'eth_blockNumber')), 3, 'the orphan dumped its state on SIGTERM and the new node loaded it');
});
