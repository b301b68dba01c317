import { setTimeout as sleep } from 'node:timers/promises';
import { isError, Transaction, type JsonRpcProvider, type TransactionReceipt, type Wallet } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import type { Logger } from '../../util/logger.js';
import { translateChainError } from './chain-errors.js';

/**
 * One signer, one ordered stream of transactions. The caller serialises the broadcasts, so nonces
 * go out in order; several transactions may then await their confirmations at once, the stream
 * knowing which nonces above the chain's mined count are its own. Fees follow the EIP-1559 market
 * with a floor; a transaction not mined within `replaceAfterMs` is re-signed with the same nonce
 * and fees raised by at least `feeBumpPercent`, and every signed version stays tracked: whichever
 * is mined is the one that counts.
 */

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

type Outcome = 'accepted' | 'nonce_used' | 'underpriced';

/** A broadcast transaction, awaiting its confirmations. */
export interface SentTransaction {
  readonly nonce: number;
  /**
   * Resolves once a version is mined with the configured confirmations (a reverted one at once,
   * status 0). Throws NonceConflict when a transaction this stream did not send took the nonce,
   * DrisError('timeout') past txTimeoutMs and 'dependency_unavailable' when the node stays
   * unreachable; both carry the hashes sent, since one of them may still be mined later.
   */
  confirmed(): Promise<TransactionReceipt>;
}

const MIN_FEE_BUMP_PERCENT = 12.5;

export class TxSender {
  private nextNonce: number | null = null;
  private lastMined: { readonly hash: string; readonly nonce: number } | null = null;
  /** Nonces this stream broadcast whose confirmation is still awaited. */
  private readonly unconfirmed = new Set<number>();

  constructor(private readonly o: TxSenderOptions) {
    if (!(o.feeBumpPercent >= MIN_FEE_BUMP_PERCENT)) throw new DrisError('config_invalid', `the fee bump must be at least ${MIN_FEE_BUMP_PERCENT} %`);
  }

  get address(): string {
    return this.o.wallet.address;
  }

  /**
   * Reads where the account stands. Transactions still pending from an earlier run are reported:
   * the stream starts at the mined count, so its first transaction replaces them (they carried
   * anchors that are sent again anyway) instead of queueing behind one that may never be mined.
   */
  async init(): Promise<void> {
    const [latest, pending] = await Promise.all([
      this.o.provider.getTransactionCount(this.address, 'latest'),
      this.o.provider.getTransactionCount(this.address, 'pending'),
    ]);
    this.nextNonce = latest;
    if (pending > latest) {
      this.o.logger.warn({ latest, pending }, 'transactions of the anchorer are pending from an earlier run; the next anchor replaces them');
    }
  }

  /**
   * The nonce of the next transaction: the local count, checked against the chain's mined count.
   * A chain behind the local count whose last mined transaction has vanished lost it (node state
   * restored from an older dump, or a reorg): resync down. A chain ahead means another sender used
   * the key: resync up.
   */
  async nextNonceChecked(): Promise<number> {
    const chain = await this.o.provider.getTransactionCount(this.address, 'latest');
    const local = this.nextNonce;
    if (local === null || chain === local) {
      this.nextNonce = chain;
      return chain;
    }
    if (chain > local) {
      this.o.logger.warn({ local, chain }, 'the anchorer key sent transactions this process did not; nonce resynchronised');
      this.nextNonce = chain;
      return chain;
    }
    // The nonces between are this stream's own transactions, sent and not yet mined.
    let own = true;
    for (let n = chain; n < local && own; n++) own = this.unconfirmed.has(n);
    if (own) return local;
    const last = this.lastMined;
    if (last !== null && (await this.o.provider.getTransactionReceipt(last.hash)) !== null) {
      // The node answering this call lags behind the one that mined our last transaction.
      return local;
    }
    this.o.logger.warn({ local, chain }, 'mined transactions of the anchorer are gone (node restarted from an older state, or a reorg); nonce resynchronised');
    this.nextNonce = chain;
    return chain;
  }

