import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import { buildManifest, type FormedBatch } from '../domain/pipeline/batch-formation.js';
import type { AnchorReceipt, Chain, PipelineStore, Pinner } from '../domain/pipeline/ports.js';
import type { Batch, LifecycleEntry, Snapshot } from '../domain/pipeline/types.js';
import { componentLogger } from '../util/logger.js';

/**
 * The single active anchorer: takes formed batches in order, pins each manifest, commits each root
 * on-chain (one transaction per batch) and records the outcome. The contract's sequence check
 * (batchSeq == last + 1) is the fence: a stale leader's transaction is refused by the chain.
 *
 * Failures retry with exponential backoff: attempt k waits baseDelayMs * 2^(k-1), capped at
 * maxDelayMs; after maxAttempts the batch and its snapshots go to Failed, and only
 * POST /snapshots/{id}/retry sends them back.
 *
 * Reconciliation (every batch believed Anchored checked against the contract, missing ones sent
 * back to be anchored) runs inside the loop, never beside an anchor: at start, when the chain
 * reports a node restarted from an older state, and when the contract's sequence is found behind
 * the highest batchSeq recorded. Until it completes nothing new is anchored, so lost batches take
 * back their places in order and the manifests' previous links stay a chain.
 *
 * Throughput: nothing waits on a confirmation it does not need.
 * - Up to WINDOW anchors are on their way at once: each takes the sequence after the one sent
 *   before it and names that batch as previous, as if it succeeds; the chain adapter sends them
 *   in order and each awaits its own confirmations. They are settled in order. When one fails,
 *   those sent after it are awaited too: one that stands on chain all the same is kept, the others
 *   go back in their places without an attempt counted against them.
 * - The contract's sequence is read for the first anchor of a window that starts empty after a
 *   failure (or a start, or a reconciliation), and followed from there; each anchor's simulation
 *   still checks it before anything is spent.
 * - Batches formed in this term are handed over by the accumulator with their snapshots
 *   (`enqueue`), so the loop reads the store only for older work (a restart, a retry, a failure);
 *   such a batch is known not to be on chain, so the adoption check is skipped for its first try.
 * - Manifests are built and pinned ahead, for the batches due next (their CIDs follow one from
 *   another; the pins run side by side). After a failure they are built again, and those pinned
 *   ahead stay unused in the block store.
 * - Recording a batch as Anchored (its snapshots, lifecycle and batch row) runs behind the loop,
 *   several batches per write. The chain is the record: a batch whose write is lost (a crash, a
 *   store error) stays Pending in the store with its root on chain, and the next pass adopts it.
 * Pending batches are read from the store a page at a time, and the previous batch of a manifest
 * is the one sent last.
 */

export interface AnchorerOptions {
  readonly maxAttempts: number;
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
  /** Poll interval when no batch is waiting, milliseconds. */
  readonly idleMs: number;
}

/** Marks a batch sent back by POST /snapshots/{id}/retry until the anchorer takes it up. */
const RETRY_REQUESTED = 'retry_requested';

/** Pending batches read from the store at once. */
const PENDING_PAGE = 50;
/** Anchored batches recorded in one write. */
const MARK_GROUP = 16;

/** Batches after the current one whose manifests are pinned while it is anchored. */
const PIN_AHEAD = 8;

/** Anchors sent before the oldest one is confirmed. */
const WINDOW = 4;

/** An anchor sent: its transaction is on its way or awaiting its confirmations. */
interface InFlight {
  readonly batch: Batch;
  readonly attempt: number;
  readonly batchSeq: number;
  readonly previous: Batch['previous'];
  readonly cid: string;
  readonly snapshots: Promise<Snapshot[]>;
  readonly receipt: Promise<AnchorReceipt>;
}

/** A batch's manifest for one sequence and previous batch: its CID, and its pin under way. */
interface Prepared {
  readonly key: string;
  readonly cid: string;
  readonly pinned: Promise<void>;
}

