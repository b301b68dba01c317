import t from 'tap';
import { parseIJsonText } from '../../src/domain/hashing/ijson.js';
import { canonicalBytes, canonicalize } from '../../src/domain/hashing/canonical.js';
import { isDrisError } from '../../src/errors/dris-error.js';
import { availableBackends } from './helpers/backends.js';

/**
 * RFC 8785 examples and the reference test data of its authors (cyberphone/json-canonicalization
 * testdata/input and testdata/output), through the pure canonicaliser and every backend.
 */

/** RFC 8785 Appendix B: IEEE 754 bit patterns and their serialisation. */
const APPENDIX_B: readonly [string, string][] = [
  ['0000000000000000', '0'],
  ['8000000000000000', '0'],
  ['0000000000000001', '5e-324'],
  ['8000000000000001', '-5e-324'],
  ['7fefffffffffffff', '1.7976931348623157e+308'],
  ['ffefffffffffffff', '-1.7976931348623157e+308'],
  ['4340000000000000', '9007199254740992'],
  ['c340000000000000', '-9007199254740992'],
  ['4430000000000000', '295147905179352830000'],
  ['44b52d02c7e14af5', '9.999999999999997e+22'],
  ['44b52d02c7e14af6', '1e+23'],
  ['44b52d02c7e14af7', '1.0000000000000001e+23'],
  ['444b1ae4d6e2ef4e', '999999999999999700000'],
  ['444b1ae4d6e2ef4f', '999999999999999900000'],
  ['444b1ae4d6e2ef50', '1e+21'],
  ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
  ['3eb0c6f7a0b5ed8d', '0.000001'],
  ['41b3de4355555553', '333333333.3333332'],
  ['41b3de4355555554', '333333333.33333325'],
  ['41b3de4355555555', '333333333.3333333'],
  ['41b3de4355555556', '333333333.3333334'],
  ['41b3de4355555557', '333333333.33333343'],
  ['becbf647612f3696', '-0.0000033333333333333333'],
  ['43143ff3c1cb0959', '1424953923781206.2'],
];

/** Appendix B lists these two as having no JSON form: they must be rejected. */
const APPENDIX_B_INVALID: readonly [string, string][] = [
  ['7fffffffffffffff', 'NaN'],
  ['7ff0000000000000', 'Infinity'],
];

function doubleFromBits(hex: string): number {
  const b = Buffer.from(hex, 'hex');
  return b.readDoubleBE(0);
}

/** RFC 8785 §3.2.2 input and §3.2.3 output. */
const SECTION_3_2_2_INPUT = `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/",
  "literals": [null, true, false]
}`;
const SECTION_3_2_2_OUTPUT = `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA'B\\"\\\\\\\\\\"/"}`;
/** RFC 8785 §3.2.4: the UTF-8 bytes of the output above. */
const SECTION_3_2_4_HEX = [
  '7b 22 6c 69 74 65 72 61 6c 73 22 3a 5b 6e 75 6c 6c 2c 74 72',
  '75 65 2c 66 61 6c 73 65 5d 2c 22 6e 75 6d 62 65 72 73 22 3a',
  '5b 33 33 33 33 33 33 33 33 33 2e 33 33 33 33 33 33 33 2c 31',
  '65 2b 33 30 2c 34 2e 35 2c 30 2e 30 30 32 2c 31 65 2d 32 37',
  '5d 2c 22 73 74 72 69 6e 67 22 3a 22 e2 82 ac 24 5c 75 30 30',
  '30 66 5c 6e 41 27 42 5c 22 5c 5c 5c 5c 5c 22 2f 22 7d',
]
  .join(' ')
  .replace(/ /g, '');

