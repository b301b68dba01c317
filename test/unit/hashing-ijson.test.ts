import t from 'tap';
import { MAX_REPORTED_ERRORS, parseIJson, parseIJsonText, type IJsonResult } from '../../src/domain/hashing/ijson.js';

const codes = (r: IJsonResult): [string, string][] => r.errors.map((e) => [e.code, e.path]);

/** Both the fast and the reference path must agree on everything. */
function both(text: string | Uint8Array): IJsonResult {
  const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
  const fast = parseIJson(bytes);
  const ref = parseIJson(bytes, { forceReference: true });
  if (JSON.stringify(codes(fast)) !== JSON.stringify(codes(ref))) throw new Error(`paths disagree for ${String(text)}`);
  return fast;
}

t.test('valid documents give JSON.parse values', async (t) => {
  const docs = [
    '{}', '[]', '0', '-0', '1.5e3', '"x"', 'true', 'false', 'null', ' \n\t\r{"a" : [ 1 , 2 ] } \n',
    '{"a":{"b":{"c":[1,{"d":null}]}},"e":"\\u00e9\\n\\t\\"\\\\\\/","f":-1.25E-7}',
    '"\\ud83d\\ude00 😀 é"', '[9007199254740991,-9007199254740991,1e308,5e-324,0.1]', '{"10":1,"9":2,"a":3}',
  ];
  for (const d of docs) {
    const r = both(d);
    t.same(r.errors, [], d);
    t.equal(r.syntaxError, false);
    t.equal(JSON.stringify(r.value), JSON.stringify(JSON.parse(d)), d);
    const ref = parseIJsonText(d, { forceReference: true });
    t.equal(JSON.stringify(ref.value), JSON.stringify(JSON.parse(d)), `reference ${d}`);
  }
});

t.test('__proto__ becomes an own data property', async (t) => {
  for (const forceReference of [false, true]) {
    const r = parseIJsonText('{"__proto__":{"polluted":1},"a":1}', { forceReference });
    const v = r.value as Record<string, unknown>;
    t.equal(Object.getPrototypeOf(v), Object.prototype);
    t.ok(Object.hasOwn(v, '__proto__'));
    t.same(Object.keys(v), ['__proto__', 'a']);
    t.equal(({} as Record<string, unknown>)['polluted'], undefined);
  }
  t.same(codes(both('{"__proto__":1,"__proto__":2}')), [['duplicate_key', '__proto__']]);
});

t.test('violations with codes and paths', async (t) => {
  const cases: [string, [string, string][]][] = [
    ['{"a":1,"a":2}', [['duplicate_key', 'a']]],
    ['{"a":1,"\\u0061":2}', [['duplicate_key', 'a']]],
    ['{"x":{"k":1,"k":2,"k":3}}', [['duplicate_key', 'x.k'], ['duplicate_key', 'x.k']]],
    ['[9007199254740992]', [['unsafe_integer', '[0]']]],
    ['[-9007199254740992]', [['unsafe_integer', '[0]']]],
    ['[9007199254740991, -9007199254740991]', []],
    ['[12345678901234567890123]', [['unsafe_integer', '[0]']]],
    ['[9007199254740993.0, 1e300, 12345678901234567890e-5]', []],
    ['{"a b":[1e400]}', [['invalid_number', '["a b"][0]']]],
    ['[-1e400, 1e-400]', [['invalid_number', '[0]']]],
    ['{"s":"\\ud800"}', [['lone_surrogate', 's']]],
    ['{"s":"\\udc00\\ud800"}', [['lone_surrogate', 's']]],
    ['{"s":"\\ud800x"}', [['lone_surrogate', 's']]],
    ['{"\\udfff":1}', [['lone_surrogate', '["\\udfff"]']]],
    ['{"records":[{},{"recordPayload":{"a":[1,{"b":1,"b":2}]}}]}', [['duplicate_key', 'records[1].recordPayload.a[1].b']]],
    // Colons inside strings and names must not hide or fake a duplicate.
    ['{"t":"12:30:00","u":"https://x","k:v":1}', []],
    ['{"t":"12:30","t":"x"}', [['duplicate_key', 't']]],
    ['{"a":"\\u003a","b":":"}', []],
    ['{"a":"\\u003a","a":1}', [['duplicate_key', 'a']]],
    ['{"a\\u003a":1,"a:":2}', [['duplicate_key', '["a:"]']]],
    ['{"\\\\u003a":1,"x":{"y":1,"y":2}}', [['duplicate_key', 'x.y']]],
  ];
  for (const [doc, want] of cases) {
    const r = both(doc);
    t.same(codes(r), want, doc);
    t.equal(r.syntaxError, false);
    t.not(r.value, undefined);
  }
  // Raw UTF-8 encoded surrogate (ED A0 80) is a lone surrogate; other invalid UTF-8 is a syntax error.
  t.same(codes(both(Uint8Array.from([0x5b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x5d]))), [['lone_surrogate', '[0]']]);
  for (const bad of [[0xff], [0xc0, 0x80], [0xe0, 0x80, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xc3]]) {
    const r = both(Uint8Array.from([0x5b, 0x22, ...bad, 0x22, 0x5d]));
    t.same(codes(r), [['invalid_json', '[0]']], `bytes ${bad.join(',')}`);
    t.equal(r.value, undefined);
  }
});

