import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer, type Socket } from 'node:net';
import { Interface, Wallet } from 'ethers';
import { ANCHOR_READER_ABI, AnchorReader } from '../../src/adapters/chain/anchor-reader.js';
import { loadAnchorArtifact } from '../../src/adapters/chain/contract-artifact.js';
import { ANVIL_DEV_ANCHORER_KEY, freeLoopbackPort } from '../../src/adapters/chain/anvil-node.js';
import { deployAnchorContract, EthersChain, type Deployment } from '../../src/adapters/chain/ethers-chain.js';
import type { AnchorReceipt, AnchorRequest } from '../../src/domain/pipeline/ports.js';
import { CanonicalAnchors } from '../../src/app/canonical-anchors.js';
import { componentLogger, setLogLevel } from '../../src/util/logger.js';
import { ensureContractArtifact, startAnvil, type TestAnvil } from '../harness/anvil.js';

/**
 * The read-only chain adapter against a real anvil: two anchors made by the anchoring adapter are
 * read back by root, sequence and batchId, through chunked log queries and the cache of final
 * events; a node on another chain, an address without the contract, a dead node and a silent one
 * are refused with their codes.
 */

setLogLevel('silent');
ensureContractArtifact();

const CIDS = ['bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku', 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy'];

interface Anchored {
  readonly request: AnchorRequest;
  readonly receipt: AnchorReceipt;
}

interface Fixture {
  readonly anvil: TestAnvil;
  readonly deployment: Deployment;
  readonly anchors: readonly Anchored[];
}

async function fixture(t: Test): Promise<Fixture> {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  const deployment = await deployAnchorContract({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANVIL_DEV_ANCHORER_KEY } });
  const chain = await EthersChain.connect({
    rpcUrl: anvil.rpcUrl,
    chainId: anvil.chainId,
    signer: { privateKey: ANVIL_DEV_ANCHORER_KEY },
    contractAddress: deployment.address,
    pollIntervalMs: 50,
  });
  const anchors: Anchored[] = [];
  try {
    for (const [i, manifestCid] of CIDS.entries()) {
      const request: AnchorRequest = { batchSeq: i + 1, merkleRoot: randomBytes(32).toString('hex'), recordCount: 10 + i, batchId: `batch-${i + 1}-${randomBytes(4).toString('hex')}`, manifestCid };
      anchors.push({ request, receipt: await chain.anchor(request) });
      // Empty blocks between the anchors, so chunked scans cross ranges without events.
      await anvil.rpc('anvil_mine', ['0x5']);
    }
  } finally {
    await chain.close();
  }
  return { anvil, deployment, anchors };
}

function nth(anchors: readonly Anchored[], i: number): Anchored {
  const a = anchors[i];
  if (a === undefined) throw new Error(`no anchor ${i}`);
  return a;
}

function viewOf(a: Anchored): Record<string, unknown> {
  return {
    batchSeq: a.request.batchSeq,
    merkleRoot: a.request.merkleRoot,
    batchId: a.request.batchId,
    manifestCid: a.request.manifestCid,
    recordCount: a.request.recordCount,
    timestampSec: a.receipt.blockTimestamp,
    txHash: a.receipt.txHash.toLowerCase(),
    blockNumber: a.receipt.blockNumber,
  };
}

t.test("the reader's ABI is the compiled contract's", async (t) => {
  const reader = new Interface(ANCHOR_READER_ABI);
  const compiled = new Interface(loadAnchorArtifact().abi);
  for (const name of ['anchorOf', 'lastSequence'] as const) {
    t.equal(reader.getFunction(name)?.format('full'), compiled.getFunction(name)?.format('full'), name);
  }
  t.equal(reader.getEvent('Anchored')?.format('full'), compiled.getEvent('Anchored')?.format('full'), 'Anchored');
  t.equal(reader.getEvent('Anchored')?.topicHash, compiled.getEvent('Anchored')?.topicHash);
});

