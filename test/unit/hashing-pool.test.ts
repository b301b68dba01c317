import { createRequire } from 'node:module';
import t from 'tap';
import { HashPool } from '../../src/adapters/hashing/hash-pool.js';
import { HashingService } from '../../src/adapters/hashing/hashing-service.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { NativeHashingBackend } from '../../src/adapters/hashing/native-backend.js';
import { loadHashingBackend, parseBackendChoice } from '../../src/adapters/hashing/select-backend.js';
import { isDrisError } from '../../src/errors/dris-error.js';

const body = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'));

t.test('pooled and inline preparation agree; bodies are transferred', async (t) => {
  const service = await HashingService.create({ backend: 'auto', threads: 1, inlineThresholdBytes: 0 });
  t.teardown(() => service.close());
  const inline = new JsHashingBackend();
  const text = '{"records":[{"recordPayload":{"b":1,"a":[1e21,"é"]}},{"recordPayload":{"x":1,"x":2}}]}';
  const input = body(text);
  const pooled = await service.prepareBody(input, 'bulk');
  t.equal(input.byteLength, 0, 'the body was transferred, not copied');
  const local = inline.prepareBody(body(text), 'bulk');
  t.same(pooled.errors, local.errors);
  t.same(pooled.payloads, local.payloads);
  t.same(pooled.value, JSON.parse(text));
  // A slice of a larger buffer is copied, leaving the rest intact.
  const big = Buffer.from(`xx${text}yy`);
  const slice = big.subarray(2, 2 + Buffer.byteLength(text));
  const again = await service.prepareBody(slice, 'bulk');
  t.same(again.payloads, local.payloads);
  t.equal(big.toString('utf8', 0, 2), 'xx');
  const hashes = await service.recordHashes([]);
  t.same(hashes, []);
});

t.test('piscina requires the worker module as its own namespace, with no default-export facade', (t) => {
  // Node 20 wraps a required ES module with a default export in a facade; instantiating it has
  // aborted the process under a require hook, so the worker exports its handler by name only.
  const ns = createRequire(import.meta.url)('../../src/adapters/hashing/hash-worker.js') as Record<string, unknown>;
  t.equal(typeof ns['run'], 'function');
  t.notOk(Object.hasOwn(ns, 'default'));
  t.notOk(Object.hasOwn(ns, '__esModule'));
  t.end();
});

t.test('a full queue answers overloaded', async (t) => {
  const pool = new HashPool({ backend: 'js', threads: 1, maxQueue: 1 });
  t.teardown(() => pool.close());
  const big = `{"records":[${Array.from({ length: 2000 }, (_, i) => `{"recordPayload":{"i":${i},"s":"${'x'.repeat(200)}"}}`).join(',')}]}`;
  const runs = Array.from({ length: 8 }, () => pool.prepareBody(body(big), 'bulk').then(() => 'ok', (e: unknown) => (isDrisError(e) ? e.code : String(e))));
  const results = await Promise.all(runs);
  t.ok(results.includes('overloaded'), 'some were refused');
  t.ok(results.includes('ok'), 'some were served');
  t.same([...new Set(results)].sort(), ['ok', 'overloaded']);
});

t.test('backend selection', async (t) => {
  t.equal(parseBackendChoice(undefined), 'auto');
  t.equal(parseBackendChoice(' JS '), 'js');
  t.throws(() => parseBackendChoice('gpu'), { code: 'config_invalid' });
  const js = await loadHashingBackend('js');
  t.equal(js.backend.name, 'js');
  t.same(js.tried, []);
  const wasm = await loadHashingBackend('wasm');
  t.equal(wasm.backend.name, 'wasm');
  const auto = await loadHashingBackend('auto');
  t.ok(['native', 'wasm'].includes(auto.backend.name));
  t.equal(auto.tried.length, auto.backend.name === 'native' ? 0 : 1);
});

t.test('native async preparation equals the sync one (when the addon is built)', async (t) => {
  let native: NativeHashingBackend;
  try {
    native = NativeHashingBackend.load();
  } catch {
    t.comment('native addon not built: skipped');
    return;
  }
  const text = '{"records":[{"recordPayload":{"b":"\u00e9","a":[1e21,-0]}},{"recordPayload":{"n":1e999}},{}]}';
  const sync = native.prepareBody(body(text), 'bulk');
  const async = await native.prepareBodyAsync(body(text), 'bulk');
  t.same(async.errors, sync.errors);
  t.same(async.payloads.map((p) => p && [p.canonical, p.payloadHash]), sync.payloads.map((p) => p && [p.canonical, p.payloadHash]));
  t.equal(sync.payloads[0]?.canonical, '{"a":[1e+21,0],"b":"é"}');
  t.same({ ...sync.payloads[0] }, { canonical: '{"a":[1e+21,0],"b":"é"}', payloadHash: sync.payloads[0]?.payloadHash }, 'spreading keeps the lazy text');
  // A body larger than the reused output buffer.
  const big = `{"records":[${Array.from({ length: 3000 }, (_, i) => `{"recordPayload":{"i":${i},"s":"${'x'.repeat(40)}"}}`).join(',')}]}`;
  const large = native.prepareBody(body(big), 'bulk');
  t.equal(large.payloads.length, 3000);
  t.equal(large.payloads[2999]?.canonical, `{"i":2999,"s":"${'x'.repeat(40)}"}`);
  // Payloads of earlier bodies stay readable after many more went through the reused output
  // buffer, and an answer longer than that buffer (exponent numbers print longer) arrives whole.
  const kept = Array.from({ length: 80 }, (_, i) => native.prepareBody(body(`{"recordPayload":{"i":${i},"s":"${'y'.repeat(20_000)}"}}`), 'single'));
  kept.forEach((p, i) => t.equal(p.payloads[0]?.canonical, `{"i":${i},"s":"${'y'.repeat(20_000)}"}`));
  const wide = native.prepareBody(body(`{"recordPayload":{"n":[${Array(24_000).fill('1e20').join(',')}]},"t":1}`), 'single');
  t.equal(wide.payloads[0]?.canonical, `{"n":[${Array(24_000).fill('100000000000000000000').join(',')}]}`);
  t.same(wide.envelope, { recordPayload: {}, t: 1 });
  const proofs = await native.allProofsAsync([new Uint8Array(32), new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)]);
  t.same(proofs.root, native.allProofs([new Uint8Array(32), new Uint8Array(32).fill(1), new Uint8Array(32).fill(2)]).root);
});
