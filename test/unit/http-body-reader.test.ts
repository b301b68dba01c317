import t from 'tap';
import { BodyDeadlines, BodyReader, ByteBudget, type BodySource } from '../../src/http/body-reader.js';

/** A stand-in for uWS's HttpResponse: the test pushes the chunks. */
class FakeSource implements BodySource {
  private handler: ((chunk: ArrayBuffer, isLast: boolean) => void) | null = null;
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): void {
    this.handler = handler;
  }
  push(text: string, isLast: boolean): void {
    const bytes = Buffer.from(text);
    // uWS lends its own memory: the reader must copy, so the test overwrites it afterwards.
    const ab = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    this.handler?.(ab, isLast);
    new Uint8Array(ab).fill(0x21);
  }
}

void t.test('a body read to its end, copied out of the lent chunks, holds budget until released', async (t) => {
  const budget = new ByteBudget(100);
  const deadlines = new BodyDeadlines(1000);
  t.teardown(() => deadlines.close());
  const src = new FakeSource();
  const r = new BodyReader(src, 50, budget, deadlines);
  src.push('{"a":', false);
  src.push('1}', true);
  const out = await r.result;
  t.ok(Buffer.isBuffer(out));
  t.equal(out.toString(), '{"a":1}');
  t.ok(r.complete);
  t.equal(budget.inUse, 7);
  t.equal(deadlines.size, 0);
  r.release();
  t.equal(budget.inUse, 0);
});

void t.test('an aborted read gives its buffers and budget back at once', async (t) => {
  const budget = new ByteBudget(100);
  const deadlines = new BodyDeadlines(1000);
  t.teardown(() => deadlines.close());
  const src = new FakeSource();
  const r = new BodyReader(src, 50, budget, deadlines);
  src.push('x'.repeat(30), false);
  t.equal(budget.inUse, 30);
  r.abort();
  t.equal(await r.result, 'aborted');
  t.equal(budget.inUse, 0);
  t.equal(deadlines.size, 0);
  src.push('late', true);
  t.equal(budget.inUse, 0, 'chunks after the end are ignored');
  r.release();
  t.equal(budget.inUse, 0, 'release after a failure gives nothing twice');
});

void t.test('too large and over budget fail without keeping what arrived', async (t) => {
  const deadlines = new BodyDeadlines(1000);
  t.teardown(() => deadlines.close());
  const budget = new ByteBudget(40);
  const a = new FakeSource();
  const big = new BodyReader(a, 10, budget, deadlines);
  a.push('x'.repeat(8), false);
  a.push('x'.repeat(8), false);
  t.equal(await big.result, 'too_large');
  t.equal(budget.inUse, 0);

  const b = new FakeSource();
  const first = new BodyReader(b, 100, budget, deadlines);
  b.push('x'.repeat(30), false);
  const c = new FakeSource();
  const second = new BodyReader(c, 100, budget, deadlines);
  c.push('x'.repeat(20), false);
  t.equal(await second.result, 'over_budget');
  t.equal(budget.inUse, 30, 'the first read keeps its share');
  b.push('y', true);
  t.equal(((await first.result) as Buffer).length, 31);
  first.release();
  t.equal(budget.inUse, 0);
});

void t.test('a read past its deadline times out on the next sweep', async (t) => {
  let now = 1000;
  const deadlines = new BodyDeadlines(500, () => now);
  t.teardown(() => deadlines.close());
  const budget = new ByteBudget(100);
  const src = new FakeSource();
  const r = new BodyReader(src, 50, budget, deadlines);
  src.push('abc', false);
  now = 1499;
  deadlines.sweep();
  t.equal(deadlines.size, 1, 'not yet');
  now = 1500;
  deadlines.sweep();
  t.equal(await r.result, 'timeout');
  t.equal(budget.inUse, 0);
  t.equal(deadlines.size, 0);
});
