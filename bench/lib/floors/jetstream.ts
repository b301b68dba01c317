import { createHash, randomUUID } from 'node:crypto';
import { connect, nanos } from '@nats-io/transport-node';
import { DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType } from '@nats-io/jetstream';
import { encodeRecords } from '../../../src/adapters/queue/record-codec.js';
import { newIngestId } from '../../../src/domain/records/ids.js';
import { HASH_SCHEME, type OutgoingRecord } from '../../../src/domain/records/types.js';
import { payload1k } from '../payload.js';

/**
 * The queue floor of a fleet: what the JetStream cluster itself acknowledges, without dris. The
 * nats.js client dris uses publishes to a scratch stream set up like dris's record stream (file
 * storage, the same replicas, limits retention, a 24 h duplicate window, each publish under its own
 * Nats-Msg-Id), `inFlight` publishes outstanding, each lane awaiting its acknowledgement before the
 * next. The messages are dris's own message format of `recordsPerMessage` 1 KiB records (the
 * queue's record codec), so their size is the size dris publishes. The stream is deleted after.
 */

export interface JetStreamFloor {
  readonly messagesPerSec: number;
  readonly recordsPerSec: number;
  readonly messageBytes: number;
  readonly messages: number;
}

export interface JetStreamFloorOptions {
  readonly servers: string;
  readonly user?: string;
  readonly password?: string;
  readonly replicas: number;
  readonly recordsPerMessage: number;
  readonly inFlight: number;
  readonly seconds: number;
}

const STREAM = 'DRIS_BENCH_FLOOR';
const SUBJECT = 'dris-bench-floor.bench.bench';

function sampleRecord(i: number): OutgoingRecord {
  return {
    hashScheme: HASH_SCHEME,
    tenantId: 'bench',
    database: 'erp',
    collection: 'invoices',
    recordId: `inv-${i}`,
    recordVersion: '1',
    operationType: 'upsert',
    sourceTimestamp: null,
    payloadHash: 'a'.repeat(64),
    salt: 'b'.repeat(32),
    ingestId: newIngestId(Date.now()),
    clientId: 'bench',
    keyId: 'k'.repeat(26),
    recordHash: 'c'.repeat(64),
    acceptedAt: new Date().toISOString(),
    idempotencyKey: null,
    correlationId: randomUUID(),
    payloadBytes: Buffer.from(JSON.stringify(payload1k(i)), 'utf8'),
  };
}

export async function jetStreamFloor(o: JetStreamFloorOptions): Promise<JetStreamFloor> {
  const nc = await connect({
    servers: o.servers.split(',').map((s) => s.trim()),
    name: 'dris-bench-floor',
    timeout: 5000,
    ...(o.user === undefined ? {} : { user: o.user }),
    ...(o.password === undefined ? {} : { pass: o.password }),
  });
  try {
    const jsm = await jetstreamManager(nc, { timeout: 10_000 });
    await jsm.streams.delete(STREAM).catch(() => false);
    await jsm.streams.add({
      name: STREAM,
      subjects: [SUBJECT],
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      discard: DiscardPolicy.New,
      num_replicas: o.replicas,
      duplicate_window: nanos(24 * 60 * 60 * 1000),
    });
    try {
      const js = jetstream(nc, { timeout: 10_000 });
      const body = encodeRecords(Array.from({ length: o.recordsPerMessage }, (_, i) => sampleRecord(i)));
      let sent = 0;
      const start = performance.now();
      const end = start + o.seconds * 1000;
      const lane = async (): Promise<void> => {
        while (performance.now() < end) {
          // A message id as dris derives one (base64url SHA-256), unique per publish.
          const msgID = createHash('sha256').update(`${randomUUID()}`).digest('base64url');
          await js.publish(SUBJECT, body, { msgID, timeout: 10_000 });
          sent++;
        }
      };
      await Promise.all(Array.from({ length: o.inFlight }, lane));
      const elapsed = (performance.now() - start) / 1000;
      const perSec = sent / elapsed;
      return { messagesPerSec: Math.round(perSec), recordsPerSec: Math.round(perSec * o.recordsPerMessage), messageBytes: body.length, messages: sent };
    } finally {
      await jsm.streams.delete(STREAM).catch(() => false);
    }
  } finally {
    await nc.close();
  }
}
