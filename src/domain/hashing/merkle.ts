/**
 * RFC 9162 (RFC 6962) Merkle tree over SHA-256: leaf = H(0x00 || leaf), node = H(0x01 || l || r),
 * split at the largest power of two below n, root of the empty tree = H(""). The odd node of a
 * level is carried up unchanged, never duplicated (no CVE-2012-2459 ambiguity), and the prefixes
 * keep leaves and nodes in separate domains (no second preimage across levels).
 *
 * Bottom-up pairing with the odd node carried up yields exactly the recursive RFC tree, so
 * everything here is iterative over one flat buffer.
 */

export const HASH_LEN = 32;

/** The SHA-256 primitive; implementations reuse their state, so one instance per thread. */
export interface DigestPrimitive {
  /** Writes SHA-256(data) into out[outOffset .. outOffset+32). */
  digestInto(data: Uint8Array, out: Uint8Array, outOffset: number): void;
}

/** RFC 9162 tree hashing on top of a digest primitive, with reused scratch buffers. */
export class MerkleHasher {
  private readonly node = new Uint8Array(1 + 2 * HASH_LEN);
  private leafScratch = new Uint8Array(1 + HASH_LEN);

  constructor(private readonly digest: DigestPrimitive) {
    this.node[0] = 0x01;
  }

  emptyRoot(): Uint8Array {
    const out = new Uint8Array(HASH_LEN);
    this.digest.digestInto(new Uint8Array(0), out, 0);
    return out;
  }

  /** H(0x00 || leaf) into out at offset. */
  leafHashInto(leaf: Uint8Array, out: Uint8Array, offset: number): void {
    if (this.leafScratch.length < leaf.length + 1) this.leafScratch = new Uint8Array(leaf.length + 1);
    const s = this.leafScratch.subarray(0, leaf.length + 1);
    s[0] = 0x00;
    s.set(leaf, 1);
    this.digest.digestInto(s, out, offset);
  }

  leafHash(leaf: Uint8Array): Uint8Array {
    const out = new Uint8Array(HASH_LEN);
    this.leafHashInto(leaf, out, 0);
    return out;
  }

  /** H(0x01 || buf[l..l+32) || buf[r..r+32)) into out at offset (out may alias the inputs). */
  nodeHashInto(src: Uint8Array, l: number, r: number, out: Uint8Array, offset: number): void {
    const s = this.node;
    s.set(src.subarray(l, l + HASH_LEN), 1);
    s.set(src.subarray(r, r + HASH_LEN), 1 + HASH_LEN);
    this.digest.digestInto(s, out, offset);
  }

  nodeHash(left: Uint8Array, right: Uint8Array): Uint8Array {
    const s = this.node;
    s.set(left.subarray(0, HASH_LEN), 1);
    s.set(right.subarray(0, HASH_LEN), 1 + HASH_LEN);
    const out = new Uint8Array(HASH_LEN);
    this.digest.digestInto(s, out, 0);
    return out;
  }

  /** Leaf hashes of all leaves, flat (n * 32 bytes). */
  leafHashes(leaves: readonly Uint8Array[]): Uint8Array {
    const out = new Uint8Array(leaves.length * HASH_LEN);
    for (let i = 0; i < leaves.length; i++) this.leafHashInto(leaves[i]!, out, i * HASH_LEN);
    return out;
  }

  /** Root over flat leaf hashes; `scratch` (n*32 bytes, may be the input itself) is overwritten. */
  rootOfLeafHashes(hashes: Uint8Array, n: number, scratch: Uint8Array = hashes.slice(0, n * HASH_LEN)): Uint8Array {
    if (n === 0) return this.emptyRoot();
    if (scratch !== hashes) scratch.set(hashes.subarray(0, n * HASH_LEN));
    let size = n;
    while (size > 1) {
      const half = size >>> 1;
      for (let i = 0; i < half; i++) this.nodeHashInto(scratch, 2 * i * HASH_LEN, (2 * i + 1) * HASH_LEN, scratch, i * HASH_LEN);
      if (size & 1) scratch.copyWithin(half * HASH_LEN, (size - 1) * HASH_LEN, size * HASH_LEN);
      size = half + (size & 1);
    }
    return scratch.slice(0, HASH_LEN);
  }

  root(leaves: readonly Uint8Array[]): Uint8Array {
    if (leaves.length === 0) return this.emptyRoot();
    const buf = this.leafHashes(leaves);
    return this.rootOfLeafHashes(buf, leaves.length, buf);
  }

  /** Every level of the tree, for proofs. */
  tree(leaves: readonly Uint8Array[]): MerkleTree {
    return this.treeOfLeafHashes(this.leafHashes(leaves), leaves.length);
  }

