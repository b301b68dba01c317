import type { PipelineStore } from '../domain/pipeline/ports.js';
import type { Batch, Snapshot } from '../domain/pipeline/types.js';

/**
 * The batches waiting to be anchored, oldest first, as the anchoring loop sees them: read from the
 * store a page at a time, or handed over by the accumulator as they are formed (with their
 * snapshots, so the loop need not read them back); each with the backoff of its last failed
 * attempt.
 */

/** Pending batches read from the store at once. */
const PENDING_PAGE = 50;

/** Batches taken up in this term that a late handover is checked against (the newest ones). */
const TAKEN_UP_REMEMBERED = 4096;

export class PendingBatches {
  private list: Batch[] = [];
  private stale = true;
  /** The store may hold pending batches older than those handed over and not in `list`. */
  private backlog = true;
  private lastReadAtMs = 0;
  /** Backoff of a batch whose attempt failed: not taken before this time, epoch ms. */
  private readonly notBefore = new Map<string, number>();
  /** Snapshots of the batches handed over, until they are anchored or fail. */
  private readonly handed = new Map<string, readonly Snapshot[]>();
  /** Handed over in this term and not tried yet: formed from records in no stored batch, so not on chain. */
  private readonly fresh = new Set<string>();
  /**
   * Taken up by the loop in this term: a handover arrives after the batch is stored, and the loop
   * may have read it from the store and tried it meanwhile; it is not fresh then, nor due again.
   */
  private readonly takenUp = new Set<string>();

  /**
   * `store()`: the store of the current term; `taken(id)`: sent and not settled, or anchored and
   * not yet recorded so (the store still says Pending); `writing()`: the batches whose Anchored
   * write is queued or under way.
   */
  constructor(
    private readonly store: () => PipelineStore,
    private readonly taken: (batchId: string) => boolean,
    private readonly writing: () => Set<string>,
    private readonly idleMs: number,
  ) {}

  /** A new term: nothing known, everything read from the store. */
  reset(): void {
    this.list = [];
    this.stale = true;
    this.backlog = true;
    this.notBefore.clear();
    this.handed.clear();
    this.fresh.clear();
    this.takenUp.clear();
  }

  /** Read from the store before the next batch is taken. */
  markStale(): void {
    this.stale = true;
  }

  /** A batch formed in this term; with older batches still in the store, it waits for its turn there. */
  handOver(batch: Batch, snapshots: readonly Snapshot[]): void {
    if (this.takenUp.has(batch.batchId)) return;
    this.handed.set(batch.batchId, snapshots);
    this.fresh.add(batch.batchId);
    if (!this.backlog && !this.stale && !this.taken(batch.batchId) && !this.list.some((b) => b.batchId === batch.batchId)) this.list.push(batch);
  }

  /** Batches given back, before everything else, in this order. */
  putBack(batches: readonly Batch[]): void {
    this.list = [...batches, ...this.list];
  }

  /** Whether this is the first try of a batch handed over (so known not to be on chain); it is not any more. */
  takeFresh(batchId: string): boolean {
    return this.fresh.delete(batchId);
  }

  /** A first try that sent nothing: the next one is still a first try. */
  keepFresh(batchId: string): void {
    this.fresh.add(batchId);
  }

  /** A batch's snapshots: as handed over, or read from the store now (for a write to come). */
  snapshotsOf(batchId: string): Promise<Snapshot[]> {
    const handed = this.handed.get(batchId);
    if (handed !== undefined) return Promise.resolve([...handed]);
    const read = this.store().snapshotsOfBatch(batchId);
    // A failed read fails the write that awaits it; one whose anchor fails meanwhile never does.
    read.catch(() => undefined);
    return read;
  }

  /** A batch anchored or given up: it leaves. */
  settled(batchId: string): void {
    this.notBefore.delete(batchId);
    this.handed.delete(batchId);
  }

  backOff(batchId: string, untilMs: number): void {
    this.notBefore.set(batchId, untilMs);
  }

  clearBackoff(batchId: string): void {
    this.notBefore.delete(batchId);
  }

  /** The oldest pending batch whose backoff has passed, from the page read last. */
  async next(): Promise<Batch | null> {
    // Idle, the store is read again now and then: it is the record, whatever was handed over.
    const due = this.stale || (this.list.length === 0 && (this.backlog || Date.now() - this.lastReadAtMs >= this.idleMs));
    if (due) await this.read();
    const now = Date.now();
    const i = this.list.findIndex((b) => (this.notBefore.get(b.batchId) ?? 0) <= now);
    if (i < 0) {
      // Only batches in backoff: reread next time, newer batches may have been formed.
      if (this.list.length > 0) this.stale = true;
      return null;
    }
    const taken = this.list.splice(i, 1)[0] ?? null;
    if (taken !== null) this.noteTakenUp(taken.batchId);
    return taken;
  }

  private noteTakenUp(batchId: string): void {
    if (this.takenUp.size >= TAKEN_UP_REMEMBERED && !this.takenUp.has(batchId)) {
      const oldest = this.takenUp.values().next();
      if (oldest.done !== true) this.takenUp.delete(oldest.value);
    }
    this.takenUp.add(batchId);
  }

  /** The batches due after the one taken last, in the order `next` gives them, at most `limit`. */
  dueAhead(limit: number): Batch[] {
    const now = Date.now();
    const ahead: Batch[] = [];
    for (const b of this.list.slice(0, limit)) {
      // The oldest batch due is taken first: one in backoff breaks the order this assumes.
      if ((this.notBefore.get(b.batchId) ?? 0) > now) break;
      ahead.push(b);
    }
    return ahead;
  }

  private async read(): Promise<void> {
    // Batches sent or anchored whose Anchored write is queued read as Pending: not again. Taken
    // before the read too, since a write that completes during it may or may not show in the page.
    const writing = this.writing();
    this.lastReadAtMs = Date.now();
    const page = await this.store().batchesByStatus('Pending', PENDING_PAGE);
    const fromStore = page.filter((b) => !writing.has(b.batchId) && !this.taken(b.batchId));
    const read = new Set(fromStore.map((b) => b.batchId));
    this.backlog = page.length >= PENDING_PAGE;
    // Batches handed over during the read come after the page, unless older ones wait beyond it.
    const later = this.backlog ? [] : this.list.filter((b) => !read.has(b.batchId) && !this.taken(b.batchId));
    this.list = [...fromStore, ...later];
    this.stale = false;
  }
}
