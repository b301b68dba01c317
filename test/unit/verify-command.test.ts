import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import * as Digest from 'multiformats/hashes/digest';
import { sha256 } from 'multiformats/hashes/sha2';
import type { AnchorReaderOptions } from '../../src/adapters/chain/anchor-reader.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import type { GatewayFetchResult } from '../../src/adapters/ipfs/gateway-fetcher.js';
import {
  exitCodeOf,
  parseVerifyArgs,
  renderReport,
  verifyCommand,
  verifyReceipt,
  type VerifyArgs,
  type VerifyDeps,
  type VerifyReport,
} from '../../src/cli/verify-command.js';
import { fromHex, toHex } from '../../src/domain/hashing/merkle.js';
import { HASH_SCHEME, type RecordEnvelope } from '../../src/domain/records/types.js';
import type { AnchorEventView, ChainReader } from '../../src/domain/verification/ports.js';
import { RECEIPT_VERSION, type Receipt } from '../../src/domain/verification/types.js';
import { DrisError } from '../../src/errors/dris-error.js';

/**
 * The offline verifier without a chain or a gateway: a batch of three records is hashed and
 * anchored in fakes behind the ChainReader port and the gateway fetch, then receipts, payloads,
 * the chain and the manifest are tampered with one at a time; each must give its reasonCategory
 * and exit status. Arguments and the report rendering are checked on the same fixtures.
 */

const hashing = new JsHashingBackend();
const CONTRACT = '0x5FbDB2315678afecb367f032d93F642f64180aa3';
const TX = `0x${'ab'.repeat(32)}`;
const BLOCK = 42;
const ANCHORED_SEC = 1_767_225_600;

interface World {
  readonly receipt: Receipt;
  readonly payload: Record<string, unknown>;
  readonly manifestBytes: Uint8Array;
  readonly manifestCid: string;
  readonly otherManifestBytes: Uint8Array;
  readonly otherManifestCid: string;
  readonly event: AnchorEventView;
}

function cidOf(bytes: Uint8Array): string {
  return CID.create(1, raw.code, Digest.create(sha256.code, createHash('sha256').update(bytes).digest())).toString();
}

function manifestOf(batchSeq: number, leaves: readonly string[]): Uint8Array {
  const root = toHex(hashing.merkleRoot(leaves.map(fromHex)));
  return Buffer.from(
    hashing.canonicalize({ hashScheme: HASH_SCHEME, merkleAlgorithm: 'rfc9162-sha256', batchId: `batch-${batchSeq}`, batchSeq, createdAt: '2026-01-01T00:00:00.000Z', treeSize: leaves.length, merkleRoot: root, previous: null, leaves }),
    'utf8',
  );
}

