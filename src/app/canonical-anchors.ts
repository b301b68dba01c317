import type { BlockRef, ChainReader } from '../domain/verification/ports.js';
import type { Logger } from '../util/logger.js';
import { TtlCache } from '../util/ttl-cache.js';

/**
 * The contract's anchors of roots as verification reads them: at most `ttlMs` old, at a cost that
 * does not grow with the number of roots verified.
 *
 * DrisAnchor never changes or removes an anchor (a second anchor of a root reverts), so an anchor
 * read in block B holds in every later block for as long as B stays on the canonical chain. Each
 * read is therefore made in one block, the checkpoint: the head, read again at most every `ttlMs`
 * (in the second half of that time, behind the answers). Each new checkpoint also reads the block
 * at the previous one's number; a different hash, or no such block, is a reorg or another chain,
 * and every anchor read so far is forgotten. An anchor is then answered from memory as long as
 * every checkpoint since its read has confirmed its predecessor, which is exactly "still on the
 * canonical chain as of a read at most ttlMs old". A root not (yet) anchored is read again at each
 * checkpoint.
 *
 * With a thousand roots in steady verification, reading each root's anchor again every few seconds
 * was most of what verification asked of the chain (an eth_call per root per period, and its ethers
 * and HTTP work on the event loop, a sixth of it); two block reads per period replace them.
 */

export interface AnchorOfRoot {
  readonly batchSeq: number;
  readonly anchoredAtSec: number;
}

/** Roots whose anchors are kept; past it the oldest are let go (then read again when asked). */
const ANCHORS_KEPT = 1_000_000;
/** Roots read at one checkpoint whose answer (mostly "not anchored") is kept until the next. */
const READS_KEPT = 100_000;

export class CanonicalAnchors {
  readonly #checkpoint: TtlCache<0, BlockRef>;
  /** The checkpoint the anchors in #anchors are confirmed by (null before the first). */
  #confirmed: BlockRef | null = null;
  /** Moves when the anchors are forgotten, so a read in flight across it is not kept. */
  #epoch = 0;
  readonly #anchors = new Map<string, AnchorOfRoot>();
  /** Reads made at #readsAt (answers and those in flight), shared by concurrent verifications. */
  #reads = new Map<string, Promise<AnchorOfRoot | null>>();
  #readsAt: BlockRef | null = null;

  constructor(
    private readonly chain: ChainReader,
    private readonly ttlMs: number,
    private readonly log: Logger,
    now?: () => number,
  ) {
    if (!(ttlMs > 0)) throw new RangeError('CanonicalAnchors needs a positive time to live');
    this.#checkpoint = new TtlCache(ttlMs, 1, { refreshWithinMs: ttlMs / 2, ...(now === undefined ? {} : { now }) });
  }

  /** The anchor of a root as of a checkpoint at most ttlMs old; throws when the chain cannot be read. */
  async anchorOf(merkleRoot: string): Promise<AnchorOfRoot | null> {
    const at = await this.#checkpoint.get(0, () => this.#advance());
    const known = this.#anchors.get(merkleRoot);
    if (known !== undefined) return known;
    if (this.#readsAt !== at) {
      this.#reads = new Map();
      this.#readsAt = at;
    }
    const running = this.#reads.get(merkleRoot);
    if (running !== undefined) return running;
    if (this.#reads.size >= READS_KEPT) this.#reads = new Map();
    const reads = this.#reads;
    const read = this.#read(merkleRoot, at);
    reads.set(merkleRoot, read);
    // A failed read is not kept: the next verification asks again.
    read.catch(() => reads.delete(merkleRoot));
    return read;
  }

  async #read(merkleRoot: string, at: BlockRef): Promise<AnchorOfRoot | null> {
    const epoch = this.#epoch;
    const anchor = await this.chain.anchorOf(merkleRoot, at);
    if (anchor !== null && epoch === this.#epoch) {
      if (this.#anchors.size >= ANCHORS_KEPT) {
        const oldest = this.#anchors.keys().next();
        if (oldest.done !== true) this.#anchors.delete(oldest.value);
      }
      this.#anchors.set(merkleRoot, { batchSeq: anchor.batchSeq, anchoredAtSec: anchor.anchoredAtSec });
    }
    return anchor;
  }

  /** A new checkpoint at the head, after checking that the previous one is still canonical. */
  async #advance(): Promise<BlockRef> {
    const previous = this.#confirmed;
    // The head first: were the two read together, a reorg between them could leave a head of the
    // old branch confirming anchors the new one lacks. Read in this order, such a head is itself
    // found gone at the next checkpoint.
    const head = await this.chain.head();
    const then = previous === null ? null : await this.chain.blockAt(previous.number);
    if (previous !== null && then?.hash !== previous.hash) {
      this.log.warn({ block: previous.number, anchorsForgotten: this.#anchors.size }, 'the chain no longer holds the last checkpoint (a reorg or another chain): anchors are read again');
      this.#epoch += 1;
      this.#anchors.clear();
    }
    this.#confirmed = head;
    return head;
  }
}
