import { hash } from 'node:crypto';
import { HASH_LEN, MerkleHasher, type DigestPrimitive } from '../../domain/hashing/merkle.js';
import { ByteLru } from '../../util/byte-lru.js';
import type { ClickHouseDatabase } from './database.js';
import { pointReadSettings } from './point-read.js';

/**
 * A batched record's audit path is stored in two parts. Its record_evidence row keeps the hashes
 * of the tree's lowest STORED_PROOF_LEVELS levels, the ones only its neighbours share; the rest,
 * the subtree roots the leaf's 2^STORED_PROOF_LEVELS-leaf block meets on its way up, are derived
 * from the roots of the batch's 16-leaf blocks, stored once per batch (batch_blocks, written with
 * its evidence rows), whose tree is kept here, a few KiB a batch.
 *
 * Why: written whole as hex, ten hashes for a 1000-leaf tree, the path was two thirds of every
 * record_evidence row (665 of 954 bytes), inserted, merged and read back at every look-up; the
 * upper six of them are the same for thousands of records. Derived from the batch's leaves
 * instead, each read of a batch's leaves from its `batches` row cost tens of milliseconds of the
 * engine (granules of megabytes), and whole trees kept in memory 64 bytes per record; the block
 * roots are 4 KiB of a batch, read in about a millisecond, and their tree takes 4 bytes per record.
 *
 * A row whose stored path is shorter than its tree's is completed here; a row written whole (by
 * an earlier version, or of a tree of at most 2^STORED_PROOF_LEVELS leaves) is read as it is.
 */

/** Path hashes kept in the record's row: the levels below the 16-leaf blocks. */
export const STORED_PROOF_LEVELS = 4;

/** Upper levels kept at once, bytes: about 4 KiB per 1000-leaf batch, so 16 million records. */
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024;

/** Where a row's path comes from: its leaf, and the hashes stored with it. */
export interface ProofSlot {
  snapshot_id: string | null;
  batch_id: string | null;
  leaf_index: number | null;
  tree_size: number | null;
  merkle_proof: string[];
}

/** How many of a leaf's path hashes lie on levels below `levels` (levels where its node has a sibling). */
function pathLengthBelow(index: number, treeSize: number, levels: number): number {
  let len = 0;
  let i = index;
  let size = treeSize;
  for (let level = 0; level < levels && size > 1; level++) {
    if ((i ^ 1) < size) len++;
    i >>>= 1;
    size = (size >>> 1) + (size & 1);
  }
  return len;
}

/** The part of a leaf's full audit path (leaf to root) kept in its record_evidence row. */
export function storedProofPart(proof: readonly string[], leafIndex: number, treeSize: number): readonly string[] {
  const keep = pathLengthBelow(leafIndex, treeSize, STORED_PROOF_LEVELS);
  return keep >= proof.length ? proof : proof.slice(0, keep);
}

/** A tree's levels from STORED_PROOF_LEVELS up, 32 bytes a node, level after level. */
export interface UpperLevels {
  readonly treeSize: number;
  readonly nodes: Buffer;
  readonly offsets: readonly number[];
  readonly sizes: readonly number[];
}

/** SHA-256 through OpenSSL's one-shot call (Node >= 20.12): about a millisecond a 1000-leaf tree. */
const sha256 = hash as unknown as (alg: 'sha256', data: Uint8Array, enc: 'buffer') => Buffer;
const digest: DigestPrimitive = {
  digestInto(data, out, offset) {
    out.set(sha256('sha256', data, 'buffer'), offset);
  },
};

/** A batch_blocks row: the roots of a batch's 16-leaf blocks, hex; null for a tree of at most one block. */
export interface BlockRow {
  readonly batch_id: string;
  readonly tree_size: number;
  readonly block_roots: string;
}

/** The batch_blocks row of a batch of these leaves (recordHashes, hex, in leaf order), null when its paths are kept whole. */
export function blockRowOf(batchId: string, leaves: readonly string[]): BlockRow | null {
  if (leaves.length <= 1 << STORED_PROOF_LEVELS) return null;
  const tree = new MerkleHasher(digest).tree(leaves.map((l) => Buffer.from(l, 'hex')));
  const from = (tree.levelOffsets[STORED_PROOF_LEVELS] ?? 0) * HASH_LEN;
  const count = tree.levelSizes[STORED_PROOF_LEVELS] ?? 0;
  return { batch_id: batchId, tree_size: leaves.length, block_roots: Buffer.from(tree.nodes.buffer, tree.nodes.byteOffset + from, count * HASH_LEN).toString('hex') };
}

/** The upper levels of a batch's tree, from its block roots (as batch_blocks holds them). */
export function upperLevelsOf(row: BlockRow): UpperLevels {
  const roots = Buffer.from(row.block_roots, 'hex');
  const tree = new MerkleHasher(digest).treeOfLeafHashes(roots, roots.length / HASH_LEN);
  // Its own memory, not a slice of a shared pool slab that a kept entry would hold on to.
  const nodes = Buffer.allocUnsafeSlow(tree.nodes.length);
  nodes.set(tree.nodes);
  return { treeSize: Number(row.tree_size), nodes, offsets: tree.levelOffsets, sizes: tree.levelSizes };
}

