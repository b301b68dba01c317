import t from 'tap';
import { Indexer, type IndexerOptions } from '../../src/app/indexer.js';
import { SUSPECT_CLOCK_MARGIN_MS } from '../../src/app/seen-before.js';
import { openEventSeam } from '../../src/app/pipeline-stats.js';
import type { AuditEvent, AuditLog } from '../../src/domain/audit/ports.js';
import type { Delivery, InsertRecordsOptions, RecordIndex } from '../../src/domain/records/ports.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { DrisError } from '../../src/errors/dris-error.js';
import { HandQueue } from '../harness/hand-queue.js';
import { sampleRecord } from '../harness/records.js';

const rec = sampleRecord;

interface FakeDelivery extends Delivery {
  acked: boolean;
  nakedMs: number | null;
  deadLettered: { reason: string; ids: string[] } | null;
}

function delivery(seq: number, records: AcceptedRecord[], deliveryCount = 1): FakeDelivery {
  const d: FakeDelivery = {
    records,
    seq,
    deliveryCount,
    acked: false,
    nakedMs: null,
    deadLettered: null,
    deadLetter: (reason, records = d.records) => {
      d.deadLettered = { reason, ids: records.map((r) => r.ingestId) };
      return Promise.resolve();
    },
    ack: () => {
      d.acked = true;
      return Promise.resolve();
    },
    nak: (ms = 0) => {
      d.nakedMs = ms;
    },
  };
  return d;
}

/** An index recording its writes; a write completes when the test releases it. */
class GatedIndex implements Pick<RecordIndex, 'insertRecords'>, Pick<AuditLog, 'append'> {
  readonly writes: string[][] = [];
  /** The ids of each call that said its records could not be indexed yet (`unseen`). */
  readonly unseenWrites: string[][] = [];
  readonly audited: string[] = [];
  failNext = false;
  /** Every write holding one of these ingest ids is refused (a record the index can never take). */
  readonly poison = new Set<string>();
  /** Every write fails as an outage. */
  down = false;
  inProgress = 0;
  maxInProgress = 0;
  private gates: (() => void)[] = [];
  gated = false;

  async insertRecords(records: readonly AcceptedRecord[], options?: InsertRecordsOptions): Promise<void> {
    if (options?.unseen === true) this.unseenWrites.push(records.map((r) => r.ingestId));
    this.inProgress++;
    this.maxInProgress = Math.max(this.maxInProgress, this.inProgress);
    try {
      if (this.gated) await new Promise<void>((resolve) => this.gates.push(resolve));
      if (this.failNext || this.down) {
        this.failNext = false;
        throw new DrisError('dependency_unavailable', 'index down');
      }
      if (records.some((r) => this.poison.has(r.ingestId))) throw new DrisError('internal_error', 'the engine refused a row');
      this.writes.push(records.map((r) => r.ingestId));
    } finally {
      this.inProgress--;
    }
  }
  append(events: readonly AuditEvent[]): Promise<void> {
    this.audited.push(...events.map((e) => e.eventId));
    return Promise.resolve();
  }
  release(): void {
    for (const g of this.gates.splice(0)) g();
  }
}

const options = (o: Partial<IndexerOptions> = {}): IndexerOptions => ({
  consumer: 'indexer',
  maxBatch: 10,
  maxInFlight: 100,
  ackWaitMs: 60_000,
  retryBaseMs: 500,
  maxWriteRecords: 4,
  lingerMs: 30,
  maxDeliveries: 3,
  ...o,
});

interface Counters {
  readonly indexedCount: number;
  readonly deadLetteredCount: number;
}