/** RFC 8785 §3.2.3: member names sorted by UTF-16 code units. */
const SORTING_INPUT = `{
  "\\u20ac": "Euro Sign",
  "\\r": "Carriage Return",
  "\\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\\ud83d\\ude00": "Emoji: Grinning Face",
  "\\u0080": "Control",
  "\\u00f6": "Latin Small Letter O With Diaeresis"
}`;
const SORTING_ORDER = ['\r', '1', '\u0080', '\u00f6', '\u20ac', '\ud83d\ude00', '\ufb33'];

/** cyberphone/json-canonicalization testdata: [name, input, output]. */
const TESTDATA: readonly [string, string, string][] = [
  ['arrays', '[\n  56,\n  {\n    "d": true,\n    "10": null,\n    "1": [ ]\n  }\n]', '[56,{"1":[],"10":null,"d":true}]'],
  [
    'french',
    '{\n  "peach": "This sorting order",\n  "péché": "is wrong according to French",\n  "pêche": "but canonicalization MUST",\n  "sin":   "ingnore locale"\n}\n',
    '{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ingnore locale"}',
  ],
  ['simpleString', '    "this is a test string 1235"', '"this is a test string 1235"'],
  [
    'structures',
    '{\n  "1": {"f": {"f": "hi","F": 5} ,"\\n": 56.0},\n  "10": { },\n  "": "empty",\n  "a": { },\n  "111": [ { } ],\n  "A": { }\n}',
    '{"":"empty","1":{"\\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{}],"A":{},"a":{}}',
  ],
  ['unicode', '{\n  "Unnormalized Unicode":"\\u1e0d\\u0307"\n}\n', '{"Unnormalized Unicode":"\u1e0d\u0307"}'],
  [
    'values',
    '{\n  "numbers": [1E30, 4.50, 333333333.33333329, 2e-3, 0.000000000000000000000000001],\n  "escaping": "\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/",\n  "literals": [null, true, false]\n}',
    '{"escaping":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/","literals":[null,true,false],"numbers":[1e+30,4.5,333333333.3333333,0.002,1e-27]}',
  ],
  [
    'weird',
    '{\n  "\\u20ac": "Euro Sign",\n  "1": "One",\n  "\\u0080": "Control\\u007f",\n  "\\ud83d\\ude02": "Smiley",\n  "\\u00f6": "Latin Small Letter O With Diaeresis",\n  "\\ufb33": "Hebrew Letter Dalet With Dagesh",\n  "</script>": "Browser Challenge"\n}\n',
    '{"1":"One","</script>":"Browser Challenge","\u0080":"Control\u007f","\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign","\ud83d\ude02":"Smiley","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
  ],
];

/** simpleString's expected bytes (testdata/outhex/simpleString.txt). */
const SIMPLE_STRING_HEX = '22 74 68 69 73 20 69 73 20 61 20 74 65 73 74 20 73 74 72 69 6E 67 20 31 32 33 35 22';

function problemCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (isDrisError(e)) return e.fields[0]?.code;
    throw e;
  }
  return undefined;
}

function parse(text: string): unknown {
  const r = parseIJsonText(text);
  if (r.errors.length > 0) throw new Error(`unexpected violations: ${JSON.stringify(r.errors)}`);
  return r.value;
}

