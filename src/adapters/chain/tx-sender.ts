import type { TransactionReceipt } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import { translateChainError } from './chain-errors.js';
import { PendingTx, type Fees, type TxIntent, type TxSenderOptions } from './tx-pending.js';
import { RewindWatch, type RewindSuspicion } from './rewind-watch.js';

export { NonceConflict, type Fees, type TxIntent, type TxSenderOptions, type TxSubmission } from './tx-pending.js';

/**
 * One signer, one ordered stream of transactions. The caller serialises the broadcasts, so nonces
 * go out in order; several transactions may then await their confirmations at once, the stream
 * knowing which nonces above the chain's mined count are its own. Fees follow the EIP-1559 market
 * with a floor; a transaction not mined within `replaceAfterMs` is re-signed with the same nonce
 * and fees raised by at least `feeBumpPercent`, and every signed version stays tracked: whichever
 * is mined is the one that counts.
 *
 * Chain rewinds (rewind-watch.ts): while a transaction is awaited, the head and the account's mined
 * count are read now and then (at most once per poll interval, whatever the number awaited); one
 * behind what was seen, with our last mined transaction gone, means the node lost blocks. Every
 * transaction sent before is then abandoned at its next poll (it fails with reason
 * 'chain_rewound', at once rather than at the transaction timeout), the next nonce is read from the
 * chain again, and the rewind listeners are told, so that the caller reconciles and sends again.
 */

/** A broadcast transaction, awaiting its confirmations. */
export interface SentTransaction {
  readonly nonce: number;
  /**
   * Resolves once a version is mined with the configured confirmations (a reverted one at once,
   * status 0). Throws NonceConflict when a transaction this stream did not send took the nonce,
   * DrisError('timeout') past txTimeoutMs and 'dependency_unavailable' when the node stays
   * unreachable; both carry the hashes sent, since one of them may still be mined later.
   */
  confirmed(signal?: AbortSignal): Promise<TransactionReceipt>;
}

const MIN_FEE_BUMP_PERCENT = 12.5;

export class TxSender {
  private nextNonce: number | null = null;
  private lastMined: { readonly hash: string; readonly nonce: number } | null = null;
  /** Nonces this stream broadcast whose confirmation is still awaited. */
  private readonly unconfirmed = new Set<number>();
  private readonly watch = new RewindWatch();
  /** Rewinds confirmed so far: a transaction sent before the latest one is abandoned. */
  private rewinds = 0;
  private lastRewindCheckAt = 0;
  private rewindCheck: Promise<void> | null = null;
  private readonly rewindListeners: (() => void)[] = [];

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
    this.rewound({ accountNonce: chain, head: null }, 'mined transactions of the anchorer are gone (node restarted from an older state, or a reorg); nonce resynchronised');
    this.nextNonce = chain;
    return chain;
  }

  /** Called whenever a rewind of the chain is confirmed (at most once per rewind). */
  onRewind(listener: () => void): void {
    this.rewindListeners.push(listener);
  }

  /**
   * Reads the head and the account's mined count and compares them with what was seen
   * (RewindWatch); at most once per poll interval unless `force`, one read shared by every caller.
   * Never throws: a node that does not answer is the follower's concern.
   */
  checkRewind(force = false): Promise<void> {
    if (this.rewindCheck !== null) return this.rewindCheck;
    if (!force && Date.now() - this.lastRewindCheckAt < this.o.pollIntervalMs) return Promise.resolve();
    this.lastRewindCheckAt = Date.now();
    this.rewindCheck = this.readForRewind()
      .catch((err: unknown) => this.o.logger.debug({ code: translateChainError(err, 'rewind check').code }, 'the rewind check could not read the chain'))
      .finally(() => {
        this.rewindCheck = null;
      });
    return this.rewindCheck;
  }

  /**
   * A head read elsewhere (a health check): behind one seen, a rewind check runs in the background
   * (its reads are not the caller's to wait for; checkRewind never rejects).
   */
  observeHead(head: number): void {
    if (this.watch.headBehind(head)) void this.checkRewind(true);
  }

  private async readForRewind(): Promise<void> {
    const [head, accountNonce] = await Promise.all([this.o.provider.getBlockNumber(), this.o.provider.getTransactionCount(this.address, 'latest')]);
    const suspicion = this.watch.observe(head, accountNonce);
    if (suspicion === null) return;
    const last = this.lastMined;
    if (last !== null && (await this.o.provider.getTransactionReceipt(last.hash)) !== null) {
      // Our last mined transaction is still there: a node (a replica) lagging behind, not a loss.
      return;
    }
    this.rewound({ accountNonce, head }, 'the chain went back (node restarted from an older state, or a reorg): transactions awaited are abandoned and sent again', suspicion);
  }

  private rewound(now: { readonly accountNonce: number; readonly head: number | null }, message: string, suspicion?: RewindSuspicion): void {
    this.rewinds += 1;
    this.watch.rewound(now.head ?? -1, now.accountNonce);
    this.lastMined = null;
    // Read from the chain again: the nonces of the transactions abandoned are free.
    this.nextNonce = null;
    this.o.logger.warn({ ...suspicion, accountNonce: now.accountNonce, head: now.head, awaited: this.unconfirmed.size }, message);
    for (const listener of this.rewindListeners) {
      try {
        listener();
      } catch (err) {
        this.o.logger.error({ err }, 'a chain rewind listener failed');
      }
    }
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
    const tx = new PendingTx(
      {
        options: this.o,
        address: this.address,
        bump: (p, c) => this.bump(p, c),
        currentFees: () => this.currentFees(),
        noteMined: (h, n, b) => this.noteMined(h, n, b),
        rewinds: () => this.rewinds,
        checkRewind: (force) => this.checkRewind(force),
      },
      intent,
      nonce,
      initialFees,
    );
    await tx.send();
    this.nextNonce = Math.max(this.nextNonce ?? 0, nonce + 1);
    this.unconfirmed.add(nonce);
    let waiting: Promise<TransactionReceipt> | null = null;
    return {
      nonce,
      confirmed: (signal) => {
        waiting ??= tx
          .follow(signal)
          .catch((err: unknown) => {
            // Not mined (as far as is known): the nonce is free again for the next transaction,
            // which then replaces this one if it is still pending somewhere.
            if (this.nextNonce !== null) this.nextNonce = Math.min(this.nextNonce, nonce);
            throw err;
          })
          .finally(() => this.unconfirmed.delete(nonce));
        return waiting;
      },
    };
  }

  private noteMined(hash: string, nonce: number, blockNumber: number): void {
    this.lastMined = { hash, nonce };
    this.watch.noteMined(nonce, blockNumber);
    // Transactions sent after this one keep their nonces.
    this.nextNonce = Math.max(this.nextNonce ?? 0, nonce + 1);
  }
}

function max(...values: bigint[]): bigint {
  let m = values[0] ?? 0n;
  for (const v of values) if (v > m) m = v;
  return m;
}
