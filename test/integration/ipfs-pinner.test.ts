import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { NextToLast } from 'blockstore-fs/sharding';
import { create } from 'kubo-rpc-client';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import * as dagPb from '@ipld/dag-pb';
import { CarReader } from '@ipld/car';
import { EmbeddedPinner } from '../../src/adapters/ipfs/embedded-pinner.js';
import { KuboPinner } from '../../src/adapters/ipfs/kubo-pinner.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { freePort } from '../harness/servers.js';
import { startKubo, type KuboTestDaemon } from '../harness/kubo.js';

setLogLevel('silent');

const EMPTY_FILE_CID = 'bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku';

/** Deterministic 64-hex leaves: a hash chain, so every run builds the same manifests. */
function leaves(count: number, seed: string): string[] {
  const out: string[] = [];
  let h = createHash('sha256').update(seed).digest();
  for (let i = 0; i < count; i++) {
    h = createHash('sha256').update(h).digest();
    out.push(h.toString('hex'));
  }
  return out;
}

/** A manifest shaped as DECISIONS describes it. */
function manifest(leafCount: number, seed: string): Uint8Array {
  const l = leaves(leafCount, seed);
  const doc = {
    hashScheme: 'dris-v1',
    merkleAlgorithm: 'rfc9162-sha256',
    batchId: `batch-${seed}`,
    batchSeq: 7,
    createdAt: '2026-01-01T00:00:00.000Z',
    treeSize: leafCount,
    merkleRoot: createHash('sha256').update(l.join('')).digest('hex'),
    previous: null,
    leaves: l,
  };
  return Buffer.from(JSON.stringify(doc));
}

function codeOf(err: unknown): string | undefined {
  return err instanceof DrisError ? err.code : undefined;
}