/** The hashes of a leaf's path from STORED_PROOF_LEVELS up. */
export function upperPath(top: UpperLevels, index: number): string[] {
  const out: string[] = [];
  let i = index >>> STORED_PROOF_LEVELS;
  for (let level = 0; level < top.sizes.length - 1; level++) {
    const sibling = i ^ 1;
    if (sibling < (top.sizes[level] as number)) {
      const at = ((top.offsets[level] as number) + sibling) * HASH_LEN;
      out.push(top.nodes.toString('hex', at, at + HASH_LEN));
    }
    i >>>= 1;
  }
  return out;
}

/** A row with its leaf. */
type Placed = { batch_id: string; leaf_index: number; tree_size: number };

/** Whether a row's stored path is the lower part of its tree's, to be completed. */
export function partial(r: ProofSlot): r is ProofSlot & Placed {
  if (r.batch_id === null || r.batch_id === '' || r.leaf_index === null || r.tree_size === null) return false;
  const treeSize = Number(r.tree_size);
  // A tree of more leaves than a block always has path hashes above it (at least its top level's),
  // so a path of the lower part's length is a partial one, never a whole one.
  if (treeSize <= 1 << STORED_PROOF_LEVELS) return false;
  return r.merkle_proof.length === pathLengthBelow(Number(r.leaf_index), treeSize, STORED_PROOF_LEVELS);
}

/** A row read as in no batch yet. */
function unplace(r: ProofSlot): void {
  r.snapshot_id = null;
  r.batch_id = null;
  r.leaf_index = null;
  r.tree_size = null;
  r.merkle_proof = [];
}

export interface BatchTopsOptions {
  /** Bytes of upper levels kept; the least recently used batch goes first. Default 64 MiB. */
  readonly maxBytes?: number;
}

/** The upper levels of batches' trees, built from their block roots on first use and kept (see above). */
export class BatchTops {
  readonly #db: ClickHouseDatabase;
  readonly #tops: ByteLru<string, UpperLevels>;
  readonly #loading = new Map<string, Promise<UpperLevels | null>>();

  constructor(db: ClickHouseDatabase, options: BatchTopsOptions = {}) {
    this.#db = db;
    this.#tops = new ByteLru(options.maxBytes ?? DEFAULT_MAX_BYTES, (top) => top.nodes.length);
  }

  /** Bytes of upper levels held now. */
  get bytes(): number {
    return this.#tops.bytes;
  }

  /**
   * Completes, in place, the path of each row that keeps only its lower part. A row whose batch
   * has no block roots stored (a batch write cut short, or one whose inserts have not all landed:
   * ClickHousePipelineStore.saveFormedBatches) reads as in no batch yet.
   */
  async complete<R extends ProofSlot>(rows: R[]): Promise<R[]> {
    const lacking = rows.filter((r): r is R & Placed => partial(r));
    if (lacking.length === 0) return rows;
    const tops = await this.#topsOf([...new Set(lacking.map((r) => r.batch_id))]);
    for (const r of lacking) {
      const top = tops.get(r.batch_id);
      if (top === undefined) {
        unplace(r);
        continue;
      }
      // Leaves of another count than the row's tree (never written so): the path stays partial,
      // and checking it fails, as it should.
      if (top.treeSize !== Number(r.tree_size)) continue;
      r.merkle_proof = [...r.merkle_proof, ...upperPath(top, Number(r.leaf_index))];
    }
    return rows;
  }

  /** Loads the upper levels of these batches, those not held, in one read. */
  async warm(batchIds: readonly string[]): Promise<void> {
    await this.#topsOf([...new Set(batchIds)]);
  }

  async #topsOf(ids: readonly string[]): Promise<Map<string, UpperLevels>> {
    const out = new Map<string, UpperLevels>();
    const waits: Promise<void>[] = [];
    const missing: string[] = [];
    for (const id of ids) {
      const top = this.#tops.get(id);
      if (top !== undefined) {
        out.set(id, top);
        continue;
      }
      const loading = this.#loading.get(id);
      if (loading !== undefined) waits.push(loading.then((t) => void (t === null ? undefined : out.set(id, t))));
      else missing.push(id);
    }
    if (missing.length > 0) waits.push(this.#load(missing, out));
    await Promise.all(waits);
    return out;
  }

  async #load(ids: string[], out: Map<string, UpperLevels>): Promise<void> {
    const read = this.#read(ids);
    for (const id of ids) {
      const one = read.then((m) => m.get(id) ?? null);
      // Awaited by the look-ups that find it under way; the read's failure is this caller's to throw.
      one.catch(() => undefined);
      this.#loading.set(id, one);
    }
    try {
      const found = await read;
      for (const [id, top] of found) {
        out.set(id, top);
        this.#tops.add(id, top);
      }
    } finally {
      for (const id of ids) this.#loading.delete(id);
    }
  }

  async #read(ids: readonly string[]): Promise<Map<string, UpperLevels>> {
    // A batch formed again has the same id and blocks, so any copy will do. A batch without a row
    // (a write cut short before it) is left out: never kept, asked again next time.
    const rows = await this.#db.runner.query<BlockRow>(
      `SELECT batch_id, tree_size, block_roots FROM ${this.#db.table('batch_blocks')} WHERE batch_id IN {ids:Array(String)}
       LIMIT 1 BY batch_id
       SETTINGS ${pointReadSettings(this.#db.runner.pointReadSettings)}`,
      { ids },
    );
    return new Map(rows.map((r) => [r.batch_id, upperLevelsOf(r)]));
  }
}
