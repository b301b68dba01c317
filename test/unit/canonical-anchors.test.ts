import t, { type Test } from 'tap';
import { CanonicalAnchors, type AnchorOfRoot } from '../../src/app/canonical-anchors.js';
import type { BlockRef } from '../../src/domain/verification/ports.js';
import { componentLogger, setLogLevel } from '../../src/util/logger.js';
import { EventlessChain } from '../harness/eventless-chain.js';

/**
 * Anchors are read in the block of a checkpoint and kept while each later checkpoint finds the
 * previous one still on the chain: a thousand roots cost a thousand reads once, then two block
 * reads per period; a reorg, a chain reset or a shorter chain makes every anchor be read again.
 */

setLogLevel('silent');
const log = componentLogger('test');

const root = (i: number): string => i.toString(16).padStart(64, '0');

/** A chain of hashed blocks; a reorg replaces the top blocks with others (other hashes). */
class Chain extends EventlessChain {
  #hashes: string[] = [];
  #made = 0;
  /** Anchors on the chain, with the block each was made in. */
  anchors = new Map<string, { anchor: AnchorOfRoot; block: number }>();
  reads: { root: string; at: BlockRef | undefined }[] = [];
  heads = 0;
  blockReads = 0;
  fail: Error | null = null;
  /** While set, anchor answers (already decided) wait for it. */
  gate: Promise<void> | null = null;

  constructor() {
    super();
    this.mine(11);
  }
  get height(): number {
    return this.#hashes.length - 1;
  }
  hashOf(n: number): string | undefined {
    return this.#hashes[n];
  }
  mine(blocks: number): void {
    for (let i = 0; i < blocks; i++) this.#hashes.push(`0x${(this.#made++).toString(16).padStart(64, '0')}`);
  }
  anchor(r: string, batchSeq: number): void {
    this.mine(1);
    this.anchors.set(r, { anchor: { batchSeq, anchoredAtSec: 1000 + batchSeq }, block: this.height });
  }
  /** The top `depth` blocks are replaced by as many others; the anchors in them are gone. */
  reorg(depth: number): void {
    const cut = this.height - depth;
    this.truncate(cut);
    this.mine(depth);
  }
  /** The chain is cut after block `last` (a node reset to an older state). */
  truncate(last: number): void {
    this.#hashes.length = last + 1;
    for (const [r, a] of this.anchors) if (a.block > last) this.anchors.delete(r);
  }
  async anchorOf(merkleRoot: string, at?: BlockRef): Promise<AnchorOfRoot | null> {
    this.reads.push({ root: merkleRoot, at });
    if (this.fail !== null) throw this.fail;
    if (at !== undefined && this.hashOf(at.number) !== at.hash) throw Object.assign(new Error('not canonical'), { code: 'dependency_unavailable' });
    const a = this.anchors.get(merkleRoot);
    const answer = a === undefined || (at !== undefined && a.block > at.number) ? null : a.anchor;
    if (this.gate !== null) await this.gate;
    return answer;
  }
  head(): Promise<BlockRef> {
    this.heads += 1;
    if (this.fail !== null) return Promise.reject(this.fail);
    return Promise.resolve({ number: this.height, hash: this.hashOf(this.height) ?? '' });
  }
  blockAt(n: number): Promise<BlockRef | null> {
    this.blockReads += 1;
    const hash = this.hashOf(n);
    return Promise.resolve(hash === undefined ? null : { number: n, hash });
  }
  headBlock(): Promise<number> {
    return Promise.resolve(this.height);
  }
}

function clock(): { now: () => number; advance: (ms: number) => void } {
  let ms = 1_000_000;
  return { now: () => ms, advance: (d) => (ms += d) };
}

/** A chain with root(1) anchored, its anchor read once through a checkpoint of a 1 s period. */
async function anchorReadOnce(t: Test): Promise<{ chain: Chain; c: ReturnType<typeof clock>; anchors: CanonicalAnchors }> {
  const chain = new Chain();
  chain.anchor(root(1), 1);
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 1_000, log, c.now);
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1);
  return { chain, c, anchors };
}

