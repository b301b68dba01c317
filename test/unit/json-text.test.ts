import t from 'tap';
import { jsonArrayWriter, jsonObjectWriter, jsonTupleWriter, jsonValue, type JsonKind } from '../../src/util/json-text.js';

void t.test('each kind writes what JSON.stringify writes, and refuses every other type', (t) => {
  const cases: [JsonKind, unknown[], unknown[]][] = [
    ['string', ['', 'a"b', '\u2028', '\ud800', '😀'], [null, 1, undefined, {}]],
    ['string|null', [null, 'x\ny'], [undefined, 0, false]],
    ['integer', [0, -1, 2 ** 53 - 1], [1.5, NaN, Infinity, '1', 2 ** 53, null]],
    ['boolean', [true, false], [0, 'true', null]],
    ['null', [null], [undefined, 0, '']],
    ['empty-array', [[]], [[1], {}, null]],
    ['hex-array', [[], ['00ff'], ['ab', 'cd', '']], [['AB'], ['"'], [1], 'ab', null]],
  ];
  for (const [kind, good, bad] of cases) {
    for (const [i, v] of good.entries()) t.equal(jsonValue(kind, v), JSON.stringify(v), `${kind} ${i}`);
    for (const [i, v] of bad.entries()) t.equal(jsonValue(kind, v), null, `${kind} refuses ${i}`);
  }
  t.end();
});

void t.test('an object writer: members in order, open or closed, null when one is of another type', (t) => {
  const w = jsonObjectWriter<{ a: string; b: number | null; c: boolean }>([
    ['a', 'string'],
    ['b', 'integer'],
    ['c', 'boolean'],
    ['d', 'string', (o) => `${o.a}!`],
  ]);
  t.equal(w({ a: 'x"', b: 3, c: true }), JSON.stringify({ a: 'x"', b: 3, c: true, d: 'x"!' }));
  t.equal(w({ a: 'x', b: null, c: true }), null);
  const open = jsonObjectWriter<{ a: string }>([['a', 'string']], true);
  t.equal(open({ a: 'v' }), '{"a":"v"');
  t.end();
});

void t.test('an array writer: the values of members in order, without their names, open or closed', (t) => {
  const w = jsonArrayWriter<{ a: string; b: number | null; c: boolean }>([
    ['a', 'string'],
    ['b', 'integer'],
    ['c', 'boolean'],
    ['d', 'string', (o) => `${o.a}!`],
  ]);
  t.equal(w({ a: 'x"', b: 3, c: true }), JSON.stringify(['x"', 3, true, 'x"!']));
  t.equal(w({ a: 'x', b: null, c: true }), null);
  const open = jsonArrayWriter<{ a: string; b: string | null }>([['a', 'string'], ['b', 'string|null']], true);
  t.equal(open({ a: 'v', b: null }), '["v",null');
  t.end();
});

void t.test('a tuple writer: elements in order, null for another length or type', (t) => {
  const w = jsonTupleWriter(['string', 'string|null', 'integer', 'hex-array']);
  t.equal(w(['a', null, 7, ['ff']]), JSON.stringify(['a', null, 7, ['ff']]));
  t.equal(w(['a', null, 7]), null);
  t.equal(w(['a', null, 7.5, []]), null);
  t.end();
});
