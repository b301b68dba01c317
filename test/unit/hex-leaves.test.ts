import { randomBytes } from 'node:crypto';
import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { NativeHashingBackend } from '../../src/adapters/hashing/native-backend.js';
import { splitLeaves, toHex } from '../../src/domain/hashing/merkle.js';
import { assess, rootOfLeaves, rootOfPackedLeaves, type Claim, type ManifestObservation } from '../../src/domain/verification/assess.js';
import { HASH_SCHEME, type RecordEnvelope } from '../../src/domain/records/types.js';
import { packHexLeaves } from '../../src/domain/hashing/hex-leaves.js';

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

function nativeBackend(): NativeHashingBackend | undefined {
  try {
    return NativeHashingBackend.load();
  } catch {
    return undefined;
  }
}

t.test('rootOfHexLeaves: the root and bytes of well-formed leaves, null for any other, alike in every backend', async (t) => {
  const native = nativeBackend();
  const backends = native === undefined ? [hashing] : [hashing, native];
  if (native === undefined) t.comment('no native addon here: the JavaScript backend alone');
  else t.ok(native.addon.hexLeavesRootAsync, 'the addon roots them on its thread pool');
  for (const n of [0, 1, 2, 3, 16, 17, 1000, 1001]) {
    const leaves = Array.from({ length: n }, leaf);
    const root = toHex(hashing.merkleRoot(leaves.map((l) => Buffer.from(l, 'hex'))));
    for (const b of backends) {
      const r = await b.rootOfHexLeaves(leaves);
      t.equal(r === null ? null : toHex(r.root), root, `${b.name}, ${n} leaves`);
      t.same(Buffer.from(r?.packed ?? []), Buffer.concat(leaves.map((l) => Buffer.from(l, 'hex'))));
    }
  }
  const good = leaf();
  // Two leaves of 63 and 65 digits join into 128 of them: each is measured, not the whole.
  const bad = [[good, good.toUpperCase()], [good, `${good.slice(0, 63)}g`], [good.slice(0, 63), `${good}0`], [good, ''], [good, `${good.slice(0, 63)}\u0161`]];
  for (const leaves of bad) for (const b of backends) t.equal(await b.rootOfHexLeaves(leaves), null, `${b.name}: ${JSON.stringify(leaves[1])}`);
});

t.test('assess checks a record against packed leaves as against their text', (t) => {
  const leaves = Array.from({ length: 5 }, leaf);
  const root = rootOfLeaves(hashing, leaves);
  const text: ManifestObservation = { merkleRoot: root, treeSize: 5, leaves, computedRoot: root };
  const packed: ManifestObservation = { ...text, leaves: [], packedLeaves: packHexLeaves(leaves) ?? new Uint8Array(0) };
  const envelope: RecordEnvelope = {
    hashScheme: HASH_SCHEME,
    tenantId: 'acme',
    database: 'erp',
    collection: 'invoices',
    recordId: 'r-1',
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: '0'.repeat(64),
    salt: '0'.repeat(32),
  };
  const claim = (recordHash: string, leafIndex: number, treeSize = 5): Claim => ({ envelope, recordHash, leafIndex, treeSize, merkleProof: [], merkleRoot: root, batchSeq: 1 });
  const cases: [string, Claim][] = [
    ['its leaf', claim(leaves[3] ?? '', 3)],
    ['another leaf', claim(leaves[2] ?? '', 3)],
    ['the first', claim(leaves[0] ?? '', 0)],
    ['the last', claim(leaves[4] ?? '', 4)],
    ['past the end', claim(leaves[4] ?? '', 5)],
    ['a negative index', claim(leaves[0] ?? '', -1)],
    ['upper case', claim((leaves[3] ?? '').toUpperCase(), 3)],
    ['not hex', claim('zz', 3)],
    ['another tree size', claim(leaves[3] ?? '', 3, 6)],
  ];
  for (const [name, c] of cases) {
    const a = assess(hashing, c, { chain: null, manifest: text });
    const b = assess(hashing, c, { chain: null, manifest: packed });
    t.equal(b.checks.hashMatchesIpfs, a.checks.hashMatchesIpfs, name);
  }
  t.equal(assess(hashing, cases[0]![1], { chain: null, manifest: packed }).checks.hashMatchesIpfs, true);
  t.equal(assess(hashing, cases[1]![1], { chain: null, manifest: packed }).checks.hashMatchesIpfs, false);
  t.end();
});