/** A batch anchored on chain whose Anchored state is still to be written. */
interface AnchoredMark {
  readonly batch: Batch;
  readonly reason: string;
  /** Adopted from the chain (anchored earlier) rather than anchored now. */
  readonly adopted: boolean;
  /** The batch's snapshots, read while the anchor was on its way. */
  readonly snapshots: Promise<Snapshot[]>;
}

/** Lifecycle reason of a snapshot sent back to be anchored because its anchor left the chain. */
const REQUEUED_REASON = 'anchor missing on-chain; re-queued';

export const DEFAULT_ANCHORER_OPTIONS: AnchorerOptions = { maxAttempts: 6, baseDelayMs: 1000, maxDelayMs: 60_000, idleMs: 1000 };

export class Anchorer {
  private running = false;
  private loop: Promise<void> | null = null;
  private wake: (() => void) | null = null;
  private readonly notBefore = new Map<string, number>();
  private readonly log = componentLogger('anchorer');
  /** A reconciliation is due before the next anchor. */
  private reconcileWanted = false;
  /** `recorded/onChain` sequences that last sent the loop to reconcile, so it does so once. */
  private behindMark: string | null = null;
  /** Pending batches, oldest first: read from the store, or handed over by the accumulator. */
  private pending: Batch[] = [];
  private pendingStale = true;
  /** The store may hold pending batches older than those handed over and not in `pending`. */
  private backlog = true;
  private lastReadAtMs = 0;
  /** Snapshots of the batches handed over, until they are anchored or fail. */
  private readonly handed = new Map<string, readonly Snapshot[]>();
  /** Handed over in this term and not tried yet: formed from records in no stored batch, so not on chain. */
  private readonly fresh = new Set<string>();
  /** The sequence the next anchor takes, followed from the last one sent; null: read it from the contract. */
  private nextSeq: number | null = null;
  /** What the next manifest names as previous: the batch sent last (with `nextSeq`). */
  private nextPrevious: Batch['previous'] = null;
  /** Anchors sent and not yet settled, oldest first. */
  private inflight: InFlight[] = [];
  /** Manifests built (and being pinned) for the batch being anchored and the next ones, by batch. */
  private readonly prepared = new Map<string, Prepared>();
  /** The batch anchored last (the next manifest's previous); undefined: read it from the store. */
  private lastAnchored: Batch | null | undefined = undefined;
  /** Anchored on chain, not yet written as Anchored. */
  private readonly marks: AnchoredMark[] = [];
  private readonly marking = new Set<string>();
  private marker: Promise<void> | null = null;
  /** The leadership term this loop runs in. */
  private epoch = 1;

  constructor(
    private readonly store: PipelineStore,
    private readonly pinner: Pinner,
    private readonly chain: Chain,
    private readonly hashing: HashingBackend,
    private readonly options: AnchorerOptions = DEFAULT_ANCHORER_OPTIONS,
  ) {
    chain.onReset?.(() => this.requestReconcile());
  }

  /** Nudges the loop (a batch was formed or retried). */
  notify(): void {
    this.wake?.();
  }

  /** Batches the accumulator formed and stored in this term, in stream order. */
  enqueue(formed: readonly FormedBatch[]): void {
    if (!this.running) return;
    for (const f of formed) {
      this.handed.set(f.batch.batchId, f.snapshots);
      this.fresh.add(f.batch.batchId);
      // With older batches still in the store, these wait for their turn there.
      if (!this.backlog && !this.pendingStale && !this.taken(f.batch.batchId) && !this.pending.some((b) => b.batchId === f.batch.batchId)) {
        this.pending.push(f.batch);
      }
    }
    this.notify();
  }

  /** Sent and not settled, or anchored and not yet recorded so: the store still says Pending. */
  private taken(batchId: string): boolean {
    return this.marking.has(batchId) || this.inflight.some((f) => f.batch.batchId === batchId);
  }

