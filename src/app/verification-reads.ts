import type { HashingBackend } from '../domain/hashing/port.js';
import type { Pinner } from '../domain/pipeline/ports.js';
import { rootOfLeaves, type ChainObservation, type ManifestObservation } from '../domain/verification/assess.js';
import { toHex } from '../domain/hashing/merkle.js';
import { parseManifest } from '../domain/verification/manifest.js';
import type { AnchorEventView, BatchAnchor, ChainReader, EvidenceIndex } from '../domain/verification/ports.js';
import { DrisError } from '../errors/dris-error.js';
import { ByteLru } from '../util/byte-lru.js';
import type { Logger } from '../util/logger.js';
import { TtlCache } from '../util/ttl-cache.js';
import { CanonicalAnchors, type AnchorOfRoot } from './canonical-anchors.js';

/**
 * What verification reads: the chain at verification time (never taken from the database), its
 * anchors through canonical-anchors.ts and its events through short-lived caches, so a burst of
 * verifications of one batch costs one chain read at most; manifests cached by CID
 * (content-addressed, hence immutable once checked); batch rows.
 */

export interface ManifestEntry extends ManifestObservation {
  readonly computedRoot: string;
}

/** A manifest: null when it cannot be fetched now, 'invalid' when its bytes are no manifest. */
export type ManifestRead = ManifestEntry | 'invalid' | null;

/**
 * Manifests kept as read (their answers): for a packed one, a small object over its packed
 * leaves; a tampered one, never packed, is kept whole (about 90 KiB for 1000 leaves).
 */
const MANIFEST_CACHE_ENTRIES = 2048;

/**
 * Bytes of manifests kept packed (leaves as 32 bytes each, about 32 KiB for 1000). Fetching,
 * parsing and hashing one again costs more than a whole verification, and with an index of more
 * batches than the manifests kept, verifications drawn uniformly missed them (3 000 000 records
 * with 2048 manifests kept: 1 100 verifications/s, and 1 900 with the packed ones). 384 MiB: the
 * manifests of 12 000 000 records.
 */
const PACKED_MANIFEST_BYTES = 384 * 1024 * 1024;

/**
 * Manifests the warm-up reads at once: a fetch (a file read with the embedded block store) and a
 * root on the thread pool overlap the parsing of another on the event loop. One at a time, the
 * 10 000 manifests of ten million records took 15 s on an idle service.
 */
const WARM_MANIFESTS_IN_FLIGHT = 4;

/** A manifest whose leaves are all 64 lowercase hex digits, packed. */
interface PackedManifest {
  readonly merkleRoot: string;
  readonly treeSize: number;
  readonly computedRoot: string;
  readonly leaves: Buffer;
}

/**
 * A packed manifest as verification reads it: assess reads the packed leaves; their text, which
 * only batch mode reads, is built on first use (a thousand strings a manifest, most of them
 * garbage a moment later, were a sixth of the main thread's time in collections at 10 M records).
 */
function entryOf(p: PackedManifest): ManifestEntry {
  let text: string[] | undefined;
  return {
    merkleRoot: p.merkleRoot,
    treeSize: p.treeSize,
    computedRoot: p.computedRoot,
    packedLeaves: p.leaves,
    get leaves(): readonly string[] {
      if (text === undefined) {
        const n = p.leaves.length / 32;
        text = new Array<string>(n);
        for (let i = 0; i < n; i++) text[i] = p.leaves.toString('hex', i * 32, i * 32 + 32);
      }
      return text;
    },
  };
}

/**
 * How long stored-mode verification reuses the row of an Anchored batch. Each use still needs the
 * chain read (at most chainCacheMs old) to hold the batch's root at its sequence; when it does not,
 * the row is read again before the answer. What else the row holds (manifest, transaction) changes
 * only with a new anchor, which the chain read shows. With uniform verifications over a thousand
 * batches, rereading each row every minute was a query in every three of the index's.
 */
const ANCHORED_BATCH_REUSE_MS = 600_000;