  /** EIP-1559 caps from the node's suggestion, the priority fee raised to the floor. */
  async currentFees(): Promise<Fees> {
    const fd = await this.o.provider.getFeeData();
    if (fd.maxFeePerGas === null || fd.maxPriorityFeePerGas === null) {
      throw new DrisError('config_invalid', 'the chain has no EIP-1559 fee market (no base fee)');
    }
    const priority = max(fd.maxPriorityFeePerGas, this.o.minPriorityFeeWei);
    const maxFee = max(fd.maxFeePerGas + (priority - fd.maxPriorityFeePerGas), priority);
    return { maxFeePerGas: maxFee, maxPriorityFeePerGas: priority };
  }

  bump(previous: Fees, current: Fees): Fees {
    const bps = BigInt(Math.ceil(this.o.feeBumpPercent * 100));
    const up = (v: bigint): bigint => max((v * (10_000n + bps) + 9_999n) / 10_000n, v + 1n);
    const priority = max(up(previous.maxPriorityFeePerGas), current.maxPriorityFeePerGas);
    const maxFee = max(up(previous.maxFeePerGas), current.maxFeePerGas, priority);
    return { maxFeePerGas: maxFee, maxPriorityFeePerGas: priority };
  }

  /** Broadcasts one transaction and follows it until it is confirmed: `broadcast` then `confirmed`. */
  async send(intent: TxIntent, nonce: number, initialFees: Fees): Promise<TransactionReceipt> {
    return (await this.broadcast(intent, nonce, initialFees)).confirmed();
  }

