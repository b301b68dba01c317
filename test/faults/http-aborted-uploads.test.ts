import net from 'node:net';
import t, { type Test } from 'tap';
import { request, startService, type ServiceHandle } from '../harness/service.js';
import { rawRequest, residentBytes } from './raw-http.js';

/**
 * Clients that go away or send slowly cannot stop the service: 12 000 aborted bulk uploads with
 * a valid key leave every in-flight slot and buffer free (before, each one kept its slot for
 * good and after 10 000 every route answered 503), and 500 slow uploads hold little memory and
 * are cut at the body deadline.
 */

const ABORTED = 12_000;
const CONCURRENCY = 200;
const SLOW = 500;
const BODY_DEADLINE_MS = 3000;

let svc: ServiceHandle;

t.before(async () => {
  svc = await startService({
    env: {
      DRIS_HTTP_BODY_TIMEOUT_MS: String(BODY_DEADLINE_MS),
      // Smaller than the number of aborted uploads by far: a slot leaked by one in six shows.
      DRIS_HTTP_MAX_IN_FLIGHT: '2000',
      DRIS_RATE_LIMITS: 'standard=10000000',
    },
  });
});
t.teardown(async () => {
  await svc.dispose();
});

const items = (n: number): string => JSON.stringify({ items: Array.from({ length: n }, (_, i) => ({ tenantId: 'default', database: 'd', collection: 'c', recordId: `r-${Date.now()}-${i}`, recordPayload: { i } })) });
const bulkHead = (key: string, length: number): string =>
  `POST /api/v1/records/bulk HTTP/1.1\r\nHost: x\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;

/** Sends a head and part of the body, waits for the server to take the request, then goes away. */
function abortedUpload(port: number, key: string, i: number): Promise<void> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => s.destroy(), 2000);
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve();
    });
    s.on('connect', () => {
      s.write(bulkHead(key, 200_000) + '{"items":[' + 'x'.repeat(8 * 1024));
      // Half close with a FIN, half with a reset: uWS reports both as aborted.
      setTimeout(() => (i % 2 === 0 ? s.destroy() : s.resetAndDestroy()), 10);
    });
  });
}

async function ingestNow(t: Test, label: string): Promise<void> {
  const started = Date.now();
  const r = await request(svc, 'POST', '/api/v1/records/bulk', { key: svc.bootstrapKey, raw: items(3) });
  t.equal(r.status, 202, `${label}: bulk accepted (${r.text.slice(0, 120)})`);
  t.ok(Date.now() - started < 2000, `${label}: answered in ${Date.now() - started} ms`);
  t.equal((await request(svc, 'GET', '/api/Admin/health')).status, 200, `${label}: health 200`);
}

void t.test(`${ABORTED} aborted bulk uploads leave no slot or buffer behind`, async (t) => {
  await ingestNow(t, 'before');
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < ABORTED) await abortedUpload(svc.port, svc.bootstrapKey, next++);
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  t.equal(next, ABORTED);
  await ingestNow(t, 'after');
});

void t.test(`${SLOW} slow uploads hold little memory and are cut at the body deadline`, async (t) => {
  const before = await residentBytes(svc.pid);
  const started = Date.now();
  // 16 KiB of a declared 1 MiB, then a byte every 400 ms: never finished in time.
  const uploads = Array.from({ length: SLOW }, () =>
    rawRequest(svc.port, [bulkHead(svc.bootstrapKey, 1024 * 1024) + '{"items":[' + ' '.repeat(16 * 1024), ...Array.from({ length: 30 }, () => ' ')], {
      gapMs: 400,
      timeoutMs: BODY_DEADLINE_MS + 6000,
    }),
  );
  await new Promise((r) => setTimeout(r, 1500));
  const during = await residentBytes(svc.pid);
  t.ok(during - before < 96 * 1024 * 1024, `resident memory grew by ${Math.round((during - before) / 1024 / 1024)} MiB with ${SLOW} uploads open`);
  const answers = await Promise.all(uploads);
  const statuses = new Map<number, number>();
  for (const a of answers) statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
  t.same([...statuses], [[408, SLOW]], 'every slow upload answered 408');
  t.ok(
    answers.every((a) => a.closed && a.answeredMs >= BODY_DEADLINE_MS - 500 && a.answeredMs < BODY_DEADLINE_MS + 3000),
    `all closed within the deadline's reach (${Math.min(...answers.map((a) => a.answeredMs))}..${Math.max(...answers.map((a) => a.answeredMs))} ms)`,
  );
  t.ok(Date.now() - started < BODY_DEADLINE_MS + 7000);
  await ingestNow(t, 'after the slow uploads');
});