  /** Rereads pending batches before the next anchor (a batch was sent back by retry). */
  private invalidate(): void {
    this.pendingStale = true;
    this.notify();
  }

  /** Reconciles before the next anchor (the chain may have lost recent anchors). */
  requestReconcile(): void {
    this.reconcileWanted = true;
    this.notify();
  }

  /**
   * Starts the loop, for a term of leadership (`epoch`, for the logs). Restartable: whatever the
   * last term knew is forgotten, since another leader may have anchored meanwhile.
   */
  async start(epoch = 1): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.epoch = epoch;
    this.pending = [];
    this.pendingStale = true;
    this.backlog = true;
    this.handed.clear();
    this.fresh.clear();
    this.nextSeq = null;
    this.nextPrevious = null;
    this.inflight = [];
    this.prepared.clear();
    this.lastAnchored = undefined;
    this.behindMark = null;
    this.notBefore.clear();
    // A chain that cannot be read now is reconciled by the loop as soon as it answers.
    this.reconcileWanted = !(await this.reconcile()).complete;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.notify();
    await this.loop;
    await this.flushMarks();
  }

  private async run(): Promise<void> {
    while (this.running) {
      let worked = false;
      try {
        // Reconciliation, and a sequence read from the contract, wait for the window to empty.
        if (this.reconcileWanted && this.inflight.length === 0) {
          this.reconcileWanted = false;
          if (!(await this.reconcile()).complete) this.reconcileWanted = true;
        }
        while (!this.reconcileWanted && this.running && this.inflight.length < WINDOW && (this.nextSeq !== null || this.inflight.length === 0)) {
          const due = await this.nextDue();
          if (due === null) break;
          await this.send(due);
          worked = true;
        }
        if (this.inflight.length > 0) {
          await this.settleOldest();
          worked = true;
        }
      } catch (err) {
        this.log.error({ err }, 'anchoring loop error');
      }
      if (!worked && this.running) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, this.options.idleMs);
          t.unref();
          this.wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        this.wake = null;
      }
    }
    while (this.inflight.length > 0) await this.settleOldest().catch((err: unknown) => this.log.error({ err }, 'anchoring loop error'));
  }

  /** The oldest pending batch whose backoff has passed, from the page read last. */
  private async nextDue(): Promise<Batch | null> {
    // Idle, the store is read again now and then: it is the record, whatever was handed over.
    const due = this.pendingStale || (this.pending.length === 0 && (this.backlog || Date.now() - this.lastReadAtMs >= this.options.idleMs));
    if (due) await this.readPending();
    const now = Date.now();
    const i = this.pending.findIndex((b) => (this.notBefore.get(b.batchId) ?? 0) <= now);
    if (i < 0) {
      // Only batches in backoff: reread next time, newer batches may have been formed.
      if (this.pending.length > 0) this.pendingStale = true;
      return null;
    }
    return this.pending.splice(i, 1)[0] ?? null;
  }

  private async readPending(): Promise<void> {
    // Batches sent or anchored whose Anchored write is queued read as Pending: not again. Taken
    // before the read too, since a write that completes during it may or may not show in the page.
    const writing = new Set(this.marking);
    this.lastReadAtMs = Date.now();
    const page = await this.store.batchesByStatus('Pending', PENDING_PAGE);
    const fromStore = page.filter((b) => !writing.has(b.batchId) && !this.taken(b.batchId));
    const read = new Set(fromStore.map((b) => b.batchId));
    this.backlog = page.length >= PENDING_PAGE;
    // Batches handed over during the read come after the page, unless older ones wait beyond it.
    const later = this.backlog ? [] : this.pending.filter((b) => !read.has(b.batchId) && !this.taken(b.batchId));
    this.pending = [...fromStore, ...later];
    this.pendingStale = false;
  }

  /** The batch a new manifest names as previous: the last one anchored. */
  private async previousAnchored(): Promise<Batch | null> {
    if (this.lastAnchored === undefined) {
      await this.flushMarks();
      this.lastAnchored = await this.store.latestAnchoredBatch();
    }
    return this.lastAnchored;
  }

  /**
   * Takes a batch up: adopts it when its root is already on chain, else sends its anchor with the
   * next sequence (after the anchors in the window, as if they succeed) and adds it to the window.
   */
  private async send(batch: Batch): Promise<void> {
    const attempt = batch.attempts + 1;
    if (batch.lastError === RETRY_REQUESTED) {
      // A retried batch is taken up again: its snapshots are Batched once more.
      await this.transition(batch.batchId, 'Batched', `re-queued in batch ${batch.batchId}`, 0, (s) => ({ ...s, status: 'Batched' }));
      batch = { ...batch, lastError: null };
      await this.store.putBatch(batch);
    }
    // Its first try only: once tried, a transaction of it may be on chain.
    const fresh = this.fresh.delete(batch.batchId);
    try {
      if (!fresh) {
        // A crash after sending leaves the root on-chain and the batch Pending: adopt what the chain says.
        const onChain = await this.chain.anchorOf(batch.merkleRoot);
        if (onChain !== null) {
          this.nextSeq = null;
          const event = await this.chain.findAnchorEvent(batch.merkleRoot);
          this.markAnchored(batch, onChain.batchSeq, event?.manifestCid ?? batch.manifestCid, batch.previous, {
            txHash: event?.txHash ?? batch.txHash,
            blockNumber: event?.blockNumber ?? batch.blockNumber,
            atSec: onChain.anchoredAt,
          }, true);
          return;
        }
      }
      let batchSeq = this.nextSeq;
      let previous = this.nextPrevious;
      if (batchSeq === null) {
        // The window is empty here: the last batch anchored is the previous one.
        const previousBatch = await this.previousAnchored();
        const lastOnChain = await this.chain.lastSequence();
        const recorded = previousBatch?.batchSeq ?? null;
        if (recorded !== null && recorded > lastOnChain) {
          // The contract is behind what was recorded Anchored: the node lost anchors (restored
          // from an older state, or a reorg). Anchoring now would take a lost batch's sequence.
          const mark = `${recorded}/${lastOnChain}`;
          if (this.behindMark !== mark) {
            this.behindMark = mark;
            this.log.warn({ recorded, onChain: lastOnChain }, 'the contract sequence is behind the recorded anchors; reconciling first');
            this.reconcileWanted = true;
            // Nothing was sent: read back after the reconciliation, it is still a first try.
            if (fresh) this.fresh.add(batch.batchId);
            return;
          }
          // Reconciled already and still behind: a node whose reads disagree (a lagging replica).
          throw new DrisError('dependency_unavailable', 'the contract sequence stays behind the recorded anchors', { extra: { recorded, onChain: lastOnChain } });
        }
        this.behindMark = null;
        batchSeq = lastOnChain + 1;
        previous = previousBatch === null || previousBatch.manifestCid === null ? null : { batchId: previousBatch.batchId, merkleRoot: previousBatch.merkleRoot, cid: previousBatch.manifestCid };
      }
      const manifest = await this.prepare(batch, batchSeq, previous);
      await this.prepareAhead(batch, batchSeq, manifest.cid);
      const snapshots = this.snapshotsOf(batch.batchId);
      await manifest.pinned;
      const receipt = this.chain.anchor({ batchSeq, merkleRoot: batch.merkleRoot, recordCount: batch.treeSize, batchId: batch.batchId, manifestCid: manifest.cid });
      // Settled in order by settleOldest; until then a rejection is not unhandled.
      receipt.catch(() => undefined);
      this.inflight.push({ batch, attempt, batchSeq, previous, cid: manifest.cid, snapshots, receipt });
      this.nextSeq = batchSeq + 1;
      this.nextPrevious = { batchId: batch.batchId, merkleRoot: batch.merkleRoot, cid: manifest.cid };
    } catch (err) {
      const back = await this.attemptFailed(batch, attempt, err);
      // Back in its place, so the page need not be read again for it.
      if (back !== null) this.pending.unshift(back);
    }
  }

  /**
   * Waits for the oldest anchor of the window. When it fails, the ones sent after it assumed its
   * sequence and named it as previous: each is awaited too, kept if it stands on chain all the
   * same, otherwise put back in its place without counting an attempt against it.
   */
  private async settleOldest(): Promise<void> {
    const f = this.inflight.shift();
    if (f === undefined) return;
    try {
      const r = await f.receipt;
      this.markAnchored(f.batch, f.batchSeq, f.cid, f.previous, { txHash: r.txHash, blockNumber: r.blockNumber, atSec: r.blockTimestamp }, false, f.snapshots);
      return;
    } catch (err) {
      const after = this.inflight.splice(0);
      const failed = await this.attemptFailed(f.batch, f.attempt, err);
      const back: Batch[] = failed === null ? [] : [failed];
      for (const g of after) {
        try {
          const r = await g.receipt;
          this.markAnchored(g.batch, g.batchSeq, g.cid, g.previous, { txHash: r.txHash, blockNumber: r.blockNumber, atSec: r.blockTimestamp }, false, g.snapshots);
        } catch (e) {
          this.log.info({ batchId: g.batch.batchId, code: toDrisError(e).code }, 'anchor sent after a failed one did not stand; taken up again');
          back.push(g.batch);
        }
      }
      // In their places: before anything not sent yet, the failed one first (in its backoff).
      this.pending = [...back, ...this.pending];
    }
  }

  /**
   * Counts a failed attempt: the batch backs off and is returned, to be put back among the pending
   * ones; past the attempts allowed it Fails (null).
   */
  private async attemptFailed(batch: Batch, attempt: number, err: unknown): Promise<Batch | null> {
    // Whatever failed, the contract is asked again before the next anchor, and the manifests
    // prepared after this one named it as previous.
    this.nextSeq = null;
    this.nextPrevious = null;
    this.prepared.clear();
    const e = toDrisError(err);
    this.log.warn({ batchId: batch.batchId, attempt, code: e.code, reason: e.extra['reason'] }, 'anchoring attempt failed');
    if (attempt >= this.options.maxAttempts) {
      await this.markFailed(batch, attempt, e);
      return null;
    }
    const delay = Math.min(this.options.maxDelayMs, this.options.baseDelayMs * 2 ** (attempt - 1));
    this.notBefore.set(batch.batchId, Date.now() + delay);
    const failed: Batch = { ...batch, attempts: attempt, lastError: e.code };
    await this.store.putBatch(failed);
    return failed;
  }

  /**
   * A batch's manifest for this sequence and previous batch, its CID known at once and its pin
   * started: made ahead for the batches after the one being anchored, or now. A failed pin fails
   * the anchor that awaits it, which forgets every prepared manifest.
   */
  private async prepare(batch: Batch, batchSeq: number, previous: Batch['previous']): Promise<Prepared> {
    const key = manifestKey(batchSeq, previous);
    const made = this.prepared.get(batch.batchId);
    if (made !== undefined && made.key === key) return made;
    const bytes = Buffer.from(this.hashing.canonicalize(buildManifest(batch, batchSeq, previous)), 'utf8');
    const cid = await this.pinner.cidOf(bytes);
    const pinned = this.pinner.add(bytes).then((added) => {
      if (added !== cid) throw new DrisError('internal_error', 'the pinner stored a manifest under another CID than it computed', { extra: { cid, added } });
    });
    // Awaited by the anchor that takes it; one that never does must not leave a rejection unhandled.
    pinned.catch(() => undefined);
    const p: Prepared = { key, cid, pinned };
    this.prepared.set(batch.batchId, p);
    return p;
  }

  /**
   * Prepares the manifests of the batches due after `current`, as if its anchor succeeds: each
   * names the one before it as previous, so their CIDs are computed in order, while their pins run
   * side by side (and beside the current transaction).
   */
  private async prepareAhead(current: Batch, batchSeq: number, cid: string): Promise<void> {
    let previous: Batch['previous'] = { batchId: current.batchId, merkleRoot: current.merkleRoot, cid };
    const now = Date.now();
    for (const [i, next] of this.pending.slice(0, PIN_AHEAD).entries()) {
      // The loop takes the oldest batch due: one in backoff breaks the order this assumes.
      if ((this.notBefore.get(next.batchId) ?? 0) > now) return;
      const p = await this.prepare(next, batchSeq + 1 + i, previous);
      previous = { batchId: next.batchId, merkleRoot: next.merkleRoot, cid: p.cid };
    }
  }

  /** A batch's snapshots: as handed over, or read from the store now (for a write to come). */
  private snapshotsOf(batchId: string): Promise<Snapshot[]> {
    const handed = this.handed.get(batchId);
    return handed === undefined ? this.prefetchSnapshots(batchId) : Promise.resolve([...handed]);
  }

  /** Queues the Anchored write of a batch whose root is on chain; the loop goes on meanwhile. */
  private markAnchored(
    batch: Batch,
    batchSeq: number,
    manifestCid: string | null,
    previous: Batch['previous'],
    tx: { txHash: string | null; blockNumber: number | null; atSec: number },
    adopted: boolean,
    snapshots: Promise<Snapshot[]> = this.snapshotsOf(batch.batchId),
  ): void {
    const info = this.chain.info();
    const updated: Batch = {
      ...batch,
      status: 'Anchored',
      batchSeq,
      manifestCid,
      previous,
      chainId: info.chainId,
      contractAddress: info.contractAddress,
      txHash: tx.txHash,
      blockNumber: tx.blockNumber,
      anchoredAtMs: tx.atSec * 1000,
      attempts: batch.attempts + 1,
      lastError: null,
    };
    this.notBefore.delete(batch.batchId);
    this.handed.delete(batch.batchId);
    this.prepared.delete(batch.batchId);
    const last = this.lastAnchored;
    if (last !== undefined && (last === null || (last.batchSeq ?? 0) < batchSeq)) this.lastAnchored = updated;
    this.marks.push({ batch: updated, reason: `root committed in batch ${batchSeq}`, adopted, snapshots });
    this.marking.add(batch.batchId);
    this.marker ??= this.writeMarks().finally(() => {
      this.marker = null;
    });
  }

  /**
   * Writes queued Anchored states, several batches at a time: one write of their snapshots and
   * lifecycle entries, then their batch rows (the batch row last, as everywhere). Never throws: a
   * failed write leaves the batches Pending in the store, roots on chain, and the next pass over
   * the pending batches adopts them from the chain.
   */
  private async writeMarks(): Promise<void> {
    while (this.marks.length > 0) {
      const group = this.marks.splice(0, MARK_GROUP);
      try {
        const snapshots = await Promise.all(group.map((m) => m.snapshots));
        const at = Date.now();
        const changed: Snapshot[] = [];
        const entries: LifecycleEntry[] = [];
        for (const [i, m] of group.entries()) {
          for (const s of snapshots[i] ?? []) {
            changed.push({ ...s, status: 'Anchored', merkleRoot: m.batch.merkleRoot, anchorTimestampMs: m.batch.anchoredAtMs, onChainConfirmed: true, chainTxHash: m.batch.txHash });
            // Already Anchored: an earlier write stopped before the batch row (the commit marker),
            // maybe before its lifecycle entry too. Rare (a crash), so the lifecycle is read.
            const claimed = s.status === 'Anchored' && (await this.store.lifecycleOf(s.tenantId, s.snapshotId)).at(-1)?.state === 'Anchored';
            if (claimed) {
              // Adopted: the same anchor, already in the lifecycle. Anchored anew: the first
              // anchor left the chain (a node that lost state), as reconciliation would say.
              if (m.adopted) continue;
              entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at - 1, reason: REQUEUED_REASON, attempt: 0 });
            }
            entries.push({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Anchored', atMs: at, reason: m.reason, attempt: m.batch.attempts });
          }
        }
        await this.store.putSnapshots(changed, entries);
        await this.store.putBatches(group.map((m) => m.batch));
        for (const m of group) {
          this.log.info({ batchId: m.batch.batchId, batchSeq: m.batch.batchSeq, txHash: m.batch.txHash, records: m.batch.treeSize, epoch: this.epoch }, 'batch anchored');
        }
      } catch (err) {
        this.log.error({ err, batches: group.map((m) => m.batch.batchId) }, 'recording anchored batches failed; they will be adopted from the chain');
        this.pendingStale = true;
      } finally {
        for (const m of group) this.marking.delete(m.batch.batchId);
      }
    }
  }

  /** The snapshots of a batch, read now for an Anchored write to come; a failed read fails that write. */
  private prefetchSnapshots(batchId: string): Promise<Snapshot[]> {
    const read = this.store.snapshotsOfBatch(batchId);
    // Handled here so a batch whose anchor fails meanwhile leaves no unhandled rejection.
    read.catch(() => undefined);
    return read;
  }

  /** Resolves once every queued Anchored write has been made (or has failed). */
  private async flushMarks(): Promise<void> {
    while (this.marker !== null) await this.marker;
  }

  private async markFailed(batch: Batch, attempts: number, err: DrisError): Promise<void> {
    await this.transition(batch.batchId, 'Failed', `gave up after ${attempts} attempts: ${err.code}`, attempts, (s) => ({ ...s, status: 'Failed' }));
    await this.store.putBatch({ ...batch, status: 'Failed', attempts, lastError: err.code });
    this.notBefore.delete(batch.batchId);
    this.handed.delete(batch.batchId);
    this.log.error({ batchId: batch.batchId, attempts, code: err.code }, 'batch failed');
  }

  private async transition(batchId: string, state: LifecycleEntry['state'], reason: string, attempt: number, change: (s: Snapshot) => Snapshot): Promise<void> {
    const snapshots = await this.store.snapshotsOfBatch(batchId);
    const at = Date.now();
    await this.store.putSnapshots(
      snapshots.map(change),
      snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state, atMs: at, reason, attempt })),
    );
  }

  /**
   * Moves a Failed snapshot's batch back to be anchored (`requeueFailedSnapshot`) and takes it up
   * at once rather than at the next read of the store.
   */
  async retry(tenantId: string, snapshotId: string): Promise<Snapshot> {
    const { snapshot, batchId } = await requeueFailedSnapshot(this.store, tenantId, snapshotId);
    this.notBefore.delete(batchId);
    this.invalidate();
    return snapshot;
  }

  /**
   * Every batch believed Anchored is checked against the contract; one whose root is missing (a
   * chain that lost state, a reorg) goes back to be anchored again, and one the contract holds
   * under another sequence takes the contract's. Incomplete when the chain cannot be read: the
   * loop tries again.
   */
  async reconcile(): Promise<{ requeued: number; complete: boolean }> {
    let requeued = 0;
    await this.flushMarks();
    // Whatever reconciliation changes, the loop reads it back from the store.
    this.pendingStale = true;
    this.lastAnchored = undefined;
    this.nextSeq = null;
    this.nextPrevious = null;
    this.prepared.clear();
    const anchored = await this.store.batchesByStatus('Anchored', 10_000);
    for (const b of anchored) {
      let onChain;
      try {
        onChain = await this.chain.anchorOf(b.merkleRoot);
      } catch (err) {
        this.log.warn({ code: toDrisError(err).code, batchId: b.batchId }, 'reconciliation could not read the chain; will try again');
        return { requeued, complete: false };
      }
      if (onChain !== null) {
        if (onChain.batchSeq !== b.batchSeq) await this.adoptOnChain(b, onChain.batchSeq);
        continue;
      }
      requeued += 1;
      const at = Date.now();
      const snapshots = await this.store.snapshotsOfBatch(b.batchId);
      await this.store.putSnapshots(
        snapshots.map((s) => ({ ...s, status: 'Batched', onChainConfirmed: false, chainTxHash: null, anchorTimestampMs: null, merkleRoot: null })),
        snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'Batched', atMs: at, reason: REQUEUED_REASON, attempt: 0 })),
      );
      await this.store.putBatch({ ...b, status: 'Pending', attempts: 0, batchSeq: null, txHash: null, blockNumber: null, anchoredAtMs: null, lastError: 'missing_on_chain' });
      this.notBefore.delete(b.batchId);
      this.log.warn({ batchId: b.batchId, batchSeq: b.batchSeq }, 'anchored batch missing on-chain; re-queued');
    }
    if (requeued > 0) this.log.warn({ requeued, checked: anchored.length }, 'reconciliation re-queued lost anchors');
    return { requeued, complete: true };
  }

  /** The contract holds the root under another sequence than recorded: the chain is the record. */
  private async adoptOnChain(b: Batch, batchSeq: number): Promise<void> {
    const event = await this.chain.findAnchorEvent(b.merkleRoot).catch(() => null);
    this.log.warn({ batchId: b.batchId, recorded: b.batchSeq, onChain: batchSeq }, 'anchored batch holds another sequence on-chain; adopted');
    await this.store.putBatch({
      ...b,
      batchSeq,
      txHash: event?.txHash ?? b.txHash,
      blockNumber: event?.blockNumber ?? b.blockNumber,
      manifestCid: event?.manifestCid ?? b.manifestCid,
    });
  }
}

