import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { EmbeddedAdmissionStore } from '../../src/adapters/limits/embedded-admission-store.js';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import type { Principal } from '../../src/app/authenticator.js';
import { EventBus } from '../../src/app/event-bus.js';
import type { DomainEvent, EventType } from '../../src/app/events.js';
import { InlineHasher } from '../../src/app/inline-hasher.js';
import { IngestService } from '../../src/app/ingest-service.js';
import { LeaderLoop } from '../../src/app/leader-loop.js';
import { Verifier } from '../../src/app/verifier.js';
import type { LeaderElector, Leadership, PipelineStore } from '../../src/domain/pipeline/ports.js';
import type { EvidenceIndex, VerificationHistory } from '../../src/domain/verification/ports.js';
import type { VerificationHistoryEntry } from '../../src/domain/verification/types.js';
import { createLogger } from '../../src/util/logger.js';
import { ingestStatus } from '../../src/http/routes/records/ingest-status.js';

/** The use cases publish what they did: one event per request, per verification, per term. */

const quiet = createLogger('silent');
const principal: Principal = { keyId: 'k1', tenantId: 'acme', clientId: 'app', level: 'standard', tenants: new Set(['acme']) };

function recorded(types: EventType[]): { bus: EventBus; seen: DomainEvent[] } {
  const bus = new EventBus({ logger: quiet });
  const seen: DomainEvent[] = [];
  bus.subscribe({ name: 'test', types }, (e) => {
    seen.push(e);
  });
  return { bus, seen };
}

const body = (o: Record<string, unknown>): Uint8Array => Buffer.from(JSON.stringify(o));
const record = (recordId: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({ tenantId: 'acme', database: 'd', collection: 'c', recordId, recordPayload: { v: recordId }, ...extra });

void t.test('ingestion publishes one RecordsAccepted per request answered 202: stored and replayed records counted apart', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-ingest-events-'));
  const queue = EmbeddedQueue.open({ dir: path.join(dir, 'queue'), consumers: ['c'], maxPendingPublishes: 1000 });
  const store = await EmbeddedAdmissionStore.open({ dir: path.join(dir, 'admission') });
  t.teardown(async () => {
    await queue.close();
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { bus, seen } = recorded(['RecordsAccepted']);
  const service = new IngestService({ hasher: new InlineHasher(new JsHashingBackend()), queue, idempotency: store, idempotencyTtlMs: 86_400_000, idempotencyLeaseMs: 1000, events: bus });

  t.equal(ingestStatus(await service.ingestOne(principal, body(record('r1')), undefined, 'c1')), 202);
  t.equal(ingestStatus(await service.ingestOne(principal, body(record('r2')), 'key-2', 'c2')), 202);
  t.equal(ingestStatus(await service.ingestOne(principal, body(record('r2')), 'key-2', 'c3')), 202, 'a retry of the keyed request');
  const bulk = body({ tenantId: 'acme', records: [1, 2, 3].map((i) => ({ database: 'd', collection: 'c', recordId: `b${i}`, recordPayload: { i } })) });
  t.equal(ingestStatus(await service.ingestBulk(principal, bulk, 'bulk-1', 'c4')), 202);
  t.equal(ingestStatus(await service.ingestBulk(principal, bulk, 'bulk-1', 'c5')), 202, 'a retry of the bulk request');
  await bus.idle(5000);
  t.same(
    seen.map((e) => (e.type === 'RecordsAccepted' ? [e.kind, e.tenantId, e.count, e.replayed] : [])),
    [
      ['single', 'acme', 1, 0],
      ['single', 'acme', 1, 0],
      ['single', 'acme', 0, 1],
      ['bulk', 'acme', 3, 0],
      ['bulk', 'acme', 0, 3],
    ],
    'one event per request',
  );
});

void t.test('every verification stored in the history is published once, with its outcome', async (t) => {
  const { bus, seen } = recorded(['VerificationPerformed']);
  const stored: VerificationHistoryEntry[] = [];
  const evidence = { findRecord: () => Promise.resolve([]) } as unknown as EvidenceIndex;
  const history: VerificationHistory = {
    append: (entries) => {
      stored.push(...entries);
      return Promise.resolve();
    },
    query: () => Promise.reject(new Error('not used')),
  };
  const verifier = new Verifier(
    { hashing: new JsHashingBackend(), evidence, store: {} as PipelineStore, chain: null, pinner: null, history, events: bus, logger: quiet },
    { chainCacheMs: 1000, ipfsTimeoutMs: 1000 },
  );
  const result = await verifier.verifyRecord({ principal, correlationId: 'c1' }, { collection: 'c', recordId: 'missing' });
  t.equal(result.reasonCategory, 'not_found');
  await bus.idle(5000);
  t.equal(stored.length, 1, 'stored in the history');
  t.match(seen, [{ type: 'VerificationPerformed', mode: 'stored', tenantId: 'acme', verified: false, verificationStatus: result.verificationStatus, reasonCategory: 'not_found' }]);
  t.equal(seen.length, 1);
});

void t.test('the leader loop publishes each term begun and ended, with its epoch', async (t) => {
  const { bus, seen } = recorded(['LeadershipChanged']);
  let term: AbortController | null = null;
  let epoch = 4;
  const elector: LeaderElector = {
    tryAcquire: (): Promise<Leadership | null> => {
      if (term !== null && !term.signal.aborted) return Promise.resolve(null);
      term = new AbortController();
      epoch += 1;
      return Promise.resolve({ epoch, lost: term.signal });
    },
    resign: () => Promise.resolve(),
    check: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const loop = new LeaderLoop(elector, { start: () => Promise.resolve(), stop: () => Promise.resolve() }, { retryMs: 10 }, { events: bus, logger: quiet });
  await loop.start();
  t.equal(loop.isLeader, true);
  (term as AbortController | null)?.abort();
  const deadline = Date.now() + 5000;
  while (seen.length < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
  await loop.stop();
  await bus.idle(5000);
  t.same(
    seen.map((e) => (e.type === 'LeadershipChanged' ? [e.leading, e.epoch] : [])),
    [
      [true, 5],
      [false, 5],
      [true, 6],
      [false, 6],
    ],
    'a term lost, the next won, then given up at stop',
  );
});