t.test('reads two anchors back by root, sequence and batchId', async (t) => {
  const { anvil, deployment, anchors } = await fixture(t);
  const first = nth(anchors, 0);
  const second = nth(anchors, 1);
  for (const [label, options] of [
    ['one query per search', {}],
    ['three-block chunks', { maxBlockRange: 3 }],
  ] as const) {
    const reader = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address.toLowerCase(), expectedChainId: anvil.chainId, fromBlock: deployment.blockNumber, ...options });
    t.teardown(() => reader.close());
    t.equal(reader.chainId, anvil.chainId, `${label}: chain id`);
    t.equal(reader.contractAddress, deployment.address, `${label}: the address, checksummed`);

    t.same(await reader.anchorOf(first.request.merkleRoot), { batchSeq: 1, anchoredAtSec: first.receipt.blockTimestamp }, `${label}: anchorOf the first root`);
    t.same(await reader.anchorOf(second.request.merkleRoot), { batchSeq: 2, anchoredAtSec: second.receipt.blockTimestamp }, `${label}: anchorOf the second root`);
    t.equal(await reader.anchorOf(randomBytes(32).toString('hex')), null, `${label}: a root never anchored`);

    for (const a of anchors) {
      t.same(await reader.eventBySeq(a.request.batchSeq), viewOf(a), `${label}: event of batchSeq ${a.request.batchSeq}`);
      t.same(await reader.eventByRoot(a.request.merkleRoot), viewOf(a), `${label}: event of root ${a.request.batchSeq}`);
      t.same(await reader.eventByBatchId(a.request.batchId), viewOf(a), `${label}: event of batchId ${a.request.batchSeq}`);
    }
    t.equal(await reader.eventBySeq(3), null, `${label}: a sequence not used yet`);
    t.equal(await reader.eventByRoot(randomBytes(32).toString('hex')), null, `${label}: an unknown root`);
    t.equal(await reader.eventByBatchId('no-such-batch'), null, `${label}: an unknown batchId`);
    t.ok((await reader.headBlock()) >= second.receipt.blockNumber + 5, `${label}: head block`);

    await t.rejects(reader.anchorOf('AB'.repeat(32)), { code: 'validation_failed' }, `${label}: a malformed root`);
    await t.rejects(reader.eventBySeq(0), { code: 'validation_failed' }, `${label}: sequences start at 1`);
  }

  const late = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, fromBlock: second.receipt.blockNumber + 1 });
  t.teardown(() => late.close());
  t.equal(late.chainId, anvil.chainId, 'without expectedChainId the node says which chain');
  t.equal(await late.eventBySeq(2), null, 'searches start at fromBlock');
  t.same(await late.anchorOf(second.request.merkleRoot), { batchSeq: 2, anchoredAtSec: second.receipt.blockTimestamp }, 'anchorOf reads storage, whatever fromBlock');
});

t.test('blocks, and anchors read in one block: none before the anchor, refused once the block has left the chain', async (t) => {
  const { anvil, deployment, anchors } = await fixture(t);
  const reader = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, expectedChainId: anvil.chainId });
  t.teardown(() => reader.close());
  const second = nth(anchors, 1);
  const head = await reader.head();
  t.ok(head.number >= second.receipt.blockNumber + 5, 'the head');
  t.match(head.hash, /^0x[0-9a-f]{64}$/);
  t.same(await reader.blockAt(head.number), head, 'the head by its number');
  t.equal(await reader.blockAt(head.number + 1000), null, 'past the head');
  const before = await reader.blockAt(second.receipt.blockNumber - 1);
  if (before === null) throw new Error('no block before the anchor');
  t.equal(await reader.anchorOf(second.request.merkleRoot, before), null, 'not anchored yet in the block before its anchor');
  t.same(await reader.anchorOf(second.request.merkleRoot, head), { batchSeq: 2, anchoredAtSec: second.receipt.blockTimestamp }, 'anchored at the head');

  // A reorg: the chain goes back one block and another block takes its height.
  const snapshot = await anvil.rpc<string>('evm_snapshot');
  await anvil.rpc('evm_mine');
  const gone = await reader.head();
  t.equal(await anvil.rpc('evm_revert', [snapshot]), true);
  const block = await anvil.rpc<{ timestamp: string }>('eth_getBlockByNumber', ['latest', false]);
  await anvil.rpc('evm_mine', [Number.parseInt(block.timestamp, 16) + 17]);
  const replaced = await reader.blockAt(gone.number);
  t.ok(replaced !== null && replaced.hash !== gone.hash, 'another block at that height');
  await t.rejects(reader.anchorOf(second.request.merkleRoot, gone), { code: 'dependency_unavailable' }, 'a block off the chain is refused, not read');
  t.same(await reader.anchorOf(second.request.merkleRoot, replaced ?? head), { batchSeq: 2, anchoredAtSec: second.receipt.blockTimestamp });
});