/** What a manifest depends on besides its batch: the sequence and the previous batch's manifest. */
function manifestKey(batchSeq: number, previous: Batch['previous']): string {
  return `${batchSeq}:${previous?.batchId ?? ''}:${previous?.cid ?? ''}`;
}

/**
 * Sends a Failed snapshot's batch back to be anchored: every snapshot of the batch goes to
 * PendingAnchor (and Batched again once the anchorer takes it up: a batch is anchored as a
 * whole). It only writes the store, so any process may do it; the leading anchorer, wherever it
 * runs, finds the batch Pending at its next read of the store (within `idleMs` when idle).
 */
export async function requeueFailedSnapshot(store: PipelineStore, tenantId: string, snapshotId: string): Promise<{ snapshot: Snapshot; batchId: string }> {
  const snap = await store.getSnapshot(tenantId, snapshotId);
  if (snap === null) throw new DrisError('not_found', 'no such snapshot');
  if (snap.status !== 'Failed') throw new DrisError('invalid_state', `the snapshot is ${snap.status}, not Failed`, { extra: { status: snap.status } });
  const batch = await store.getBatch(snap.batchId);
  if (batch === null) throw new DrisError('internal_error', 'snapshot without batch');
  const at = Date.now();
  const snapshots = await store.snapshotsOfBatch(batch.batchId);
  await store.putSnapshots(
    snapshots.map((s) => ({ ...s, status: 'PendingAnchor' })),
    snapshots.map((s) => ({ snapshotId: s.snapshotId, tenantId: s.tenantId, state: 'PendingAnchor', atMs: at, reason: 'retry requested', attempt: 0 })),
  );
  await store.putBatch({ ...batch, status: 'Pending', attempts: 0, lastError: RETRY_REQUESTED });
  return { snapshot: { ...snap, status: 'PendingAnchor' }, batchId: batch.batchId };
}
