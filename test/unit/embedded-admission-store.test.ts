import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedAdmissionStore } from '../../src/adapters/limits/embedded-admission-store.js';
import { idempotencyContract } from '../harness/idempotency-contract.js';

t.test('fixed windows: exactly the limit, then denied until the window ends', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const s = await EmbeddedAdmissionStore.open({ dir });
  const now = 10_000_500;
  const decisions = [];
  for (let i = 0; i < 4; i++) decisions.push(await s.take('k', 3, 1000, now));
  t.same(decisions.map((d) => [d.allowed, d.remaining]), [
    [true, 2],
    [true, 1],
    [true, 0],
    [false, 0],
  ]);
  t.equal(decisions[0]?.resetAtMs, 10_001_000);
  t.equal((await s.take('k', 3, 1000, 10_001_000)).allowed, true, 'next window');
  t.equal((await s.take('other', 3, 1000, now)).remaining, 2, 'buckets are separate');
  await s.close();
});

idempotencyContract(t, 'embedded', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  const s = await EmbeddedAdmissionStore.open({ dir });
  t.teardown(async () => {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return s;
});

const done = (i: number) => ({ state: 'done', fingerprint: `fp-${i}`, status: 202, body: `{"n":${i}}` }) as const;

t.test('answers survive a restart; pending leases do not (a crash frees them at once)', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let s = await EmbeddedAdmissionStore.open({ dir });
  await s.reserveMany([{ key: 'a', fingerprint: 'fp-1' }, { key: 'b', fingerprint: 'fp-2' }], 'tok', 60_000);
  t.equal(await s.complete('a', done(1), 60_000), true);
  await s.close();
  s = await EmbeddedAdmissionStore.open({ dir });
  t.same(await s.get('a'), done(1));
  t.equal(await s.get('b'), null);
  await s.close();
});

t.test('an answer is visible only once its write is durable', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const s = await EmbeddedAdmissionStore.open({ dir });
  await s.reserveMany([{ key: 'a', fingerprint: 'fp-1' }], 'tok', 60_000);
  const writing = s.complete('a', done(1), 60_000);
  // The append is group-committed on a later turn: until it is durable, the lease is what shows.
  t.same(await s.get('a'), { state: 'pending', fingerprint: 'fp-1', token: 'tok' });
  t.equal(await writing, true);
  t.same(await s.get('a'), done(1));
  await s.close();
});

t.test('compaction keeps every live answer, those completed during it included, and is crash-safe', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let s = await EmbeddedAdmissionStore.open({ dir, compactEveryMs: 3_600_000 });
  for (let i = 0; i < 200; i++) await s.complete(`k${i}`, done(i), 60_000);
  await s.complete('expiring', done(999), 30);
  await new Promise((r) => setTimeout(r, 60));
  // A compaction with completions racing it, as the hourly timer would start it.
  const compaction = (s as unknown as { compact(): Promise<void> }).compact();
  const racing = Array.from({ length: 200 }, (_, i) => s.complete(`late${i}`, done(1000 + i), 60_000));
  await Promise.all([compaction, ...racing]);
  await s.close();
  t.same(readdirSync(dir).sort(), ['gen-2'], 'one generation left (start-up compacted once, then this run)');

  s = await EmbeddedAdmissionStore.open({ dir });
  let kept = 0;
  for (let i = 0; i < 200; i++) if ((await s.get(`k${i}`))?.state === 'done') kept += 1;
  let late = 0;
  for (let i = 0; i < 200; i++) if ((await s.get(`late${i}`))?.state === 'done') late += 1;
  t.equal(kept, 200, 'answers from before the compaction');
  t.equal(late, 200, 'answers completed while it ran');
  t.equal(await s.get('expiring'), null, 'expired answers are dropped');
  await s.close();

  // A crash while the next generation was being written leaves it under its temporary name: the
  // current generation is still whole and the partial one is discarded at start.
  const current = readdirSync(dir).find((d) => /^gen-\d+$/.test(d)) as string;
  const partial = path.join(dir, `gen-${Number(current.slice(4)) + 1}.tmp`);
  mkdirSync(partial);
  writeFileSync(path.join(partial, '0000000000000001.seg'), Buffer.from('torn'));
  s = await EmbeddedAdmissionStore.open({ dir });
  t.same(await s.get('k7'), done(7));
  t.same(await s.get('late7'), done(1007));
  t.notOk(readdirSync(dir).some((d) => d.endsWith('.tmp')), 'the partial generation is gone');
  await s.close();
});