export interface VerificationReadDeps {
  readonly hashing: HashingBackend;
  readonly evidence: EvidenceIndex;
  /** null when this process has no access to the chain. */
  readonly chain: ChainReader | null;
  /** null when this process has no access to IPFS. */
  readonly pinner: Pinner | null;
  /** How long a chain read of one root is reused, milliseconds. 0 disables. */
  readonly chainCacheMs: number;
  /** Bound on fetching a manifest from IPFS, milliseconds. */
  readonly ipfsTimeoutMs: number;
  readonly log: Logger;
}

function isAnchored(b: BatchAnchor): boolean {
  return b.status === 'Anchored' && b.batchSeq !== null;
}

export function codeOf(err: unknown): string | undefined {
  return err instanceof DrisError ? err.code : undefined;
}

export class VerificationReads {
  /** null when the chain is read every time (chainCacheMs 0) or there is no chain. */
  readonly #anchors: CanonicalAnchors | null;
  readonly #eventsBySeq: TtlCache<number, AnchorEventView | null>;
  readonly #eventsByBatch: TtlCache<string, AnchorEventView | null>;
  readonly #manifests = new TtlCache<string, ManifestEntry | 'invalid'>(24 * 3_600_000, MANIFEST_CACHE_ENTRIES);
  /** Content-addressed, so never stale; the least recently used go first. */
  readonly #packed = new ByteLru<string, PackedManifest>(PACKED_MANIFEST_BYTES, (p) => p.leaves.length);
  readonly #batches: TtlCache<string, BatchAnchor | null>;
  readonly #anchoredBatches: TtlCache<string, BatchAnchor | null>;
  readonly #anchoredReuseMs: number;

  constructor(private readonly deps: VerificationReadDeps) {
    const ttl = deps.chainCacheMs;
    // The chain's checkpoint, or a batch, in steady use is read again in the second half of its
    // time to live, behind the answers, so no verification waits for the chain or the index once
    // it is warm; none uses a read older than the time to live.
    this.#anchors = ttl > 0 && deps.chain !== null ? new CanonicalAnchors(deps.chain, ttl, deps.log) : null;
    this.#eventsBySeq = new TtlCache(ttl, 10_000);
    this.#eventsByBatch = new TtlCache(ttl, 10_000);
    this.#batches = new TtlCache(ttl, 10_000);
    // Reading the chain every time (0) asks for everything fresh.
    this.#anchoredReuseMs = ttl > 0 ? Math.max(ttl, ANCHORED_BATCH_REUSE_MS) : 0;
    this.#anchoredBatches = new TtlCache(this.#anchoredReuseMs, 20_000, { refreshWithinMs: this.#anchoredReuseMs / 2 });
  }

  get chain(): ChainReader | null {
    return this.deps.chain;
  }

  async batch(batchId: string): Promise<BatchAnchor | null> {
    return this.#batches.get(batchId, () => this.deps.evidence.findBatch(batchId));
  }

  /**
   * The batch row for stored-mode verification: an Anchored one is reused (ANCHORED_BATCH_REUSE_MS);
   * `fresh` gives one at most chainCacheMs old, as every other read of a batch.
   */
  async storedModeBatch(batchId: string, fresh: boolean): Promise<BatchAnchor | null> {
    if (fresh) {
      this.#anchoredBatches.delete(batchId);
      return this.batch(batchId);
    }
    return this.#anchoredBatches.get(batchId, () => this.batch(batchId), (b) => (b?.status === 'Anchored' ? this.#anchoredReuseMs : 0));
  }

  /** The contract's anchor of a root as of at most chainCacheMs ago (canonical-anchors.ts); throws when the chain cannot be read. */
  anchorOf(chain: ChainReader, merkleRoot: string): Promise<AnchorOfRoot | null> {
    return this.#anchors !== null && chain === this.deps.chain ? this.#anchors.anchorOf(merkleRoot) : chain.anchorOf(merkleRoot);
  }

  /** The Anchored event naming a batch, through its cache; throws when the chain cannot be read. */
  eventByBatchId(chain: ChainReader, batchId: string): Promise<AnchorEventView | null> {
    return this.#eventsByBatch.get(batchId, () => chain.eventByBatchId(batchId));
  }

