import t, { type Test } from 'tap';
import { isDeepStrictEqual } from 'node:util';
import { HashingService } from '../../src/adapters/hashing/hashing-service.js';
import { envelopeOf } from '../../src/domain/hashing/prepare-body.js';
import type { BodyShape, PreparedBody } from '../../src/domain/hashing/port.js';
import { availableBackends } from '../conformance/helpers/backends.js';

const bytes = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'utf8'));

/** Deep equality that also holds member order (JSON.stringify keeps it; isDeepStrictEqual keeps -0, Infinity). */
function same(a: unknown, b: unknown): boolean {
  return isDeepStrictEqual(a, b) && JSON.stringify(a) === JSON.stringify(b);
}

interface Case {
  readonly name: string;
  readonly body: string;
  readonly shape: BodyShape;
  /** The envelope, as the JSON text JSON.parse would read (undefined: no value). */
  readonly want: string | undefined;
  /** Whether the body has violations. */
  readonly invalid?: boolean;
}

const CASES: readonly Case[] = [
  { name: 'single', body: '{"tenantId":"t","recordPayload":{"b":2,"a":[1,{"c":3}]},"x":[1,{"recordPayload":{"y":1}}]}', shape: 'single', want: '{"tenantId":"t","recordPayload":{},"x":[1,{"recordPayload":{"y":1}}]}' },
  { name: 'single with whitespace', body: ' {\n "recordPayload" : { "a" : 1 } ,"z":"é\\u0041"}\t', shape: 'single', want: '{"recordPayload":{},"z":"éA"}' },
  { name: 'empty payload', body: '{"recordPayload":{}}', shape: 'single', want: '{"recordPayload":{}}' },
  { name: 'array payload', body: '{"recordPayload":[1,{"a":1}],"t":1}', shape: 'single', want: '{"recordPayload":[1,{"a":1}],"t":1}' },
  { name: 'string payload', body: '{"recordPayload":"x"}', shape: 'single', want: '{"recordPayload":"x"}' },
  { name: 'null payload', body: '{"recordPayload":null,"a":{"recordPayload":{}}}', shape: 'single', want: '{"recordPayload":null,"a":{"recordPayload":{}}}' },
  { name: 'no payload', body: '{"tenantId":"t"}', shape: 'single', want: '{"tenantId":"t"}' },
  { name: 'top-level array', body: '[{"recordPayload":{"a":1}}]', shape: 'single', want: '[{"recordPayload":{"a":1}}]' },
  { name: 'top-level scalar', body: '7', shape: 'single', want: '7' },
  { name: 'escaped member name', body: '{"record\\u0050ayload":{"a":1},"t\\u0065nantId":"t"}', shape: 'single', want: '{"recordPayload":{},"tenantId":"t"}' },
  { name: 'violation inside the payload', body: '{"recordPayload":{"a":1,"a":2},"tenantId":"t"}', shape: 'single', want: '{"recordPayload":{},"tenantId":"t"}', invalid: true },
  { name: 'violation outside the payload', body: '{"recordPayload":{"a":1},"n":12345678901234567890}', shape: 'single', want: '{"recordPayload":{},"n":12345678901234567000}', invalid: true },
  { name: 'duplicate key outside the payload', body: '{"tenantId":"a","recordPayload":{"x":1},"tenantId":"b"}', shape: 'single', want: '{"tenantId":"b","recordPayload":{}}', invalid: true },
  { name: 'duplicate payload, the last not an object', body: '{"recordPayload":{"a":1},"recordPayload":5}', shape: 'single', want: '{"recordPayload":5}', invalid: true },
  { name: 'duplicate payload, the last an object', body: '{"recordPayload":5,"recordPayload":{"a":1}}', shape: 'single', want: '{"recordPayload":{}}', invalid: true },
  { name: 'syntax error', body: '{"recordPayload":{"a":1}', shape: 'single', want: undefined, invalid: true },
  {
    name: 'bulk records',
    body: '{"tenantId":"t","records":[{"recordId":"1","recordPayload":{"a":1}},{"recordPayload":3},5,{},{"x":{"recordPayload":{"b":1}}},{"recordPayload":{"z":[{"recordPayload":{}}]},"k":null}],"items":[{"recordPayload":{"i":1}}]}',
    shape: 'bulk',
    want: '{"tenantId":"t","records":[{"recordId":"1","recordPayload":{}},{"recordPayload":3},5,{},{"x":{"recordPayload":{"b":1}}},{"recordPayload":{},"k":null}],"items":[{"recordPayload":{"i":1}}]}',
  },
  { name: 'bulk items', body: '{"items":[{"recordPayload":{"a":1}},{"recordPayload":[]}],"records":{"recordPayload":{}}}', shape: 'bulk', want: '{"items":[{"recordPayload":{}},{"recordPayload":[]}],"records":{"recordPayload":{}}}' },
  { name: 'bulk records before items even when empty', body: '{"items":[{"recordPayload":{"a":1}}],"records":[]}', shape: 'bulk', want: '{"items":[{"recordPayload":{"a":1}}],"records":[]}' },
  { name: 'bulk without a list', body: '{"recordPayload":{"a":1}}', shape: 'bulk', want: '{"recordPayload":{"a":1}}' },
  { name: 'bulk top-level array', body: '[{"recordPayload":{"a":1}}]', shape: 'bulk', want: '[{"recordPayload":{"a":1}}]' },
  {
    name: 'bulk with violations',
    body: '{"records":[{"recordPayload":{"a":1}},{"recordPayload":{"n":1e999}},{"recordPayload":{"s":"x"},"recordId":"\\ud800"},{"recordPayload":{"a":1},"recordPayload":{"b":2}}]}',
    shape: 'bulk',
    want: '{"records":[{"recordPayload":{}},{"recordPayload":{}},{"recordPayload":{},"recordId":"\\ud800"},{"recordPayload":{}}]}',
    invalid: true,
  },
  { name: 'bulk with duplicate lists', body: '{"records":[{"recordPayload":{"a":1}}],"records":[{"recordPayload":{"b":1}},2]}', shape: 'bulk', want: '{"records":[{"recordPayload":{}},2]}', invalid: true },
  { name: 'own __proto__ members', body: '{"records":[{"__proto__":{"x":1},"recordPayload":{"a":1}}]}', shape: 'bulk', want: '{"records":[{"__proto__":{"x":1},"recordPayload":{}}]}' },
];

