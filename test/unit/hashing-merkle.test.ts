import t from 'tap';
import { createHash } from 'node:crypto';
import { HASH_LEN, MerkleHasher, equalBytes, fromHex, proofAt, toHex, type DigestPrimitive } from '../../src/domain/hashing/merkle.js';

const digest: DigestPrimitive = {
  digestInto(data, out, offset) {
    out.set(createHash('sha256').update(data).digest(), offset);
  },
};
const m = new MerkleHasher(digest);
const sha = (...parts: Uint8Array[]): Uint8Array => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};
const leaf = (s: string): Uint8Array => sha(Buffer.from(s));

t.test('CVE-2012-2459: an odd leaf is not duplicated', async (t) => {
  const [a, b, c] = [leaf('a'), leaf('b'), leaf('c')];
  t.notOk(equalBytes(m.root([a, b, c]), m.root([a, b, c, c])), '[a,b,c] differs from [a,b,c,c]');
  t.notOk(equalBytes(m.root([a, b, c, c, c]), m.root([a, b, c, c, c, c])));
  // The RFC shape: root(a,b,c) = node(node(a,b), leaf(c)).
  const want = m.nodeHash(m.nodeHash(m.leafHash(a), m.leafHash(b)), m.leafHash(c));
  t.ok(equalBytes(m.root([a, b, c]), want));
});

t.test('leaf/node second preimage: prefixes separate the domains', async (t) => {
  const [a, b] = [leaf('a'), leaf('b')];
  const la = m.leafHash(a);
  const lb = m.leafHash(b);
  const root2 = m.root([a, b]);
  // A one-leaf tree whose leaf is the concatenation of the two children does not collide.
  const forged = new Uint8Array(2 * HASH_LEN);
  forged.set(la, 0);
  forged.set(lb, HASH_LEN);
  t.notOk(equalBytes(m.root([forged]), root2));
  // Nor does a leaf holding 0x01 || l || r (the node's own preimage).
  const nodePreimage = new Uint8Array(1 + 2 * HASH_LEN);
  nodePreimage[0] = 1;
  nodePreimage.set(la, 1);
  nodePreimage.set(lb, 1 + HASH_LEN);
  t.notOk(equalBytes(m.root([nodePreimage]), root2));
  t.ok(equalBytes(sha(nodePreimage), root2), 'the root is H(0x01||l||r)');
  // An interior node presented as a leaf of a smaller tree does not verify.
  t.notOk(m.verifyInclusion(m.nodeHash(la, lb), 0, 2, [], root2));
  t.notOk(m.verifyInclusion(m.leafHash(m.nodeHash(la, lb)), 0, 1, [], root2));
});

t.test('proofs of every leaf of trees up to 70 leaves verify; neighbours do not', async (t) => {
  for (let n = 1; n <= 70; n++) {
    const leaves = Array.from({ length: n }, (_, i) => leaf(`x${i}`));
    const tree = m.tree(leaves);
    const root = m.root(leaves);
    t.ok(equalBytes(tree.root(), root), `root ${n}`);
    const all = tree.allProofs();
    for (let i = 0; i < n; i++) {
      const p = proofAt(all, i);
      t.same(p.map(toHex), tree.proof(i).map(toHex));
      if (!m.verifyInclusion(m.leafHash(leaves[i]!), i, n, p, root)) t.fail(`proof ${i}/${n}`);
      if (n > 1 && m.verifyInclusion(m.leafHash(leaves[(i + 1) % n]!), i, n, p, root)) t.fail(`wrong leaf ${i}/${n}`);
    }
    for (let k = 1; k <= n; k++) {
      const proof = m.consistencyProof(leaves, k);
      if (!m.verifyConsistency(k, n, proof, m.root(leaves.slice(0, k)), root)) t.fail(`consistency ${k}/${n}`);
    }
  }
  t.pass('done');
});

t.test('empty tree and bounds', async (t) => {
  t.equal(toHex(m.root([])), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  t.throws(() => m.tree([leaf('a')]).proof(1), RangeError);
  t.throws(() => m.consistencyProof([leaf('a')], 2), RangeError);
  t.same(m.consistencyProof([leaf('a')], 0), []);
  t.ok(m.verifyConsistency(0, 1, [], m.emptyRoot(), m.root([leaf('a')])));
  t.same(Array.from(fromHex('00ff')), [0, 255]);
  t.throws(() => fromHex('0g'), RangeError);
});
