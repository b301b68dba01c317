import { Contract, getAddress, isAddress, isError, type Log, type TransactionReceipt } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import type { AnchorOptions, AnchorReceipt, AnchorRequest, Chain, ChainInfo, OnChainAnchor } from '../../domain/pipeline/ports.js';
import { BlockRangePager, DEFAULT_LOG_BLOCK_RANGE } from './block-range-pager.js';
import { translateChainError } from './chain-errors.js';
import { NonceConflict, type SentTransaction } from './tx-sender.js';
import { defaultPublicRpcUrl, gasWithMargin, openRuntime, type Runtime } from './chain-runtime.js';
import { deployWith, type Deployment } from './deploy-contract.js';
import { SerialQueue } from './serial-queue.js';
import { withTimeout } from '../../util/with-timeout.js';
import { assertRoot, parseAnchoredLog, readAnchorOf } from './contract-reads.js';
import { behindOwnAnchors, validateRequest } from './anchor-request-checks.js';
import type { AnchorEvent, EthersChainOptions } from './ethers-chain-options.js';

/**
 * The Chain port on an EVM JSON-RPC node with ethers v6: the DrisAnchor contract (contracts/)
 * at a configured address, or deployed on first start of the embedded chain. Anchors go through
 * one ordered stream (TxSender): each is simulated and broadcast in call order, so the contract's
 * refusals come back decoded as DrisError('invalid_state') without spending gas, and awaits its
 * confirmations while the next ones are sent. A chain found to have gone back (tx-sender.ts)
 * abandons the anchors awaited and tells the `onReset` listeners, which reconcile.
 */

export type { TxSubmission } from './tx-sender.js';
export { loadAnchorerWallet, makeProvider, type AnchorerKeySource, type ChainConnectionOptions } from './chain-runtime.js';
export { deployAnchorContract, type Deployment, type DeployOptions } from './deploy-contract.js';
export type { AnchorEvent, EthersChainOptions } from './ethers-chain-options.js';

const TX_HASH_RE = /^0x[0-9a-fA-F]{64}$/;

export class EthersChain implements Chain {
  /** Set when connect() deployed the contract: the caller persists the address. */
  readonly deployment: Deployment | null;
  private readonly contract: Contract;
  private readonly queue: SerialQueue;
  private readonly chainInfo: ChainInfo;
  /** Sequences of the anchors broadcast and not yet confirmed (or failed). */
  private readonly unconfirmed = new Set<number>();
  /** Confirmations being awaited, for close(). */
  private readonly confirming = new Set<Promise<unknown>>();
  /** The gas limit of the last anchor that could be estimated, for one that cannot be yet. */
  private lastGasLimit: bigint | null = null;
  private readonly pager: BlockRangePager;

  private constructor(
    private readonly rt: Runtime,
    readonly contractAddress: string,
    deployment: Deployment | null,
    private readonly options: EthersChainOptions,
  ) {
    this.deployment = deployment;
    this.contract = new Contract(contractAddress, rt.artifact.abi, rt.wallet.connect(rt.provider));
    this.queue = new SerialQueue(options.maxQueued ?? 16);
    this.pager = new BlockRangePager(options.logBlockRange ?? DEFAULT_LOG_BLOCK_RANGE);
    // The anchors awaited are abandoned: none of them is an anchor of ours ahead of the contract.
    rt.sender.onRewind(() => this.unconfirmed.clear());
    this.chainInfo = {
      chainId: rt.chainId,
      contractAddress,
      rpcUrl: options.publicRpcUrl ?? defaultPublicRpcUrl(options.rpcUrl),
      anchorerAddress: rt.wallet.address,
      confirmations: options.confirmations ?? 1,
      deployBlock: options.deployBlock ?? deployment?.blockNumber ?? 0,
      ...(options.explorerAddressUrl === undefined ? {} : { explorerAddressUrl: options.explorerAddressUrl }),
      ...(options.explorerTxUrl === undefined ? {} : { explorerTxUrl: options.explorerTxUrl }),
    };
  }

