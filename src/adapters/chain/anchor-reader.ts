import { Contract, getAddress, Interface, isAddress, isError, zeroPadValue, toBeHex, type EventFragment, type JsonRpcProvider, type Log } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import type { AnchorEventView, BlockRef, ChainReader } from '../../domain/verification/ports.js';
import { BlockRangePager, DEFAULT_LOG_BLOCK_RANGE, type LogPageVisit } from './block-range-pager.js';
import { translateChainError } from './chain-errors.js';
import { assertRoot, parseAnchoredLog, readAnchorOf, readAnchorOfAt } from './contract-reads.js';
import { makeProvider } from './chain-runtime.js';
import { componentLogger } from '../../util/logger.js';

/**
 * The ChainReader port on a JSON-RPC node with ethers v6 and no signer: what verification reads
 * at verification time (the contract's anchorOf view and its Anchored events). Needs no key and
 * sends nothing, so API processes, auditors and the offline verifier can point it at any node.
 */

export interface AnchorReaderOptions {
  readonly rpcUrl: string;
  readonly contractAddress: string;
  /** When set, a node on another chain is refused (config_invalid, reason chain_id_mismatch). */
  readonly expectedChainId?: number;
  /** Per JSON-RPC request. Default 10 s. */
  readonly timeoutMs?: number;
  /** Lower bound of every log search (the contract's deployment block, when known). Default 0. */
  readonly fromBlock?: number;
  /** Most blocks per eth_getLogs query (fewer once the provider refuses a page). Default 10 000. */
  readonly maxBlockRange?: number;
  /**
   * Events at least this many blocks below the head are taken as final and cached; younger ones
   * are read again each time, since a reorg may still drop them. Default 64.
   */
  readonly finalityDepth?: number;
}

/** Why connect() refused the node or the address (extra.reason of its config_invalid). */
export type AnchorReaderRefusal = 'chain_id_mismatch' | 'no_contract' | 'not_anchor_contract' | 'bad_address';

/**
 * The part of DrisAnchor's interface a reader uses, written out rather than read from the build
 * artifact: a verifier run years later from an installed package must not depend on a build output,
 * and this interface is what every deployed DrisAnchor keeps (the integration test holds the two
 * to the same selectors and topic).
 */
export const ANCHOR_READER_ABI = [
  'function anchorOf(bytes32 merkleRoot) view returns (uint64 batchSeq, uint64 timestamp)',
  'function lastSequence() view returns (uint64)',
  'event Anchored(uint64 indexed batchSeq, bytes32 indexed merkleRoot, string batchId, string manifestCid, uint32 recordCount, uint64 timestamp)',
] as const;

const DEFAULT_FINALITY = 64;

function nonNegativeInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value < 0) throw new DrisError('config_invalid', `${name} must be a non-negative integer`);
  return value;
}

async function readChainId(provider: JsonRpcProvider): Promise<number> {
  try {
    return Number(BigInt(String(await provider.send('eth_chainId', []))));
  } catch (err) {
    throw translateChainError(err, 'reading the chain id');
  }
}

type Topics = (string | null)[];

export class AnchorReader implements ChainReader {
  private readonly contract: Contract;
  private readonly anchored: EventFragment;
  private readonly pager: BlockRangePager;
  private readonly finality: number;
  private readonly fromBlock: number;
  private closed = false;
  /**
   * Whether the node takes an EIP-1898 block (by hash, required canonical) on eth_call; when not,
   * a read in a block names its number (see readAnchorOfAt).
   */
  private pinByHash = true;
  /** Final events (see finalityDepth), by batchSeq; the other maps point into it. */
  private readonly bySeq = new Map<number, AnchorEventView>();
  private readonly seqByRoot = new Map<string, number>();
  private readonly seqByBatchId = new Map<string, number>();
  /** Every Anchored event up to this block is in the cache (batchId scans move it forward). */
  private scannedTo: number;
  /** Searches in flight, so concurrent look-ups of one key share one scan. */
  private readonly inFlight = new Map<string, Promise<AnchorEventView | null>>();

  private constructor(
    private readonly provider: JsonRpcProvider,
    private readonly iface: Interface,
    readonly chainId: number,
    readonly contractAddress: string,
    options: AnchorReaderOptions,
  ) {
    this.contract = new Contract(contractAddress, iface, provider);
    const event = iface.getEvent('Anchored');
    if (event === null) throw new DrisError('config_invalid', 'the contract ABI has no Anchored event');
    this.anchored = event;
    this.pager = new BlockRangePager(Math.max(1, nonNegativeInt(options.maxBlockRange ?? DEFAULT_LOG_BLOCK_RANGE, 'maxBlockRange')));
    this.finality = nonNegativeInt(options.finalityDepth ?? DEFAULT_FINALITY, 'finalityDepth');
    this.fromBlock = nonNegativeInt(options.fromBlock ?? 0, 'fromBlock');
    this.scannedTo = this.fromBlock - 1;
  }

