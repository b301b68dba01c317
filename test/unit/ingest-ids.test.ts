import t from 'tap';
import { ingestIdTimeMs, newIngestId } from '../../src/domain/records/ids.js';

void t.test('ingest ids: 26 Crockford characters, time first, random after, distinct within a millisecond', (t) => {
  const at = 1_700_000_000_123;
  const ids = Array.from({ length: 2000 }, (_, i) => newIngestId(at + (i >> 9)));
  for (const id of ids.slice(0, 50)) t.match(id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
  t.equal(new Set(ids).size, ids.length, 'no id repeats');
  for (const [i, id] of ids.entries()) if (ingestIdTimeMs(id) !== at + (i >> 9)) t.fail(`id ${i} carries the wrong time`);
  // Ids of later milliseconds sort after earlier ones.
  t.ok(newIngestId(at) < newIngestId(at + 1));
  // The random part uses every character of the alphabet over many ids (no stuck bits).
  const seen = new Set(ids.join('').slice(0, 26 * 2000).split('').filter((_, k) => k % 26 >= 10));
  t.equal(seen.size, 32);
  t.end();
});