t.test('the anchors verification keeps, on a real chain: kept across checkpoints, forgotten when a reorg takes their block', async (t) => {
  const { anvil, deployment, anchors } = await fixture(t);
  const reader = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, expectedChainId: anvil.chainId });
  t.teardown(() => reader.close());
  const chain = await EthersChain.connect({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANVIL_DEV_ANCHORER_KEY }, contractAddress: deployment.address, pollIntervalMs: 50 });
  t.teardown(() => chain.close());
  const ttlMs = 150;
  const kept = new CanonicalAnchors(reader, ttlMs, componentLogger('test'));
  const first = nth(anchors, 0);
  const snapshot = await anvil.rpc<string>('evm_snapshot');
  const third: AnchorRequest = { batchSeq: 3, merkleRoot: randomBytes(32).toString('hex'), recordCount: 3, batchId: 'batch-3', manifestCid: CIDS[0] ?? '' };
  const receipt = await chain.anchor(third);
  t.same(await kept.anchorOf(third.merkleRoot), { batchSeq: 3, anchoredAtSec: receipt.blockTimestamp });
  t.same(await kept.anchorOf(first.request.merkleRoot), { batchSeq: 1, anchoredAtSec: first.receipt.blockTimestamp });
  await anvil.rpc('anvil_mine', ['0x2']);
  await new Promise((r) => setTimeout(r, ttlMs + 20));
  t.same(await kept.anchorOf(third.merkleRoot), { batchSeq: 3, anchoredAtSec: receipt.blockTimestamp }, 'kept while the chain grows');

  t.equal(await anvil.rpc('evm_revert', [snapshot]), true);
  const head = await anvil.rpc<{ timestamp: string }>('eth_getBlockByNumber', ['latest', false]);
  await anvil.rpc('evm_mine', [Number.parseInt(head.timestamp, 16) + 31]);
  await anvil.rpc('anvil_mine', ['0x3']);
  await new Promise((r) => setTimeout(r, ttlMs + 20));
  t.equal(await kept.anchorOf(third.merkleRoot), null, 'the reorg took the anchor: seen within the period');
  t.same(await kept.anchorOf(first.request.merkleRoot), { batchSeq: 1, anchoredAtSec: first.receipt.blockTimestamp }, 'read again, still anchored');
});

interface RpcRequest {
  readonly id: unknown;
  readonly method: string;
  readonly params?: unknown[];
}

/** A JSON-RPC endpoint in front of anvil that refuses EIP-1898 block objects on eth_call, as some nodes do. */
async function noBlockObjects(t: Test, upstream: string): Promise<{ url: string; refused: () => number }> {
  let refused = 0;
  const answer = async (r: RpcRequest): Promise<unknown> => {
    if (r.method === 'eth_call' && typeof r.params?.[1] === 'object') {
      refused += 1;
      return { jsonrpc: '2.0', id: r.id, error: { code: -32602, message: 'invalid argument 1: hex string without 0x prefix' } };
    }
    const res = await fetch(upstream, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(r) });
    return res.json();
  };
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as RpcRequest | RpcRequest[];
      void (Array.isArray(body) ? Promise.all(body.map(answer)) : answer(body)).then((out) => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(out));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, refused: () => refused };
}

