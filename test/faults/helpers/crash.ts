import type { Test } from 'tap';
import { startNats, startRedis } from '../../harness/servers.js';
import { createKey, eventually, request, startService, type ServiceHandle } from '../../harness/service.js';
import { bulkRequest, listAll, newStats, sendUntilAccepted, singleRequest, type Acked, type KeyedRequest } from './keyed-load.js';

/**
 * Idempotency after a crash (issue 14): the same key sent concurrently, the service SIGKILLed
 * within 50 ms, started again, the request sent again: resolved (its replay or its first 202)
 * within 15 s, and exactly one record per item. The default lease (10 s) is in force. In NATS
 * mode also after an indeterminate publish failure: nats-server paused (SIGSTOP) past the publish
 * acknowledgement timeout (1 s, three tries), resumed, the request sent again.
 */

const TENANT = 'acme';
const RESOLVE_WITHIN_MS = 15_000;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** How many times each of these recordIds is listed, once all are (or the deadline passed) and a moment longer. */
async function countStored(svc: ServiceHandle, apiKey: string, recordIds: readonly string[], timeoutMs: number): Promise<Map<string, number>> {
  const count = async (): Promise<Map<string, number>> => {
    const wanted = new Set(recordIds);
    const m = new Map<string, number>();
    for (const l of await listAll(svc, apiKey, TENANT)) if (wanted.has(l.recordId)) m.set(l.recordId, (m.get(l.recordId) ?? 0) + 1);
    return m;
  };
  await eventually(async () => ((await count()).size === recordIds.length ? true : undefined), timeoutMs, 250).catch(() => undefined);
  await sleep(1000);
  return count();
}

function assertOnce(t: Test, req: KeyedRequest, counts: ReadonlyMap<string, number>): void {
  t.same([...new Set(req.recordIds.map((id) => counts.get(id) ?? 0))], [1], `${req.key}: each of its ${req.recordIds.length} records stored exactly once`);
}

interface Crashed {
  svc: ServiceHandle;
  readonly apiKey: string;
  readonly requests: KeyedRequest[];
}

/**
 * For each request: eight copies at once, SIGKILL within 50 ms, restart, resend until 202. Returns
 * the running service; the caller counts the records (a NATS consumer gets back what the killed
 * process held unacknowledged only after its ack wait, so the count waits for that once, at the end).
 */
async function crashRounds(t: Test, name: string, env: Record<string, string>): Promise<Crashed> {
  const first = await startService({ env });
  const state: Crashed = { svc: first, apiKey: (await createKey(first, { tenantId: TENANT, clientId: 'app' })).apiKey, requests: [] };
  t.teardown(() => state.svc.dispose());
  const rounds = [singleRequest(TENANT, `${name}-crash-single`, 0), bulkRequest(TENANT, `${name}-crash-bulk`, 25)];
  for (const [i, req] of rounds.entries()) {
    const current = state.svc;
    const stats = newStats();
    // One attempt each: what they were answered before the kill, if anything.
    const inFlight = Array.from({ length: 8 }, () => sendUntilAccepted(() => current, state.apiKey, req, newStats(), Date.now() + 1).catch(() => null));
    await sleep(i === 0 ? 5 : 40);
    await current.kill('SIGKILL');
    const before = (await Promise.all(inFlight)).filter((a): a is Acked[] => a !== null);
    state.svc = await startService({ env, dataDir: current.dataDir });
    const from = Date.now();
    const after = await sendUntilAccepted(() => state.svc, state.apiKey, req, stats, from + RESOLVE_WITHIN_MS);
    const took = Date.now() - from;
    t.ok(after !== null, `${req.key}: resolved after the restart (${took} ms; ${before.length} of 8 answered 202 before the kill)`);
    t.ok(took <= RESOLVE_WITHIN_MS, `${req.key}: within ${RESOLVE_WITHIN_MS} ms`);
    for (const b of before) t.same(b.map((x) => x.ingestId), after?.map((x) => x.ingestId), `${req.key}: an answer from before the kill names the same records`);
    t.same(stats.unexpected, [], `${req.key}: only 202 or retryable answers`);
    state.requests.push(req);
  }
  return state;
}

/** Embedded: the same key in flight at SIGKILL, twice (a single and a bulk request). */
export async function embeddedCrash(t: Test): Promise<void> {
  const c = await crashRounds(t, 'embedded', { DRIS_RATE_LIMITS: 'standard=1000000' });
  const counts = await countStored(c.svc, c.apiKey, c.requests.flatMap((r) => r.recordIds), 30_000);
  for (const req of c.requests) assertOnce(t, req, counts);
}

/** NATS + Redis: the same key in flight at SIGKILL, then an indeterminate publish failure (nats-server paused past the ack timeout). */
export async function natsCrash(t: Test): Promise<void> {
  const nats = await startNats();
  t.teardown(async () => {
    nats.signal('SIGCONT');
    await nats.stop();
  });
  const redis = await startRedis({ durable: true });
  t.teardown(() => redis.stop());
  const c = await crashRounds(t, 'nats', { DRIS_RATE_LIMITS: 'standard=1000000', NATS_URL: nats.url, REDIS_URL: redis.url, NATS_PUBLISH_TIMEOUT_MS: '1000' });
  const svc = c.svc;

  const single = singleRequest(TENANT, 'paused-single', 0);
  const bulk = bulkRequest(TENANT, 'paused-bulk', 30);
  await nats.pause();
  const answers = await Promise.all(
    [single, bulk].map((req) => request<{ error?: string }>(svc, 'POST', req.route, { key: c.apiKey, body: req.body, headers: { 'idempotency-key': req.key } })),
  );
  t.same(
    answers.map((a) => [a.status, a.body.error]),
    [
      [504, 'timeout'],
      [504, 'timeout'],
    ],
    'both time out: whether the paused server stored them is unknown',
  );
  nats.signal('SIGCONT');
  const stats = newStats();
  for (const req of [single, bulk]) {
    const from = Date.now();
    const after = await sendUntilAccepted(() => svc, c.apiKey, req, stats, from + RESOLVE_WITHIN_MS);
    t.ok(after !== null && Date.now() - from <= RESOLVE_WITHIN_MS, `${req.key}: resolved within ${RESOLVE_WITHIN_MS} ms after resuming (${Date.now() - from} ms)`);
  }
  t.comment(`indeterminate failure: ${stats.replayed} of 2 resends answered from the message the paused server stored on resuming`);
  t.same(stats.unexpected, []);

  // The index gets the messages the killed processes held once their ack wait (60 s) ends.
  const all = [...c.requests, single, bulk];
  const counts = await countStored(svc, c.apiKey, all.flatMap((r) => r.recordIds), 90_000);
  for (const req of all) assertOnce(t, req, counts);
}