interface Preparer {
  readonly name: string;
  prepare(body: Uint8Array, shape: BodyShape): Promise<PreparedBody>;
}

/** Every backend that loads, inline and through a one-thread pool. */
async function preparers(t: Test): Promise<Preparer[]> {
  const { backends } = await availableBackends();
  const out: Preparer[] = backends.map((b) => ({ name: b.name, prepare: (body, shape) => Promise.resolve(b.prepareBody(body, shape)) }));
  for (const b of backends) {
    const service = await HashingService.create({ backend: b.name, threads: 1, inlineThresholdBytes: 0 });
    t.teardown(() => service.close());
    out.push({ name: `${b.name} pool`, prepare: (body, shape) => service.prepareBody(body, shape) });
  }
  return out;
}

t.test('the envelope is the value with payload objects replaced by {}', async (t) => {
  for (const b of await preparers(t)) {
    for (const c of CASES) {
      // Read before the value (the native text path) and after it.
      const first = await b.prepare(bytes(c.body), c.shape);
      const envelope = first.envelope;
      const value = first.value;
      const second = await b.prepare(bytes(c.body), c.shape);
      const valueFirst = second.value;
      const envelopeAfter = second.envelope;
      const want: unknown = c.want === undefined ? undefined : JSON.parse(c.want);
      t.ok(same(envelope, want), `${b.name}: ${c.name}`, { got: envelope, want });
      t.ok(same(envelopeAfter, want), `${b.name}: ${c.name} (value read first)`);
      t.ok(same(envelope, envelopeOf(value, c.shape)), `${b.name}: ${c.name} agrees with envelopeOf`);
      t.equal(first.errors.length > 0, c.invalid === true, `${b.name}: ${c.name} violations`);
      // The value keeps its payloads.
      t.ok(same(valueFirst, value), `${b.name}: ${c.name} value unchanged`);
      t.equal(second.envelope, envelopeAfter, 'built once');
    }
  }
});

t.test('envelopeOf copies instead of changing the value', async (t) => {
  const value = JSON.parse('{"records":[{"recordPayload":{"a":1},"id":"1"},{"recordPayload":2}],"t":{"k":1}}') as {
    records: { recordPayload: unknown }[];
    t: unknown;
  };
  const snapshot = JSON.stringify(value);
  const env = envelopeOf(value, 'bulk') as typeof value;
  t.equal(JSON.stringify(value), snapshot);
  t.same(env, { records: [{ recordPayload: {}, id: '1' }, { recordPayload: 2 }], t: { k: 1 } });
  t.not(env, value);
  t.not(env.records, value.records);
  t.equal(env.records[1], value.records[1], 'an element without a payload object is shared');
  t.equal(env.t, value.t, 'members outside the list are shared');
  const none = { records: [{ recordPayload: [] }] };
  t.equal(envelopeOf(none, 'bulk'), none, 'nothing to replace: the value itself');
  t.equal(envelopeOf(undefined, 'single'), undefined);
  const single = { recordPayload: { a: 1 }, b: 2 };
  t.same(envelopeOf(single, 'single'), { recordPayload: {}, b: 2 });
  t.same(single, { recordPayload: { a: 1 }, b: 2 });
});
