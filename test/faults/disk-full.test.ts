import { rmSync } from 'node:fs';
import path from 'node:path';
import t, { type Test } from 'tap';
import { adminRequest, eventually, request, startService, type ServiceHandle } from '../harness/service.js';
import { fill, freeBytes, isRoot, mountTmpfs } from './helpers/disk.js';
import { awaitReconciled, isErrorBody, killTree, Ledger, type Answer } from './helpers/records.js';

/**
 * The data directory on a small tmpfs that really fills up. While it is full, ingestion answers
 * 503 with Retry-After and the error body, never 202, and the process stays up with its health
 * degraded; once space is freed, ingestion resumes by itself. After a SIGKILL and a restart,
 * every record ever answered 202 is listed exactly once with its hash.
 *
 * First run: no free-space floor (DRIS_MIN_FREE_BYTES=0), so the writes themselves meet ENOSPC.
 * Second run: a floor, so ingestion stops before the disk is full.
 */

const SIZE_MIB = 64;
const MiB = 1024 * 1024;

interface Health {
  status: string;
  dependencies: Record<string, { status: string; error?: string }>;
}

async function health(svc: ServiceHandle): Promise<{ code: number; body: Health }> {
  const r = await request<Health>(svc, 'GET', '/api/Admin/health');
  return { code: r.status, body: r.body };
}

/** The detailed report of the admin listener: the public one carries statuses only, no codes. */
async function detailedHealth(svc: ServiceHandle): Promise<{ code: number; body: Health }> {
  const r = await adminRequest<Health>(svc, 'GET', '/admin/v1/health');
  return { code: r.status, body: r.body };
}

/** Ingests (single and bulk in turn) until `enough` consecutive answers were not 202; bounded. */
async function ingestUntilRefused(ledger: Ledger, svc: ServiceHandle, key: string, enough: number): Promise<Answer[]> {
  const refused: Answer[] = [];
  let consecutive = 0;
  const deadline = Date.now() + 30_000;
  for (let i = 0; i < 3000 && Date.now() < deadline; i++) {
    const a = i % 2 === 0 ? await ledger.single(svc, key) : await ledger.bulk(svc, key, 10);
    if (a === null) break;
    if (a.status === 202) {
      consecutive = 0;
      continue;
    }
    refused.push(a);
    consecutive += 1;
    if (consecutive >= enough && refused.some((r) => r.kind === 'single') && refused.some((r) => r.kind === 'bulk')) break;
  }
  return refused;
}

function checkRefusals(t: Test, refused: readonly Answer[], codes: readonly string[], label: string): void {
  t.ok(refused.length >= 10, `${label}: ingestion stopped answering 202 (${refused.length} refusals)`);
  t.ok(
    refused.some((a) => a.kind === 'single') && refused.some((a) => a.kind === 'bulk'),
    `${label}: single and bulk requests both refused`,
  );
  const bad = refused.filter((a) => (a.status !== 503 && a.status !== 507) || !isErrorBody(a.body) || !codes.includes(a.body.error) || a.retryAfter === null || !(Number(a.retryAfter) >= 1));
  t.same(
    bad.map((a) => [a.status, a.retryAfter, a.body]),
    [],
    `${label}: every refusal is a 503/507 with Retry-After and the error body (${codes.join(' or ')})`,
  );
}

async function awaitAccepting(ledger: Ledger, svc: ServiceHandle, key: string): Promise<void> {
  await eventually(
    async () => {
      const a = await ledger.single(svc, key);
      return a?.status === 202 ? true : undefined;
    },
    20_000,
    250,
  );
}

