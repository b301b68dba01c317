import { toDrisError } from '../errors/dris-error.js';
import type { Chain, OnChainAnchor, Pinner, PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch, BatchRef, PreviousBatch, Snapshot } from '../domain/pipeline/types.js';
import type { Logger } from '../util/logger.js';
import { publishAnchored } from './anchor-marks.js';
import { requeueLostAnchor } from './anchor-transitions.js';
import { NO_EVENTS, type EventPublisher } from './events.js';

/**
 * Reconciliation: what the store says was anchored, held against what the contract holds.
 *
 * A chain loses anchors only from its end (a node restored from an older state, a reorg): the
 * contract takes sequences in order, so once the store's batch at some sequence is found on chain
 * at that sequence, every batch below it is too. The walk therefore starts at the store's highest
 * batchSeq and goes down, a page of narrow rows at a time: a batch whose root the contract lacks
 * goes back to be anchored, one the contract holds under another sequence takes the contract's,
 * one whose transaction a reorg put in another block takes that block, and the first that agrees
 * in sequence and block ends the walk. However many batches were anchored before, a lost recent
 * anchor costs one contract read per lost batch, plus one and a receipt read.
 *
 * Then Failed batches: an anchor given up (a transaction past its deadline) may still be mined
 * later. When the contract holds more anchors up to its last sequence than the store lists as
 * Anchored, the newest Failed batches are looked up on chain, and one found there becomes
 * Anchored with the transaction, block and time of its anchor.
 *
 * Every pass is bounded in time: past its budget it stops, reports itself incomplete, and the next
 * pass goes on from what this one wrote (a batch sent back is no longer Anchored).
 */

export interface ReconcileOptions {
  /** Longest one pass runs, milliseconds. */
  readonly budgetMs: number;
  /** Batches read from the store at once. */
  readonly pageSize: number;
  /** Failed batches looked up on chain in one pass, newest first. */
  readonly failedLimit: number;
  /** Deadline of a manifest read (the previous batch a recovered anchor named), milliseconds. */
  readonly manifestTimeoutMs: number;
}

export const DEFAULT_RECONCILE_OPTIONS: ReconcileOptions = { budgetMs: 10_000, pageSize: 256, failedLimit: 1000, manifestTimeoutMs: 5_000 };

export interface ReconcileResult {
  /** Anchored batches missing on chain, sent back to be anchored. */
  readonly requeued: number;
  /** Anchored batches the contract holds under another sequence, which they now take. */
  readonly moved: number;
  /** Anchored batches whose transaction is now in another block (a reorg), recorded anew. */
  readonly remined: number;
  /** Failed batches found on chain, now Anchored. */
  readonly recovered: number;
  /** Batches looked up on chain. */
  readonly checked: number;
  /** False when the chain could not be read, the budget ran out, or the pass was stopped. */
  readonly complete: boolean;
}

/**
 * What the contract's last sequence says of the highest batchSeq recorded Anchored, before a
 * sequence is read for a new anchor. Behind: the node lost anchors (restored from an older state,
 * a reorg), and anchoring now would take a lost batch's sequence. Ahead: the contract holds
 * anchors the store does not list as Anchored (a batch given up whose transaction was mined after
 * all, or one whose Anchored write was lost). Either sends the loop to reconcile, once per state
 * (`mark`); still behind after that, the node's reads disagree (a lagging replica) and the anchor
 * is refused; still ahead, anchoring goes on after the contract's sequence.
 */
export function sequenceCheck(
  recorded: number | null,
  onChain: number,
  lastMark: string | null,
): { readonly action: 'send' | 'refuse'; readonly mark: string | null } | { readonly action: 'reconcile'; readonly why: 'behind' | 'ahead of'; readonly mark: string } {
  // Nothing recorded Anchored is sequence 0: a contract with anchors is then ahead.
  const rec = recorded ?? 0;
  if (rec === onChain) return { action: 'send', mark: null };
  const behind = rec > onChain;
  const mark = `${rec}${behind ? '/' : '+'}${onChain}`;
  if (mark !== lastMark) return { action: 'reconcile', why: behind ? 'behind' : 'ahead of', mark };
  return { action: behind ? 'refuse' : 'send', mark };
}

/** Lifecycle reason of a Failed snapshot whose anchor was found on chain. */
export const RECOVERED_REASON = 'anchor found on-chain after the batch failed';

class Incomplete extends Error {}

export class AnchorReconciler {
  constructor(
    private readonly chain: Chain,
    private readonly pinner: Pinner,
    private readonly log: Logger,
    private readonly options: ReconcileOptions = DEFAULT_RECONCILE_OPTIONS,
    private readonly events: EventPublisher = NO_EVENTS,
  ) {}