t.test('a thousand roots are read once, then each period costs two block reads', async (t) => {
  const chain = new Chain();
  for (let i = 0; i < 1000; i++) chain.anchor(root(i), i + 1);
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 5_000, log, c.now);
  const wrong = async (): Promise<number[]> => {
    const bad: number[] = [];
    for (let i = 0; i < 1000; i++) {
      const a = await anchors.anchorOf(root(i));
      if (a?.batchSeq !== i + 1 || a.anchoredAtSec !== 1001 + i) bad.push(i);
    }
    return bad;
  };
  t.same(await wrong(), [], 'every anchor as the contract holds it');
  t.equal(chain.reads.length, 1000);
  t.ok(chain.reads.every((r) => r.at?.number === 1010 && r.at.hash === chain.hashOf(1010)), 'each read in the checkpoint block');
  t.equal(chain.heads, 1);

  for (let period = 0; period < 10; period++) {
    chain.mine(3);
    c.advance(5_001);
    t.same(await wrong(), [], `period ${period + 1}`);
  }
  t.equal(chain.reads.length, 1000, 'no anchor read again');
  t.equal(chain.heads, 11, 'one head per period');
  t.equal(chain.blockReads, 10, 'and the previous checkpoint, once per period');
});

t.test('a root not anchored yet is read again at each checkpoint, once per checkpoint', async (t) => {
  const chain = new Chain();
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 1_000, log, c.now);
  const answers = await Promise.all([1, 2, 3].map(() => anchors.anchorOf(root(7))));
  t.same(answers, [null, null, null]);
  t.equal(chain.reads.length, 1, 'concurrent verifications share one read');
  t.equal(await anchors.anchorOf(root(7)), null);
  t.equal(chain.reads.length, 1, 'kept until the next checkpoint');
  chain.anchor(root(7), 1);
  c.advance(1_001);
  t.same(await anchors.anchorOf(root(7)), { batchSeq: 1, anchoredAtSec: 1001 });
  t.equal(chain.reads.length, 2);
});

t.test('a reorg below the last checkpoint forgets every anchor', async (t) => {
  const chain = new Chain();
  chain.anchor(root(1), 1);
  chain.anchor(root(2), 2);
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 1_000, log, c.now);
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1);
  t.equal((await anchors.anchorOf(root(2)))?.batchSeq, 2);
  chain.reorg(1);
  c.advance(1_001);
  t.equal(await anchors.anchorOf(root(2)), null, 'the anchor its block took with it');
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1, 'read again, still there');
  t.equal(chain.reads.length, 4);
});

t.test('a reorg above the last checkpoint keeps the anchors read before it', async (t) => {
  const { chain, c, anchors } = await anchorReadOnce(t);
  chain.mine(5);
  chain.reorg(2);
  c.advance(1_001);
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1);
  t.equal(chain.reads.length, 1, 'the checkpoint block is still on the chain');
});

t.test('a chain shorter than the last checkpoint (a reset node) forgets every anchor', async (t) => {
  const { chain, c, anchors } = await anchorReadOnce(t);
  chain.truncate(3);
  c.advance(1_001);
  t.equal(await anchors.anchorOf(root(1)), null);
});

t.test('a read in flight across a reorg is answered but not kept', async (t) => {
  const chain = new Chain();
  chain.anchor(root(1), 1);
  chain.mine(1);
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 1_000, log, c.now);
  t.equal(await anchors.anchorOf(root(9)), null, 'a first checkpoint');
  let open: () => void = () => undefined;
  chain.gate = new Promise((resolve) => (open = resolve));
  // The node answers this read at once; the answer reaches the service after the reorg is seen.
  const slow = anchors.anchorOf(root(1));
  await new Promise((r) => setImmediate(r));
  chain.reorg(1);
  c.advance(1_001);
  const other = anchors.anchorOf(root(2));
  await new Promise((r) => setImmediate(r));
  open();
  chain.gate = null;
  t.equal((await slow)?.batchSeq, 1);
  t.equal(await other, null);
  const before = chain.reads.length;
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1);
  t.equal(chain.reads.length, before + 1, 'read again at the new checkpoint');
});

t.test('a failed read is not kept; a chain that cannot be read fails the call', async (t) => {
  const chain = new Chain();
  chain.anchor(root(1), 1);
  const c = clock();
  const anchors = new CanonicalAnchors(chain, 1_000, log, c.now);
  t.equal(await anchors.anchorOf(root(5)), null);
  chain.fail = Object.assign(new Error('down'), { code: 'dependency_unavailable' });
  await t.rejects(anchors.anchorOf(root(1)), { code: 'dependency_unavailable' });
  chain.fail = null;
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1, 'asked again');
  chain.fail = Object.assign(new Error('down'), { code: 'dependency_unavailable' });
  t.equal((await anchors.anchorOf(root(1)))?.batchSeq, 1, 'a kept anchor within the period needs no read');
  c.advance(1_001);
  await t.rejects(anchors.anchorOf(root(1)), { code: 'dependency_unavailable' }, 'past the period the checkpoint must be read');
});

t.test('the time to live must be positive', (t) => {
  t.throws(() => new CanonicalAnchors(new Chain(), 0, log), RangeError);
  t.end();
});
