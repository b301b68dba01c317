import t from 'tap';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CID } from 'multiformats/cid';
import { identity } from 'multiformats/hashes/identity';
import { EmbeddedPinner } from '../../src/adapters/ipfs/embedded-pinner.js';
import { fetchVerified } from '../../src/adapters/ipfs/gateway-fetcher.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { ipfsGatewayRoutes } from '../../src/http/routes/ipfs/get-ipfs-content.js';
import { httpStatusOf } from '../../src/http/status.js';
import { Router, type RequestContext } from '../../src/http/router.js';
import { setLogLevel } from '../../src/util/logger.js';

/**
 * The trustless gateway client against dris's own gateway routes (no socket: a fetch that calls
 * the router), and against gateways that lie, lose blocks, fail or never answer.
 */

setLogLevel('silent');

let dir: string;
let pinner: EmbeddedPinner;
let router: Router;

t.before(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'dris-gateway-fetcher-'));
  pinner = await EmbeddedPinner.open({ directory: dir });
  router = new Router(ipfsGatewayRoutes(pinner));
});

t.teardown(async () => {
  await pinner.close();
  await rm(dir, { recursive: true, force: true });
});

const GATEWAY = 'http://gateway.test/';

interface Seen {
  url: string;
  accept: string | null;
}

/** A fetch answered by the router; `rewrite` lets a test change what is asked or answered. */
function routerFetch(seen: Seen[] = [], rewrite: { url?: (u: URL) => void; body?: (b: Buffer) => Buffer } = {}): typeof fetch {
  return async (input, init) => {
    const url = new URL(String(input));
    const accept = new Headers(init?.headers).get('accept');
    seen.push({ url: url.toString(), accept });
    rewrite.url?.(url);
    const match = router.match('GET', url.pathname);
    if (match.kind !== 'found') return new Response('no route', { status: 404 });
    const ctx: RequestContext = {
      method: 'GET',
      path: url.pathname,
      params: match.params,
      query: url.searchParams,
      headers: { apiKey: undefined, contentType: undefined, contentLength: undefined, idempotencyKey: undefined, authorization: undefined, accept: accept ?? undefined },
      body: Buffer.alloc(0),
      correlationId: 'test',
      remoteAddress: '127.0.0.1',
      principal: null,
    };
    try {
      const reply = await match.route.handle(ctx);
      const body = Buffer.isBuffer(reply.body) ? reply.body : Buffer.from(JSON.stringify(reply.body));
      return new Response(rewrite.body === undefined ? body : rewrite.body(body), { status: reply.status });
    } catch (err) {
      return new Response(JSON.stringify({ error: err instanceof DrisError ? err.code : 'internal_error' }), { status: err instanceof DrisError ? httpStatusOf(err) : 500 });
    }
  };
}

/** About 1 MiB of manifest: a dag-pb root over several raw leaves. */
function largeManifest(): Buffer {
  const leaves: string[] = [];
  let h = createHash('sha256').update('fetcher').digest();
  for (let i = 0; i < 15_700; i++) {
    h = createHash('sha256').update(h).digest();
    leaves.push(h.toString('hex'));
  }
  return Buffer.from(JSON.stringify({ merkleAlgorithm: 'rfc9162-sha256', treeSize: leaves.length, leaves }));
}

t.test('a single-block manifest is fetched raw and checked against its CID', async (t) => {
  const bytes = Buffer.from(JSON.stringify({ merkleRoot: 'ab'.repeat(32), leaves: ['cd'.repeat(32)] }));
  const cid = await pinner.add(bytes);
  t.match(cid, /^bafkrei/);
  const seen: Seen[] = [];
  const got = await fetchVerified(GATEWAY, cid, { fetch: routerFetch(seen) });
  t.same(Buffer.from(got.bytes), bytes);
  t.equal(got.format, 'raw');
  t.equal(got.url, `http://gateway.test/ipfs/${cid}?format=raw`);
  t.same(seen, [{ url: got.url, accept: 'application/vnd.ipld.raw' }]);

  await t.rejects(
    fetchVerified(GATEWAY, cid, { fetch: routerFetch([], { body: (b) => Buffer.concat([b, Buffer.from(' ')]) }) }),
    { name: 'DrisError', code: 'dependency_unavailable', extra: { reason: 'cid_mismatch' } },
    'a gateway answering other bytes',
  );
  await t.rejects(fetchVerified(GATEWAY, cid, { fetch: routerFetch(), maxBytes: 10 }), { code: 'dependency_unavailable', extra: { reason: 'too_large' } }, 'bounded');
});