  /**
   * Signs and broadcasts one transaction (outbidding a pending one of an earlier run at its nonce);
   * the next nonce of the stream is the following one from then on. Throws NonceConflict when a
   * transaction it did not send already took the nonce.
   */
  async broadcast(intent: TxIntent, nonce: number, initialFees: Fees): Promise<SentTransaction> {
    const { provider } = this.o;
    const hashes: string[] = [];
    const started = Date.now();
    let fees = initialFees;
    let attempt = 0;
    let lastSubmitAt = 0;
    const context = (): Record<string, unknown> => ({ txHashes: [...hashes], nonce, ...(intent.batchSeq === undefined ? {} : { batchSeq: intent.batchSeq }) });

    const submit = async (): Promise<Outcome> => {
      const signed = await this.o.wallet.signTransaction({
        type: 2,
        chainId: this.o.chainId,
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
      const submission: TxSubmission = {
        txHash,
        nonce,
        attempt,
        maxFeePerGas: fees.maxFeePerGas,
        maxPriorityFeePerGas: fees.maxPriorityFeePerGas,
        ...(intent.batchSeq === undefined ? {} : { batchSeq: intent.batchSeq }),
      };
      await this.o.onSubmission?.(submission);
      // Tracked before the broadcast: a broadcast that fails ambiguously may still have reached the node.
      hashes.push(txHash);
      lastSubmitAt = Date.now();
      this.o.logger.info(
        { txHash, nonce, attempt, maxFeePerGas: String(fees.maxFeePerGas), maxPriorityFeePerGas: String(fees.maxPriorityFeePerGas), batchSeq: intent.batchSeq },
        attempt === 0 ? 'transaction sent' : 'transaction replaced with higher fees',
      );
      try {
        await provider.send('eth_sendRawTransaction', [signed]);
        return 'accepted';
      } catch (err) {
        if (isError(err, 'NONCE_EXPIRED')) return 'nonce_used';
        if (isError(err, 'REPLACEMENT_UNDERPRICED')) return 'underpriced';
        if (/already known|known transaction|already imported/i.test(rpcMessage(err))) return 'accepted';
        throw translateChainError(err, 'broadcasting a transaction');
      }
    };

    const replace = async (): Promise<Outcome> => {
      fees = this.bump(fees, await this.currentFees());
      attempt++;
      return submit();
    };

    try {
      let outcome = await submit();
      // The nonce holds a pending transaction of an earlier run: outbid it right away.
      while (outcome === 'underpriced' && attempt < this.o.maxReplacements) outcome = await replace();
      if (outcome === 'underpriced') {
        throw new DrisError('dependency_unavailable', 'a pending transaction of the anchorer holds the nonce and outbids every replacement');
      }
      if (outcome === 'nonce_used' && attempt === 0) {
        // Not ours unless this very transaction was mined in between.
        const receipt = await provider.getTransactionReceipt(hashes[0] ?? '');
        if (receipt === null) throw new NonceConflict(`nonce ${nonce} was used by another transaction`);
      }
    } catch (err) {
      if (err instanceof NonceConflict) throw err;
      const e = translateChainError(err, 'sending a transaction');
      throw new DrisError(e.code, e.message, { cause: e.cause ?? err, extra: { ...e.extra, ...context() } });
    }
    const follow = async (): Promise<TransactionReceipt> => {
      let delay = 20;
      let unreachableSince: number | null = null;
      let replaceNow = false;
      for (;;) {
        if (this.o.isClosed()) throw new DrisError('dependency_unavailable', 'the chain adapter was closed while a transaction was pending', { extra: context() });
        try {
          const receipts = await Promise.all(hashes.map((h) => provider.getTransactionReceipt(h)));
          unreachableSince = null;
          const mined = receipts.find((r): r is TransactionReceipt => r !== null);
          if (mined !== undefined) {
            if (mined.status !== 1) {
              this.noteMined(mined.hash, nonce);
              return mined;
            }
            // A receipt is its block's first confirmation: the head is read only when more are wanted.
            const head = this.o.confirmations <= 1 ? mined.blockNumber : await provider.getBlockNumber();
            if (head - mined.blockNumber + 1 >= this.o.confirmations) {
              this.noteMined(mined.hash, nonce);
              if (hashes.length > 1) this.o.logger.info({ txHash: mined.hash, versions: hashes.length, nonce }, 'one version of a replaced transaction was mined');
              return mined;
            }
          } else if (replaceNow || Date.now() - lastSubmitAt >= this.o.replaceAfterMs) {
            replaceNow = false;
            const chainNonce = await provider.getTransactionCount(this.address, 'latest');
            if (chainNonce > nonce) {
              // The nonce was mined: by one of ours (its receipt shows on the next poll) or by another sender.
              const again = await Promise.all(hashes.map((h) => provider.getTransactionReceipt(h)));
              if (again.every((r) => r === null)) throw new NonceConflict(`nonce ${nonce} was used by another transaction`);
            } else if (attempt < this.o.maxReplacements) {
              const o = await replace();
              // Underpriced against a version of ours: the node's fee view moved; bump again next round.
              if (o === 'underpriced') replaceNow = true;
              delay = 20;
            }
          }
        } catch (err) {
          if (err instanceof NonceConflict) throw err;
          const e = translateChainError(err, 'waiting for a transaction');
          if (e.code !== 'dependency_unavailable' && e.code !== 'timeout') throw e;
          unreachableSince ??= Date.now();
          if (Date.now() - unreachableSince >= this.o.unreachableAfterMs) {
            throw new DrisError('dependency_unavailable', 'the chain node became unreachable while a transaction was pending', { cause: err, extra: context() });
          }
        }
        if (Date.now() - started >= this.o.txTimeoutMs) {
          throw new DrisError('timeout', `the transaction was not confirmed within ${this.o.txTimeoutMs} ms`, { extra: context() });
        }
        await sleep(delay);
        delay = Math.min(delay * 2, this.o.pollIntervalMs);
      }
    };
    this.nextNonce = Math.max(this.nextNonce ?? 0, nonce + 1);
    this.unconfirmed.add(nonce);
    let waiting: Promise<TransactionReceipt> | null = null;
    return {
      nonce,
      confirmed: () => {
        waiting ??= follow()
          .catch((err: unknown) => {
            // Not mined (as far as is known): the nonce is free again for the next transaction,
            // which then replaces this one if it is still pending somewhere.
            this.nextNonce = Math.min(this.nextNonce ?? nonce, nonce);
            throw err;
          })
          .finally(() => this.unconfirmed.delete(nonce));
        return waiting;
      },
    };
  }

  private noteMined(hash: string, nonce: number): void {
    this.lastMined = { hash, nonce };
    // Transactions sent after this one keep their nonces.
    this.nextNonce = Math.max(this.nextNonce ?? 0, nonce + 1);
  }
}

function max(...values: bigint[]): bigint {
  let m = values[0] ?? 0n;
  for (const v of values) if (v > m) m = v;
  return m;
}

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