t.test('a full disk: refused honestly, resumed by itself, nothing answered 202 lost', { skip: isRoot() ? false : 'needs root to mount a tmpfs (CI runs as root)' }, async (t) => {
  const disk = mountTmpfs(SIZE_MIB);
  let svc: ServiceHandle | null = null;
  t.teardown(async () => {
    // SIGTERM: the service stops its anvil too.
    await svc?.stop();
    disk.unmount();
  });
  // Each SIGKILL below takes the service's anvil with it, as a machine crash would: anvils left
  // by a SIGKILLed service were seen still running after these runs.
  const dataDir = path.join(disk.dir, 'data');
  const filler = path.join(disk.dir, 'filler');
  const base = { DRIS_RATE_LIMITS: 'standard=100000000', DRIS_BATCH_MAX_WAIT_MS: '1000', DRIS_LOG_LEVEL: 'info' };
  const ledger = new Ledger('default', 'diskfull');

  // --- run 1: no floor; the disk fills up under the writes themselves.
  svc = await startService({ dataDir, env: { ...base, DRIS_MIN_FREE_BYTES: '0' } });
  const key = svc.bootstrapKey;
  for (let i = 0; i < 20; i++) await ledger.single(svc, key);
  for (let i = 0; i < 3; i++) await ledger.bulk(svc, key, 20);
  t.equal(ledger.acked.size, 80, 'before: everything accepted');

  const filled = fill(filler);
  t.ok(filled > 16 * MiB, `the disk is full (${Math.round(filled / MiB)} MiB of filler)`);
  const refused = await ingestUntilRefused(ledger, svc, key, 10);
  checkRefusals(t, refused, ['storage_full', 'dependency_unavailable', 'overloaded'], 'full disk');
  t.ok(
    refused.some((a) => isErrorBody(a.body) && a.body.error === 'storage_full'),
    'ENOSPC is answered storage_full',
  );
  t.equal(ledger.unanswered, 0, 'every request was answered: the process stays up');
  const degraded = await health(svc);
  t.equal(degraded.code, 503, 'health answers 503 while the disk is full');
  t.equal(degraded.body.status, 'degraded');
  t.equal(degraded.body.dependencies['storage']?.status, 'down', 'the storage probe says why');

  rmSync(filler);
  await awaitAccepting(ledger, svc, key);
  const before = ledger.acked.size;
  for (let i = 0; i < 20; i++) await ledger.single(svc, key);
  for (let i = 0; i < 3; i++) await ledger.bulk(svc, key, 20);
  t.equal(ledger.acked.size, before + 80, 'after the space is freed, ingestion resumed by itself');
  await eventually(async () => ((await health(svc as ServiceHandle)).body.dependencies['storage']?.status === 'ok' ? true : undefined), 20_000, 250);
  t.pass('the storage probe is ok again');

  // --- run 2, after a SIGKILL: a free-space floor stops ingestion before the disk is full.
  await killTree(svc);
  const floor = 16 * MiB;
  svc = await startService({ dataDir, env: { ...base, DRIS_MIN_FREE_BYTES: String(floor) } });
  await awaitAccepting(ledger, svc, key);
  fill(filler, floor / 2);
  t.ok(freeBytes(disk.dir) < floor, 'below the floor');
  const belowFloor = await ingestUntilRefused(ledger, svc, key, 10);
  checkRefusals(t, belowFloor, ['storage_full'], 'below the floor');
  t.equal((await detailedHealth(svc)).body.dependencies['storage']?.error, 'storage_full');
  rmSync(filler);
  await awaitAccepting(ledger, svc, key);
  for (let i = 0; i < 3; i++) await ledger.bulk(svc, key, 20);
  t.equal(ledger.unanswered, 0, 'every request was answered');

  // --- and after another SIGKILL, everything answered 202 is there, once, with its hash.
  await killTree(svc);
  svc = await startService({ dataDir, env: base });
  const rec = await awaitReconciled(svc, key, ledger, 90_000);
  t.same(rec.missing, [], `none of the ${ledger.acked.size} records answered 202 is missing`);
  t.same(rec.duplicated, [], 'none is listed twice');
  t.same(rec.wrongHash, [], 'each has the hash it was answered with');
  t.comment(`answered 202: ${ledger.acked.size}; refused while full: ${refused.length}; below the floor: ${belowFloor.length}; listed: ${rec.listed}`);
});