t.test('syntax errors stop parsing and say where', async (t) => {
  const cases: [string | Uint8Array, string][] = [
    ['', ''],
    ['   ', ''],
    ['\ufeff{}', ''],
    ['{"a":NaN}', 'a'],
    ['[Infinity]', '[0]'],
    ['[-Infinity]', '[0]'],
    ['{"a":[1,2,}', 'a[2]'],
    ['{"a":1,}', ''],
    ['{"a" 1}', ''],
    ['{"a":1 "b":2}', ''],
    ['{"a":{"b":tru}}', 'a.b'],
    ['{"a":"\u0001"}', 'a'],
    ['{"a":"\\x"}', 'a'],
    ['{"a":"\\u12g4"}', 'a'],
    ['{"a":01}', ''],
    ['{"a":1.}', 'a'],
    ['{"a":-}', 'a'],
    ['{"a":1e}', 'a'],
    ['{"a":+1}', 'a'],
    ['{} {}', ''],
    ['[1] x', ''],
    ['{"a":[1', 'a'],
    ["{'a':1}", ''],
    ['{"a":1,"a":2,"b":[}', 'b[0]'],
  ];
  for (const [doc, path] of cases) {
    const r = both(doc);
    t.equal(r.syntaxError, true, String(doc));
    t.equal(r.value, undefined);
    const last = r.errors[r.errors.length - 1];
    t.same(last && [last.code, last.path], ['invalid_json', path], String(doc));
  }
  // Violations found before the syntax error are kept.
  t.same(codes(both('{"a":1,"a":2,"b":[}')), [['duplicate_key', 'a'], ['invalid_json', 'b[0]']]);
});

t.test('depth: 64 levels pass, the 65th container is reported', async (t) => {
  const nest = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  t.same(codes(both(nest(64))), []);
  t.same(codes(both(nest(65))), [['depth_exceeded', '[0]'.repeat(64)]]);
  t.same(codes(both('{"a":' + nest(64) + '}')), [['depth_exceeded', 'a' + '[0]'.repeat(63)]]);
  t.same(codes(both('[' + nest(64) + ',' + nest(64) + ']')).map(([c]) => c), ['depth_exceeded', 'depth_exceeded']);
  // Very deep input does not overflow the stack.
  const deep = both(nest(100_000));
  t.equal(deep.errors.length, 1);
  t.equal(deep.syntaxError, false);
});

t.test('violations are capped, counted and all located', async (t) => {
  const doc = '[' + Array.from({ length: 250 }, () => '1e999').join(',') + ']';
  const r = both(doc);
  t.equal(r.errors.length, MAX_REPORTED_ERRORS);
  t.equal(r.errorCount, 250);
  t.equal(r.violationPaths.length, 250);
  t.equal(r.violationPaths[249], '[249]');
  // A syntax error after the cap is still reported.
  const s = both('[' + Array.from({ length: 150 }, () => '1e999').join(',') + ',]');
  t.equal(s.syntaxError, true);
  t.equal(s.errors[s.errors.length - 1]?.code, 'invalid_json');
});
