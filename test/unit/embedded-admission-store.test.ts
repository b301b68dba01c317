import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedAdmissionStore } from '../../src/adapters/limits/embedded-admission-store.js';

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

t.test('idempotency: one reservation, replay survives a restart, release frees', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-adm-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  let s = await EmbeddedAdmissionStore.open({ dir });
  const outcomes = await Promise.all(Array.from({ length: 50 }, () => s.reserve('key', 'fp', 60_000)));
  t.equal(outcomes.filter((o) => o.reserved).length, 1);
  t.same(outcomes.find((o) => !o.reserved), { reserved: false, entry: { state: 'pending', fingerprint: 'fp' } });
  await s.complete('key', { state: 'done', fingerprint: 'fp', status: 202, body: '{"a":1}' }, 60_000);
  await s.close();
  s = await EmbeddedAdmissionStore.open({ dir });
  t.same(await s.get('key'), { state: 'done', fingerprint: 'fp', status: 202, body: '{"a":1}' });
  t.same(await s.reserve('key', 'other', 60_000), { reserved: false, entry: { state: 'done', fingerprint: 'fp', status: 202, body: '{"a":1}' } });
  t.same(await s.reserve('k2', 'fp2', 60_000), { reserved: true });
  await s.release('k2', 'not-mine');
  t.same(await s.get('k2'), { state: 'pending', fingerprint: 'fp2' });
  await s.release('k2', 'fp2');
  t.equal(await s.get('k2'), null);
  await s.complete('short', { state: 'done', fingerprint: 'f', status: 202, body: '{}' }, 1);
  await new Promise((r) => setTimeout(r, 5));
  t.equal(await s.get('short'), null, 'expired');
  await s.close();
});