  /** The chain now: the contract's anchor of the root and, when absent, the root at the batch's sequence. */
  async observeChain(merkleRoot: string, batchSeq: number): Promise<ChainObservation | null> {
    const chain = this.deps.chain;
    if (chain === null) return null;
    try {
      const anchorOfRoot = await this.anchorOf(chain, merkleRoot);
      if (anchorOfRoot !== null && anchorOfRoot.batchSeq === batchSeq) return { anchorOfRoot };
      const atSeq = await this.#eventsBySeq.get(batchSeq, () => chain.eventBySeq(batchSeq));
      return { anchorOfRoot, rootAtSeq: atSeq?.merkleRoot ?? null };
    } catch (err) {
      this.deps.log.warn({ code: codeOf(err) }, 'chain read failed');
      return null;
    }
  }

  /**
   * Reads ahead what a stored-mode verification of these batches would otherwise ask the index and
   * the chain for after the record: the batch rows given (kept as if read now) and the chain's
   * anchors of their roots (at the present checkpoint, when anchors are reused at all). Best
   * effort: an anchor that cannot be read now is read when a verification asks for it.
   */
  async warmBatches(batches: readonly BatchAnchor[]): Promise<void> {
    const anchored = batches.filter(isAnchored);
    for (const b of anchored) this.#anchoredBatches.set(b.batchId, b);
    const chain = this.deps.chain;
    if (this.#anchors === null || chain === null) return;
    await Promise.all(anchored.map(async (b) => this.anchorOf(chain, b.merkleRoot).catch((err: unknown) => void this.deps.log.debug({ code: codeOf(err) }, 'warming an anchor failed'))));
  }

  /**
   * Reads ahead these batches' manifests, WARM_MANIFESTS_IN_FLIGHT at a time (so a fetch overlaps
   * the decoding of another), while the packed manifests' budget has a tenth left (so warming never
   * evicts what it warmed), and starts no other once one cannot be fetched (IPFS down would
   * otherwise cost a fetch deadline each).
   */
  async warmManifests(batches: readonly BatchAnchor[], signal?: AbortSignal): Promise<void> {
    const cids = batches.flatMap((b) => (isAnchored(b) && b.manifestCid !== null ? [b.manifestCid] : []));
    let next = 0;
    let failed = false;
    const warmSome = async (): Promise<void> => {
      while (!failed && next < cids.length && signal?.aborted !== true && this.#packed.bytes < PACKED_MANIFEST_BYTES * 0.9) {
        const cid = cids[next++] as string;
        if ((await this.manifest(cid)) === null) failed = true;
      }
    };
    await Promise.all(Array.from({ length: WARM_MANIFESTS_IN_FLIGHT }, warmSome));
  }

  /** A manifest by CID (see ManifestRead). */
  async manifest(cid: string): Promise<ManifestRead> {
    const pinner = this.deps.pinner;
    if (pinner === null) return null;
    try {
      return await this.#manifests.get(cid, async () => {
        const held = this.#packed.get(cid);
        if (held !== undefined) return entryOf(held);
        const bytes = await pinner.cat(cid, { timeoutMs: this.deps.ipfsTimeoutMs });
        const m = parseManifest(bytes);
        if (m === null) return 'invalid';
        // One pass decodes the leaves for the root and for the packed cache alike, off the event
        // loop where the backend can. A manifest with any other leaf (a tampered one) is kept in
        // full only: its text must come back as it was.
        const hex = await this.deps.hashing.rootOfHexLeaves(m.leaves);
        if (hex === null) return { merkleRoot: m.merkleRoot, treeSize: m.treeSize, leaves: m.leaves, computedRoot: rootOfLeaves(this.deps.hashing, m.leaves) };
        const packed: PackedManifest = { merkleRoot: m.merkleRoot, treeSize: m.treeSize, computedRoot: toHex(hex.root), leaves: asBuffer(hex.packed) };
        this.#packed.add(cid, packed);
        return entryOf(packed);
      });
    } catch (err) {
      this.deps.log.warn({ code: codeOf(err) }, 'manifest fetch failed');
      return null;
    }
  }
}

/** The same bytes as a Buffer, not copied. */
function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}
