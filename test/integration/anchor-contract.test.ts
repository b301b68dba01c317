import t from 'tap';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Contract, ContractFactory, Interface, isError, JsonRpcProvider, Network, Wallet, type ContractTransactionResponse, type TransactionReceipt } from 'ethers';
import { ANVIL_DEV_PRIVATE_KEYS } from '../../src/adapters/chain/anvil-node.js';
import type { AnchorArtifact } from '../../src/adapters/chain/contract-artifact.js';
import { ensureContractArtifact, startAnvil, type TestAnvil } from '../harness/anvil.js';

/**
 * The DrisAnchor contract itself, on a real anvil, through plain ethers: who may anchor, the
 * sequence fence, roots anchored once, the event, anchorer rotation and the gas of one anchor.
 */

const artifact = JSON.parse(readFileSync(ensureContractArtifact(), 'utf8')) as AnchorArtifact;
const iface = new Interface(artifact.abi);

// Realistic sizes: a UUIDv7 batch id and a CIDv1 (base32, raw leaves) manifest CID.
const BATCH_ID = '0192f3a4-1b2c-7d8e-9f00-112233445566';
const CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';

function root(): string {
  return `0x${randomBytes(32).toString('hex')}`;
}

/** The custom error a call or transaction reverted with; null when it did not revert. */
async function revertOf(p: Promise<unknown>): Promise<{ name: string; args: unknown[] } | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (!isError(err, 'CALL_EXCEPTION')) throw err;
    if (err.revert !== null && err.revert !== undefined) return { name: err.revert.name, args: [...err.revert.args] };
    const parsed = typeof err.data === 'string' ? iface.parseError(err.data) : null;
    if (parsed === null) throw err;
    return { name: parsed.name, args: [...parsed.args] };
  }
}

async function mined(tx: Promise<ContractTransactionResponse>): Promise<TransactionReceipt> {
  const receipt = await (await tx).wait();
  if (receipt === null) throw new Error('no receipt');
  return receipt;
}

let anvil: TestAnvil;
let provider: JsonRpcProvider;
let owner: Wallet;
let anchorer: Wallet;
let stranger: Wallet;
let contract: Contract;

const as = (w: Wallet): Contract => contract.connect(w) as Contract;

t.before(async () => {
  anvil = await startAnvil();
  const network = Network.from(anvil.chainId);
  provider = new JsonRpcProvider(anvil.rpcUrl, network, { staticNetwork: network, cacheTimeout: -1, batchMaxCount: 1 });
  [owner, anchorer, stranger] = ANVIL_DEV_PRIVATE_KEYS.map((k) => new Wallet(k, provider)) as [Wallet, Wallet, Wallet];
  const factory = new ContractFactory(artifact.abi, artifact.bytecode, owner);
  const deployed = await factory.deploy(anchorer.address);
  await deployed.waitForDeployment();
  contract = new Contract(await deployed.getAddress(), artifact.abi, provider);
});

t.teardown(async () => {
  provider?.destroy();
  await anvil?.stop();
});

t.test('starts with no anchor, the deployer as owner and the given anchorer', async (t) => {
  t.equal(await contract.getFunction('lastSequence').staticCall(), 0n);
  t.equal(await contract.getFunction('owner').staticCall(), owner.address);
  t.equal(await contract.getFunction('anchorer').staticCall(), anchorer.address);
  const [seq, ts] = (await contract.getFunction('anchorOf').staticCall(root())) as [bigint, bigint];
  t.same([seq, ts], [0n, 0n], 'an unknown root reads as (0, 0)');
});

t.test('only the anchorer may anchor', async (t) => {
  for (const w of [stranger, owner]) {
    const r = await revertOf(as(w).getFunction('anchor').staticCall(1n, root(), 10, BATCH_ID, CID));
    t.equal(r?.name, 'NotAnchorer');
    t.equal(r?.args[0], w.address, 'the error names the caller');
  }
  t.equal(await contract.getFunction('lastSequence').staticCall(), 0n);
});

const anchored: { seq: bigint; root: string; receipt: TransactionReceipt }[] = [];

t.test('batchSeq must be exactly lastSequence + 1', async (t) => {
  const early = await revertOf(as(anchorer).getFunction('anchor').staticCall(2n, root(), 10, BATCH_ID, CID));
  t.same(early, { name: 'BadSequence', args: [1n, 2n] }, 'a gap is refused');
  const zero = await revertOf(as(anchorer).getFunction('anchor').staticCall(0n, root(), 10, BATCH_ID, CID));
  t.same(zero, { name: 'BadSequence', args: [1n, 0n] });

  for (const seq of [1n, 2n]) {
    const r = root();
    const receipt = await mined(as(anchorer).getFunction('anchor')(seq, r, 1000, BATCH_ID, CID) as Promise<ContractTransactionResponse>);
    t.equal(receipt.status, 1);
    anchored.push({ seq, root: r, receipt });
  }
  t.equal(await contract.getFunction('lastSequence').staticCall(), 2n);
  const stale = await revertOf(as(anchorer).getFunction('anchor').staticCall(2n, root(), 10, BATCH_ID, CID));
  t.same(stale, { name: 'BadSequence', args: [3n, 2n] }, 'a stale leader is refused');

  // The fence holds on chain too, not only in simulation: a mined stale transaction reverts.
  const tx = (await as(anchorer).getFunction('anchor')(1n, root(), 10, BATCH_ID, CID, { gasLimit: 200_000n })) as ContractTransactionResponse;
  const receipt = await provider.getTransactionReceipt(tx.hash);
  t.equal(receipt?.status, 0, 'the stale transaction is mined as reverted');
  t.equal(await contract.getFunction('lastSequence').staticCall(), 2n);
});