  /**
   * Checks the chain id, finds (or deploys) the contract and verifies it answers as DrisAnchor.
   * config_invalid: wrong chain id, no contract at the address, bad key; dependency_unavailable /
   * timeout: the node does not answer.
   */
  static async connect(options: EthersChainOptions): Promise<EthersChain> {
    const rt = await openRuntime(options, options.onTransaction);
    try {
      let address: string | null = null;
      if (options.contractAddress !== undefined && options.contractAddress !== '') {
        if (!isAddress(options.contractAddress)) throw new DrisError('config_invalid', 'the contract address is not an address');
        address = getAddress(options.contractAddress);
        let code: string;
        try {
          code = await rt.provider.getCode(address);
        } catch (err) {
          throw translateChainError(err, 'reading the contract code');
        }
        if (code === '0x') {
          if (options.deployIfMissing !== true) {
            throw new DrisError('config_invalid', `no contract at ${address} on chain id ${rt.chainId}`, { extra: { contractAddress: address } });
          }
          rt.log.warn({ contractAddress: address }, 'no contract at the recorded address (the chain lost its state): deploying again');
          address = null;
        }
      } else if (options.deployIfMissing !== true) {
        throw new DrisError('config_invalid', 'no contract address is configured; deploy one with `dris chain deploy`');
      }
      let deployment: Deployment | null = null;
      if (address === null) {
        deployment = await deployWith(rt, rt.wallet.address);
        address = deployment.address;
      }
      const chain = new EthersChain(rt, address, deployment, options);
      await chain.verifyContract();
      return chain;
    } catch (err) {
      rt.closed = true;
      rt.provider.destroy();
      throw err;
    }
  }

  private async verifyContract(): Promise<void> {
    let anchorer: string;
    try {
      [anchorer] = (await Promise.all([this.contract.getFunction('anchorer').staticCall(), this.contract.getFunction('lastSequence').staticCall()])) as [string, bigint];
    } catch (err) {
      const e = translateChainError(err, 'reading the contract', this.rt.iface);
      // A revert, or an answer that does not decode: some other contract lives there.
      if (e.code === 'invalid_state' || isError(err, 'BAD_DATA')) throw new DrisError('config_invalid', `the code at ${this.contractAddress} is not a DrisAnchor contract`, { cause: err });
      throw e;
    }
    if (getAddress(anchorer) !== this.rt.wallet.address) {
      // Not fatal: a reader or a standby may hold another key; its anchors are refused (not_anchorer).
      this.rt.log.warn({ contractAnchorer: anchorer, signer: this.rt.wallet.address }, 'the signing key is not the contract anchorer');
    }
  }

  info(): ChainInfo {
    return this.chainInfo;
  }

  async lastSequence(): Promise<number> {
    this.assertOpen();
    try {
      return Number((await this.contract.getFunction('lastSequence').staticCall()) as bigint);
    } catch (err) {
      throw translateChainError(err, 'reading the last sequence', this.rt.iface);
    }
  }

  /**
   * Anchors are simulated and broadcast one at a time, in call order; each then awaits its
   * confirmations on its own, so the caller may send the next sequence before this one is mined.
   */
  async anchor(request: AnchorRequest, options: AnchorOptions = {}): Promise<AnchorReceipt> {
    this.assertOpen();
    validateRequest(request);
    const confirmed = this.anchorOnce(request, 2, options.signal);
    this.confirming.add(confirmed);
    try {
      return await confirmed;
    } finally {
      this.confirming.delete(confirmed);
    }
  }

  private async anchorOnce(request: AnchorRequest, conflictRetries: number, signal: AbortSignal | undefined): Promise<AnchorReceipt> {
    const sent = await this.queue.run(() => {
      // Given up while it waited its turn: nothing is sent for it.
      if (signal?.aborted === true) throw new DrisError('dependency_unavailable', 'the anchor was abandoned before it was sent', { extra: { reason: 'abandoned' } });
      return this.sendInOrder(request);
    });
    let receipt: TransactionReceipt;
    try {
      receipt = await sent.confirmed(signal);
    } catch (err) {
      if (err instanceof NonceConflict) {
        if (conflictRetries > 0) return this.anchorOnce(request, conflictRetries - 1, signal);
        throw new DrisError('dependency_unavailable', 'another sender keeps using the anchorer nonce', { cause: err });
      }
      throw err;
    } finally {
      this.unconfirmed.delete(request.batchSeq);
    }
    return this.anchorReceipt(request, receipt);
  }

