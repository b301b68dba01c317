import { setTimeout as sleep } from 'node:timers/promises';
import { isError, Transaction, type JsonRpcProvider, type TransactionReceipt, type Wallet } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import type { Logger } from '../../util/logger.js';
import { translateChainError } from './chain-errors.js';

export interface Fees {
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
}

/** Every signed version of a transaction, reported before it is broadcast. */
export interface TxSubmission {
  readonly txHash: string;
  readonly nonce: number;
  /** 0 for the first version, n for the n-th replacement. */
  readonly attempt: number;
  readonly maxFeePerGas: bigint;
  readonly maxPriorityFeePerGas: bigint;
  /** The batch it anchors; absent for a deployment. */
  readonly batchSeq?: number;
}

export interface TxSenderOptions {
  readonly provider: JsonRpcProvider;
  readonly wallet: Wallet;
  readonly chainId: number;
  readonly confirmations: number;
  readonly replaceAfterMs: number;
  readonly maxReplacements: number;
  /** Raise of both fee caps on each replacement; nodes refuse less than 10 %, many want 12.5 %. */
  readonly feeBumpPercent: number;
  readonly minPriorityFeeWei: bigint;
  /** Upper bound from first broadcast to the confirmations. */
  readonly txTimeoutMs: number;
  /** How long the node may be unreachable while a transaction is awaited. */
  readonly unreachableAfterMs: number;
  /** Largest pause between receipt polls (they start at 20 ms and double). */
  readonly pollIntervalMs: number;
  readonly logger: Logger;
  /** Awaited before each broadcast, so a caller can record the hash first (write-ahead). */
  readonly onSubmission?: (submission: TxSubmission) => void | Promise<void>;
  readonly isClosed: () => boolean;
}

export interface TxIntent {
  /** null deploys a contract. */
  readonly to: string | null;
  readonly data: string;
  readonly gasLimit: bigint;
  readonly batchSeq?: number;
}

/**
 * The nonce was taken by a transaction this stream did not send (another process with the same
 * key): the caller re-reads the contract state and the nonce and starts over.
 */
export class NonceConflict extends Error {
  override readonly name = 'NonceConflict';
}

export type Outcome = 'accepted' | 'nonce_used' | 'underpriced';

/** The node's own words for a failed RPC call, wherever ethers kept them. */
function rpcMessage(err: unknown): string {
  const parts: string[] = [];
  let current: unknown = err;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const o = current as { message?: unknown; error?: unknown; info?: unknown };
    if (typeof o.message === 'string') parts.push(o.message);
    current = o.error ?? (o.info as { error?: unknown } | undefined)?.error;
  }
  return parts.join(' | ');
}

/** What a pending transaction asks of its stream: the options, the fee rules, and the note of what was mined. */
export interface PendingHost {
  readonly options: TxSenderOptions;
  readonly address: string;
  bump(previous: Fees, current: Fees): Fees;
  currentFees(): Promise<Fees>;
  noteMined(hash: string, nonce: number, blockNumber: number): void;
  /** Rewinds of the chain confirmed so far (tx-sender.ts). */
  rewinds(): number;
  /** Checks for a rewind (throttled unless `force`); never throws. */
  checkRewind(force?: boolean): Promise<void>;
}

/** Where following a transaction stands between two polls. */
interface FollowState {
  delay: number;
  unreachableSince: number | null;
  replaceNow: boolean;
}

/**
 * One transaction at one nonce, with every version of it signed so far (replacements at higher
 * fees): `send` broadcasts the first, `follow` waits for whichever is mined.
 */
export class PendingTx {
  private readonly hashes: string[] = [];
  private readonly started = Date.now();
  private attempt = 0;
  private lastSubmitAt = 0;
  /** The rewinds known when it was sent: one more and it was lost with the blocks, or may be. */
  private readonly rewindsAtSend: number;
  /** A version was seen mined (awaiting more confirmations): gone later, the chain went back. */
  private seenMined = false;

