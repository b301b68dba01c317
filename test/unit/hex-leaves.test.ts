import { randomBytes } from 'node:crypto';
import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { toHex } from '../../src/domain/hashing/merkle.js';
import { rootOfLeaves, rootOfPackedLeaves } from '../../src/domain/verification/assess.js';
import { packHexLeaves, splitLeaves } from '../../src/domain/verification/hex-leaves.js';

const hashing = new JsHashingBackend();
const leaf = (): string => randomBytes(32).toString('hex');

t.test('well-formed leaves decode as Buffer decodes them, back to back', (t) => {
  const leaves = Array.from({ length: 257 }, leaf);
  leaves.push('0'.repeat(64), 'f'.repeat(64), '0123456789abcdef'.repeat(4));
  const packed = packHexLeaves(leaves);
  t.ok(packed);
  t.equal(packed?.length, leaves.length * 32);
  t.same(Buffer.from(packed ?? []), Buffer.concat(leaves.map((l) => Buffer.from(l, 'hex'))));
  t.same(splitLeaves(packed ?? new Uint8Array(0)).map((b) => Buffer.from(b).toString('hex')), leaves);
  t.same(packHexLeaves([]), Buffer.alloc(0));
  t.end();
});

t.test('any leaf that is not 64 lowercase hex digits refuses the whole list', (t) => {
  const good = leaf();
  const bad = [
    good.toUpperCase(),
    `${good.slice(0, 63)}G`,
    `${good.slice(0, 63)}:`,
    `${good.slice(0, 63)}/`,
    `${good.slice(0, 63)}\u0130`,
    `${good.slice(0, 62)}\u0161\u0030`,
    good.slice(0, 62),
    `${good}00`,
    '',
    ` ${good.slice(1)}`,
  ];
  for (const b of bad) t.equal(packHexLeaves([good, b, good]), null, JSON.stringify(b));
  t.end();
});

t.test('the root is the same through the packed path and the per-leaf path', (t) => {
  const leaves = Array.from({ length: 1000 }, leaf);
  const perLeaf = toHex(hashing.merkleRoot(leaves.map((l) => Buffer.from(l, 'hex'))));
  t.equal(rootOfLeaves(hashing, leaves), perLeaf);
  t.equal(rootOfPackedLeaves(hashing, packHexLeaves(leaves) ?? new Uint8Array(0)), perLeaf);
  // A malformed leaf hashes as empty input, so the root is one no chain holds.
  const tampered = [...leaves.slice(0, 999), 'not hex'];
  t.equal(rootOfLeaves(hashing, tampered), toHex(hashing.merkleRoot([...leaves.slice(0, 999).map((l) => Buffer.from(l, 'hex')), new Uint8Array(0)])));
  t.end();
});
