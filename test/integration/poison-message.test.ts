import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import t from 'tap';
import { openClickHouseStorage } from '../../src/adapters/clickhouse/open-storage.js';
import { decodeDeadLetter } from '../../src/adapters/queue/dead-letter.js';
import { NatsQueue } from '../../src/adapters/queue/nats-queue.js';
import { DEFAULT_INDEXER_OPTIONS, Indexer } from '../../src/app/indexer.js';
import { openEventSeam } from '../../src/app/pipeline-stats.js';
import { setLogLevel } from '../../src/util/logger.js';
import { queued, sampleRecord } from '../harness/records.js';
import { startNats } from '../harness/servers.js';

/**
 * A record the index can never take (an acceptedAt that is no time: the index refuses it before
 * any insert), published in one message with good ones, through a real JetStream stream into the
 * embedded engine: the good records are indexed at once, the bad one is delivered a bounded number
 * of times, then set aside in the dead-letter stream (its message terminated), and records
 * published after it flow.
 */

setLogLevel('silent');

const MAX_DELIVERIES = 3;

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

t.test('a poison record is dead-lettered after a bounded number of deliveries; the others flow', async (t) => {
  const nats = await startNats();
  t.teardown(() => nats.stop());
  const root = mkdtempSync(join(tmpdir(), 'dris-poison-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const { storage: index } = await openClickHouseStorage({ engine: { kind: 'embedded', path: join(root, 'clickhouse') } });
  t.teardown(() => index.close());
  await index.database.migrate();
  const queue = await NatsQueue.connect({ servers: nats.url });
  t.teardown(() => queue.close());
  const { events, stats } = openEventSeam();
  const indexer = new Indexer(queue, index.records, { ...DEFAULT_INDEXER_OPTIONS, lingerMs: 20, retryBaseMs: 50, maxDeliveries: MAX_DELIVERIES }, null, { events });
  indexer.start();
  t.teardown(() => indexer.stop());

  const good = (i: number) => ({ ...sampleRecord(i), ingestId: `01JPOISON00000000000000${String(i).padStart(3, '0')}`, acceptedAt: new Date(Date.UTC(2025, 0, 1, 0, 0, i)).toISOString() });
  const bad = { ...good(99), acceptedAt: 'not-a-time' };
  // One publish call: the records share a subject and travel in one message.
  await queue.publish([good(1), bad, good(2)].map(queued));

  const listed = async (): Promise<string[]> => (await index.records.queryRecords({ tenantId: 't', limit: 100 })).items.map((r) => r.ingestId);
  await until('the good records of the message indexed', async () => ((await listed()).length === 2 ? true : undefined));
  t.same(await listed(), [good(1).ingestId, good(2).ingestId], 'its good records are indexed');

  await until('the bad record set aside', async () => ((await queue.deadLetterCount()) === 1 ? true : undefined));
  await events.idle(5_000);
  t.equal(stats.read().recordsDeadLettered, 1);

  await queue.publish([good(3)].map(queued));
  await until('a record published afterwards indexed', async () => ((await listed()).length === 3 ? true : undefined));

  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const stored = await jsm.streams.getMessage('DRIS_DEAD_LETTER', { seq: 1 });
  t.ok(stored !== null, 'the dead letter is in its stream');
  if (stored !== null) {
    t.equal(stored.header.get('Dris-Consumer'), 'indexer');
    t.equal(stored.header.get('Dris-Reason'), 'index_refused:internal_error', 'an error code, no payload');
    t.equal(Number(stored.header.get('Dris-Delivery-Count')), MAX_DELIVERIES, 'set aside at its last allowed delivery');
    const letter = decodeDeadLetter(stored.data);
    t.same(letter.records?.map((r) => [r.ingestId, r.acceptedAt]), [[bad.ingestId, 'not-a-time']], 'only the bad record, whole');
  }
  const consumer = await until('the consumer settled', async () => {
    const info = await jsm.consumers.info('DRIS_RECORDS', 'indexer');
    return info.num_ack_pending === 0 && info.num_pending === 0 ? info : undefined;
  });
  t.equal(consumer.num_redelivered, 0, 'nothing left being redelivered');
});
