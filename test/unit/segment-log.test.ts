import { appendFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { SegmentLog } from '../../src/adapters/storage/segment-log.js';

const payload = (i: number): Buffer => Buffer.from(`message-${i}-${'x'.repeat(i % 97)}`);

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-segment-log-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function appendAll(log: SegmentLog, from: number, to: number): Promise<number[]> {
  return Promise.all(Array.from({ length: to - from + 1 }, (_, k) => log.append(payload(from + k))));
}

async function readAll(log: SegmentLog, from: number, maxEntries: number, maxBytes?: number): Promise<{ seq: number; text: string }[]> {
  const entries = await log.read(from, maxEntries, maxBytes);
  return entries.map((e) => ({ seq: e.seq, text: e.payload.toString() }));
}

t.test('reads from the tail cache and, after a reopen, from the disk alike', async (t) => {
  const dir = tempDir(t);
  const log = SegmentLog.open(dir);
  const seqs = await appendAll(log, 1, 500);
  t.same(seqs, Array.from({ length: 500 }, (_, k) => k + 1));
  const warm = await readAll(log, 1, 1000);
  await log.close();

  const reopened = SegmentLog.open(dir);
  t.equal(reopened.lastSeq, 500);
  const cold = await readAll(reopened, 1, 1000);
  t.same(cold, warm);
  t.equal(cold.length, 500);
  t.same(cold[499], { seq: 500, text: payload(500).toString() });

  // From the middle, bounded by count and by bytes.
  const mid = await readAll(reopened, 250, 10);
  t.same(
    mid.map((e) => e.seq),
    Array.from({ length: 10 }, (_, k) => 250 + k),
  );
  t.equal(mid[0]?.text, payload(250).toString());
  const small = await reopened.read(100, 1000, 200);
  const sizes = small.map((e) => e.payload.length);
  const total = sizes.reduce((a, b) => a + b, 0);
  t.ok(small.length > 1 && total >= 200 && total - (sizes.at(-1) ?? 0) < 200, 'the read stops once the byte budget is reached');
  t.same(
    small.map((e) => e.seq),
    Array.from({ length: small.length }, (_, k) => 100 + k),
  );

  // New appends after the reopen: disk for the old, cache for the new, in one read.
  await appendAll(reopened, 501, 520);
  const mixed = await readAll(reopened, 495, 100);
  t.same(
    mixed.map((e) => e.seq),
    Array.from({ length: 26 }, (_, k) => 495 + k),
  );
  t.equal(mixed[25]?.text, payload(520).toString());
  t.same(await readAll(reopened, 521, 10), [], 'nothing beyond the durable end');
  await reopened.close();
});

t.test('a torn tail is cut on open and reads stop before it', async (t) => {
  const dir = tempDir(t);
  const log = SegmentLog.open(dir);
  await appendAll(log, 1, 20);
  await log.close();
  const file = readdirSync(dir).find((f) => f.endsWith('.seg'));
  if (file === undefined) throw new Error('no segment');
  appendFileSync(path.join(dir, file), Buffer.from([9, 9, 9, 9, 9, 9, 9, 9, 9]));
  const reopened = SegmentLog.open(dir);
  t.equal(reopened.lastSeq, 20);
  t.equal((await readAll(reopened, 1, 100)).length, 20);
  t.equal(await reopened.append(payload(21)), 21);
  t.same(
    (await readAll(reopened, 19, 100)).map((e) => e.text),
    [payload(19), payload(20), payload(21)].map(String),
  );
  await reopened.close();
});