  constructor(
    private readonly host: PendingHost,
    private readonly intent: TxIntent,
    readonly nonce: number,
    private fees: Fees,
  ) {
    this.rewindsAtSend = host.rewinds();
  }

  private context(): Record<string, unknown> {
    return { txHashes: [...this.hashes], nonce: this.nonce, ...(this.intent.batchSeq === undefined ? {} : { batchSeq: this.intent.batchSeq }) };
  }

  /**
   * Signs and broadcasts the first version (outbidding a pending one of an earlier run at its
   * nonce). Throws NonceConflict when a transaction it did not send already took the nonce.
   */
  async send(): Promise<void> {
    const { provider, maxReplacements } = this.host.options;
    try {
      let outcome = await this.submit();
      // The nonce holds a pending transaction of an earlier run: outbid it right away.
      while (outcome === 'underpriced' && this.attempt < maxReplacements) outcome = await this.replace();
      if (outcome === 'underpriced') {
        throw new DrisError('dependency_unavailable', 'a pending transaction of the anchorer holds the nonce and outbids every replacement');
      }
      if (outcome === 'nonce_used' && this.attempt === 0) {
        // Not ours unless this very transaction was mined in between.
        const receipt = await provider.getTransactionReceipt(this.hashes[0] ?? '');
        if (receipt === null) throw new NonceConflict(`nonce ${this.nonce} was used by another transaction`);
      }
    } catch (err) {
      if (err instanceof NonceConflict) throw err;
      const e = translateChainError(err, 'sending a transaction');
      throw new DrisError(e.code, e.message, { cause: e.cause ?? err, extra: { ...e.extra, ...this.context() } });
    }
  }

