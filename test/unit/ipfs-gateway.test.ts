import t, { type Test } from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CarReader } from '@ipld/car';
import { NextToLast } from 'blockstore-fs/sharding';
import { exporter } from 'ipfs-unixfs-exporter';
import { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { sha256 } from 'multiformats/hashes/sha2';
import { EmbeddedPinner } from '../../src/adapters/ipfs/embedded-pinner.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { ipfsGatewayRoutes } from '../../src/http/routes/ipfs/get-ipfs-content.js';
import { httpStatusOf } from '../../src/http/status.js';
import { Router, type Reply, type RequestContext } from '../../src/http/router.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

let dir: string;
let pinner: EmbeddedPinner;
let router: Router;

t.before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'dris-ipfs-gateway-'));
  pinner = await EmbeddedPinner.open({ directory: dir });
  router = new Router(ipfsGatewayRoutes(pinner));
});

t.teardown(async () => {
  await pinner.close();
  await rm(dir, { recursive: true, force: true });
});

/** A JSON manifest of about 1 MiB, so its DAG has a dag-pb root over several raw leaves. */
function largeManifest(): Buffer {
  const leaves: string[] = [];
  let h = createHash('sha256').update('gateway').digest();
  for (let i = 0; i < 15_700; i++) {
    h = createHash('sha256').update(h).digest();
    leaves.push(h.toString('hex'));
  }
  return Buffer.from(JSON.stringify({ merkleAlgorithm: 'rfc9162-sha256', treeSize: leaves.length, leaves }));
}

async function get(pathAndQuery: string, accept?: string): Promise<Reply> {
  const url = new URL(pathAndQuery, 'http://gateway.test');
  const match = router.match('GET', url.pathname);
  if (match.kind !== 'found') throw new Error(`no route for ${url.pathname}`);
  const ctx: RequestContext = {
    method: 'GET',
    path: url.pathname,
    params: match.params,
    query: url.searchParams,
    headers: { apiKey: undefined, contentType: undefined, contentLength: undefined, idempotencyKey: undefined, authorization: undefined, accept },
    body: Buffer.alloc(0),
    correlationId: 'test',
    remoteAddress: '127.0.0.1',
    principal: null,
  };
  return match.route.handle(ctx);
}

function bodyOf(reply: Reply): Buffer {
  if (!Buffer.isBuffer(reply.body)) throw new Error('expected a Buffer body');
  return reply.body;
}

async function failsWith(t: Test, p: Promise<unknown>, code: string, status: number, what: string): Promise<void> {
  try {
    await p;
    t.fail(`${what}: answered, expected ${status}`);
  } catch (err) {
    t.equal(err instanceof DrisError ? err.code : undefined, code, `${what}: code`);
    t.equal(err instanceof DrisError ? httpStatusOf(err) : undefined, status, `${what}: status`);
  }
}

/** Every block re-hashes to its CID; returns them keyed by CID for re-assembly. */
async function verifiedBlocks(t: Test, car: CarReader): Promise<Map<string, Uint8Array>> {
  const blocks = new Map<string, Uint8Array>();
  for await (const { cid, bytes } of car.blocks()) {
    const digest = await sha256.digest(bytes);
    t.same(Buffer.from(digest.digest), Buffer.from(cid.multihash.digest), `block ${cid.toString()} re-hashes to its CID`);
    blocks.set(cid.toString(), bytes);
  }
  return blocks;
}

async function reassemble(root: CID, blocks: Map<string, Uint8Array>): Promise<Buffer> {
  const entry = await exporter(root, {
    get: async function* (cid: CID) {
      const bytes = blocks.get(cid.toString());
      if (bytes === undefined) throw new Error(`CAR lacks ${cid.toString()}`);
      yield bytes;
    },
  });
  const parts: Uint8Array[] = [];
  if (entry.type !== 'file' && entry.type !== 'raw') throw new Error(`unexpected ${entry.type}`);
  for await (const part of entry.content()) parts.push(part);
  return Buffer.concat(parts);
}

