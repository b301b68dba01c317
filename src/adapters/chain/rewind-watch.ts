/**
 * What the chain adapter has seen of the chain's progress, to tell when the node went back: a head
 * block lower than one already seen, or the anchorer account's mined transaction count lower than
 * a nonce of ours seen mined. Either means blocks were lost (a node restarted from an older state
 * dump, or a reorg) and may have taken transactions of ours with them. Only numbers: the adapter
 * reads them and decides what a suspicion costs to confirm (tx-sender.ts).
 */

/** Why the chain is suspected of having gone back. */
export interface RewindSuspicion {
  readonly head: number;
  readonly highestHead: number;
  readonly accountNonce: number;
  /** The mined count a nonce of ours seen mined implies (its nonce + 1). */
  readonly minedCount: number;
}

export class RewindWatch {
  private highestHead = -1;
  private minedCount = 0;

  /** A transaction of ours mined at `nonce`, in block `blockNumber`. */
  noteMined(nonce: number, blockNumber: number): void {
    this.minedCount = Math.max(this.minedCount, nonce + 1);
    this.highestHead = Math.max(this.highestHead, blockNumber);
  }

  /**
   * A read of the head and of the account's mined count: a suspicion when either is behind what was
   * seen before, else null (and the marks move up).
   */
  observe(head: number, accountNonce: number): RewindSuspicion | null {
    if (head < this.highestHead || accountNonce < this.minedCount) {
      return { head, highestHead: this.highestHead, accountNonce, minedCount: this.minedCount };
    }
    this.highestHead = head;
    this.minedCount = accountNonce;
    return null;
  }

  /** A head read on its own: whether it is behind one seen (else the mark moves up). */
  headBehind(head: number): boolean {
    if (head < this.highestHead) return true;
    this.highestHead = head;
    return false;
  }

  /** A rewind confirmed: the chain as it stands now is the mark from here on. */
  rewound(head: number, accountNonce: number): void {
    this.highestHead = head;
    this.minedCount = accountNonce;
  }
}