  private async submit(): Promise<Outcome> {
    const o = this.host.options;
    const { fees, nonce, intent, attempt } = this;
    const signed = await o.wallet.signTransaction({
      type: 2,
      chainId: o.chainId,
      nonce,
      to: intent.to,
      data: intent.data,
      value: 0n,
      gasLimit: intent.gasLimit,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
    });
    const txHash = Transaction.from(signed).hash;
    if (txHash === null) throw new DrisError('internal_error', 'a signed transaction has no hash');
    await o.onSubmission?.({
      txHash,
      nonce,
      attempt,
      maxFeePerGas: fees.maxFeePerGas,
      maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
      ...(intent.batchSeq === undefined ? {} : { batchSeq: intent.batchSeq }),
    });
    // Tracked before the broadcast: a broadcast that fails ambiguously may still have reached the node.
    this.hashes.push(txHash);
    this.lastSubmitAt = Date.now();
    o.logger.info(
      { txHash, nonce, attempt, maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas), batchSeq: intent.batchSeq },
      attempt === 0 ? 'transaction sent' : 'transaction replaced with higher fees',
    );
    try {
      await o.provider.send('eth_sendRawTransaction', [signed]);
      return 'accepted';
    } catch (err) {
      if (isError(err, 'NONCE_EXPIRED')) return 'nonce_used';
      if (isError(err, 'REPLACEMENT_UNDERPRICED')) return 'underpriced';
      if (/already known|known transaction|already imported/i.test(rpcMessage(err))) return 'accepted';
      throw translateChainError(err, 'broadcasting a transaction');
    }
  }

  private async replace(): Promise<Outcome> {
    this.fees = this.host.bump(this.fees, await this.host.currentFees());
    this.attempt++;
    return this.submit();
  }

  /**
   * Polls until a version is mined with the configured confirmations (a reverted one at once),
   * replacing the transaction with higher fees while none is mined. Throws NonceConflict, and
   * DrisError('timeout' | 'dependency_unavailable') carrying the hashes sent; 'dependency_unavailable'
   * with reason 'chain_rewound' once the chain is found to have gone back since it was sent, and
   * reason 'abandoned' once `signal` aborts (no version is sent any more; one sent may still be mined).
   */
  async follow(signal?: AbortSignal): Promise<TransactionReceipt> {
    const o = this.host.options;
    const state: FollowState = { delay: 20, unreachableSince: null, replaceNow: false };
    for (;;) {
      if (o.isClosed()) throw new DrisError('dependency_unavailable', 'the chain adapter was closed while a transaction was pending', { extra: this.context() });
      this.assertFollowed(signal);
      try {
        const mined = await this.poll(state);
        if (mined !== null) return mined;
      } catch (err) {
        if (err instanceof NonceConflict) throw err;
        const e = translateChainError(err, 'waiting for a transaction');
        if (e.code !== 'dependency_unavailable' && e.code !== 'timeout') throw e;
        state.unreachableSince ??= Date.now();
        if (Date.now() - state.unreachableSince >= o.unreachableAfterMs) {
          throw new DrisError('dependency_unavailable', 'the chain node became unreachable while a transaction was pending', { cause: err, extra: this.context() });
        }
      }
      if (Date.now() - this.started >= o.txTimeoutMs) {
        throw new DrisError('timeout', `the transaction was not confirmed within ${o.txTimeoutMs} ms`, { extra: this.context() });
      }
      try {
        await sleep(state.delay, undefined, signal === undefined ? undefined : { signal });
      } catch {
        // aborted: assertFollowed ends it
      }
      state.delay = Math.min(state.delay * 2, o.pollIntervalMs);
    }
  }

  /** Throws once the caller gave it up, or the chain went back since it was sent. */
  private assertFollowed(signal: AbortSignal | undefined): void {
    if (signal?.aborted === true) {
      throw new DrisError('dependency_unavailable', 'the transaction was abandoned by its sender', { extra: { ...this.context(), reason: 'abandoned' } });
    }
    if (this.host.rewinds() !== this.rewindsAtSend) {
      throw new DrisError('dependency_unavailable', 'the chain went back after the transaction was sent; it is abandoned', { extra: { ...this.context(), reason: 'chain_rewound' } });
    }
  }

  /** One poll: the mined version once it has its confirmations, else null (replacing one past its time). */
  private async poll(state: FollowState): Promise<TransactionReceipt | null> {
    const { provider, confirmations, replaceAfterMs, maxReplacements, logger } = this.host.options;
    const receipts = await Promise.all(this.hashes.map((h) => provider.getTransactionReceipt(h)));
    state.unreachableSince = null;
    const mined = receipts.find((r): r is TransactionReceipt => r !== null);
    if (mined === undefined) {
      // Not mined (or no longer): whether the chain lost blocks is checked before anything is replaced.
      await this.host.checkRewind(this.seenMined);
      this.seenMined = false;
      if (this.host.rewinds() !== this.rewindsAtSend) return null;
    } else {
      this.seenMined = true;
      if (mined.status !== 1) {
        this.host.noteMined(mined.hash, this.nonce, mined.blockNumber);
        return mined;
      }
      // A receipt is its block's first confirmation: the head is read only when more are wanted.
      const head = confirmations <= 1 ? mined.blockNumber : await provider.getBlockNumber();
      if (head - mined.blockNumber + 1 < confirmations) return null;
      this.host.noteMined(mined.hash, this.nonce, mined.blockNumber);
      if (this.hashes.length > 1) logger.info({ txHash: mined.hash, versions: this.hashes.length, nonce: this.nonce }, 'one version of a replaced transaction was mined');
      return mined;
    }
    if (!state.replaceNow && Date.now() - this.lastSubmitAt < replaceAfterMs) return null;
    state.replaceNow = false;
    const chainNonce = await provider.getTransactionCount(this.host.address, 'latest');
    if (chainNonce > this.nonce) {
      // The nonce was mined: by one of ours (its receipt shows on the next poll) or by another sender.
      const again = await Promise.all(this.hashes.map((h) => provider.getTransactionReceipt(h)));
      if (again.every((r) => r === null)) throw new NonceConflict(`nonce ${this.nonce} was used by another transaction`);
    } else if (this.attempt < maxReplacements) {
      const outcome = await this.replace();
      // Underpriced against a version of ours: the node's fee view moved; bump again next round.
      if (outcome === 'underpriced') state.replaceNow = true;
      state.delay = 20;
    }
    return null;
  }
}