  /** Simulates and broadcasts one anchor; the stream's next anchor may follow at once. */
  private async sendInOrder(request: AnchorRequest, conflictRetries = 2): Promise<SentTransaction> {
    this.assertOpen();
    const args = [BigInt(request.batchSeq), `0x${request.merkleRoot}`, request.recordCount, request.batchId, request.manifestCid] as const;
    const fn = this.contract.getFunction('anchor');
    // The simulation runs against the state the anchors sent before left, so a refusal here is the
    // contract's answer to this request, decoded without spending gas. Those anchors may not be
    // mined yet: a sequence gap made only of them is not a refusal, and then the gas limit is the
    // last estimate's (anchors differ only in the lengths of their strings). Those not yet
    // confirmed are taken before the calls: one confirmed meanwhile was not mined when they read.
    const own = new Set(this.unconfirmed);
    const [simulated, gas, nonce, fees] = await Promise.allSettled([
      fn.staticCall(...args),
      fn.estimateGas(...args),
      this.rt.sender.nextNonceChecked(),
      this.rt.sender.currentFees(),
    ]);
    let gasLimit: bigint | null = gas.status === 'fulfilled' ? gasWithMargin(gas.value) : null;
    if (simulated.status === 'rejected') {
      const e = translateChainError(simulated.reason, 'anchor', this.rt.iface);
      if (!behindOwnAnchors(e, request.batchSeq, own) || this.lastGasLimit === null) throw e;
      gasLimit = this.lastGasLimit;
    } else if (gas.status === 'rejected') {
      throw translateChainError(gas.reason, 'anchor', this.rt.iface);
    }
    if (nonce.status === 'rejected') throw translateChainError(nonce.reason, 'anchor', this.rt.iface);
    if (fees.status === 'rejected') throw translateChainError(fees.reason, 'anchor', this.rt.iface);
    if (gasLimit === null) throw new DrisError('internal_error', 'no gas limit for an anchor');
    this.lastGasLimit = gasLimit;

    const data = this.rt.iface.encodeFunctionData('anchor', args);
    try {
      const sent = await this.rt.sender.broadcast({ to: this.contractAddress, data, gasLimit, batchSeq: request.batchSeq }, nonce.value, fees.value);
      this.unconfirmed.add(request.batchSeq);
      return sent;
    } catch (err) {
      if (err instanceof NonceConflict) {
        if (conflictRetries > 0) return this.sendInOrder(request, conflictRetries - 1);
        throw new DrisError('dependency_unavailable', 'another sender keeps using the anchorer nonce', { cause: err });
      }
      throw err;
    }
  }

  private async anchorReceipt(request: AnchorRequest, receipt: TransactionReceipt): Promise<AnchorReceipt> {
    const args = [BigInt(request.batchSeq), `0x${request.merkleRoot}`, request.recordCount, request.batchId, request.manifestCid] as const;
    const fn = this.contract.getFunction('anchor');

    if (receipt.status !== 1) {
      // Mined but reverted: another transaction changed the contract between simulation and
      // mining. Asking again names the reason.
      try {
        await fn.staticCall(...args);
      } catch (err) {
        const e = translateChainError(err, 'anchor', this.rt.iface);
        throw new DrisError(e.code, e.message, { cause: err, extra: { ...e.extra, txHash: receipt.hash } });
      }
      throw new DrisError('invalid_state', 'the anchor transaction reverted', { extra: { reason: 'reverted', txHash: receipt.hash } });
    }
    const event = this.anchoredEvent(receipt);
    const blockTimestamp = event?.timestamp ?? (await this.blockTimestamp(receipt.blockNumber));
    this.rt.log.info(
      { batchSeq: request.batchSeq, batchId: request.batchId, txHash: receipt.hash, blockNumber: receipt.blockNumber, gasUsed: String(receipt.gasUsed) },
      'batch anchored',
    );
    return {
      txHash: receipt.hash,
      blockNumber: receipt.blockNumber,
      blockTimestamp,
      chainId: this.rt.chainId,
      contractAddress: this.contractAddress,
      gasUsed: Number(receipt.gasUsed),
      feeWei: receipt.fee.toString(),
    };
  }

  private anchoredEvent(receipt: TransactionReceipt): { readonly timestamp: number } | null {
    for (const log of receipt.logs) {
      if (getAddress(log.address) !== this.contractAddress) continue;
      const parsed = this.rt.iface.parseLog({ topics: [...log.topics], data: log.data });
      if (parsed?.name === 'Anchored') return { timestamp: Number(parsed.args.getValue('timestamp') as bigint) };
    }
    return null;
  }

  private async blockTimestamp(blockNumber: number): Promise<number> {
    try {
      const block = await this.rt.provider.getBlock(blockNumber);
      if (block === null) throw new DrisError('dependency_unavailable', `block ${blockNumber} is unknown to the node`);
      return block.timestamp;
    } catch (err) {
      throw translateChainError(err, 'reading a block');
    }
  }

