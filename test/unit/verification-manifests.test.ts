import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { VerificationReads } from '../../src/app/verification-reads.js';
import type { Pinner } from '../../src/domain/pipeline/ports.js';
import type { BatchAnchor, EvidenceIndex } from '../../src/domain/verification/ports.js';
import { rootOfLeaves } from '../../src/domain/verification/assess.js';
import { componentLogger } from '../../src/util/logger.js';

/**
 * Manifests past those kept in full are kept packed: read again, they come back as they were
 * fetched, without a second fetch. A manifest whose leaves are not all hex is never packed.
 */

const hashing = new JsHashingBackend();
/** More manifests than the full cache keeps (2048). */
const MANIFESTS = 2100;

function manifestOf(i: number, leaves: readonly string[]): Uint8Array {
  return Buffer.from(JSON.stringify({ batchId: `b${i}`, batchSeq: i, merkleRoot: rootOfLeaves(hashing, leaves), treeSize: leaves.length, leaves }));
}

function leavesOf(i: number): string[] {
  return [0, 1, 2].map((k) => hashing.sha256Hex(Buffer.from(`${i}/${k}`)));
}

function reads(pinner: Pinner): VerificationReads {
  return new VerificationReads({ hashing, evidence: {} as EvidenceIndex, chain: null, pinner, chainCacheMs: 0, ipfsTimeoutMs: 1000, log: componentLogger('test') });
}

function countingPinner(bytes: (cid: string) => Uint8Array): { pinner: Pinner; cats: Map<string, number> } {
  const cats = new Map<string, number>();
  const pinner: Pinner = {
    add: () => Promise.reject(new Error('not used')),
    cidOf: () => Promise.reject(new Error('not used')),
    cat: (cid) => {
      cats.set(cid, (cats.get(cid) ?? 0) + 1);
      return Promise.resolve(bytes(cid));
    },
    check: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return { pinner, cats };
}

void t.test('a manifest no longer kept in full is rebuilt from its packed leaves, not fetched again', async (t) => {
  const { pinner, cats } = countingPinner((cid) => manifestOf(Number(cid.slice(1)), leavesOf(Number(cid.slice(1)))));
  const r = reads(pinner);
  const first = await r.manifest('m0');
  for (let i = 1; i < MANIFESTS; i++) await r.manifest(`m${i}`);
  const again = await r.manifest('m0');
  t.equal(cats.get('m0'), 1, 'fetched once');
  t.not(again, first, 'no longer the object kept in full');
  const packedLeaves = Buffer.concat(leavesOf(0).map((l) => Buffer.from(l, 'hex')));
  t.same(again, { merkleRoot: rootOfLeaves(hashing, leavesOf(0)), treeSize: 3, leaves: leavesOf(0), computedRoot: rootOfLeaves(hashing, leavesOf(0)), packedLeaves });
  t.same(again, first, 'the same content as fetched');
});

void t.test('a manifest with leaves that are not lowercase hex is kept in full only, and fetched again', async (t) => {
  const odd = (i: number): string[] => [...leavesOf(i).slice(0, 2), leavesOf(i)[2]!.toUpperCase()];
  const { pinner, cats } = countingPinner((cid) => manifestOf(Number(cid.slice(1)), odd(Number(cid.slice(1)))));
  const r = reads(pinner);
  for (let i = 0; i < MANIFESTS; i++) await r.manifest(`m${i}`);
  const again = await r.manifest('m0');
  t.equal(cats.get('m0'), 2, 'fetched again');
  t.same(again !== null && again !== 'invalid' ? again.leaves : null, odd(0), 'its leaves as they were written');
});

void t.test('warming reads manifests a few at a time and starts no other once one cannot be fetched', async (t) => {
  const cats: string[] = [];
  const down: Pinner = {
    add: () => Promise.reject(new Error('not used')),
    cidOf: () => Promise.reject(new Error('not used')),
    cat: (cid) => {
      cats.push(cid);
      // The others answered a turn later, as a read of the block store is: the failure is known first.
      if (cid === 'm1') return Promise.reject(new Error('ipfs down'));
      return new Promise((resolve) => setImmediate(() => resolve(manifestOf(0, leavesOf(0)))));
    },
    check: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const batch = (i: number): BatchAnchor => ({ batchId: `b${i}`, status: 'Anchored', batchSeq: i + 1, manifestCid: `m${i}`, merkleRoot: rootOfLeaves(hashing, leavesOf(i)) }) as BatchAnchor;
  await reads(down).warmManifests(Array.from({ length: 12 }, (_, i) => batch(i)));
  t.same(cats, ['m0', 'm1', 'm2', 'm3'], 'four at once; none started once the failure was known');
  const up = countingPinner((cid) => manifestOf(Number(cid.slice(1)), leavesOf(Number(cid.slice(1)))));
  await reads(up.pinner).warmManifests(Array.from({ length: 12 }, (_, i) => batch(i)));
  t.same([...up.cats.keys()].sort(), Array.from({ length: 12 }, (_, i) => `m${i}`).sort(), 'each read once');
  t.ok([...up.cats.values()].every((n) => n === 1));
  const stop = new AbortController();
  stop.abort();
  cats.length = 0;
  await reads(down).warmManifests([0, 1].map(batch), stop.signal);
  t.same(cats, [], 'nothing once stopped');
});
