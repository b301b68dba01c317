import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { adminRequest, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * A hostile client guessing the admin token: the administration listener answers 401 up to the
 * budget, then 429 with Retry-After (the right token included) for the rest of the window; every
 * failure is logged with the address and never with what was sent; the public API is not
 * affected. A short admin token stops start-up with a message that names the variable or file
 * and not the token.
 */

const BUDGET = 5;
const GUESSES = 40;

interface ErrBody {
  error: string;
  message: string;
  details: unknown[];
  status?: number;
  retryAfter?: number;
  resetTime?: string;
}

let svc: ServiceHandle;

t.before(async () => {
  svc = await startService({ env: { DRIS_ADMIN_MAX_FAILURES: String(BUDGET) } });
});
t.teardown(async () => {
  await svc.dispose();
});

t.test('guessing is throttled, logged without the guesses, and harmless to the public API', async (t) => {
  const guesses = Array.from({ length: GUESSES }, (_, i) => `guess-${i}-${'z'.repeat(i)}`);
  const statuses: number[] = [];
  const answers: { status: number; retryAfter: string | null; body: ErrBody }[] = [];
  for (const g of guesses) {
    const r = await request<ErrBody>({ url: svc.adminUrl }, 'POST', '/admin/v1/keys', { body: { tenantId: 'evil', clientId: 'x' }, headers: { authorization: `Bearer ${g}` } });
    statuses.push(r.status);
    answers.push({ status: r.status, retryAfter: r.headers.get('retry-after'), body: r.body });
  }
  t.same(statuses.slice(0, BUDGET), Array(BUDGET).fill(401), 'the budget answers 401');
  t.ok(answers.slice(0, BUDGET).every((a) => a.body.error === 'admin_unauthorized'));
  t.same(statuses.slice(BUDGET), Array(GUESSES - BUDGET).fill(429), 'then 429 for the rest of the window');
  for (const a of answers.slice(BUDGET)) {
    t.match(a.retryAfter, /^\d+$/);
    t.ok(Number(a.retryAfter) >= 1 && Number(a.retryAfter) <= 60);
    t.match(a.body, { status: 429, error: 'rate_limit_exceeded', retryAfter: Number(a.retryAfter) });
    t.ok(Array.isArray(a.body.details));
    t.ok(Number.isFinite(Date.parse(a.body.resetTime ?? '')));
  }
  const right = await adminRequest(svc, 'GET', '/admin/v1/keys');
  t.equal(right.status, 429, 'the right token too: the budget bounds guessing');

  // The public listener does not serve administration at all, and keeps working.
  t.equal((await request(svc, 'GET', '/admin/v1/keys', { headers: { authorization: `Bearer ${svc.adminToken}` } })).status, 404);
  const ingest = await request(svc, 'POST', '/api/v1/records', {
    key: svc.bootstrapKey,
    body: { tenantId: 'default', database: 'd', collection: 'c', recordId: 'r1', recordPayload: { a: 1 } },
  });
  t.equal(ingest.status, 202);
  t.equal((await request(svc, 'GET', '/api/Admin/health')).status, 200);

  const failures = svc.logs.filter((l) => l.includes('admin authentication failed'));
  t.equal(failures.length, BUDGET, 'each failure logged once');
  for (const line of failures) {
    const rec = JSON.parse(line) as { remote?: string; level?: number };
    t.match(rec.remote, /\S/, 'with the remote address');
    t.equal(rec.level, 40, 'at warn');
  }
  const all = svc.logs.join('\n');
  t.notOk(guesses.some((g) => all.includes(g)), 'no guess appears in the logs');
  t.notOk(all.includes(svc.adminToken), 'nor the token');
});

t.test('a short admin token stops start-up, naming where it came from and not the token', async (t) => {
  const short = 'too-short-admin-token';
  const fromEnv = await startService({ env: { DRIS_ADMIN_TOKEN: short } }).then(
    async (s) => {
      await s.dispose();
      return null;
    },
    (err: unknown) => String(err),
  );
  t.ok(fromEnv !== null, 'the service did not start');
  t.match(fromEnv, /DRIS_ADMIN_TOKEN must be at least 32 bytes/);
  t.notOk(fromEnv?.includes(short), 'the token is not printed');

  const dataDir = await mkdtemp(path.join(tmpdir(), 'dris-short-token-'));
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  await writeFile(path.join(dataDir, 'admin-token'), `${short}\n`, { mode: 0o600 });
  const fromFile = await startService({ dataDir }).then(
    async (s) => {
      await s.stop();
      return null;
    },
    (err: unknown) => String(err),
  );
  t.ok(fromFile !== null, 'the service did not start');
  t.match(fromFile, /admin-token is shorter than 32 bytes/);
  t.notOk(fromFile?.includes(short), 'the token is not printed');
});