  /** One pass through `store` (the term's, so its writes carry the term's `epoch`). */
  async run(store: PipelineStore, stopped: () => boolean = () => false, epoch = 0): Promise<ReconcileResult> {
    const pass = new Pass(store, this.chain, this.pinner, this.log, this.options, stopped, { events: this.events, epoch });
    let complete = true;
    try {
      await pass.walkAnchored();
      await pass.recoverFailed();
    } catch (err) {
      if (!(err instanceof Incomplete)) {
        this.log.warn({ code: toDrisError(err).code }, 'reconciliation could not read the chain or the store; will try again');
      }
      complete = false;
    }
    const result: ReconcileResult = { requeued: pass.requeued, moved: pass.moved, remined: pass.remined, recovered: pass.recovered, checked: pass.checked, complete };
    if (result.requeued + result.moved + result.remined + result.recovered > 0 || !complete) this.log.warn({ ...result }, 'reconciliation pass');
    return result;
  }
}

/** The state of one pass. */
class Pass {
  requeued = 0;
  moved = 0;
  remined = 0;
  recovered = 0;
  checked = 0;
  private readonly deadline: number;
  private lastOnChain = 0;

  constructor(
    private readonly store: PipelineStore,
    private readonly chain: Chain,
    private readonly pinner: Pinner,
    private readonly log: Logger,
    private readonly options: ReconcileOptions,
    private readonly stopped: () => boolean,
    private readonly term: { readonly events: EventPublisher; readonly epoch: number },
  ) {
    this.deadline = Date.now() + options.budgetMs;
  }

  private checkpoint(): void {
    if (this.stopped()) throw new Incomplete('stopped');
    if (Date.now() > this.deadline) {
      this.log.warn({ budgetMs: this.options.budgetMs, checked: this.checked }, 'reconciliation ran out of time; it goes on in the next pass');
      throw new Incomplete('budget');
    }
  }

  private async anchorOf(ref: BatchRef): Promise<OnChainAnchor | null> {
    this.checkpoint();
    this.checked += 1;
    return this.chain.anchorOf(ref.merkleRoot);
  }

  /** Newest first, down to the first batch the store and the contract agree on. */
  async walkAnchored(): Promise<void> {
    this.lastOnChain = await this.chain.lastSequence();
    let before: number | null = null;
    for (;;) {
      this.checkpoint();
      const page = await this.store.anchoredBelow(before, this.options.pageSize);
      if (page.length === 0) return;
      for (const ref of page) {
        before = ref.batchSeq;
        const onChain = await this.anchorOf(ref);
        // Store and contract agree on the sequence; the walk ends where the recorded block agrees
        // too (a reorg re-includes an anchor's transaction in another block).
        if (onChain !== null && onChain.batchSeq === ref.batchSeq) {
          if (await this.sameBlock(ref, onChain)) return;
          continue;
        }
        const b = await this.store.getBatch(ref.batchId);
        if (b === null || b.status !== 'Anchored') continue;
        if (onChain === null) {
          await requeueLostAnchor(this.store, b, this.term.events);
          this.requeued += 1;
          this.log.warn({ batchId: b.batchId, batchSeq: b.batchSeq }, 'anchored batch missing on-chain; re-queued');
        } else {
          await this.move(b, onChain.batchSeq);
        }
      }
      if (page.length < this.options.pageSize || before === null) return;
    }
  }

  /**
   * Whether the anchor's transaction is in the block recorded. When it is not (mined again in
   * another block after a reorg, or under a replacement's hash), the batch and its snapshots take
   * the transaction, block and time the Anchored event shows; with no event found they are left.
   */
  private async sameBlock(ref: BatchRef, onChain: OnChainAnchor): Promise<boolean> {
    const b = await this.store.getBatch(ref.batchId);
    if (b === null || b.status !== 'Anchored' || b.txHash === null) return true;
    const receipt = await this.chain.receiptOf(b.txHash);
    if (receipt !== null && receipt.blockNumber === b.blockNumber) return true;
    const event = await this.chain.findAnchorEvent(b.merkleRoot);
    if (event === null || (event.txHash === b.txHash && event.blockNumber === b.blockNumber)) return true;
    const anchoredAtMs = onChain.anchoredAt * 1000;
    const snapshots = await this.store.snapshotsOfBatch(b.batchId);
    await this.store.putSnapshots(snapshots.map((s): Snapshot => ({ ...s, anchorTimestampMs: anchoredAtMs, chainTxHash: event.txHash })), []);
    await this.store.putBatch({ ...b, txHash: event.txHash, blockNumber: event.blockNumber, anchoredAtMs });
    this.log.warn({ batchId: b.batchId, batchSeq: b.batchSeq, recordedBlock: b.blockNumber, block: event.blockNumber }, 'anchored batch found in another block on-chain; its transaction recorded anew');
    this.remined += 1;
    return false;
  }