t.test('raw block: bytes re-hash to the CID, with the trustless gateway headers', async (t) => {
  const small = Buffer.from(JSON.stringify({ merkleRoot: 'ab'.repeat(32), leaves: ['cd'.repeat(32)] }));
  const cid = await pinner.add(small);
  for (const [how, reply] of [
    ['Accept header', await get(`/ipfs/${cid}`, 'application/vnd.ipld.raw')],
    ['format=raw', await get(`/ipfs/${cid}?format=raw`)],
    ['format wins over Accept', await get(`/ipfs/${cid}?format=raw`, 'application/vnd.ipld.car')],
  ] as const) {
    t.equal(reply.status, 200, `${how}: 200`);
    t.equal(reply.contentType, 'application/vnd.ipld.raw', `${how}: content type`);
    const body = bodyOf(reply);
    const digest = await sha256.digest(body);
    t.same(Buffer.from(digest.digest), Buffer.from(CID.parse(cid).multihash.digest), `${how}: body hashes to the CID`);
    t.same(body, small, `${how}: a single-leaf manifest's block is the manifest`);
    t.equal(reply.headers?.['Cache-Control'], 'public, max-age=29030400, immutable');
    t.equal(reply.headers?.['X-Ipfs-Path'], `/ipfs/${cid}`);
    t.equal(reply.headers?.['Etag'], `"${cid}.raw"`);
    t.equal(reply.headers?.['Content-Disposition'], `attachment; filename="${cid}.bin"`);
  }
  t.equal((await get(`/ipfs/${cid}`, 'application/vnd.ipld.raw')).headers?.['Content-Location'], `/ipfs/${cid}?format=raw`);
});

t.test('CAR: parses, its root is the CID, every block verifies and the file re-assembles', async (t) => {
  const bytes = largeManifest();
  const cid = await pinner.add(bytes);
  const root = CID.parse(cid);
  for (const [how, reply] of [
    ['Accept header', await get(`/ipfs/${cid}`, 'application/vnd.ipld.car')],
    ['format=car', await get(`/ipfs/${cid}?format=car`)],
    ['Accept with parameters', await get(`/ipfs/${cid}`, 'application/vnd.ipld.car; version=1; order=dfs; dups=n')],
  ] as const) {
    t.equal(reply.status, 200, `${how}: 200`);
    t.equal(reply.contentType, 'application/vnd.ipld.car; version=1; order=dfs; dups=n', `${how}: content type`);
    t.equal(reply.headers?.['X-Ipfs-Path'], `/ipfs/${cid}`);
    t.equal(reply.headers?.['Cache-Control'], 'public, max-age=29030400, immutable');
    t.ok(reply.headers?.['Etag']?.includes(cid), `${how}: Etag names the CID`);
    const car = await CarReader.fromBytes(bodyOf(reply));
    t.equal(car.version, 1, `${how}: CARv1`);
    const roots = await car.getRoots();
    t.same(roots.map(String), [cid], `${how}: root is the CID`);
    const blocks = await verifiedBlocks(t, car);
    t.equal(blocks.size, Math.ceil(bytes.length / 262_144) + 1, `${how}: the root and one block per 256 KiB chunk`);
    t.same(await reassemble(root, blocks), bytes, `${how}: the blocks re-assemble to the manifest`);
  }
});

t.test('CAR parameters: dag-scope=block, dups=y, unsupported variants', async (t) => {
  // Four identical chunks: one leaf block linked four times.
  const repetitive = Buffer.alloc(4 * 262_144, 0x41);
  const cid = await pinner.add(repetitive);
  const count = async (reply: Reply): Promise<number> => {
    let n = 0;
    for await (const _ of (await CarReader.fromBytes(bodyOf(reply))).blocks()) n++;
    return n;
  };
  t.equal(await count(await get(`/ipfs/${cid}?format=car`)), 2, 'dups=n: root and the one leaf');
  const withDups = await get(`/ipfs/${cid}?format=car&car-dups=y`);
  t.equal(withDups.contentType, 'application/vnd.ipld.car; version=1; order=dfs; dups=y');
  t.equal(await count(withDups), 5, 'dups=y: the leaf every time it is linked');
  t.equal(await count(await get(`/ipfs/${cid}?format=car&dag-scope=block`)), 1, 'dag-scope=block: the root only');
  await failsWith(t, get(`/ipfs/${cid}?format=car&car-version=2`), 'validation_failed', 400, 'CARv2');
  await failsWith(t, get(`/ipfs/${cid}`, 'application/vnd.ipld.car; version=2'), 'validation_failed', 400, 'CARv2 by Accept');
  await failsWith(t, get(`/ipfs/${cid}?format=car&dag-scope=everything`), 'validation_failed', 400, 'unknown dag-scope');
  await failsWith(t, get(`/ipfs/${cid}?format=tar`), 'validation_failed', 400, 'unsupported format');
});