t.test('pure canonicaliser', async (t) => {
  t.test('Appendix B numbers', async (t) => {
    for (const [bits, text] of APPENDIX_B) t.equal(canonicalize(doubleFromBits(bits)), text, bits);
    t.equal(canonicalize(APPENDIX_B.map(([b]) => doubleFromBits(b))), `[${APPENDIX_B.map(([, s]) => s).join(',')}]`);
    for (const [bits, name] of APPENDIX_B_INVALID) t.equal(problemCode(() => canonicalize(doubleFromBits(bits))), 'invalid_number', name);
  });
  t.test('§3.2.2 sample and its §3.2.4 bytes', async (t) => {
    t.equal(canonicalize(parse(SECTION_3_2_2_INPUT)), SECTION_3_2_2_OUTPUT);
    t.equal(Buffer.from(canonicalBytes(parse(SECTION_3_2_2_INPUT))).toString('hex'), SECTION_3_2_4_HEX);
  });
  t.test('§3.2.3 sorting', async (t) => {
    const out = canonicalize(parse(SORTING_INPUT));
    // Object.keys would list "1" first (an array index): read the order from the text itself.
    const keys = [...out.matchAll(/"((?:[^"\\]|\\.)*)":/g)].map((m) => JSON.parse(`"${m[1]!}"`) as string);
    t.same(keys, SORTING_ORDER);
    t.equal(out, '{' + SORTING_ORDER.map((k) => `${JSON.stringify(k)}:${JSON.stringify((JSON.parse(SORTING_INPUT) as Record<string, string>)[k])}`).join(',') + '}');
  });
  t.test('testdata', async (t) => {
    for (const [name, input, output] of TESTDATA) t.equal(canonicalize(parse(input)), output, name);
    t.equal(Buffer.from(canonicalBytes(parse(TESTDATA[2]![1]))).toString('hex'), SIMPLE_STRING_HEX.replace(/ /g, '').toLowerCase());
  });
});

t.test('every backend', async (t) => {
  const { backends, skipped } = await availableBackends();
  for (const s of skipped) t.comment(`backend ${s.name} skipped: ${s.reason}`);
  for (const backend of backends) {
    t.test(backend.name, async (t) => {
      // Through prepareBody, each document is the payload of a single-record body.
      const viaBody = (text: string): string | undefined => {
        const body = Buffer.from(`{"recordPayload":{"v":${text}}}`, 'utf8');
        const p = backend.prepareBody(body, 'single');
        t.same(p.errors, [], 'no violations');
        const c = p.payloads[0]?.canonical;
        return c === undefined ? undefined : c.slice('{"v":'.length, -1);
      };
      for (const [bits, text] of APPENDIX_B) {
        const n = doubleFromBits(bits);
        t.equal(backend.canonicalize(n), text, `value ${bits}`);
        const integerLiteral = /^-?\d+$/.test(text);
        if (integerLiteral && !Number.isSafeInteger(n)) {
          // I-JSON: an integer literal beyond 2^53-1 is rejected; with a fraction it is a binary64 value.
          const p = backend.prepareBody(Buffer.from(`{"recordPayload":{"v":${text}}}`), 'single');
          t.same(p.errors.map((e) => [e.code, e.path]), [['unsafe_integer', 'recordPayload.v']], `body ${bits} as an integer literal`);
          t.equal(p.payloads[0], null);
          t.equal(viaBody(`${text}.0`), text, `body ${bits} with a fraction`);
        } else {
          t.equal(viaBody(Object.is(n, -0) ? '-0' : text), text, `body ${bits}`);
        }
        t.equal(viaBody(n.toExponential().replace('e+', 'E')), text, `body ${bits}, exponent spelling`);
      }
      for (const [bits, name] of APPENDIX_B_INVALID) t.equal(problemCode(() => backend.canonicalize(doubleFromBits(bits))), 'invalid_number', name);
      t.equal(backend.canonicalize(parse(SECTION_3_2_2_INPUT)), SECTION_3_2_2_OUTPUT);
      t.equal(viaBody(SECTION_3_2_2_INPUT), SECTION_3_2_2_OUTPUT, '§3.2.2 through the body path');
      t.equal(viaBody(SORTING_INPUT), canonicalize(parse(SORTING_INPUT)), '§3.2.3 through the body path');
      for (const [name, input, output] of TESTDATA) {
        t.equal(backend.canonicalize(parse(input)), output, name);
        t.equal(viaBody(input), output, `${name} through the body path`);
        const p = backend.prepareBody(Buffer.from(`{"recordPayload":{"v":${input}}}`), 'single');
        t.equal(p.payloads[0]?.payloadHash, backend.sha256Hex(Buffer.from(`{"v":${output}}`, 'utf8')), `${name} payloadHash`);
      }
    });
  }
});
