import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import t from 'tap';
import { EmbeddedQueue } from '../../src/adapters/queue/embedded-queue.js';
import { EmbeddedAdmissionStore } from '../../src/adapters/limits/embedded-admission-store.js';
import { JsHashingBackend } from '../../src/adapters/hashing/js-backend.js';
import { InlineHasher } from '../../src/app/inline-hasher.js';
import { IngestService } from '../../src/app/ingest-service.js';
import { recoverIdempotencyAnswers } from '../../src/app/idempotency-recovery.js';
import type { Principal } from '../../src/app/authenticator.js';
import type { DoneEntry, IdempotencyClaim, IdempotencyEntry, IdempotencyStore, ReserveOutcome } from '../../src/domain/limits/ports.js';
import type { ConsumeOptions, Delivery, NotedMessage, PublishOptions, PublishResult, RecordQueue, Subscription } from '../../src/domain/records/ports.js';
import type { BulkIngestResponse, IngestRecordResponse, OutgoingRecord } from '../../src/domain/records/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { setLogLevel } from '../../src/util/logger.js';
import { ingestStatus } from '../../src/http/routes/records/ingest-status.js';

/**
 * Ingestion with idempotency keys when the steps between acceptance and answer fail: the real
 * embedded queue and store, wrapped (behind their own ports) to fail the way a crash or a lost
 * acknowledgement would. Every retry ends with exactly one stored record per key.
 */

setLogLevel('silent');

const principal: Principal = { keyId: 'k1', tenantId: 'acme', clientId: 'app', level: 'standard', tenants: new Set(['acme']) };