t.test('a manifest of several blocks is fetched as a CAR, every block checked', async (t) => {
  const bytes = largeManifest();
  const cid = await pinner.add(bytes);
  t.match(cid, /^bafybei/);
  const seen: Seen[] = [];
  const got = await fetchVerified(GATEWAY, cid, { fetch: routerFetch(seen) });
  t.ok(Buffer.from(got.bytes).equals(bytes), 'the file, reassembled');
  t.equal(got.format, 'car');
  t.equal(seen[0]?.accept, 'application/vnd.ipld.car');

  await t.rejects(
    fetchVerified(GATEWAY, cid, {
      fetch: routerFetch([], {
        body: (b) => {
          // The last bytes of a depth-first CAR belong to the last leaf: flip one.
          const c = Buffer.from(b);
          c[c.length - 1] = (c[c.length - 1] ?? 0) ^ 1;
          return c;
        },
      }),
    }),
    { code: 'dependency_unavailable', extra: { reason: 'cid_mismatch' } },
    'a block that does not hash to its CID',
  );
  await t.rejects(
    fetchVerified(GATEWAY, cid, { fetch: routerFetch([], { url: (u) => u.searchParams.set('dag-scope', 'block') }) }),
    { code: 'dependency_unavailable', extra: { reason: 'incomplete_car' } },
    'a CAR without the leaves',
  );
  await t.rejects(
    fetchVerified(GATEWAY, cid, { fetch: routerFetch([], { body: (b) => b.subarray(0, 20) }) }),
    { code: 'dependency_unavailable', extra: { reason: 'bad_car' } },
    'a truncated CAR',
  );
});

t.test('absent, failing, unreachable and silent gateways', async (t) => {
  const unknown = 'bafkreigh2akiscaildcqabsyg3dfr6chu3fgpregiymsck7e7aqa4s52zy';
  await t.rejects(fetchVerified(GATEWAY, unknown, { fetch: routerFetch() }), { code: 'not_found' }, 'the gateway does not have it');
  await t.rejects(
    fetchVerified(GATEWAY, unknown, { fetch: () => Promise.resolve(new Response('oops', { status: 502 })) }),
    { code: 'dependency_unavailable', extra: { reason: 'http_error', status: 502 } },
    'an error status',
  );
  await t.rejects(
    fetchVerified(GATEWAY, unknown, { fetch: () => Promise.reject(new TypeError('fetch failed')) }),
    { code: 'dependency_unavailable' },
    'unreachable',
  );
  // A pending socket keeps a real process alive; AbortSignal.timeout's timer does not, so a ref'd
  // timer stands in for the socket.
  const silent: typeof fetch = (_input, init) =>
    new Promise((_resolve, reject) => {
      const keepAlive = setTimeout(() => reject(new Error('the timeout never fired')), 10_000);
      init?.signal?.addEventListener('abort', () => {
        clearTimeout(keepAlive);
        reject(init.signal?.reason as Error);
      });
    });
  await t.rejects(fetchVerified(GATEWAY, unknown, { fetch: silent, timeoutMs: 50 }), { code: 'timeout' }, 'no answer in time');
  await t.rejects(fetchVerified(GATEWAY, 'not-a-cid', { fetch: routerFetch() }), { code: 'validation_failed' }, 'not a CID');

  const inline = CID.createV1(0x55, identity.digest(Buffer.from('{}')));
  const got = await fetchVerified(GATEWAY, inline.toString(), { fetch: () => Promise.reject(new Error('not called')) });
  t.same(Buffer.from(got.bytes), Buffer.from('{}'), 'an identity CID holds its bytes: nothing is fetched');
});
