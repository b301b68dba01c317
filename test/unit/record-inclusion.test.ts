import { randomBytes } from 'node:crypto';
import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { NativeHashingBackend } from '../../src/adapters/hashing/native-backend.js';
import { WasmHashingBackend } from '../../src/adapters/hashing/wasm-backend.js';
import { proofAt } from '../../src/domain/hashing/merkle.js';
import type { HashingBackend } from '../../src/domain/hashing/port.js';

const native = NativeHashingBackend.load();
const backends: readonly [string, HashingBackend][] = [
  ['native', native],
  ['js', new JsHashingBackend()],
  ['wasm', await WasmHashingBackend.create()],
];
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** Record hashes of a tree of `n` leaves, its root, and every leaf's path, as text. */
function tree(n: number): { hashes: string[]; root: string; paths: string[][] } {
  const raw = Array.from({ length: n }, () => randomBytes(32));
  const all = native.allProofs(raw);
  const paths = raw.map((_, i) => proofAt(all, i).map(hex));
  return { hashes: raw.map(hex), root: hex(all.root), paths };
}

t.test('every leaf of trees of 1 to 40 leaves holds at its place, and nowhere else', (t) => {
  for (const [name, b] of backends) {
    let wrong = 0;
    for (let n = 1; n <= 40; n++) {
      const { hashes, root, paths } = tree(n);
      for (let i = 0; i < n; i++) {
        const path = paths[i] as string[];
        if (!b.recordInclusionHolds(hashes[i] as string, i, n, path, root)) wrong++;
        if (n > 1 && b.recordInclusionHolds(hashes[(i + 1) % n] as string, i, n, path, root)) wrong++;
        if (n > 1 && b.recordInclusionHolds(hashes[i] as string, (i + 1) % n, n, path, root)) wrong++;
        if (path.length > 0 && b.recordInclusionHolds(hashes[i] as string, i, n, path.slice(1), root)) wrong++;
        if (b.recordInclusionHolds(hashes[i] as string, i, n, [...path, root], root)) wrong++;
      }
    }
    t.equal(wrong, 0, name);
  }
  t.end();
});

t.test('text that is not whole lowercase hashes, and positions outside the tree, are false on every backend', (t) => {
  const { hashes, root, paths } = tree(13);
  const i = 6;
  const leaf = hashes[i] as string;
  const path = paths[i] as string[];
  const first = path[0] as string;
  const bent = (s: string): string[] => [s, ...path.slice(1)];
  const cases: [string, [string, number, number, string[], string]][] = [
    ['as given', [leaf, i, 13, path, root]],
    ['upper-case record hash', [leaf.toUpperCase(), i, 13, path, root]],
    ['upper-case root', [leaf, i, 13, path, root.toUpperCase()]],
    ['upper-case proof hash', [leaf, i, 13, bent(first.toUpperCase()), root]],
    ['63 + 65 digits', [leaf, i, 13, [first.slice(0, 63), `${first.slice(63)}${path[1] as string}`, ...path.slice(2)], root]],
    ['a non-ASCII digit in a proof hash', [leaf, i, 13, bent(`${first.slice(0, 62)}\u0161${first.slice(63)}`), root]],
    ['a non-hex digit', [leaf, i, 13, bent(`${first.slice(0, 63)}g`), root]],
    ['a short record hash', [leaf.slice(2), i, 13, path, root]],
    ['an empty proof hash', [leaf, i, 13, ['', ...path], root]],
    ['a fractional index', [leaf, i + 0.5, 13, path, root]],
    ['a negative index', [leaf, -1, 13, path, root]],
    ['the index past the tree', [leaf, 13, 13, path, root]],
    ['a NaN size', [leaf, i, Number.NaN, path, root]],
    ['an unsafe size', [leaf, i, 2 ** 60, path, root]],
  ];
  for (const [name, b] of backends) {
    const got = cases.map(([, a]) => b.recordInclusionHolds(...a));
    t.same(got, [true, ...cases.slice(1).map(() => false)], name);
  }
  t.end();
});