  treeOfLeafHashes(hashes: Uint8Array, n: number): MerkleTree {
    const offsets: number[] = [];
    const sizes: number[] = [];
    let total = 0;
    for (let size = n; ; size = (size >>> 1) + (size & 1)) {
      offsets.push(total);
      sizes.push(size);
      total += size;
      if (size <= 1) break;
    }
    const nodes = new Uint8Array(total * HASH_LEN);
    nodes.set(hashes.subarray(0, n * HASH_LEN));
    for (let level = 1; level < sizes.length; level++) {
      const prev = offsets[level - 1]! * HASH_LEN;
      const prevSize = sizes[level - 1]!;
      const cur = offsets[level]! * HASH_LEN;
      const half = prevSize >>> 1;
      for (let i = 0; i < half; i++) this.nodeHashInto(nodes, prev + 2 * i * HASH_LEN, prev + (2 * i + 1) * HASH_LEN, nodes, cur + i * HASH_LEN);
      if (prevSize & 1) nodes.copyWithin(cur + half * HASH_LEN, prev + (prevSize - 1) * HASH_LEN, prev + prevSize * HASH_LEN);
    }
    return new MerkleTree(n, nodes, offsets, sizes, n === 0 ? this.emptyRoot() : undefined);
  }

  inclusionProof(leaves: readonly Uint8Array[], index: number): Uint8Array[] {
    return this.tree(leaves).proof(index);
  }

