import t from 'tap';
import { canonicalBytes, canonicalize } from '../../src/domain/hashing/canonical.js';
import { isDrisError } from '../../src/errors/dris-error.js';

function problem(fn: () => unknown): [string, string, string] | undefined {
  try {
    fn();
  } catch (e) {
    if (isDrisError(e)) return [e.code, e.fields[0]?.code ?? '', e.fields[0]?.path ?? ''];
    throw e;
  }
  return undefined;
}

t.test('canonical text', async (t) => {
  t.equal(canonicalize({ b: 1, a: [true, false, null, 'x'], '': {} }), '{"":{},"a":[true,false,null,"x"],"b":1}');
  t.equal(canonicalize({ '10': 1, '9': 2, a: 3, A: 4 }), '{"10":1,"9":2,"A":4,"a":3}');
  t.equal(canonicalize(-0), '0');
  t.equal(canonicalize([1e21, 1e-7, 5e-324, 2 ** 53 - 1, 0.1 + 0.2, 1e20, 123e-20]), '[1e+21,1e-7,5e-324,9007199254740991,0.30000000000000004,100000000000000000000,1.23e-18]');
  t.equal(canonicalize('\u0000\u0008\u0009\u000a\u000b\u000c\u000d\u001f\u007f"\\/'), '"\\u0000\\b\\t\\n\\u000b\\f\\r\\u001f\u007f\\"\\\\/"');
  t.equal(canonicalize('\ud83d\ude00\u2028'), '"\ud83d\ude00\u2028"');
  // Astral keys sort by UTF-16 code units: U+1F600 (D83D) before U+FB33.
  t.equal(canonicalize({ '\ufb33': 1, '\ud83d\ude00': 2 }), '{"\ud83d\ude00":2,"\ufb33":1}');
  t.equal(Buffer.from(canonicalBytes({ é: 'é' })).toString('hex'), Buffer.from('{"é":"é"}').toString('hex'));
  const proto = JSON.parse('{"__proto__":{"b":1},"a":0}') as unknown;
  t.equal(canonicalize(proto), '{"__proto__":{"b":1},"a":0}');
});

t.test('values without a canonical form are rejected with a code and a path', async (t) => {
  t.same(problem(() => canonicalize(NaN)), ['validation_failed', 'invalid_number', '']);
  t.same(problem(() => canonicalize({ a: [1, Infinity] })), ['validation_failed', 'invalid_number', 'a[1]']);
  t.same(problem(() => canonicalize({ a: [1, { 'b c': '\ud800' }] })), ['validation_failed', 'lone_surrogate', 'a[1]["b c"]']);
  t.same(problem(() => canonicalize({ x: { '\udc00': 1 } })), ['validation_failed', 'lone_surrogate', 'x["\\udc00"]']);
  t.same(problem(() => canonicalize({ f: () => 1 })), ['validation_failed', 'unsupported_type', 'f']);
  t.same(problem(() => canonicalize({ u: undefined })), ['validation_failed', 'unsupported_type', 'u']);
  t.same(problem(() => canonicalize(10n)), ['validation_failed', 'unsupported_type', '']);
});
