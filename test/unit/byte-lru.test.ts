import t from 'tap';
import { ByteLru } from '../../src/util/byte-lru.js';

const sized = (n: number): Uint8Array => new Uint8Array(n);
const lru = (max: number): ByteLru<string, Uint8Array> => new ByteLru(max, (v) => v.length);

t.test('keeps values until their bytes pass the budget, then drops the least recently used', async (t) => {
  const c = lru(100);
  c.add('a', sized(40));
  c.add('b', sized(40));
  t.equal(c.bytes, 80);
  t.ok(c.get('a'), 'a hit makes a the newest');
  c.add('c', sized(40));
  t.same([c.has('a'), c.has('b'), c.has('c')], [true, false, true]);
  t.equal(c.bytes, 80);
  c.add('d', sized(100));
  t.same([c.size, c.bytes, c.has('d')], [1, 100, true], 'a value of the whole budget drops every other');
});

t.test('never keeps a value larger than the budget, and leaves the rest alone', async (t) => {
  const c = lru(100);
  c.add('a', sized(60));
  c.add('huge', sized(101));
  t.same([c.has('huge'), c.has('a'), c.bytes], [false, true, 60]);
});

t.test('a key already held keeps its first value and its count', async (t) => {
  const c = lru(100);
  const first = sized(10);
  c.add('a', first);
  c.add('a', sized(50));
  t.equal(c.get('a'), first);
  t.equal(c.bytes, 10);
  t.equal(c.get('missing'), undefined);
});

t.test('zero-sized values fit any budget', async (t) => {
  const c = lru(0);
  c.add('a', sized(0));
  c.add('b', sized(1));
  t.same([c.has('a'), c.has('b'), c.bytes], [true, false, 0]);
});
