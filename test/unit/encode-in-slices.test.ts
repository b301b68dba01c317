import t from 'tap';
import { encodeInSlices } from '../../src/adapters/clickhouse/encode-in-slices.js';

const line = (rows: readonly number[]): Buffer => Buffer.from(rows.map((r) => `{"n":${r}}\n`).join(''), 'utf8');

void t.test('the bytes are those of one encoding of every row, in order', async (t) => {
  for (const count of [0, 1, 5, 255, 256, 257, 1000]) {
    const rows = Array.from({ length: count }, (_, i) => i);
    t.same(await encodeInSlices(rows, 256, line), line(rows), `${count} rows`);
  }
});

void t.test('the event loop turns between slices, not within one', async (t) => {
  const rows = Array.from({ length: 10 }, (_, i) => i);
  const seen: string[] = [];
  const immediates: Promise<void>[] = [];
  const encoded = encodeInSlices(rows, 3, (slice) => {
    seen.push(String(slice.length));
    immediates.push(new Promise<void>((resolve) => setImmediate(() => { seen.push('turn'); resolve(); })));
    return line(slice);
  });
  await encoded;
  // Each slice after the first is encoded only after the turn scheduled while encoding the one before.
  t.same(seen.slice(0, 7), ['3', 'turn', '3', 'turn', '3', 'turn', '1']);
  await Promise.all(immediates);
});
