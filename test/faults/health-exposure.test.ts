import { createServer } from 'node:net';
import t from 'tap';
import { adminRequest, eventually, request, startService, type ServiceHandle } from '../harness/service.js';

/**
 * A dependency down (IPFS on a port nobody listens on, configured with credentials in its URL):
 * the unauthenticated health answer says degraded with component statuses only, never a URL, an
 * address or an error text, and carries Retry-After; concurrent callers get one shared report;
 * the detailed report on the administration listener says which component and why (a code).
 * No log line of the whole run, the start-up configuration and the failed anchoring attempts
 * included, holds the credentials.
 */

const PASSWORD = 'kubo-s3cret-pw';
const QUERY_TOKEN = 'qt-0123456789abcdef';

async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const address = srv.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

interface PublicHealth {
  status: string;
  dependencies: Record<string, Record<string, unknown>>;
}

let svc: ServiceHandle;
let port: number;

t.before(async () => {
  port = await closedPort();
  svc = await startService({
    env: {
      IPFS_API_URL: `http://ops:${PASSWORD}@127.0.0.1:${port}/?token=${QUERY_TOKEN}`,
      DRIS_BATCH_MAX_RECORDS: '1',
      DRIS_BATCH_MAX_WAIT_MS: '50',
      DRIS_ANCHOR_RETRY_BASE_MS: '50',
      DRIS_ANCHOR_RETRY_MAX_MS: '200',
      DRIS_ANCHOR_MAX_ATTEMPTS: '3',
    },
  });
});
t.teardown(async () => {
  await svc.dispose();
});

t.test('the public health answer: degraded, statuses only, Retry-After, one shared report', async (t) => {
  const answers = await Promise.all(Array.from({ length: 30 }, () => request<PublicHealth>(svc, 'GET', '/api/Admin/health')));
  for (const a of answers) {
    t.equal(a.status, 503);
    t.equal(a.headers.get('retry-after'), '1');
  }
  t.equal(new Set(answers.map((a) => a.text)).size, 1, 'thirty concurrent callers, one report');
  const body = answers[0]?.body as PublicHealth;
  t.equal(body.status, 'degraded');
  t.same(body.dependencies['ipfs'], { status: 'down' });
  for (const [name, c] of Object.entries(body.dependencies)) t.same(Object.keys(c), ['status'], `${name}: the status only`);
  const text = answers[0]?.text ?? '';
  for (const leak of ['://', '127.0.0.1', String(port), PASSWORD, QUERY_TOKEN, 'ECONNREFUSED', 'fetch failed', 'kubo', 'unavailable']) {
    t.notOk(text.includes(leak), `no ${leak}`);
  }

  const detail = await adminRequest<{ dependencies: Record<string, { status: string; adapter: string; error?: string }> }>(svc, 'GET', '/admin/v1/health');
  t.equal(detail.status, 503);
  t.match(detail.body.dependencies['ipfs'], { status: 'down', adapter: 'kubo', error: /^[a-z_]+$/ });
  t.notOk(detail.text.includes(PASSWORD), 'the detail holds codes, not credentials');
});

t.test('no log line holds the credentials, while the anchoring fails on the dependency', async (t) => {
  const r = await request(svc, 'POST', '/api/v1/records', {
    key: svc.bootstrapKey,
    body: { tenantId: 'default', database: 'd', collection: 'c', recordId: 'r1', recordPayload: { a: 1 } },
  });
  t.equal(r.status, 202);
  // The record's batch is tried against the unreachable IPFS and logged as failing.
  await eventually(async () => (svc.logs.some((l) => /"level":(40|50)/.test(l) && /anchor|pin|ipfs/i.test(l)) ? true : undefined), 30_000, 100);
  const starting = svc.logs.find((l) => l.includes('"msg":"starting"')) ?? '';
  t.match(starting, /kubo http:\/\/\*\*\*:\*\*\*@127\.0\.0\.1/, 'the start-up line names the endpoint without its credentials');
  const all = svc.logs.join('\n');
  t.notOk(all.includes(PASSWORD), 'no password');
  t.notOk(all.includes(QUERY_TOKEN), 'no query token');
});