/** The embedded queue, able to lose the acknowledgement of a publish it performed, or fail one outright. */
class FlakyQueue implements RecordQueue {
  loseAcks = 0;
  failNext = 0;
  constructor(readonly inner: EmbeddedQueue) {}
  get maxMessageBytes(): number {
    return this.inner.maxMessageBytes;
  }
  async publish(records: readonly OutgoingRecord[], options?: PublishOptions): Promise<PublishResult> {
    if (this.failNext > 0) {
      this.failNext -= 1;
      throw new DrisError('dependency_unavailable', 'queue write failed');
    }
    const r = await this.inner.publish(records, options);
    if (this.loseAcks > 0) {
      this.loseAcks -= 1;
      throw new DrisError('timeout', 'no acknowledgement');
    }
    return r;
  }
  notedMessages(): AsyncIterable<NotedMessage> {
    return this.inner.notedMessages();
  }
  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription {
    return this.inner.consume(options, handler);
  }
  check(): Promise<void> {
    return this.inner.check();
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  get messages(): number {
    return this.inner.positions().lastSeq;
  }
}

/** The embedded store, able to lose answers (as a crash between the queue's write and the answer's). */
class ForgetfulStore implements IdempotencyStore {
  forget = 0;
  constructor(readonly inner: EmbeddedAdmissionStore) {}
  reserveMany(claims: readonly IdempotencyClaim[], token: string, leaseMs: number): Promise<ReserveOutcome[]> {
    return this.inner.reserveMany(claims, token, leaseMs);
  }
  renew(keys: readonly string[], token: string, leaseMs: number): Promise<void> {
    return this.inner.renew(keys, token, leaseMs);
  }
  complete(key: string, entry: DoneEntry, ttlMs: number): Promise<boolean> {
    if (this.forget > 0) {
      this.forget -= 1;
      return Promise.reject(new DrisError('dependency_unavailable', 'lost'));
    }
    return this.inner.complete(key, entry, ttlMs);
  }
  release(keys: readonly string[], token: string): Promise<void> {
    return this.inner.release(keys, token);
  }
  get(key: string): Promise<IdempotencyEntry | null> {
    return this.inner.get(key);
  }
}

async function setup(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-ingest-idem-'));
  const queue = new FlakyQueue(EmbeddedQueue.open({ dir: path.join(dir, 'queue'), consumers: ['c'], maxPendingPublishes: 1000 }));
  const store = new ForgetfulStore(await EmbeddedAdmissionStore.open({ dir: path.join(dir, 'admission') }));
  const service = new IngestService({ hasher: new InlineHasher(new JsHashingBackend()), queue, idempotency: store, idempotencyTtlMs: 86_400_000, idempotencyLeaseMs: 1000 });
  t.teardown(async () => {
    await queue.close();
    await store.inner.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { dir, queue, store, service };
}

const body = (o: Record<string, unknown>): Uint8Array => Buffer.from(JSON.stringify(o));
const single = (recordId: string, payload: unknown = { v: 1 }, extra: Record<string, unknown> = {}): Uint8Array =>
  body({ tenantId: 'acme', database: 'd', collection: 'c', recordId, recordPayload: payload, ...extra });

async function codeOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'resolved';
  } catch (err) {
    return err instanceof DrisError ? err.code : 'not a DrisError';
  }
}

t.test('an answer lost after the record was stored: the retry replays the stored record', async (t) => {
  const { queue, store, service } = await setup(t);
  store.forget = 1;
  const first = await service.ingestOne(principal, single('r1'), 'key-1', 'c1');
  t.equal(ingestStatus(first), 202, 'the record is durable: 202 even though its answer was not stored');
  const again = await service.ingestOne(principal, single('r1'), 'key-1', 'c2');
  t.equal(ingestStatus(again), 202);
  t.equal(again.body.idempotencyReplayed, true);
  t.equal(again.body.ingestId, first.body.ingestId, 'the same record');
  t.equal(again.body.salt, first.body.salt);
  t.equal(queue.messages, 1, 'one message');
  const third = await service.ingestOne(principal, single('r1'), 'key-1', 'c3');
  t.equal(third.body.ingestId, first.body.ingestId, 'answered from the store now');
});

t.test('a lost acknowledgement (indeterminate failure): the retry finds the record, nothing stored twice', async (t) => {
  const { queue, service } = await setup(t);
  queue.loseAcks = 1;
  t.equal(await codeOf(service.ingestOne(principal, single('r2'), 'key-2', 'c1')), 'timeout');
  const retry = await service.ingestOne(principal, single('r2'), 'key-2', 'c2');
  t.equal(ingestStatus(retry), 202);
  t.equal(retry.body.idempotencyReplayed, true, 'the record of the failed attempt');
  t.equal(queue.messages, 1, 'one message');
  // A different request under the key now conflicts, even though no answer had been stored first.
  t.equal(await codeOf(service.ingestOne(principal, single('r2', { v: 2 }), 'key-2', 'c3')), 'idempotency_conflict');
});

t.test('a different request finding the key bound only by the queue conflicts, and the key keeps the original', async (t) => {
  const { queue, store, service } = await setup(t);
  store.forget = 1;
  const first = await service.ingestOne(principal, single('r3'), 'key-3', 'c1');
  t.equal(await codeOf(service.ingestOne(principal, single('r3', { other: true }), 'key-3', 'c2')), 'idempotency_conflict');
  const replay = await service.ingestOne(principal, single('r3'), 'key-3', 'c3');
  t.equal(replay.body.ingestId, first.body.ingestId);
  t.equal(queue.messages, 1);
});

t.test('a failed publish frees the key at once; the retry stores the record', async (t) => {
  const { queue, service } = await setup(t);
  queue.failNext = 1;
  t.equal(await codeOf(service.ingestOne(principal, single('r4'), 'key-4', 'c1')), 'dependency_unavailable');
  const retry = await service.ingestOne(principal, single('r4'), 'key-4', 'c2');
  t.equal(retry.body.idempotencyReplayed, false);
  t.equal(queue.messages, 1);
});

t.test('concurrent requests with one key: one record, every answer names it', async (t) => {
  const { queue, service } = await setup(t);
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => service.ingestOne(principal, single('r5'), 'key-5', `c${i}`)));
  t.equal(new Set(answers.map((a) => a.body.ingestId)).size, 1);
  t.equal(answers.filter((a) => !a.body.idempotencyReplayed).length, 1);
  t.equal(queue.messages, 1);
});

t.test('start-up recovery completes keys whose records the queue holds', async (t) => {
  const { queue, store, service } = await setup(t);
  store.forget = 2;
  const a = await service.ingestOne(principal, single('r6'), 'key-6', 'c1');
  await service.ingestOne(principal, single('r7'), 'key-7', 'c1');
  t.equal(await store.get('idem:acme:key-6'), null, 'no answer stored');
  t.equal(await recoverIdempotencyAnswers(queue, store, 86_400_000), 2, 'two answers recovered');
  const entry = await store.get('idem:acme:key-6');
  t.equal(entry?.state, 'done');
  t.equal((JSON.parse(entry?.state === 'done' ? entry.body : '{}') as IngestRecordResponse).ingestId, a.body.ingestId);
  t.equal(await recoverIdempotencyAnswers(queue, store, 86_400_000), 0, 'nothing left to recover');
});