  /** RFC 9162 §2.1.3.2: whether `proof` places `leafHash` at `index` of a tree of `treeSize` with `root`. */
  verifyInclusion(leafHash: Uint8Array, index: number, treeSize: number, proof: readonly Uint8Array[], root: Uint8Array): boolean {
    if (!Number.isSafeInteger(index) || !Number.isSafeInteger(treeSize) || index < 0 || index >= treeSize) return false;
    if (leafHash.length !== HASH_LEN || root.length !== HASH_LEN) return false;
    let fn = index;
    let sn = treeSize - 1;
    let r = leafHash;
    for (const p of proof) {
      if (p.length !== HASH_LEN || sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        r = this.nodeHash(p, r);
        [fn, sn] = shiftUntilOdd(fn, sn);
      } else {
        r = this.nodeHash(r, p);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && equalBytes(r, root);
  }

  /** RFC 9162 §2.1.4.1 consistency proof from the first `m` leaves to all of them. */
  consistencyProof(leaves: readonly Uint8Array[], m: number): Uint8Array[] {
    const n = leaves.length;
    if (!Number.isSafeInteger(m) || m < 0 || m > n) throw new RangeError(`old size ${m} outside 0..${n}`);
    if (m === 0 || m === n) return [];
    const hashes = this.leafHashes(leaves);
    const out: Uint8Array[] = [];
    this.subproof(hashes, m, 0, n, true, out);
    return out;
  }

  private subproof(hashes: Uint8Array, m: number, start: number, n: number, whole: boolean, out: Uint8Array[]): void {
    if (m === n) {
      if (!whole) out.push(this.rangeRoot(hashes, start, n));
      return;
    }
    const k = largestPowerOfTwoBelow(n);
    if (m <= k) {
      this.subproof(hashes, m, start, k, whole, out);
      out.push(this.rangeRoot(hashes, start + k, n - k));
    } else {
      this.subproof(hashes, m - k, start + k, n - k, false, out);
      out.push(this.rangeRoot(hashes, start, k));
    }
  }

  private rangeRoot(hashes: Uint8Array, start: number, n: number): Uint8Array {
    return this.rootOfLeafHashes(hashes.subarray(start * HASH_LEN, (start + n) * HASH_LEN), n, new Uint8Array(n * HASH_LEN));
  }

  /** RFC 9162 §2.1.4.2: whether `proof` shows the tree of size `first` is a prefix of the one of size `second`. */
  verifyConsistency(first: number, second: number, proof: readonly Uint8Array[], firstRoot: Uint8Array, secondRoot: Uint8Array): boolean {
    if (!Number.isSafeInteger(first) || !Number.isSafeInteger(second) || first < 0 || second < first) return false;
    if (first === second) return proof.length === 0 && equalBytes(firstRoot, secondRoot);
    if (first === 0) return proof.length === 0;
    if (proof.length === 0) return false;
    for (const p of proof) if (p.length !== HASH_LEN) return false;
    const path = isPowerOfTwo(first) ? [firstRoot, ...proof] : [...proof];
    let fn = first - 1;
    let sn = second - 1;
    while (fn % 2 === 1) {
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    let fr = path[0]!;
    let sr = path[0]!;
    for (let i = 1; i < path.length; i++) {
      const c = path[i]!;
      if (sn === 0) return false;
      if (fn % 2 === 1 || fn === sn) {
        fr = this.nodeHash(c, fr);
        sr = this.nodeHash(c, sr);
        [fn, sn] = shiftUntilOdd(fn, sn);
      } else {
        sr = this.nodeHash(sr, c);
      }
      fn = Math.floor(fn / 2);
      sn = Math.floor(sn / 2);
    }
    return sn === 0 && equalBytes(fr, firstRoot) && equalBytes(sr, secondRoot);
  }
}

/** All levels of a tree in one buffer: level 0 the leaf hashes, the last level the root. */
export class MerkleTree {
  constructor(
    readonly size: number,
    /** Levels back to back, 32 bytes per node. */
    readonly nodes: Uint8Array,
    readonly levelOffsets: readonly number[],
    readonly levelSizes: readonly number[],
    private readonly empty: Uint8Array | undefined,
  ) {}

  root(): Uint8Array {
    if (this.empty !== undefined) return this.empty.slice();
    const off = this.levelOffsets[this.levelOffsets.length - 1]! * HASH_LEN;
    return this.nodes.slice(off, off + HASH_LEN);
  }

  /** Number of hashes in the audit path of leaf `index`. */
  proofLength(index: number): number {
    let len = 0;
    let i = index;
    for (let level = 0; level < this.levelSizes.length - 1; level++) {
      if ((i ^ 1) < this.levelSizes[level]!) len++;
      i >>>= 1;
    }
    return len;
  }

  /** Writes the audit path of leaf `index` into out at offset; returns the number of hashes. */
  proofInto(index: number, out: Uint8Array, offset: number): number {
    let i = index;
    let k = 0;
    for (let level = 0; level < this.levelSizes.length - 1; level++) {
      const sib = i ^ 1;
      if (sib < this.levelSizes[level]!) {
        const at = (this.levelOffsets[level]! + sib) * HASH_LEN;
        out.set(this.nodes.subarray(at, at + HASH_LEN), offset + k * HASH_LEN);
        k++;
      }
      i >>>= 1;
    }
    return k;
  }

  /** RFC 9162 audit path of leaf `index`, leaf to root. */
  proof(index: number): Uint8Array[] {
    if (!Number.isSafeInteger(index) || index < 0 || index >= this.size) throw new RangeError(`leaf index ${index} outside 0..${this.size - 1}`);
    const len = this.proofLength(index);
    const buf = new Uint8Array(len * HASH_LEN);
    this.proofInto(index, buf, 0);
    const out: Uint8Array[] = [];
    for (let k = 0; k < len; k++) out.push(buf.subarray(k * HASH_LEN, (k + 1) * HASH_LEN));
    return out;
  }

  /** Every audit path, flat: proof i is hashes[offsets[i]*32 .. offsets[i+1]*32). */
  allProofs(): FlatProofs {
    const n = this.size;
    const offsets = new Uint32Array(n + 1);
    let total = 0;
    for (let i = 0; i < n; i++) {
      offsets[i] = total;
      total += this.proofLength(i);
    }
    offsets[n] = total;
    const hashes = new Uint8Array(total * HASH_LEN);
    for (let i = 0; i < n; i++) this.proofInto(i, hashes, offsets[i]! * HASH_LEN);
    return { treeSize: n, root: this.root(), hashes, offsets };
  }
}

/** Every audit path of one tree in two buffers (cheap to transfer between threads). */
export interface FlatProofs {
  readonly treeSize: number;
  readonly root: Uint8Array;
  /** Proof hashes back to back, 32 bytes each. */
  readonly hashes: Uint8Array;
  /** treeSize + 1 entries: proof i spans hashes [offsets[i], offsets[i+1]) in units of 32 bytes. */
  readonly offsets: Uint32Array;
}

export function proofAt(all: FlatProofs, index: number): Uint8Array[] {
  const from = all.offsets[index];
  const to = all.offsets[index + 1];
  if (from === undefined || to === undefined) throw new RangeError(`leaf index ${index} outside 0..${all.treeSize - 1}`);
  const out: Uint8Array[] = [];
  for (let k = from; k < to; k++) out.push(all.hashes.subarray(k * HASH_LEN, (k + 1) * HASH_LEN));
  return out;
}

export function largestPowerOfTwoBelow(n: number): number {
  let k = 1;
  while (k * 2 < n) k *= 2;
  return k;
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/** Views of each 32-byte leaf of leaves packed back to back (no copy); a trailing partial leaf is left out. */
export function splitLeaves(packed: Uint8Array): Uint8Array[] {
  const out = new Array<Uint8Array>(Math.floor(packed.length / HASH_LEN));
  for (let i = 0; i < out.length; i++) out[i] = packed.subarray(i * HASH_LEN, (i + 1) * HASH_LEN);
  return out;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!;
  return d === 0;
}

export function toHex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += HEX[b[i]!];
  return s;
}

const HEX: readonly string[] = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Parses lowercase or uppercase hex; throws RangeError on anything else. */
export function fromHex(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new RangeError('not a hex string');
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

/** Shifts fn and sn right together until fn is odd or 0 (RFC 9162, 2.1.3.2 and 2.1.4.2). */
function shiftUntilOdd(fn: number, sn: number): [number, number] {
  while (fn % 2 === 0 && fn !== 0) {
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return [fn, sn];
}