t.test('a node that takes no block object on eth_call: reads in a block name its number', async (t) => {
  const { anvil, deployment, anchors } = await fixture(t);
  const proxy = await noBlockObjects(t, anvil.rpcUrl);
  const reader = await AnchorReader.connect({ rpcUrl: proxy.url, contractAddress: deployment.address, expectedChainId: anvil.chainId });
  t.teardown(() => reader.close());
  t.equal(reader.readsInBlockByHash, false, 'found at connect');
  t.equal(proxy.refused(), 1, 'by one refused probe');
  const second = nth(anchors, 1);
  const before = await reader.blockAt(second.receipt.blockNumber - 1);
  if (before === null) throw new Error('no block before the anchor');
  t.equal(await reader.anchorOf(second.request.merkleRoot, before), null, 'not anchored yet in the block before');
  const kept = new CanonicalAnchors(reader, 1_000, componentLogger('test'));
  t.same(await kept.anchorOf(second.request.merkleRoot), { batchSeq: 2, anchoredAtSec: second.receipt.blockTimestamp }, 'verification reads it');
  t.equal(proxy.refused(), 1, 'no read refused after the probe');

  const direct = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, expectedChainId: anvil.chainId });
  t.teardown(() => direct.close());
  t.equal(direct.readsInBlockByHash, true, 'anvil takes them');
});

t.test('final events are cached: read back with the node gone', async (t) => {
  const { anvil, deployment, anchors } = await fixture(t);
  const reader = await AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, expectedChainId: anvil.chainId, finalityDepth: 2, maxBlockRange: 4 });
  t.teardown(() => reader.close());
  const first = nth(anchors, 0);
  const second = nth(anchors, 1);
  // Every block of the two anchors is at least 5 below the head: final at depth 2.
  t.same(await reader.eventByBatchId(second.request.batchId), viewOf(second), 'the scan finds the second batch');
  t.same(await reader.eventBySeq(1), viewOf(first), 'the first, by sequence');
  await anvil.node.stop();
  t.same(await reader.eventByBatchId(first.request.batchId), viewOf(first), 'cached by batchId');
  t.same(await reader.eventBySeq(2), viewOf(second), 'cached by sequence');
  t.same(await reader.eventByRoot(first.request.merkleRoot), viewOf(first), 'cached by root');
  await t.rejects(reader.anchorOf(first.request.merkleRoot), { code: 'dependency_unavailable' }, 'storage is read now, never cached');
  await t.rejects(reader.headBlock(), { code: 'dependency_unavailable' });
  await t.rejects(reader.eventBySeq(3), { code: 'dependency_unavailable' }, 'what is not cached needs the node');
  await reader.close();
  await t.rejects(reader.eventBySeq(1), { code: 'dependency_unavailable' }, 'closed');
});

t.test('refusals: wrong chain id, no contract, dead node, silent node', async (t) => {
  const anvil = await startAnvil({ chainId: 31_338 });
  t.teardown(() => anvil.stop());
  const deployment = await deployAnchorContract({ rpcUrl: anvil.rpcUrl, chainId: anvil.chainId, signer: { privateKey: ANVIL_DEV_ANCHORER_KEY } });

  await t.rejects(
    AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: deployment.address, expectedChainId: 31_337 }),
    { name: 'DrisError', code: 'config_invalid', extra: { reason: 'chain_id_mismatch', expected: 31_337, actual: 31_338 } },
    'a node on another chain',
  );
  await t.rejects(
    AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: new Wallet(ANVIL_DEV_ANCHORER_KEY).address, expectedChainId: 31_338 }),
    { code: 'config_invalid', extra: { reason: 'no_contract' } },
    'an address without code',
  );
  await t.rejects(AnchorReader.connect({ rpcUrl: anvil.rpcUrl, contractAddress: '0x1234' }), { code: 'config_invalid', extra: { reason: 'bad_address' } }, 'not an address');

  const deadPort = await freeLoopbackPort();
  await t.rejects(AnchorReader.connect({ rpcUrl: `http://127.0.0.1:${deadPort}`, contractAddress: deployment.address, timeoutMs: 5_000 }), { code: 'dependency_unavailable' }, 'nothing listens');

  // A node that accepts the connection and never answers.
  const sockets = new Set<Socket>();
  const silent = createServer((s) => {
    sockets.add(s);
    s.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        silent.close(() => resolve());
      }),
  );
  const address = silent.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await t.rejects(AnchorReader.connect({ rpcUrl: `http://127.0.0.1:${port}`, contractAddress: deployment.address, timeoutMs: 300 }), { code: 'timeout' }, 'no answer in time');
});
