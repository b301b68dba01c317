import t from 'tap';
import { randomUUID } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { NatsQueue } from '../../src/adapters/queue/nats-queue.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { consumed, queued, sampleRecord, type QueuedRecord } from '../harness/records.js';
import { startNats } from '../harness/servers.js';
import { setLogLevel } from '../../src/util/logger.js';

/**
 * Publishes under a message id on a real nats-server (JetStream, sync_interval always): the
 * stream stores an id once within its duplicate window, and a duplicate is answered with the
 * records stored first, read back by the sequence the duplicate PubAck names; also after a
 * publish whose acknowledgement never came (the server paused past the publish timeout).
 */

setLogLevel('silent');

const rec = (i: number): QueuedRecord => queued({ ...sampleRecord(i), ingestId: `ing-${i}-${randomUUID()}` });

async function streamMessages(url: string): Promise<number> {
  const nc = await connect({ servers: url });
  try {
    return (await (await jetstreamManager(nc)).streams.info('DRIS_RECORDS')).state.messages;
  } finally {
    await nc.close();
  }
}

t.test('a duplicate id stores nothing and answers with the records stored first', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const q = await NatsQueue.connect({ servers: nats.url });
  t.teardown(() => q.close());
  const first = [rec(1), rec(2)];
  t.same(await q.publish(first, { msgId: 'key-1', note: '{"k":"a"}' }), { duplicate: false });
  t.same(await q.publish([rec(3)], { msgId: 'key-1', note: 'other' }), { duplicate: true, records: first.map(consumed), note: '{"k":"a"}' });
  t.same(await q.publish([rec(4)], { msgId: 'key-2' }), { duplicate: false });
  const racers = Array.from({ length: 10 }, (_, i) => rec(10 + i));
  const concurrent = await Promise.all(racers.map((r, i) => q.publish([r], { msgId: 'key-3', note: `n${i}` })));
  t.equal(concurrent.filter((r) => !r.duplicate).length, 1, 'one of ten concurrent publishes stored');
  const w = concurrent.findIndex((r) => !r.duplicate);
  for (const r of concurrent) if (r.duplicate) t.same(r, { duplicate: true, records: [consumed(racers[w] as QueuedRecord)], note: `n${w}` }, 'told the stored record');
  t.equal(await streamMessages(nats.url), 3, 'three messages: key-1, key-2, key-3');
  t.ok(q.maxMessageBytes > 0 && q.maxMessageBytes < 8 * 1024 * 1024);
});

t.test('after an indeterminate failure the retry under the same id finds the stored message', async (t) => {
  const nats = await startNats();
  t.teardown(async () => {
    nats.signal('SIGCONT');
    await nats.stop();
  });
  const q = await NatsQueue.connect({ servers: nats.url, publishTimeoutMs: 500, publishAttempts: 1 });
  t.teardown(() => q.close());
  await q.publish([rec(0)], { msgId: 'warm-up' });
  await nats.pause();
  const lost = rec(1);
  try {
    await q.publish([lost], { msgId: 'key-x', note: 'n' });
    t.fail('a paused server cannot acknowledge');
  } catch (err) {
    t.ok(err instanceof DrisError, 'a DrisError');
    t.equal((err as DrisError).code, 'timeout', 'indeterminate: timed out');
  }
  nats.signal('SIGCONT');
  // The paused server still had the message in its socket buffer: it stores it on resuming.
  let again = await q.publish([rec(2)], { msgId: 'key-x', note: 'n2' }).catch((err: unknown) => err);
  for (let i = 0; i < 20 && again instanceof DrisError; i++) {
    await new Promise((r) => setTimeout(r, 250));
    again = await q.publish([rec(2)], { msgId: 'key-x', note: 'n2' }).catch((err: unknown) => err);
  }
  t.same(again, { duplicate: true, records: [consumed(lost)], note: 'n' }, 'answered with the record of the failed publish');
  t.equal(await streamMessages(nats.url), 2, 'stored once');
});