  async anchorOf(merkleRoot: string): Promise<OnChainAnchor | null> {
    this.assertOpen();
    const anchor = await readAnchorOf(this.contract, this.rt.iface, merkleRoot);
    return anchor === null ? null : { batchSeq: anchor.batchSeq, merkleRoot, anchoredAt: anchor.timestampSec };
  }

  /**
   * Null when the transaction is not (or no longer) in the canonical chain, or was mined but
   * reverted: either way the anchor it carried is not on chain. Its block hash is checked against
   * the canonical block, since some nodes keep serving a receipt for a while after a reorg.
   */
  async receiptOf(txHash: string): Promise<{ readonly blockNumber: number; readonly confirmations: number } | null> {
    this.assertOpen();
    if (!TX_HASH_RE.test(txHash)) throw new DrisError('validation_failed', 'a transaction hash is 0x and 64 hex digits');
    try {
      const [receipt, head] = await Promise.all([this.rt.provider.getTransactionReceipt(txHash), this.rt.provider.getBlockNumber()]);
      if (receipt === null || receipt.status !== 1) return null;
      const block = await this.rt.provider.getBlock(receipt.blockNumber);
      if (block === null || block.hash !== receipt.blockHash) return null;
      return { blockNumber: receipt.blockNumber, confirmations: Math.max(0, head - receipt.blockNumber + 1) };
    } catch (err) {
      throw translateChainError(err, 'reading a receipt');
    }
  }

  /**
   * The Anchored event of a root, searched from the chain's head back to `fromBlock` (default: the
   * deployment block), a page of blocks at a time (BlockRangePager: provider caps respected): finds
   * the transaction of an anchor whose hash was lost, e.g. one mined after its sender gave up.
   * Newest first, since those are recent; a root is anchored at most once, so the first match ends
   * the search.
   */
  async findAnchorEvent(merkleRoot: string, fromBlock?: number): Promise<AnchorEvent | null> {
    this.assertOpen();
    assertRoot(merkleRoot);
    const event = this.rt.iface.getEvent('Anchored');
    if (event === null) throw new DrisError('internal_error', 'the contract ABI has no Anchored event');
    const lowest = fromBlock ?? this.options.deployBlock ?? this.deployment?.blockNumber ?? 0;
    let found: Log | undefined;
    try {
      const head = await this.rt.provider.getBlockNumber();
      await this.pager.scan(
        lowest,
        head,
        'newest',
        (from, to) => this.rt.provider.getLogs({ address: this.contractAddress, topics: [event.topicHash, null, `0x${merkleRoot}`], fromBlock: from, toBlock: to }),
        (logs) => {
          found = logs.filter((l) => !l.removed).at(-1);
          return found !== undefined;
        },
      );
    } catch (err) {
      throw translateChainError(err, 'searching anchor events');
    }
    const e = found === undefined ? null : parseAnchoredLog(this.rt.iface, found);
    if (e === null) return null;
    const { timestampSec, ...fields } = e;
    return { ...fields, blockTimestamp: timestampSec, chainId: this.rt.chainId, contractAddress: this.contractAddress, merkleRoot };
  }

  async headTimestampMs(): Promise<number> {
    this.assertOpen();
    try {
      const block = await withTimeout(this.rt.provider.getBlock('latest'), this.options.checkTimeoutMs ?? 2_000, 'latest block');
      if (block === null) throw new DrisError('dependency_unavailable', 'the node has no latest block');
      return block.timestamp * 1000;
    } catch (err) {
      throw translateChainError(err, 'latest block');
    }
  }

  /** Called when the chain is found to have gone back (blocks lost: a node restored from an older state, a reorg). */
  onReset(listener: () => void): void {
    this.rt.sender.onRewind(listener);
  }

  async check(): Promise<void> {
    this.assertOpen();
    let head: number;
    try {
      head = await withTimeout(this.rt.provider.getBlockNumber(), this.options.checkTimeoutMs ?? 2_000, 'chain check');
    } catch (err) {
      throw translateChainError(err, 'chain check');
    }
    // A head behind one seen is looked into even with nothing awaited (an Anchored recorded lost).
    this.rt.sender.observeHead(head);
  }

  /** Refuses new work, ends the anchors in flight (their hashes are in the errors), frees the provider. */
  async close(): Promise<void> {
    if (this.rt.closed) return;
    this.rt.closed = true;
    await this.queue.idle();
    await Promise.allSettled([...this.confirming]);
    this.rt.provider.destroy();
  }

  private assertOpen(): void {
    if (this.rt.closed) throw new DrisError('dependency_unavailable', 'the chain adapter is closed');
  }
}