function makeWorld(): World {
  const payloads = [{ amount: 12.5, currency: 'EUR' }, { amount: 3, note: 'é' }, { nested: { a: [1, 2, 3] } }];
  const envelopes: RecordEnvelope[] = payloads.map((p, i) => ({
    hashScheme: HASH_SCHEME,
    tenantId: 'acme',
    database: 'erp',
    collection: 'invoices',
    recordId: `inv-${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: hashing.sha256Hex(Buffer.from(hashing.canonicalize(p), 'utf8')),
    salt: randomBytes(16).toString('hex'),
  }));
  const leaves = hashing.recordHashes(envelopes);
  const leafBytes = leaves.map(fromHex);
  const merkleRoot = toHex(hashing.merkleRoot(leafBytes));
  const index = 1;
  const envelope = envelopes[index] as RecordEnvelope;
  const manifestBytes = manifestOf(7, leaves);
  const otherManifestBytes = manifestOf(8, [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')]);
  const manifestCid = cidOf(manifestBytes);
  const receipt: Receipt = {
    receiptVersion: RECEIPT_VERSION,
    hashScheme: HASH_SCHEME,
    merkleAlgorithm: 'rfc9162-sha256',
    tenantId: envelope.tenantId,
    database: envelope.database,
    collection: envelope.collection,
    recordId: envelope.recordId,
    recordVersion: envelope.recordVersion,
    operationType: envelope.operationType,
    sourceTimestamp: envelope.sourceTimestamp,
    payloadHash: envelope.payloadHash,
    salt: envelope.salt,
    recordHash: leaves[index] as string,
    leafIndex: index,
    treeSize: leaves.length,
    merkleProof: hashing.inclusionProof(leafBytes, index).map(toHex),
    merkleRoot,
    batchId: 'batch-7',
    batchSeq: 7,
    manifestCid,
    chainId: 31337,
    contractAddress: CONTRACT,
    chainTxHash: TX,
    blockNumber: BLOCK,
    anchoredAt: new Date(ANCHORED_SEC * 1000).toISOString(),
    acceptedAt: '2025-12-31T23:59:00.000Z',
    issuedAt: '2026-01-02T00:00:00.000Z',
  };
  return {
    receipt,
    payload: payloads[index] as Record<string, unknown>,
    manifestBytes,
    manifestCid,
    otherManifestBytes,
    otherManifestCid: cidOf(otherManifestBytes),
    event: { batchSeq: 7, merkleRoot, batchId: 'batch-7', manifestCid, recordCount: 3, timestampSec: ANCHORED_SEC, txHash: TX, blockNumber: BLOCK },
  };
}

interface ChainState {
  chainId: number;
  anchors: Map<string, { batchSeq: number; anchoredAtSec: number }>;
  events: Map<number, AnchorEventView>;
  /** Thrown by connect. */
  connectError?: DrisError;
  /** Thrown by every read. */
  readError?: DrisError;
  head: number;
}

function chainOf(w: World): ChainState {
  return {
    chainId: 31337,
    anchors: new Map([[w.receipt.merkleRoot, { batchSeq: 7, anchoredAtSec: ANCHORED_SEC }]]),
    events: new Map([[7, w.event]]),
    head: BLOCK + 11,
  };
}

class FakeChain implements ChainReader {
  closed = false;
  constructor(
    private readonly s: ChainState,
    readonly contractAddress: string,
  ) {}
  get chainId(): number {
    return this.s.chainId;
  }
  private read<T>(v: T): Promise<T> {
    return this.s.readError === undefined ? Promise.resolve(v) : Promise.reject(this.s.readError);
  }
  anchorOf(root: string) {
    return this.read(this.s.anchors.get(root) ?? null);
  }
  eventBySeq(seq: number) {
    return this.read(this.s.events.get(seq) ?? null);
  }
  eventByRoot(root: string) {
    return this.read([...this.s.events.values()].find((e) => e.merkleRoot === root) ?? null);
  }
  eventByBatchId(batchId: string) {
    return this.read([...this.s.events.values()].find((e) => e.batchId === batchId) ?? null);
  }
  headBlock() {
    return this.read(this.s.head);
  }
  head() {
    return this.read({ number: this.s.head, hash: `0x${this.s.head.toString(16).padStart(64, '0')}` });
  }
  blockAt(n: number) {
    return this.read(n > this.s.head ? null : { number: n, hash: `0x${n.toString(16).padStart(64, '0')}` });
  }
  close() {
    this.closed = true;
    return Promise.resolve();
  }
}

interface Setup {
  readonly files: Map<string, Uint8Array>;
  readonly chain: ChainState;
  /** What the gateway answers per CID. */
  readonly gateway: Map<string, Uint8Array | DrisError>;
  readonly connects: AnchorReaderOptions[];
  readonly readers: FakeChain[];
  readonly deps: VerifyDeps;
}

function setup(w: World, receipt: unknown = w.receipt, payload: string | Uint8Array = JSON.stringify(w.payload)): Setup {
  const files = new Map<string, Uint8Array>([
    ['receipt.json', Buffer.from(JSON.stringify(receipt))],
    ['payload.json', typeof payload === 'string' ? Buffer.from(payload, 'utf8') : payload],
  ]);
  const chain = chainOf(w);
  const gateway = new Map<string, Uint8Array | DrisError>([
    [w.manifestCid, w.manifestBytes],
    [w.otherManifestCid, w.otherManifestBytes],
  ]);
  const connects: AnchorReaderOptions[] = [];
  const readers: FakeChain[] = [];
  const deps: VerifyDeps = {
    loadHashing: () => Promise.resolve(hashing),
    readFile: (p) => {
      const f = files.get(p);
      return f === undefined ? Promise.reject(Object.assign(new Error(`ENOENT ${p}`), { code: 'ENOENT' })) : Promise.resolve(f);
    },
    connectChain: (o) => {
      connects.push(o);
      if (chain.connectError !== undefined) return Promise.reject(chain.connectError);
      if (!/^0x[0-9a-fA-F]{40}$/.test(o.contractAddress)) return Promise.reject(new DrisError('config_invalid', 'not an address', { extra: { reason: 'bad_address' } }));
      if (o.expectedChainId !== undefined && o.expectedChainId !== chain.chainId) {
        return Promise.reject(new DrisError('config_invalid', 'other chain', { extra: { reason: 'chain_id_mismatch', expected: o.expectedChainId, actual: chain.chainId } }));
      }
      const reader = new FakeChain(chain, o.contractAddress);
      readers.push(reader);
      return Promise.resolve(reader);
    },
    fetchManifest: (gatewayUrl, cid) => {
      const answer = gateway.get(cid);
      if (answer === undefined) return Promise.reject(new DrisError('not_found', 'no such CID'));
      if (answer instanceof DrisError) return Promise.reject(answer);
      const result: GatewayFetchResult = { bytes: answer, format: 'raw', url: `${gatewayUrl}/ipfs/${cid}?format=raw` };
      return Promise.resolve(result);
    },
  };
  return { files, chain, gateway, connects, readers, deps };
}

function args(extra: Partial<VerifyArgs> = {}): VerifyArgs {
  return { receiptPath: 'receipt.json', rpcUrl: 'http://127.0.0.1:8545', json: false, timeoutMs: 1000, ...extra };
}

const withPayload = args({ payloadPath: 'payload.json' });
const withGateway = args({ gatewayUrl: 'http://gateway.test' });
const everything = args({ payloadPath: 'payload.json', gatewayUrl: 'http://gateway.test' });

function expectOutcome(t: Test, report: VerifyReport, reason: string | null, exit: number, what: string): void {
  t.equal(report.reasonCategory, reason, `${what}: reasonCategory`);
  t.equal(exitCodeOf(report), exit, `${what}: exit status`);
  t.equal(report.verified, exit === 0, `${what}: verified`);
}

t.test('arguments', async (t) => {
  t.same(parseVerifyArgs(['r.json', '--rpc', 'http://127.0.0.1:8545']), { receiptPath: 'r.json', rpcUrl: 'http://127.0.0.1:8545', json: false, timeoutMs: 30_000 });
  t.same(parseVerifyArgs(['--rpc=https://rpc.example/key', 'r.json', '--payload', 'p.json', '--ipfs-gateway', 'http://127.0.0.1:8080/', '--json', '--timeout-ms', '2500']), {
    receiptPath: 'r.json',
    rpcUrl: 'https://rpc.example/key',
    payloadPath: 'p.json',
    gatewayUrl: 'http://127.0.0.1:8080/',
    json: true,
    timeoutMs: 2500,
  });
  t.equal(parseVerifyArgs(['--help']), 'help');
  for (const [argv, what] of [
    [['--rpc', 'http://x'], 'no receipt'],
    [['a.json', 'b.json', '--rpc', 'http://x'], 'two receipts'],
    [['r.json'], 'no --rpc'],
    [['r.json', '--rpc', 'ws://x'], 'a websocket URL'],
    [['r.json', '--rpc', 'not a url'], 'not a URL'],
    [['r.json', '--rpc', 'http://x', '--ipfs-gateway', 'ftp://x'], 'a gateway that is not http'],
    [['r.json', '--rpc', 'http://x', '--timeout-ms', '0'], 'a zero timeout'],
    [['r.json', '--rpc', 'http://x', '--timeout-ms', '1e3'], 'a timeout that is not an integer'],
    [['r.json', '--rpc', 'http://x', '--timeout-ms'], 'a timeout without a value'],
    [['r.json', '--rpc', 'http://x', '--chain', '1'], 'an unknown option'],
    [['r.json', '--rpc', 'http://x', '--payload', ''], 'an empty payload path'],
  ] as const) {
    t.throws(() => parseVerifyArgs(argv), { name: 'DrisError', code: 'validation_failed', extra: { usage: true } }, what);
  }
  const w = makeWorld();
  const s = setup(w);
  const out: string[] = [];
  const err: string[] = [];
  const io = { stdout: (x: string) => out.push(x), stderr: (x: string) => err.push(x) };
  t.equal(await verifyCommand(['receipt.json'], io, s.deps), 2, 'a usage error exits 2');
  t.equal(out.length, 0, 'nothing on stdout');
  t.match(err.join(''), /usage: dris verify/);
  t.equal(s.connects.length, 0, 'nothing was read from the chain');
  t.equal(await verifyCommand(['--help'], io, s.deps), 0, '--help exits 0');
});

t.test('an intact receipt: stored hash, payload, manifest', async (t) => {
  const w = makeWorld();
  const s = setup(w);
  const bare = await verifyReceipt(args(), s.deps);
  expectOutcome(t, bare, 'verified_anchored', 0, 'receipt alone');
  t.equal(bare.verificationStatus, 'pass');
  t.same(bare.checks, {
    receiptValid: true,
    payloadHashMatches: null,
    recordHashMatches: true,
    proofValid: true,
    chainIdMatches: true,
    contractFound: true,
    anchoredOnChain: true,
    onChainRootMatches: true,
    anchorEventMatches: true,
    manifestCidMatchesChain: true,
    manifestMatchesCid: null,
    hashMatchesIpfs: null,
    merkleRootMatchesChain: null,
  });
  t.same(s.connects[0], { rpcUrl: 'http://127.0.0.1:8545', contractAddress: CONTRACT, expectedChainId: 31337, timeoutMs: 1000, fromBlock: BLOCK }, 'the chain and contract of the receipt, searched from its block');
  t.ok(s.readers.every((r) => r.closed), 'the reader is closed');
  t.equal(bare.chain?.event?.confirmations, 12);
  t.equal(bare.chain?.anchor?.anchoredAt, w.receipt.anchoredAt);
  t.equal(bare.ipfs, null, 'no gateway, no IPFS section');

  const full = await verifyReceipt(everything, s.deps);
  expectOutcome(t, full, 'full_match', 0, 'payload and manifest');
  t.equal(full.computed.payloadHash, w.receipt.payloadHash);
  t.equal(full.computed.payloadSource, 'file');
  t.equal(full.computed.recordHash, w.receipt.recordHash);
  t.equal(full.computed.manifestRoot, w.receipt.merkleRoot);
  t.match(full.checks, { payloadHashMatches: true, manifestMatchesCid: true, hashMatchesIpfs: true, merkleRootMatchesChain: true });
  t.match(full.ipfs, { cid: w.manifestCid, format: 'raw', bytes: w.manifestBytes.byteLength, manifest: { batchSeq: 7, treeSize: 3, leafAtIndex: w.receipt.recordHash, recomputedRoot: w.receipt.merkleRoot } });

  // The payload in another member order and spacing is the same JCS.
  s.files.set('payload.json', Buffer.from('{ "note": "\\u00e9",\n  "amount": 3.0 }'));
  expectOutcome(t, await verifyReceipt(withPayload, s.deps), 'full_match', 0, 'same payload, other text');

  const embedded = setup(w, { ...w.receipt, payload: w.payload });
  const withOwn = await verifyReceipt(args(), embedded.deps);
  expectOutcome(t, withOwn, 'full_match', 0, 'a receipt carrying its payload');
  t.equal(withOwn.computed.payloadSource, 'receipt');
  const lying = setup(w, { ...w.receipt, payload: { ...w.payload, amount: 4 } });
  expectOutcome(t, await verifyReceipt(args(), lying.deps), 'payload_mismatch', 1, 'a receipt carrying another payload');
});

t.test('a tampered payload or receipt fails with its reason', async (t) => {
  const w = makeWorld();
  const oneByte = Buffer.from(JSON.stringify(w.payload).replace('3', '4'));
  const changed = await verifyReceipt(withPayload, setup(w, w.receipt, oneByte).deps);
  expectOutcome(t, changed, 'payload_mismatch', 1, 'one byte changed in the payload');
  t.equal(changed.checks.payloadHashMatches, false);
  t.equal(changed.verificationStatus, 'fail');

  const flip = (hex: string): string => `${hex[0] === '0' ? '1' : '0'}${hex.slice(1)}`;
  const cases: [string, Partial<Receipt>, string][] = [
    ['recordHash changed', { recordHash: flip(w.receipt.recordHash) }, 'record_hash_mismatch'],
    ['payloadHash changed', { payloadHash: flip(w.receipt.payloadHash) }, 'record_hash_mismatch'],
    ['salt changed', { salt: flip(w.receipt.salt) }, 'record_hash_mismatch'],
    ['recordId changed', { recordId: 'inv-9' }, 'record_hash_mismatch'],
    ['a proof element changed', { merkleProof: w.receipt.merkleProof.map((p, i) => (i === 0 ? flip(p) : p)) }, 'proof_invalid'],
    ['leafIndex changed', { leafIndex: 0 }, 'proof_invalid'],
    ['merkleRoot changed', { merkleRoot: flip(w.receipt.merkleRoot) }, 'proof_invalid'],
    ['batchSeq changed', { batchSeq: 6 }, 'root_mismatch'],
    ['chainTxHash changed', { chainTxHash: `0x${'cd'.repeat(32)}` }, 'not_on_chain'],
    ['blockNumber changed', { blockNumber: BLOCK - 1 }, 'not_on_chain'],
    ['anchoredAt changed', { anchoredAt: '2020-01-01T00:00:00.000Z' }, 'not_on_chain'],
    ['batchId changed', { batchId: 'batch-8' }, 'not_on_chain'],
    ['manifestCid changed', { manifestCid: w.otherManifestCid }, 'ipfs_mismatch'],
  ];
  for (const [what, patch, reason] of cases) {
    const report = await verifyReceipt(args(), setup(w, { ...w.receipt, ...patch }).deps);
    expectOutcome(t, report, reason, 1, what);
  }
  const noEvent = setup(w);
  noEvent.chain.events.clear();
  const gone = await verifyReceipt(args(), noEvent.deps);
  expectOutcome(t, gone, 'not_on_chain', 1, 'the root is stored but its event is not found');
  t.same(gone.chain?.mismatches, ['event']);

  // A self-consistent forgery: a one-leaf tree whose root is the leaf hash of the record hash.
  const forged: Partial<Receipt> = { leafIndex: 0, treeSize: 1, merkleProof: [], merkleRoot: toHex(hashing.leafHash(fromHex(w.receipt.recordHash))) };
  expectOutcome(t, await verifyReceipt(args(), setup(w, { ...w.receipt, ...forged }).deps), 'root_mismatch', 1, 'a forged tree, batchSeq of another root');
  expectOutcome(t, await verifyReceipt(args(), setup(w, { ...w.receipt, ...forged, batchSeq: 99 }).deps), 'not_on_chain', 1, 'a forged tree, unknown batchSeq');
});

t.test('the chain: wrong chain, no contract, unreachable', async (t) => {
  const w = makeWorld();
  const other = setup(w);
  other.chain.chainId = 1;
  const wrongChain = await verifyReceipt(args(), other.deps);
  expectOutcome(t, wrongChain, 'chain_unavailable', 2, 'the node is on another chain');
  t.equal(wrongChain.checks.chainIdMatches, false);
  t.equal(wrongChain.chain?.chainId, 1);

  const empty = setup(w);
  empty.chain.connectError = new DrisError('config_invalid', 'no contract', { extra: { reason: 'no_contract' } });
  const noContract = await verifyReceipt(args(), empty.deps);
  expectOutcome(t, noContract, 'not_on_chain', 1, 'no contract at the address');
  t.equal(noContract.checks.contractFound, false);

  const badAddress = await verifyReceipt(args(), setup(w, { ...w.receipt, contractAddress: '0x1234' }).deps);
  expectOutcome(t, badAddress, 'not_on_chain', 1, 'a malformed contract address');
  t.same([badAddress.checks.chainIdMatches, badAddress.checks.contractFound], [null, false]);
  t.match(renderReport(badAddress), /✗ contract +no DrisAnchor contract at 0x1234/);

  const down = setup(w);
  down.chain.connectError = new DrisError('dependency_unavailable', 'unreachable');
  const unreachable = await verifyReceipt(withPayload, down.deps);
  expectOutcome(t, unreachable, 'chain_unavailable', 2, 'the RPC is unreachable');
  t.equal(unreachable.verificationStatus, 'error');
  t.equal(unreachable.chain?.error?.code, 'dependency_unavailable');
  t.equal(unreachable.checks.payloadHashMatches, true, 'the local checks still ran');

  const slow = setup(w);
  slow.chain.readError = new DrisError('timeout', 'slow');
  expectOutcome(t, await verifyReceipt(args(), slow.deps), 'chain_unavailable', 2, 'a read times out');
  t.ok(slow.readers.every((r) => r.closed), 'the reader is closed after a failed read');

  const tamperedAndDown = setup(w, w.receipt, Buffer.from(JSON.stringify({ ...w.payload, amount: 4 })));
  tamperedAndDown.chain.connectError = new DrisError('dependency_unavailable', 'unreachable');
  expectOutcome(t, await verifyReceipt(withPayload, tamperedAndDown.deps), 'payload_mismatch', 1, 'a payload mismatch needs no chain');

  const gone = setup(w);
  gone.chain.anchors.clear();
  gone.chain.events.clear();
  expectOutcome(t, await verifyReceipt(args(), gone.deps), 'not_on_chain', 1, 'the root is not on-chain');
});

t.test('the manifest: trustless fetch', async (t) => {
  const w = makeWorld();
  const other = setup(w, { ...w.receipt, manifestCid: w.otherManifestCid });
  const mismatch = await verifyReceipt(withGateway, other.deps);
  expectOutcome(t, mismatch, 'ipfs_mismatch', 1, "another batch's manifest CID");
  t.match(mismatch.checks, { manifestMatchesCid: true, hashMatchesIpfs: false, manifestCidMatchesChain: false });

  const lying = setup(w);
  lying.gateway.set(w.manifestCid, new DrisError('dependency_unavailable', 'bytes do not match', { extra: { reason: 'cid_mismatch' } }));
  const liar = await verifyReceipt(withGateway, lying.deps);
  expectOutcome(t, liar, 'ipfs_unavailable', 2, 'a gateway answering other bytes is not believed');
  t.equal(liar.checks.manifestMatchesCid, false);

  const missing = setup(w);
  missing.gateway.delete(w.manifestCid);
  expectOutcome(t, await verifyReceipt(withGateway, missing.deps), 'ipfs_unavailable', 2, 'the gateway does not have the manifest');

  const notManifest = setup(w);
  notManifest.gateway.set(w.manifestCid, Buffer.from('[1,2,3]'));
  const junk = await verifyReceipt(withGateway, notManifest.deps);
  expectOutcome(t, junk, 'ipfs_mismatch', 1, 'content that is not a manifest');
  t.equal(junk.ipfs?.manifest, null);

  const badCid = await verifyReceipt(withGateway, setup(w, { ...w.receipt, manifestCid: 'not-a-cid' }).deps);
  expectOutcome(t, badCid, 'ipfs_mismatch', 1, 'a receipt whose manifestCid is not a CID');
});

t.test('inputs that are not a receipt or a payload exit 2', async (t) => {
  const w = makeWorld();
  const cases: [string, Setup, VerifyArgs, string][] = [
    ['no receipt file', setup(w), args({ receiptPath: 'missing.json' }), 'validation_failed'],
    ['a receipt file that is not JSON', (() => {
      const s = setup(w);
      s.files.set('receipt.json', Buffer.from('{"receiptVersion":1,'));
      return s;
    })(), args(), 'invalid_json'],
    ['a receipt with a duplicate member', (() => {
      const s = setup(w);
      s.files.set('receipt.json', Buffer.from(JSON.stringify(w.receipt).replace('{', '{"recordId":"x",')));
      return s;
    })(), args(), 'validation_failed'],
    ['a receipt missing a field', setup(w, { ...w.receipt, merkleProof: undefined }), args(), 'validation_failed'],
    ['a receipt of another version', setup(w, { ...w.receipt, receiptVersion: 2 }), args(), 'validation_failed'],
    ['a payload that is not I-JSON', setup(w, w.receipt, '{"a":1,"a":2}'), withPayload, 'validation_failed'],
    ['a payload with an unsafe integer', setup(w, w.receipt, '{"a":9007199254740993}'), withPayload, 'validation_failed'],
    ['a payload that is not an object', setup(w, w.receipt, '[1]'), withPayload, 'validation_failed'],
    ['no payload file', setup(w), args({ payloadPath: 'nope.json' }), 'validation_failed'],
  ];
  for (const [what, s, a, code] of cases) {
    const report = await verifyReceipt(a, s.deps);
    expectOutcome(t, report, null, 2, what);
    t.equal(report.error?.code, code, `${what}: error code`);
    t.equal(s.connects.length, 0, `${what}: the chain is not read`);
  }
  const versioned = await verifyReceipt(args(), setup(w, { ...w.receipt, receiptVersion: 2 }).deps);
  t.same(versioned.error?.fieldErrors?.map((f) => f.path), ['receiptVersion']);
  const dup = await verifyReceipt(withPayload, setup(w, w.receipt, '{"a":1,"a":2}').deps);
  t.same(dup.error?.fieldErrors?.map((f) => f.code), ['duplicate_key']);
});

t.test('report rendering and --json', async (t) => {
  const w = makeWorld();
  const s = setup(w);
  const pass = renderReport(await verifyReceipt(everything, s.deps));
  const lines = pass.trimEnd().split('\n');
  t.match(lines[0], /^dris verify receipt\.json \(receipt v1, dris-v1\)$/);
  const checkLines = lines.filter((l) => /^ {2}[✓✗·] /.test(l));
  t.equal(checkLines.length, 10, 'one line per check');
  t.ok(checkLines.every((l) => l.startsWith('  ✓ ')), 'all hold');
  t.match(lines.at(-1), /^VERIFIED {2}pass · full_match: /);

  const bare = renderReport(await verifyReceipt(args(), s.deps));
  t.match(bare, /· payload hash +not checked/);
  t.match(bare, /· IPFS manifest +not checked/);

  const failed = renderReport(await verifyReceipt(withPayload, setup(w, w.receipt, '{"amount":4,"note":"é"}').deps));
  t.match(failed, /✗ payload hash/);
  t.match(failed.trimEnd().split('\n').at(-1), /^NOT VERIFIED {2}fail · payload_mismatch: /);

  const invalid = renderReport(await verifyReceipt(args(), setup(w, { ...w.receipt, treeSize: 'three' }).deps));
  t.match(invalid, /NOT VERIFIED {2}error · validation_failed/);
  t.match(invalid, /treeSize: /, 'field errors are listed');

  const out: string[] = [];
  const io = { stdout: (x: string) => out.push(x), stderr: () => undefined };
  t.equal(await verifyCommand(['receipt.json', '--rpc', 'http://127.0.0.1:8545', '--json', '--payload', 'payload.json'], io, s.deps), 0);
  const parsed = JSON.parse(out.join('')) as VerifyReport;
  t.match(parsed, { verified: true, verificationStatus: 'pass', reasonCategory: 'full_match', receipt: { recordId: 'inv-1', batchSeq: 7 }, chain: { chainId: 31337, rpc: 'http://127.0.0.1:8545' }, ipfs: null });
  out.length = 0;
  t.equal(await verifyCommand(['receipt.json', '--rpc', 'http://127.0.0.1:8545', '--payload', 'payload.json'], io, setup(w, w.receipt, '{}').deps), 1, 'a failed check exits 1');
  t.match(out.join(''), /NOT VERIFIED/);
});