  /** The contract holds the root under another sequence than recorded: the chain is the record. */
  private async move(b: Batch, batchSeq: number): Promise<void> {
    const event = await this.chain.findAnchorEvent(b.merkleRoot).catch(() => null);
    this.log.warn({ batchId: b.batchId, recorded: b.batchSeq, onChain: batchSeq }, 'anchored batch holds another sequence on-chain; adopted');
    await this.store.putBatch({
      ...b,
      batchSeq,
      txHash: event?.txHash ?? b.txHash,
      blockNumber: event?.blockNumber ?? b.blockNumber,
      manifestCid: event?.manifestCid ?? b.manifestCid,
    });
    this.moved += 1;
  }

  /** Failed batches whose anchor was mined after all, when the contract holds anchors the store lacks. */
  async recoverFailed(): Promise<void> {
    if (this.lastOnChain === 0) return;
    this.checkpoint();
    if ((await this.store.anchoredCountThrough(this.lastOnChain)) >= this.lastOnChain) return;
    let after: BatchRef | undefined;
    let seen = 0;
    while (seen < this.options.failedLimit) {
      this.checkpoint();
      const page = await this.store.latestByStatus('Failed', Math.min(this.options.pageSize, this.options.failedLimit - seen), after);
      if (page.length === 0) return;
      for (const ref of page) {
        after = ref;
        seen += 1;
        const onChain = await this.anchorOf(ref);
        if (onChain === null) continue;
        const b = await this.store.getBatch(ref.batchId);
        if (b !== null && b.status === 'Failed') await this.recover(b, onChain);
      }
    }
  }

  /** A Failed batch found on chain becomes Anchored, as the anchor mined says. */
  private async recover(b: Batch, onChain: OnChainAnchor): Promise<void> {
    const event = await this.chain.findAnchorEvent(b.merkleRoot);
    const manifestCid = event?.manifestCid ?? b.manifestCid;
    const previous = manifestCid === null ? b.previous : await this.previousNamedBy(manifestCid, b.previous);
    const info = this.chain.info();
    const anchoredAtMs = onChain.anchoredAt * 1000;
    const anchored: Batch = {
      ...b,
      status: 'Anchored',
      batchSeq: onChain.batchSeq,
      manifestCid,
      previous,
      chainId: info.chainId,
      contractAddress: info.contractAddress,
      txHash: event?.txHash ?? b.txHash,
      blockNumber: event?.blockNumber ?? b.blockNumber,
      anchoredAtMs,
      lastError: null,
    };
    const at = Date.now();
    const snapshots = await this.store.snapshotsOfBatch(b.batchId);
    await this.store.putSnapshots(
      snapshots.map((s): Snapshot => ({ ...s, status: 'Anchored', merkleRoot: b.merkleRoot, anchorTimestampMs: anchoredAtMs, onChainConfirmed: true, chainTxHash: anchored.txHash })),
      snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Anchored', atMs: at, reason: RECOVERED_REASON, attempt: b.attempts })),
    );
    await this.store.putBatch(anchored);
    publishAnchored(this.term.events, anchored, snapshots, { epoch: this.term.epoch, adopted: true, reason: RECOVERED_REASON });
    this.recovered += 1;
    this.log.warn({ batchId: b.batchId, batchSeq: onChain.batchSeq, txHash: anchored.txHash }, 'failed batch found anchored on-chain; recorded Anchored');
  }

  /** The previous batch the anchored manifest names; the batch's own when it cannot be read. */
  private async previousNamedBy(cid: string, fallback: PreviousBatch | null): Promise<PreviousBatch | null> {
    try {
      const bytes = await this.pinner.cat(cid, { timeoutMs: this.options.manifestTimeoutMs });
      const manifest = JSON.parse(Buffer.from(bytes).toString('utf8')) as { previous?: unknown };
      const p = manifest.previous;
      if (p === null) return null;
      if (typeof p === 'object' && p !== null) {
        const { batchId, merkleRoot, cid: prevCid } = p as Record<string, unknown>;
        if (typeof batchId === 'string' && typeof merkleRoot === 'string' && typeof prevCid === 'string') return { batchId, merkleRoot, cid: prevCid };
      }
    } catch (err) {
      this.log.warn({ cid, code: toDrisError(err).code }, 'the manifest of a recovered anchor could not be read; its previous batch is left as recorded');
    }
    return fallback;
  }
}