/** `counts()`: the pipeline counters, once the events published so far are counted. */
function setup(o: Partial<IndexerOptions> = {}): { queue: HandQueue; index: GatedIndex; indexer: Indexer; counts: () => Promise<Counters> } {
  const queue = new HandQueue();
  const index = new GatedIndex();
  const { events, stats } = openEventSeam();
  const indexer = new Indexer(queue, index as unknown as RecordIndex, options(o), index as unknown as AuditLog, { events });
  indexer.start();
  const counts = async (): Promise<Counters> => {
    await events.idle(5_000);
    const c = stats.read();
    return { indexedCount: c.recordsIndexed, deadLetteredCount: c.recordsDeadLettered };
  };
  return { queue, index, indexer, counts };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

void t.test('small deliveries are gathered into one write, acked only once it is done', async (t) => {
  const { queue, index, indexer, counts } = setup({ lingerMs: 60_000 });
  const ds = [delivery(1, [rec(1)]), delivery(2, [rec(2)]), delivery(3, [rec(3)])];
  await queue.deliver([ds[0] as Delivery]);
  await queue.deliver([ds[1] as Delivery, ds[2] as Delivery]);
  t.same(index.writes, [], 'three records wait for a fourth');
  t.notOk(ds.some((d) => d.acked), 'nothing acked before its write');
  const last = delivery(4, [rec(4), rec(5)]);
  await queue.deliver([last]);
  t.same(index.writes, [['id-1', 'id-2', 'id-3', 'id-4', 'id-5']], 'one write for all');
  t.ok([...ds, last].every((d) => d.acked), 'all acked after it');
  t.same(index.audited, ['ingest:id-1', 'ingest:id-2', 'ingest:id-3', 'ingest:id-4', 'ingest:id-5']);
  t.equal((await counts()).indexedCount, 5);
  await indexer.stop();
});

void t.test('only records an earlier run may have indexed are looked for first: redeliveries and records accepted before the start', async (t) => {
  const { queue, index, indexer } = setup({ lingerMs: 60_000, maxWriteRecords: 4 });
  // Accepted after the start and its clock margin: the first sight of these records.
  const fresh = (n: number): AcceptedRecord => ({ ...rec(n), acceptedAt: new Date(Date.now() + SUSPECT_CLOCK_MARGIN_MS + 60_000).toISOString() });
  await queue.deliver([delivery(1, [fresh(1), fresh(2)]), delivery(2, [fresh(3)], 2), delivery(3, [rec(4)])]);
  t.same(index.unseenWrites, [['id-1', 'id-2']], 'first deliveries of fresh records are not looked for');
  t.same(index.writes.flat().sort(), ['id-1', 'id-2', 'id-3', 'id-4'], 'a redelivery and an older record are written, looked for first');
  t.same(index.audited.sort(), ['ingest:id-1', 'ingest:id-2', 'ingest:id-3', 'ingest:id-4']);
  await indexer.stop();
});

void t.test('a lone record is written once the linger time has passed', async (t) => {
  const { queue, index, indexer } = setup({ lingerMs: 20 });
  const d = delivery(1, [rec(1)]);
  await queue.deliver([d]);
  t.same(index.writes, []);
  for (let i = 0; i < 100 && index.writes.length === 0; i++) await sleep(10);
  t.same(index.writes, [['id-1']]);
  t.ok(d.acked);
  await indexer.stop();
});

void t.test('a failed write naks its deliveries with a backoff and acks none', async (t) => {
  const { queue, index, indexer } = setup({ retryBaseMs: 100 });
  index.failNext = true;
  const ds = [delivery(1, [rec(1), rec(2)]), delivery(2, [rec(3), rec(4)], 3)];
  await queue.deliver(ds);
  t.same(index.writes, []);
  t.notOk(ds.some((d) => d.acked));
  t.same(
    ds.map((d) => d.nakedMs),
    [400, 400],
    'the backoff follows the most delivered message (3rd delivery: 100 * 2^2)',
  );
  await indexer.stop();
});

void t.test('one write at a time; deliveries arriving meanwhile form the next one', async (t) => {
  const { queue, index, indexer } = setup();
  index.gated = true;
  const first = queue.deliver([delivery(1, [rec(1), rec(2), rec(3), rec(4)])]);
  await sleep(5);
  const second = queue.deliver([delivery(2, [rec(5), rec(6), rec(7), rec(8)])]);
  await sleep(5);
  t.equal(index.inProgress, 1, 'the second write waits');
  index.release();
  await first;
  await sleep(5);
  index.release();
  await second;
  t.equal(index.maxInProgress, 1);
  t.same(index.writes, [
    ['id-1', 'id-2', 'id-3', 'id-4'],
    ['id-5', 'id-6', 'id-7', 'id-8'],
  ]);
  await indexer.stop();
});

void t.test('stop writes what is held', async (t) => {
  const { queue, index, indexer } = setup({ lingerMs: 60_000 });
  const d = delivery(1, [rec(1)]);
  await queue.deliver([d]);
  await indexer.stop();
  t.same(index.writes, [['id-1']]);
  t.ok(d.acked);
  t.equal(queue.options?.maxInFlight, 100, 'the in-flight bound is the queue consumer option');
});

void t.test('a message the index refuses is written alone: the others of its write go on; at its last delivery only its bad record is set aside', async (t) => {
  const { queue, index, indexer, counts } = setup({ retryBaseMs: 100, maxWriteRecords: 1 });
  index.poison.add('id-9');
  const good1 = delivery(1, [rec(1)]);
  const bad = delivery(2, [rec(2), rec(9), rec(3)]);
  const good2 = delivery(3, [rec(4)]);
  await queue.deliver([good1, bad, good2]);
  t.ok(good1.acked && good2.acked, 'the other messages are indexed and acked');
  t.notOk(bad.acked, 'the refused message is not acked');
  t.equal(bad.nakedMs, 100, 'it is given back with the first delay');
  t.equal(bad.deadLettered, null, 'not set aside before its last delivery');
  t.same(index.writes, [['id-1'], ['id-4']]);

  const second = delivery(2, [rec(2), rec(9), rec(3)], 2);
  await queue.deliver([second]);
  t.equal(second.nakedMs, 200, 'given back again, with a longer delay');
  t.equal(second.deadLettered, null);

  const last = delivery(2, [rec(2), rec(9), rec(3)], 3);
  await queue.deliver([last]);
  t.same(last.deadLettered, { reason: 'index_refused:internal_error', ids: ['id-9'] }, 'only the bad record is set aside, with the code');
  t.equal(last.nakedMs, null, 'and the message is settled, not given back');
  t.same(index.writes, [['id-1'], ['id-4'], ['id-2'], ['id-3']], 'its good records are indexed one by one');
  const c = await counts();
  t.equal(c.deadLetteredCount, 1);
  t.equal(c.indexedCount, 4);

  const after = delivery(4, [rec(5)]);
  await queue.deliver([after]);
  await indexer.stop();
  t.ok(after.acked, 'later messages flow');
});

void t.test('an outage is never taken for poison, however many deliveries', async (t) => {
  const { queue, index, indexer } = setup({ retryBaseMs: 100, maxWriteRecords: 1 });
  index.down = true;
  const d = delivery(1, [rec(1)], 10);
  await queue.deliver([d]);
  t.equal(d.deadLettered, null);
  t.equal(d.nakedMs, 6400, 'given back with the longest delay (100 * 2^6)');
  index.down = false;
  await indexer.stop();
});

void t.test('a lone refused message waits for evidence that the index takes other writes', async (t) => {
  const { queue, index, indexer } = setup({ retryBaseMs: 100, maxWriteRecords: 1 });
  index.poison.add('id-7');
  const first = delivery(1, [rec(7)], 3);
  await queue.deliver([first]);
  t.equal(first.deadLettered, null, 'nothing else was written since it first failed: maybe the index refuses everything');
  t.equal(first.nakedMs, 400);
  const other = delivery(2, [rec(8)]);
  await queue.deliver([other]);
  t.ok(other.acked);
  const again = delivery(1, [rec(7)], 4);
  await queue.deliver([again]);
  t.same(again.deadLettered, { reason: 'index_refused:internal_error', ids: ['id-7'] }, 'another write went in meanwhile: set aside');
  await indexer.stop();
});