t.test('a root is anchored once', async (t) => {
  const first = anchored[0];
  if (first === undefined) throw new Error('no anchor from the previous test');
  const r = await revertOf(as(anchorer).getFunction('anchor').staticCall(3n, first.root, 10, BATCH_ID, CID));
  t.same(r, { name: 'RootExists', args: [first.root, 1n] }, 'the error names the root and its batchSeq');
  const [seq] = (await contract.getFunction('anchorOf').staticCall(first.root)) as [bigint, bigint];
  t.equal(seq, 1n, 'the first anchor stands');
});

t.test('the Anchored event carries every field; anchorOf reads the stored anchor', async (t) => {
  for (const { seq, root: r, receipt } of anchored) {
    const logs = receipt.logs.filter((l) => l.address === contract.target);
    t.equal(logs.length, 1, 'one event per anchor');
    const log = logs[0];
    if (log === undefined) continue;
    const parsed = iface.parseLog({ topics: [...log.topics], data: log.data });
    t.equal(parsed?.name, 'Anchored');
    const block = await provider.getBlock(receipt.blockNumber);
    t.equal(log.topics[1], `0x${seq.toString(16).padStart(64, '0')}`, 'batchSeq is an indexed topic');
    t.equal(log.topics[2], r, 'merkleRoot is an indexed topic');
    t.same(
      {
        batchSeq: parsed?.args.getValue('batchSeq'),
        merkleRoot: parsed?.args.getValue('merkleRoot'),
        batchId: parsed?.args.getValue('batchId'),
        manifestCid: parsed?.args.getValue('manifestCid'),
        recordCount: parsed?.args.getValue('recordCount'),
        timestamp: parsed?.args.getValue('timestamp'),
      },
      { batchSeq: seq, merkleRoot: r, batchId: BATCH_ID, manifestCid: CID, recordCount: 1000n, timestamp: BigInt(block?.timestamp ?? -1) },
    );
    const [storedSeq, storedTs] = (await contract.getFunction('anchorOf').staticCall(r)) as [bigint, bigint];
    t.same([storedSeq, storedTs], [seq, BigInt(block?.timestamp ?? -1)], 'anchorOf answers (batchSeq, block timestamp)');
  }
});

t.test('the owner rotates the anchorer; the previous one is refused', async (t) => {
  const notOwner = await revertOf(as(anchorer).getFunction('setAnchorer').staticCall(anchorer.address));
  t.equal(notOwner?.name, 'NotOwner', 'only the owner rotates');
  const zero = await revertOf(as(owner).getFunction('setAnchorer').staticCall('0x0000000000000000000000000000000000000000'));
  t.equal(zero?.name, 'ZeroAddress');

  const receipt = await mined(as(owner).getFunction('setAnchorer')(stranger.address) as Promise<ContractTransactionResponse>);
  const event = receipt.logs.map((l) => iface.parseLog({ topics: [...l.topics], data: l.data })).find((e) => e?.name === 'AnchorerChanged');
  t.same([event?.args.getValue('previousAnchorer'), event?.args.getValue('newAnchorer')], [anchorer.address, stranger.address]);
  t.equal(await contract.getFunction('anchorer').staticCall(), stranger.address);

  const old = await revertOf(as(anchorer).getFunction('anchor').staticCall(3n, root(), 10, BATCH_ID, CID));
  t.equal(old?.name, 'NotAnchorer', 'the previous anchorer is refused');
  const r = root();
  const next = await mined(as(stranger).getFunction('anchor')(3n, r, 10, BATCH_ID, CID) as Promise<ContractTransactionResponse>);
  t.equal(next.status, 1, 'the new anchorer continues the sequence');
  t.equal(await contract.getFunction('lastSequence').staticCall(), 3n);
});

t.test('one anchor costs less than 60k gas', async (t) => {
  const gas: bigint[] = [];
  for (const seq of [4n, 5n, 6n]) {
    const receipt = await mined(as(stranger).getFunction('anchor')(seq, root(), 1000, BATCH_ID, CID) as Promise<ContractTransactionResponse>);
    gas.push(receipt.gasUsed);
  }
  for (const { receipt } of anchored) gas.push(receipt.gasUsed);
  t.comment(`gas per anchor (UUID batchId, CIDv1 manifest): ${gas.join(', ')}`);
  for (const g of gas) t.ok(g < 60_000n, `${g} < 60000`);
});
