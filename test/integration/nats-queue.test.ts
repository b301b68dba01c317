import t from 'tap';
import { randomUUID } from 'node:crypto';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { decodeSubjectToken, encodeSubjectToken, NatsQueue, recordSubject, type NatsQueueOptions } from '../../src/adapters/queue/nats-queue.js';
import { DrisError } from '../../src/errors/dris-error.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { consumed, queued, type QueuedRecord } from '../harness/records.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import { freePort, startNats, type NatsTestServer } from '../harness/servers.js';
import { setLogLevel } from '../../src/util/logger.js';

setLogLevel('silent');

function record(i: number, tenantId = 'acme', clientId = 'app'): QueuedRecord {
  return queued({
    hashScheme: 'dris-v1',
    tenantId,
    clientId,
    database: 'db',
    collection: 'orders',
    recordId: `r-${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: 'a'.repeat(64),
    salt: 'b'.repeat(32),
    ingestId: `ing-${randomUUID()}`,
    keyId: 'k1',
    recordHash: 'c'.repeat(64),
    acceptedAt: new Date(0).toISOString(),
    payload: JSON.stringify({ i }),
    idempotencyKey: null,
    correlationId: 'corr',
  });
}

/** Guards against a hang, not a timing assertion: fails only if the condition never holds. */
async function waitFor(cond: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The parts of a tap test the helpers use. */
interface Teardown {
  teardown(fn: () => unknown): void;
}
interface Asserts {
  ok(value: unknown, message: string): boolean;
  fail(message: string): boolean;
}

async function server(t: Teardown, options: Parameters<typeof startNats>[0] = {}): Promise<NatsTestServer> {
  const s = await startNats(options);
  t.teardown(() => s.stop());
  return s;
}

async function queue(t: Teardown, url: string, options: Partial<NatsQueueOptions> = {}): Promise<NatsQueue> {
  const q = await NatsQueue.connect({ servers: url, ...options });
  t.teardown(() => q.close());
  return q;
}

async function manager(t: Teardown, url: string): Promise<{ nc: NatsConnection; jsm: JetStreamManager }> {
  const nc = await connect({ servers: url });
  t.teardown(() => nc.close());
  return { nc, jsm: await jetstreamManager(nc) };
}

async function messageCount(jsm: JetStreamManager, stream = 'DRIS_RECORDS'): Promise<number> {
  return (await jsm.streams.info(stream)).state.messages;
}

async function rejectsWith(t: Asserts, p: Promise<unknown>, codes: readonly string[], name: string): Promise<void> {
  try {
    await p;
    t.fail(`${name}: expected a rejection`);
  } catch (err) {
    t.ok(err instanceof DrisError, `${name}: is a DrisError`);
    t.ok(codes.includes((err as DrisError).code), `${name}: code ${(err as DrisError).code} in ${codes.join('|')}`);
  }
}

t.test('subject tokens are valid and reversible', (t) => {
  for (const id of ['acme', 'acme.eu', 'a-b_c', 'A.B.C', '', 'x~y', 'sp ace*>']) {
    const token = encodeSubjectToken(id);
    t.match(token, /^[A-Za-z0-9_~-]+$/, `token of ${JSON.stringify(id)} is one NATS token`);
    t.equal(decodeSubjectToken(token), id);
  }
  t.equal(encodeSubjectToken('acme.eu'), 'acme~2Eeu');
  t.equal(recordSubject('dris.records', 'acme.eu', 'app'), 'dris.records.acme~2Eeu.app');
  t.not(encodeSubjectToken('a.b'), encodeSubjectToken('a~2Eb'));
  t.end();
});

t.test('publish and consume round trip, partitioned by tenant and client', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  const { jsm } = await manager(t, s.url);
  const records = [record(1, 'acme', 'app'), record(2, 'acme.eu', 'app'), record(3, 'acme', 'batch.job')];
  await q.publish(records);
  const info = await jsm.streams.info('DRIS_RECORDS', { subjects_filter: '>' });
  t.same(Object.keys(info.state.subjects ?? {}).sort(), ['dris.records.acme.app', 'dris.records.acme.batch~2Ejob', 'dris.records.acme~2Eeu.app']);
  t.equal(info.config.storage, 'file');
  t.equal(info.config.duplicate_window, 24 * 60 * 60 * 1e9);

  const got: AcceptedRecord[] = [];
  const seqs: number[] = [];
  const sub = q.consume({ consumer: 'indexer', maxBatch: 10, maxInFlight: 100, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      t.equal(d.deliveryCount, 1);
      seqs.push(d.seq);
      got.push(...d.records);
      await d.ack();
    }
  });
  await waitFor(() => got.length === 3, 'three records');
  await sub.stop();
  t.same(
    got.map((r) => r.ingestId).sort(),
    records.map((r) => r.ingestId).sort(),
  );
  t.same(got.find((r) => r.ingestId === records[1]?.ingestId), records[1] === undefined ? undefined : consumed(records[1]), 'record survives the trip unchanged');
  t.same([...seqs].sort((a, b) => a - b), [1, 2, 3]);
  const ci = await jsm.consumers.info('DRIS_RECORDS', 'indexer');
  t.equal(ci.num_ack_pending, 0);
  t.equal(ci.ack_floor.stream_seq, 3);
});

t.test('concurrent publishes are coalesced into fewer messages', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  const { jsm } = await manager(t, s.url);
  const records = Array.from({ length: 200 }, (_, i) => record(i));
  await Promise.all(records.map((r) => q.publish([r])));
  const messages = await messageCount(jsm);
  t.ok(messages < 200, `200 publishes stored as ${messages} messages`);

  let total = 0;
  const ids = new Set<string>();
  const sub = q.consume({ consumer: 'count', maxBatch: 50, maxInFlight: 500, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      total += d.records.length;
      for (const r of d.records) ids.add(r.ingestId);
      await d.ack();
    }
  });
  await waitFor(() => total >= 200, 'all records');
  await sub.stop();
  t.equal(total, 200);
  t.equal(ids.size, 200);
});

t.test('with one message in flight, waiting records of many subjects all get through', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { maxInFlightMessages: 1 });
  const { jsm } = await manager(t, s.url);
  const records: AcceptedRecord[] = [];
  for (let wave = 0; wave < 5; wave++) {
    const batch = Array.from({ length: 300 }, (_, i) => record(wave * 1000 + i, `tenant-${i % 30}`, `client.${i % 7}`));
    records.push(...batch);
    await Promise.all(batch.map((r) => q.publish([r])));
  }
  const info = await jsm.streams.info('DRIS_RECORDS', { subjects_filter: '>' });
  t.equal(Object.keys(info.state.subjects ?? {}).length, 210, 'one subject per tenant and client');
  t.ok(info.state.messages < records.length, `${records.length} records in ${info.state.messages} messages`);

  const ids = new Set<string>();
  let total = 0;
  const sub = q.consume({ consumer: 'many', maxBatch: 100, maxInFlight: 1000, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      for (const r of d.records) ids.add(r.ingestId);
      total += d.records.length;
      await d.ack();
    }
  });
  await waitFor(() => total >= records.length, 'all records');
  await sub.stop();
  t.equal(total, records.length);
  t.equal(ids.size, records.length);
});

t.test('a message holds at most coalesceMaxRecords records; one call may span messages', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { coalesceMaxRecords: 50 });
  const { jsm } = await manager(t, s.url);
  await Promise.all(Array.from({ length: 200 }, (_, i) => q.publish([record(i)])));
  t.equal(await messageCount(jsm), 4);
  await q.publish(Array.from({ length: 120 }, (_, i) => record(1000 + i)));
  t.equal(await messageCount(jsm), 7);
});

t.test('a repeated message id is stored once', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  const { nc, jsm } = await manager(t, s.url);
  const records = [record(1), record(2)];
  await q.publish(records);
  await q.publish(records);
  t.equal(await messageCount(jsm), 1, 'retried publish of the same records is deduplicated');

  const js = jetstream(nc);
  const first = await js.publish('dris.records.acme.app', '[]', { msgID: 'fixed-id' });
  const second = await js.publish('dris.records.acme.app', '[]', { msgID: 'fixed-id' });
  t.equal(first.duplicate, false);
  t.equal(second.duplicate, true);
  t.equal(second.seq, first.seq);
  t.equal(await messageCount(jsm), 2);
});

t.test('a nak redelivers the message', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  await q.publish([record(1)]);
  const seen: { seq: number; count: number }[] = [];
  const sub = q.consume({ consumer: 'nak', maxBatch: 10, maxInFlight: 10, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      seen.push({ seq: d.seq, count: d.deliveryCount });
      if (d.deliveryCount === 1) d.nak(0);
      else await d.ack();
    }
  });
  await waitFor(() => seen.length === 2, 'redelivery');
  await sub.stop();
  t.same(seen, [
    { seq: 1, count: 1 },
    { seq: 1, count: 2 },
  ]);
});

t.test('a failing handler naks its deliveries', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { redeliveryDelayMs: 10 });
  await q.publish([record(1)]);
  const counts: number[] = [];
  const sub = q.consume({ consumer: 'fail', maxBatch: 10, maxInFlight: 10, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) counts.push(d.deliveryCount);
    const d = deliveries[0];
    if (d !== undefined && d.deliveryCount === 1) throw new Error('handler failure');
    for (const x of deliveries) await x.ack();
  });
  await waitFor(() => counts.length === 2, 'redelivery after handler failure');
  await sub.stop();
  t.same(counts, [1, 2]);
});

t.test('an unacked delivery is redelivered after ack wait', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  await q.publish([record(1)]);
  const counts: number[] = [];
  const sub = q.consume({ consumer: 'slow', maxBatch: 10, maxInFlight: 10, ackWaitMs: 1000 }, async (deliveries) => {
    for (const d of deliveries) {
      counts.push(d.deliveryCount);
      if (d.deliveryCount > 1) await d.ack();
    }
  });
  await waitFor(() => counts.length === 2, 'redelivery after ack wait');
  await sub.stop();
  t.same(counts, [1, 2]);
});

t.test('a durable consumer resumes where it stopped', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  await q.publish([record(1)]);
  await q.publish([record(2)]);
  const firstRun: number[] = [];
  const sub1 = q.consume({ consumer: 'durable', maxBatch: 10, maxInFlight: 10, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      firstRun.push(d.seq);
      await d.ack();
    }
  });
  await waitFor(() => firstRun.length === 2, 'first run');
  await sub1.stop();
  await q.publish([record(3)]);

  // A new connection, as after a service restart.
  const q2 = await queue(t, s.url);
  const secondRun: number[] = [];
  const sub2 = q2.consume({ consumer: 'durable', maxBatch: 10, maxInFlight: 10, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      secondRun.push(d.seq);
      await d.ack();
    }
  });
  await waitFor(() => secondRun.length === 1, 'second run');
  await sub2.stop();
  t.same(firstRun, [1, 2]);
  t.same(secondRun, [3]);
});

t.test('publishes and consumers survive a server restart; acked messages survive SIGKILL', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { publishAttempts: 20, publishTimeoutMs: 2000 });
  const got = new Set<string>();
  const sub = q.consume({ consumer: 'restart', maxBatch: 10, maxInFlight: 100, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      for (const r of d.records) got.add(r.ingestId);
      await d.ack().catch(() => undefined);
    }
  });
  const before = Array.from({ length: 20 }, (_, i) => record(i));
  await q.publish(before);
  await waitFor(() => got.size === 20, 'records before restart');

  // Everything acked to the publisher must be on disk: kill without warning.
  const unread = Array.from({ length: 30 }, (_, i) => record(100 + i));
  await sub.stop();
  await q.publish(unread);
  await s.kill('SIGKILL');
  await s.restart();

  const sub2 = q.consume({ consumer: 'restart', maxBatch: 10, maxInFlight: 100, ackWaitMs: 30_000 }, async (deliveries) => {
    for (const d of deliveries) {
      for (const r of d.records) got.add(r.ingestId);
      await d.ack().catch(() => undefined);
    }
  });
  const after = Array.from({ length: 10 }, (_, i) => record(200 + i));
  await q.publish(after);
  await waitFor(() => got.size === 60, 'records published before the kill and after the restart');
  await sub2.stop();
  for (const r of [...before, ...unread, ...after]) {
    if (!got.has(r.ingestId)) t.fail(`missing ${r.recordId}`);
  }
  t.equal(got.size, 60);
  await q.check();
});

t.test('stop waits for the handler in progress', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url);
  await q.publish([record(1)]);
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => {
    release = r;
  });
  let entered = false;
  let returned = false;
  const sub = q.consume({ consumer: 'gate', maxBatch: 10, maxInFlight: 10, ackWaitMs: 30_000 }, async (deliveries: readonly Delivery[]) => {
    entered = true;
    await gate;
    for (const d of deliveries) await d.ack();
    returned = true;
  });
  await waitFor(() => entered, 'handler entered');
  const stopped = sub.stop().then(() => returned);
  release();
  t.equal(await stopped, true, 'stop resolved after the handler returned');
});

t.test('bounded: publishes beyond maxPendingPublishes are refused', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { maxPendingPublishes: 1 });
  const first = q.publish([record(1)]);
  await rejectsWith(t, q.publish([record(2)]), ['overloaded'], 'second publish');
  await first;
  await q.publish([record(3)]);
});

t.test('a record larger than a message is refused', async (t) => {
  const s = await server(t);
  const q = await queue(t, s.url, { coalesceMaxBytes: 2048 });
  const big = queued({ ...record(1), payload: JSON.stringify({ blob: 'x'.repeat(4096) }) });
  await rejectsWith(t, q.publish([big]), ['payload_too_large'], 'oversized record');
});

t.test('failures become DrisErrors', async (t) => {
  const port = await freePort();
  await rejectsWith(t, NatsQueue.connect({ servers: `nats://127.0.0.1:${port}`, connectTimeoutMs: 2000 }), ['dependency_unavailable'], 'unreachable server');

  const secured = await server(t, { user: 'dris', pass: 's3cret' });
  await rejectsWith(t, NatsQueue.connect({ servers: secured.url, user: 'dris', pass: 'wrong' }), ['config_invalid'], 'wrong password');
  const ok = await queue(t, secured.url, { user: 'dris', pass: 's3cret' });
  await ok.check();

  const s = await server(t);
  const q = await queue(t, s.url, { publishAttempts: 1, publishTimeoutMs: 500, apiTimeoutMs: 1000 });
  await s.kill('SIGTERM');
  await rejectsWith(t, q.publish([record(1)]), ['dependency_unavailable', 'timeout'], 'publish with the server down');
  await rejectsWith(t, q.check(), ['dependency_unavailable', 'timeout'], 'check with the server down');
  await q.close();
  await rejectsWith(t, q.publish([record(2)]), ['dependency_unavailable'], 'publish after close');
});

t.test('an existing stream is brought in line with the options', async (t) => {
  const s = await server(t);
  const q1 = await NatsQueue.connect({ servers: s.url, duplicateWindowMs: 60_000 });
  await q1.close();
  const { jsm } = await manager(t, s.url);
  t.equal((await jsm.streams.info('DRIS_RECORDS')).config.duplicate_window, 60_000 * 1e6);
  await queue(t, s.url, { duplicateWindowMs: 120_000, stream: 'DRIS_RECORDS' });
  t.equal((await jsm.streams.info('DRIS_RECORDS')).config.duplicate_window, 120_000 * 1e6);
});