  /**
   * Reads the chain id (config_invalid when it is not expectedChainId), then checks that code is
   * at the address and answers as DrisAnchor. dependency_unavailable / timeout: the node does not
   * answer.
   */
  static async connect(options: AnchorReaderOptions): Promise<AnchorReader> {
    if (!isAddress(options.contractAddress)) {
      throw new DrisError('config_invalid', 'the contract address is not an address', { extra: { reason: 'bad_address' satisfies AnchorReaderRefusal } });
    }
    const address = getAddress(options.contractAddress);
    const timeoutMs = options.timeoutMs ?? 10_000;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) throw new DrisError('config_invalid', 'timeoutMs must be a positive integer');
    // The chain id is only known once asked; a provider bound to a provisional network can ask it,
    // since eth_chainId does not depend on it. It is rebuilt on the real chain id below.
    const probe = makeProvider(options.rpcUrl, options.expectedChainId ?? 1, timeoutMs);
    let chainId: number;
    try {
      chainId = await readChainId(probe);
    } finally {
      probe.destroy();
    }
    if (options.expectedChainId !== undefined && chainId !== options.expectedChainId) {
      throw new DrisError('config_invalid', `the node is on chain id ${chainId}, not ${options.expectedChainId}`, {
        extra: { reason: 'chain_id_mismatch' satisfies AnchorReaderRefusal, expected: options.expectedChainId, actual: chainId },
      });
    }
    // Verification reads many roots at once (each verification's, at most once per chain cache
    // period): reads within a few milliseconds share one JSON-RPC batch, one HTTP exchange.
    const provider = makeProvider(options.rpcUrl, chainId, timeoutMs, { maxCount: 100, stallMs: 2 });
    try {
      const reader = new AnchorReader(provider, new Interface(ANCHOR_READER_ABI), chainId, address, options);
      await reader.verifyContract();
      await reader.probeBlockByHash();
      return reader;
    } catch (err) {
      provider.destroy();
      throw err;
    }
  }

  private async verifyContract(): Promise<void> {
    let code: string;
    try {
      code = await this.provider.getCode(this.contractAddress);
    } catch (err) {
      throw translateChainError(err, 'reading the contract code');
    }
    if (code === '0x') {
      throw new DrisError('config_invalid', `no contract at ${this.contractAddress} on chain id ${this.chainId}`, {
        extra: { reason: 'no_contract' satisfies AnchorReaderRefusal, contractAddress: this.contractAddress, chainId: this.chainId },
      });
    }
    try {
      await this.contract.getFunction('lastSequence').staticCall();
    } catch (err) {
      const e = translateChainError(err, 'reading the contract', this.iface);
      // A revert, or an answer that does not decode: some other contract lives there.
      if (e.code === 'invalid_state' || isError(err, 'BAD_DATA')) {
        throw new DrisError('config_invalid', `the code at ${this.contractAddress} is not a DrisAnchor contract`, {
          cause: err,
          extra: { reason: 'not_anchor_contract' satisfies AnchorReaderRefusal, contractAddress: this.contractAddress, chainId: this.chainId },
        });
      }
      throw e;
    }
  }

  /**
   * Some nodes refuse EIP-1898 block objects on eth_call. Verification must not fail on them: their
   * reads in a block name its number instead, and a reorg at that height is still found by the next
   * checkpoint (canonical-anchors.ts), only not refused at the read.
   */
  private async probeBlockByHash(): Promise<void> {
    try {
      const head = await this.head();
      const data = this.iface.encodeFunctionData('lastSequence', []);
      await this.provider.send('eth_call', [{ to: this.contractAddress, data }, { blockHash: head.hash, requireCanonical: true }]);
    } catch (err) {
      this.pinByHash = false;
      componentLogger('anchor-reader').warn({ code: translateChainError(err, 'reading in a block by hash').code }, 'the chain node refused a read in a block named by hash (EIP-1898): reads in a block name its number');
    }
  }

  /** Whether reads in a block name it by hash (EIP-1898), as the node was found to accept. */
  get readsInBlockByHash(): boolean {
    return this.pinByHash;
  }

  async anchorOf(merkleRoot: string, at?: BlockRef): Promise<{ readonly batchSeq: number; readonly anchoredAtSec: number } | null> {
    this.assertOpen();
    const anchor =
      at === undefined ? await readAnchorOf(this.contract, this.iface, merkleRoot) : await readAnchorOfAt(this.provider, this.iface, this.contractAddress, merkleRoot, at, this.pinByHash);
    return anchor === null ? null : { batchSeq: anchor.batchSeq, anchoredAtSec: anchor.timestampSec };
  }

  async eventBySeq(batchSeq: number): Promise<AnchorEventView | null> {
    this.assertOpen();
    if (!Number.isSafeInteger(batchSeq) || batchSeq < 1) throw new DrisError('validation_failed', 'batchSeq must be a positive integer');
    const cached = this.bySeq.get(batchSeq);
    if (cached !== undefined) return cached;
    return this.once(`seq:${batchSeq}`, () => this.searchIndexed([this.anchored.topicHash, zeroPadValue(toBeHex(batchSeq), 32)], 'searching the Anchored event of a sequence'));
  }

  async eventByRoot(merkleRoot: string): Promise<AnchorEventView | null> {
    this.assertOpen();
    assertRoot(merkleRoot);
    const seq = this.seqByRoot.get(merkleRoot);
    const cached = seq === undefined ? undefined : this.bySeq.get(seq);
    if (cached !== undefined) return cached;
    return this.once(`root:${merkleRoot}`, () => this.searchIndexed([this.anchored.topicHash, null, `0x${merkleRoot}`], 'searching the Anchored event of a root'));
  }

  async eventByBatchId(batchId: string): Promise<AnchorEventView | null> {
    this.assertOpen();
    const seq = this.seqByBatchId.get(batchId);
    const cached = seq === undefined ? undefined : this.bySeq.get(seq);
    if (cached !== undefined) return cached;
    return this.once(`batch:${batchId}`, () => this.scanForBatchId(batchId));
  }

  async headBlock(): Promise<number> {
    this.assertOpen();
    try {
      return await this.provider.getBlockNumber();
    } catch (err) {
      throw translateChainError(err, 'reading the head block');
    }
  }

  async head(): Promise<BlockRef> {
    const b = await this.block('latest', 'reading the head block');
    if (b === null) throw new DrisError('dependency_unavailable', 'the node has no head block');
    return b;
  }

  async blockAt(blockNumber: number): Promise<BlockRef | null> {
    if (!Number.isSafeInteger(blockNumber) || blockNumber < 0) throw new DrisError('validation_failed', 'a block number is a non-negative integer');
    return this.block(blockNumber, 'reading a block');
  }

  close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.provider.destroy();
    }
    return Promise.resolve();
  }

  private async block(tag: number | 'latest', what: string): Promise<BlockRef | null> {
    this.assertOpen();
    try {
      const b = await this.provider.getBlock(tag);
      if (b === null) return null;
      if (b.hash === null) throw new DrisError('dependency_unavailable', 'the node answered a block without its hash');
      return { number: b.number, hash: b.hash.toLowerCase() };
    } catch (err) {
      throw translateChainError(err, what);
    }
  }

  private once(key: string, search: () => Promise<AnchorEventView | null>): Promise<AnchorEventView | null> {
    const running = this.inFlight.get(key);
    if (running !== undefined) return running;
    const p = search().finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, p);
    return p;
  }

  /**
   * An indexed topic names at most one event on the canonical chain (the contract refuses a second
   * anchor of a root or a sequence), so the first match ends the search. Blocks already scanned in
   * full hold no uncached match, so the search starts after them.
   */
  private async searchIndexed(topics: Topics, what: string): Promise<AnchorEventView | null> {
    const head = await this.headBlock();
    let found: AnchorEventView | null = null;
    await this.scan(topics, head, what, (logs) => {
      for (const log of logs) {
        const view = this.parse(log);
        if (view === null) continue;
        this.remember(view, head);
        found = view;
        return true;
      }
      return false;
    });
    return found;
  }

  /** batchId is not indexed: every Anchored log is read, cached when final, until the match. */
  private async scanForBatchId(batchId: string): Promise<AnchorEventView | null> {
    const head = await this.headBlock();
    const finalHead = head - this.finality;
    let found: AnchorEventView | null = null;
    await this.scan([this.anchored.topicHash], head, 'scanning Anchored events', (logs, from, to) => {
      for (const log of logs) {
        const view = this.parse(log);
        if (view === null) continue;
        this.remember(view, head);
        if (found === null && view.batchId === batchId) found = view;
      }
      // Only a range read whole and final may be skipped by later searches.
      if (to <= finalHead && from === this.scannedTo + 1) this.scannedTo = to;
      return found !== null;
    });
    return found;
  }

  /** The blocks after those scanned in full, up to `head`, oldest page first (BlockRangePager). */
  private async scan(topics: Topics, head: number, what: string, visit: LogPageVisit): Promise<void> {
    this.assertOpen();
    try {
      await this.pager.scan(this.scannedTo + 1, head, 'oldest', (fromBlock, toBlock) => this.provider.getLogs({ address: this.contractAddress, topics, fromBlock, toBlock }), visit);
    } catch (err) {
      throw translateChainError(err, what, this.iface);
    }
  }

  private parse(log: Log): AnchorEventView | null {
    return parseAnchoredLog(this.iface, log);
  }


  private remember(view: AnchorEventView, head: number): void {
    if (view.blockNumber > head - this.finality) return;
    this.bySeq.set(view.batchSeq, view);
    this.seqByRoot.set(view.merkleRoot, view.batchSeq);
    this.seqByBatchId.set(view.batchId, view.batchSeq);
  }

  private assertOpen(): void {
    if (this.closed) throw new DrisError('dependency_unavailable', 'the chain reader is closed');
  }
}
