import t from 'tap';
import { createHash } from 'node:crypto';
import { prepareBody } from '../../src/domain/hashing/prepare-body.js';

const sha = (d: string | Uint8Array): string => createHash('sha256').update(d).digest('hex');
const body = (s: string): Uint8Array => Buffer.from(s, 'utf8');

t.test('single', async (t) => {
  const p = prepareBody(body('{"tenantId":"t","recordPayload":{"b":2,"a":1}}'), 'single', sha);
  t.same(p.errors, []);
  t.same(p.payloads, [{ canonical: '{"a":1,"b":2}', payloadHash: sha('{"a":1,"b":2}') }]);
  t.same(prepareBody(body('{"recordPayload":[1]}'), 'single', sha).payloads, [null]);
  t.same(prepareBody(body('{"x":1}'), 'single', sha).payloads, [null]);
  t.same(prepareBody(body('[1]'), 'single', sha).payloads, [null]);
  const bad = prepareBody(body('{"recordPayload":{"a":1,"a":2},"tenantId":"\\ud800"}'), 'single', sha);
  t.same(bad.errors.map((e) => [e.code, e.path]), [['duplicate_key', 'recordPayload.a'], ['lone_surrogate', 'tenantId']]);
  t.same(bad.payloads, [null]);
  // A violation outside the payload leaves the payload hashed.
  const outside = prepareBody(body('{"recordPayload":{"a":1},"n":1e999}'), 'single', sha);
  t.equal(outside.payloads[0]?.canonical, '{"a":1}');
  const syntax = prepareBody(body('{"recordPayload":'), 'single', sha);
  t.equal(syntax.value, undefined);
  t.same(syntax.payloads, []);
  t.equal(syntax.errors[0]?.code, 'invalid_json');
});

t.test('bulk', async (t) => {
  const p = prepareBody(
    body('{"records":[{"recordPayload":{"x":1}},{"recordPayload":{"x":9007199254740993}},{"recordPayload":"s"},{},{"recordPayload":{"y":[1]}}]}'),
    'bulk',
    sha,
  );
  t.same(p.errors.map((e) => [e.code, e.path]), [['unsafe_integer', 'records[1].recordPayload.x']]);
  t.same(p.payloads.map((x) => x?.canonical ?? null), ['{"x":1}', null, null, null, '{"y":[1]}']);
  const items = prepareBody(body('{"items":[{"recordPayload":{"a":1}},{"recordPayload":{"a":1,"a":1}}]}'), 'bulk', sha);
  t.same(items.payloads.map((x) => x?.canonical ?? null), ['{"a":1}', null]);
  t.same(prepareBody(body('{"records":{},"items":[{"recordPayload":{}}]}'), 'bulk', sha).payloads.length, 1);
  t.same(prepareBody(body('{"other":[]}'), 'bulk', sha).payloads, []);
  // records[1] and records[10] are different elements.
  const many = Array.from({ length: 12 }, (_, i) => (i === 10 ? '{"recordPayload":{"a":1e999}}' : '{"recordPayload":{"a":1}}'));
  const m = prepareBody(body(`{"records":[${many.join(',')}]}`), 'bulk', sha);
  t.same(m.payloads.map((x, i) => (x === null ? i : -1)).filter((i) => i >= 0), [10]);
  // Violations beyond the reported 100 still null their payloads.
  const lots = Array.from({ length: 150 }, () => '{"recordPayload":{"a":1e999}}');
  const l = prepareBody(body(`{"records":[${lots.join(',')}]}`), 'bulk', sha);
  t.equal(l.errors.length, 100);
  t.equal(l.payloads.filter((x) => x === null).length, 150);
});