const bulkBody = (n: number, keyOf?: (i: number) => string | undefined): Uint8Array =>
  body({
    tenantId: 'acme',
    records: Array.from({ length: n }, (_, i) => ({ database: 'd', collection: 'c', recordId: `b${i}`, recordPayload: { i, pad: 'x'.repeat(2000) }, ...(keyOf?.(i) === undefined ? {} : { idempotencyKey: keyOf(i) }) })),
  });

t.test('bulk under a key: parts lost acknowledgement and answer, the retry is answered whole from the stored parts', async (t) => {
  const { queue, service } = await setup(t);
  // Records of about 3 KiB in 8 MiB parts: 3000 of them would make 2 parts; 1000 make one.
  queue.loseAcks = 1;
  t.equal(await codeOf(service.ingestBulk(principal, bulkBody(300), 'bulk-1', 'c1')), 'timeout');
  const retry = await service.ingestBulk(principal, bulkBody(300), 'bulk-1', 'c2');
  t.equal(ingestStatus(retry), 202);
  t.equal(retry.body.accepted, 300);
  t.ok(retry.body.items.every((i) => i.idempotencyReplayed), 'every item from the stored part');
  t.same(retry.body.items.map((i) => i.index), Array.from({ length: 300 }, (_, i) => i));
  t.equal(queue.messages, 1, 'one message');
  const replay = await service.ingestBulk(principal, bulkBody(300), 'bulk-1', 'c3');
  t.same(replay.body, retry.body, 'the stored answer from now on');
  t.equal(await codeOf(service.ingestBulk(principal, bulkBody(301), 'bulk-1', 'c4')), 'idempotency_conflict');
});

t.test('bulk with item keys: one message per keyed item, repeats inside a request share the first outcome', async (t) => {
  const { queue, store, service } = await setup(t);
  store.forget = 3;
  const item = (i: number, key?: string): Record<string, unknown> => ({ database: 'd', collection: 'c', recordId: `b${i}`, recordPayload: { i }, ...(key === undefined ? {} : { idempotencyKey: key }) });
  // Item 3 repeats item 0 exactly; item 4 reuses item 1's key for another record.
  const request = body({ tenantId: 'acme', records: [item(0, 'k0'), item(1, 'k1'), item(2, 'k2'), item(0, 'k0'), item(4, 'k1'), item(5), item(6)] });
  const first = await service.ingestBulk(principal, request, undefined, 'c1');
  t.equal(first.body.accepted, 6);
  t.same(first.body.rejected.map((r) => [r.index, r.error]), [[4, 'idempotency_conflict']]);
  t.equal(first.body.items.find((i) => i.index === 3)?.ingestId, first.body.items[0]?.ingestId, 'the repeat names the same record');
  t.equal(first.body.items.find((i) => i.index === 3)?.idempotencyReplayed, true);
  t.equal(queue.messages, 4, 'three keyed messages and one of the unkeyed items');
  // Three answers were lost: the keys are found through their messages.
  const again: BulkIngestResponse = (await service.ingestBulk(principal, request, undefined, 'c2')).body;
  for (const i of [0, 1, 2, 3]) t.equal(again.items[i]?.ingestId, first.body.items[i]?.ingestId, `keyed item ${i} is the stored record`);
  for (const i of [0, 1, 2, 3]) t.equal(again.items[i]?.idempotencyReplayed, true);
  t.not(again.items[4]?.ingestId, first.body.items[4]?.ingestId, 'unkeyed items are new records');
  t.equal(queue.messages, 5, 'only the unkeyed items were stored again');
});

t.test('bulk without a key: items whose message failed are reported as not stored', async (t) => {
  const { queue, service } = await setup(t);
  queue.failNext = 1;
  const keyOf = (i: number): string | undefined => (i === 0 ? 'solo' : undefined);
  // The unkeyed part is published first and fails; the keyed item's own message is stored.
  const r = await service.ingestBulk(principal, bulkBody(3, keyOf), undefined, 'c1');
  t.equal(ingestStatus(r), 202);
  t.same(r.body.items.map((i) => i.index), [0]);
  t.same(r.body.rejected.map((x) => [x.index, x.error]), [
    [1, 'dependency_unavailable'],
    [2, 'dependency_unavailable'],
  ]);
  t.equal(queue.messages, 1);
  queue.failNext = 5;
  t.equal(await codeOf(service.ingestBulk(principal, bulkBody(2), undefined, 'c2')), 'dependency_unavailable', 'nothing stored: an error, not a 202');
});