t.test('without a verifiable format the file itself is served', async (t) => {
  const json = Buffer.from('{"treeSize":1,"leaves":["00"]}');
  const jsonCid = await pinner.add(json);
  const reply = await get(`/ipfs/${jsonCid}`);
  t.equal(reply.status, 200);
  t.equal(reply.contentType, 'application/json');
  t.same(bodyOf(reply), json);
  t.equal(reply.headers?.['Etag'], `"${jsonCid}"`);
  t.equal((await get(`/ipfs/${jsonCid}`, 'text/html, */*;q=0.8')).contentType, 'application/json', 'browser Accept');
  t.equal((await get(`/ipfs/${jsonCid}`, 'text/html, application/vnd.ipld.raw;q=0.5')).contentType, 'application/json', 'raw preferred less');
  t.equal((await get(`/ipfs/${jsonCid}`, 'text/html;q=0.1, application/vnd.ipld.raw')).contentType, 'application/vnd.ipld.raw', 'raw preferred more');

  const large = largeManifest();
  const largeCid = await pinner.add(large);
  t.same(bodyOf(await get(`/ipfs/${largeCid}`)), large, 'a multi-block file is re-assembled');

  const binary = Buffer.from([0x00, 0xff, 0x10]);
  t.equal((await get(`/ipfs/${await pinner.add(binary)}`)).contentType, 'application/octet-stream');
});

t.test('the identity probe CID answers without storage', async (t) => {
  const rawReply = await get('/ipfs/bafkqaaa?format=raw');
  t.equal(rawReply.status, 200);
  t.equal(bodyOf(rawReply).length, 0);
  const car = await CarReader.fromBytes(bodyOf(await get('/ipfs/bafkqaaa?format=car')));
  t.same((await car.getRoots()).map(String), ['bafkqaaa']);
  t.equal((await verifiedBlocks(t, car)).size, 0, 'identity blocks are not written into a CAR');
});

t.test('400 for a malformed CID, 404 for one not held', async (t) => {
  for (const bad of ['not-a-cid', 'bafy', 'Qm123']) {
    await failsWith(t, get(`/ipfs/${bad}`), 'validation_failed', 400, `${bad} (file)`);
    await failsWith(t, get(`/ipfs/${bad}?format=raw`), 'validation_failed', 400, `${bad} (raw)`);
  }
  const unknown = CID.createV1(raw.code, await sha256.digest(Buffer.from('never stored'))).toString();
  await failsWith(t, get(`/ipfs/${unknown}`), 'not_found', 404, 'file');
  await failsWith(t, get(`/ipfs/${unknown}?format=raw`), 'not_found', 404, 'raw');
  await failsWith(t, get(`/ipfs/${unknown}?format=car`), 'not_found', 404, 'car');
});

t.test('a damaged block is a server error, never wrong bytes', async (t) => {
  const bytes = Buffer.from('{"leaves":["damaged"]}');
  const cid = CID.parse(await pinner.add(bytes));
  const { dir: shard, file } = new NextToLast().encode(cid);
  await writeFile(path.join(dir, 'blocks', shard, file), Buffer.from('{"leaves":["DAMAGED"]}'));
  await failsWith(t, get(`/ipfs/${cid.toString()}?format=raw`), 'internal_error', 500, 'raw');
  await failsWith(t, get(`/ipfs/${cid.toString()}?format=car`), 'internal_error', 500, 'car');
  await failsWith(t, get(`/ipfs/${cid.toString()}`), 'internal_error', 500, 'file');
});