async function rejectsWithCode(t: Test, p: Promise<unknown>, code: string, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: resolved, expected ${code}`);
  } catch (err) {
    t.equal(codeOf(err), code, what);
  }
}

let kubo: KuboTestDaemon;
let embeddedDir: string;
let embedded: EmbeddedPinner;
let kuboPinner: KuboPinner;

t.before(async () => {
  kubo = await startKubo();
  embeddedDir = await mkdtemp(path.join(tmpdir(), 'dris-ipfs-embedded-'));
  embedded = await EmbeddedPinner.open({ directory: embeddedDir });
  kuboPinner = new KuboPinner({ url: kubo.apiUrl });
});

t.teardown(async () => {
  await kuboPinner.close();
  await embedded.close();
  await rm(embeddedDir, { recursive: true, force: true });
  await kubo.stop();
});

const small = manifest(10, 'small');
const large = manifest(15_700, 'large');

t.test('fixtures have the intended shapes', async (t) => {
  t.ok(small.length < 262_144, 'small manifest fits one chunk');
  t.ok(large.length > 3 * 262_144 && large.length < 5 * 262_144, 'large manifest spans four chunks');
});

t.test('the embedded store and a real Kubo daemon give the same CID for the same bytes', async (t) => {
  await kuboPinner.check();
  const cases: Array<[string, Uint8Array, number]> = [
    ['small JSON manifest (one raw leaf)', small, raw.code],
    ['~1 MiB manifest (dag-pb root over raw leaves)', large, dagPb.code],
    ['empty file', new Uint8Array(0), raw.code],
  ];
  for (const [name, bytes, codec] of cases) {
    const fromEmbedded = await embedded.add(bytes);
    const fromKubo = await kuboPinner.add(bytes);
    t.equal(fromKubo, fromEmbedded, `${name}: same CID`);
    const cid = CID.parse(fromEmbedded);
    t.equal(cid.version, 1, `${name}: CIDv1`);
    t.equal(cid.multihash.code, 0x12, `${name}: sha2-256`);
    t.equal(cid.code, codec, `${name}: root codec`);
    t.ok(fromEmbedded.startsWith('b'), `${name}: base32 text`);
    t.same(Buffer.from(await embedded.cat(fromEmbedded)), Buffer.from(bytes), `${name}: embedded cat returns the bytes`);
    t.same(Buffer.from(await kuboPinner.cat(fromKubo)), Buffer.from(bytes), `${name}: kubo cat returns the bytes`);
  }
  t.equal(await embedded.add(new Uint8Array(0)), EMPTY_FILE_CID, 'the empty file is the well-known empty raw block');
});

t.test("Kubo's own add (no dris code in between) agrees with the embedded CID", async (t) => {
  const client = create({ url: kubo.apiUrl });
  const result = await client.add(large, { cidVersion: 1, rawLeaves: true, chunker: 'size-262144', hashAlg: 'sha2-256', pin: true });
  t.equal(result.cid.toString(), await embedded.add(large));
  const pins: string[] = [];
  for await (const p of client.pin.ls({ paths: [result.cid] })) pins.push(p.cid.toString());
  t.same(pins, [result.cid.toString()], 'pinned on the daemon');
});

t.test('adding the same bytes again is idempotent', async (t) => {
  t.equal(await embedded.add(small), await embedded.add(small));
  t.equal(await kuboPinner.add(small), await kuboPinner.add(small));
});

t.test('a damaged block in the embedded store fails the read instead of returning wrong bytes', async (t) => {
  const bytes = manifest(12_000, 'corrupt-me');
  const cid = await embedded.add(bytes);
  const car = await CarReader.fromBytes(await embedded.car(cid));
  const blockCids: CID[] = [];
  for await (const b of car.blocks()) blockCids.push(b.cid);
  t.ok(blockCids.length >= 3, 'several blocks');
  const leaf = blockCids[1] as CID;
  const { dir, file } = new NextToLast().encode(leaf);
  const blockFile = path.join(embeddedDir, 'blocks', dir, file);
  const original = await readFile(blockFile);
  const damaged = Buffer.from(original);
  damaged[100] = (damaged[100] ?? 0) ^ 0xff;
  await writeFile(blockFile, damaged);

  await rejectsWithCode(t, embedded.cat(cid), 'internal_error', 'cat of the file');
  await rejectsWithCode(t, embedded.getBlock(leaf), 'internal_error', 'the damaged block itself');
  await rejectsWithCode(t, embedded.car(cid), 'internal_error', 'the CAR of the DAG');
  t.ok((await embedded.getBlock(blockCids[0] as CID)).length > 0, 'an intact block still reads');

  // Adding the same bytes rewrites the damaged copy: the pipeline's re-pin heals the store.
  t.equal(await embedded.add(bytes), cid);
  t.same(Buffer.from(await embedded.cat(cid)), Buffer.from(bytes), 'readable again after re-adding');

  // A truncated single-block manifest is caught the same way.
  const single = manifest(3, 'truncate-me');
  const singleCid = CID.parse(await embedded.add(single));
  const s = new NextToLast().encode(singleCid);
  await writeFile(path.join(embeddedDir, 'blocks', s.dir, s.file), single.subarray(0, single.length - 1));
  await rejectsWithCode(t, embedded.cat(singleCid.toString()), 'internal_error', 'truncated single block');
});

t.test('unknown and malformed CIDs', async (t) => {
  const unknownText = CID.createV1(raw.code, await sha256.digest(Buffer.from('never added'))).toString();
  await rejectsWithCode(t, embedded.cat(unknownText), 'not_found', 'embedded cat');
  await rejectsWithCode(t, embedded.getBlock(unknownText), 'not_found', 'embedded block');
  await rejectsWithCode(t, embedded.car(unknownText), 'not_found', 'embedded CAR');
  await rejectsWithCode(t, kuboPinner.cat(unknownText), 'not_found', 'kubo cat');
  await rejectsWithCode(t, embedded.cat('not-a-cid'), 'validation_failed', 'embedded: malformed CID');
  await rejectsWithCode(t, kuboPinner.cat('not-a-cid'), 'validation_failed', 'kubo: malformed CID');
});

t.test('an unreachable Kubo is dependency_unavailable, and a restarted one serves its pins again', async (t) => {
  const nobody = new KuboPinner({ url: `http://127.0.0.1:${await freePort()}` });
  await rejectsWithCode(t, nobody.check(), 'dependency_unavailable', 'check');
  await rejectsWithCode(t, nobody.add(small), 'dependency_unavailable', 'add');
  await rejectsWithCode(t, nobody.cat(EMPTY_FILE_CID), 'dependency_unavailable', 'cat');

  const cid = await kuboPinner.add(small);
  await kubo.kill('SIGTERM');
  await rejectsWithCode(t, kuboPinner.check(), 'dependency_unavailable', 'check while the daemon is down');
  await rejectsWithCode(t, kuboPinner.cat(cid), 'dependency_unavailable', 'cat while the daemon is down');
  await kubo.restart();
  await kuboPinner.check();
  t.same(Buffer.from(await kuboPinner.cat(cid)), Buffer.from(small), 'pinned content survives the restart');
});

t.test('an invalid API URL is a configuration error', async (t) => {
  t.throws(() => new KuboPinner({ url: 'not a url' }), { code: 'config_invalid' });
});
