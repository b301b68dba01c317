import t from 'tap';
import { blockRowOf, partial, STORED_PROOF_LEVELS, storedProofPart, upperLevelsOf, upperPath } from '../../src/adapters/clickhouse/batch-tops.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';

/**
 * A batched record's path kept in two parts: the lower levels in its row, the rest derived from its
 * batch's block roots. Joined, they must be the RFC 9162 path of every leaf of trees of every shape.
 */

const hashing = new JsHashingBackend();
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const leavesOf = (n: number): string[] => Array.from({ length: n }, (_, i) => hashing.sha256Hex(Buffer.from(`leaf ${n}/${i}`)));

const SIZES = [1, 2, 15, 16, 17, 18, 31, 32, 33, 100, 999, 1000, 1023, 1024, 1025];

void t.test('stored part then upper path: the whole audit path of each leaf, and it verifies against the root', (t) => {
  for (const n of SIZES) {
    const leaves = leavesOf(n);
    const raw = leaves.map((l) => Buffer.from(l, 'hex'));
    const all = hashing.allProofs(raw);
    const row = blockRowOf('b', leaves);
    t.equal(row === null, n <= 1 << STORED_PROOF_LEVELS, `${n} leaves: a block row only past one block`);
    const top = row === null ? null : upperLevelsOf(row);
    let wrong = 0;
    let unverified = 0;
    for (let i = 0; i < n; i++) {
      const whole = Array.from({ length: (all.offsets[i + 1] ?? 0) - (all.offsets[i] ?? 0) }, (_, k) => hex(all.hashes.subarray(((all.offsets[i] ?? 0) + k) * 32, ((all.offsets[i] ?? 0) + k + 1) * 32)));
      const stored = storedProofPart(whole, i, n);
      const joined = top === null ? [...stored] : [...stored, ...upperPath(top, i)];
      if (joined.join() !== whole.join()) wrong++;
      const proof = joined.map((h) => Buffer.from(h, 'hex'));
      if (!hashing.verifyInclusion(hashing.leafHash(raw[i] as Uint8Array), i, n, proof, all.root)) unverified++;
    }
    t.equal(wrong, 0, `${n} leaves: every joined path is the whole one`);
    t.equal(unverified, 0, `${n} leaves: every joined path verifies`);
  }
  t.end();
});

void t.test('what a row keeps: at most the lower levels, all of a small tree', (t) => {
  const n = 1000;
  const all = hashing.allProofs(leavesOf(n).map((l) => Buffer.from(l, 'hex')));
  const pathOf = (i: number): string[] => Array.from({ length: (all.offsets[i + 1] ?? 0) - (all.offsets[i] ?? 0) }, () => 'h');
  t.equal(pathOf(0).length, 10, 'a leaf of a 1000-leaf tree has ten path hashes');
  t.equal(storedProofPart(pathOf(0), 0, n).length, STORED_PROOF_LEVELS, 'of which its row keeps the lowest four');
  // Leaf 999 of 1000: its 8-leaf block (992..999) is the last, with no right neighbour on level 3.
  t.equal(storedProofPart(pathOf(999), 999, n).length, 3);
  const small = ['a', 'b', 'c', 'd'];
  t.same(storedProofPart(small, 0, 16), small, 'a tree of 16 leaves keeps its whole path');
  t.end();
});

void t.test('which rows are completed', (t) => {
  const row = (over: object): Parameters<typeof partial>[0] => ({ snapshot_id: 's', batch_id: 'b', leaf_index: 0, tree_size: 1000, merkle_proof: ['1', '2', '3', '4'], ...over });
  t.equal(partial(row({})), true, 'the lower part of a large tree');
  t.equal(partial(row({ merkle_proof: Array.from({ length: 10 }, () => 'h') })), false, 'a whole path, as earlier versions wrote it');
  t.equal(partial(row({ tree_size: 16 })), false, 'a tree of at most a block keeps its whole path');
  t.equal(partial(row({ batch_id: null, leaf_index: null, tree_size: null, merkle_proof: [] })), false, 'a record in no batch');
  t.equal(partial(row({ merkle_proof: ['1', '2'] })), false, 'a path of neither length: read as it is (and fails its check)');
  t.end();
});

void t.test('a block row: the roots of the 16-leaf blocks, the last one short', (t) => {
  const row = blockRowOf('b_1', leavesOf(1000));
  t.equal(row?.tree_size, 1000);
  t.equal(row?.block_roots.length, 63 * 64, '1000 leaves: 62 full blocks and one of 8');
  t.end();
});
