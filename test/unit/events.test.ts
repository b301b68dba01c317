import t from 'tap';
import { EventBus } from '../../src/app/event-bus.js';
import { NO_EVENTS, type DomainEvent, type EventOf } from '../../src/app/events.js';
import { PipelineStats } from '../../src/app/pipeline-stats.js';
import { ingestIdTimeMs, newIngestId } from '../../src/domain/records/ids.js';
import { createLogger } from '../../src/util/logger.js';

/**
 * The event seam: publishing never waits and never runs a subscriber's code; each subscriber gets
 * its events in order from a bounded queue of its own, a slow one loses events (counted) without
 * slowing the publisher or the others, and one that must know is told where it lost them.
 */

const quiet = { logger: createLogger('silent') };

function accepted(count: number): EventOf<'RecordsAccepted'> {
  return { type: 'RecordsAccepted', kind: 'single', tenantId: 'acme', count, replayed: 0, atMs: 0 };
}

/** A handler that holds each event until the test lets it go. */
function gated(): { handler: (e: DomainEvent) => Promise<void>; seen: number[]; release: () => void } {
  const seen: number[] = [];
  let open: (() => void)[] = [];
  return {
    seen,
    handler: (e) => {
      seen.push(e.type === 'RecordsAccepted' ? e.count : -1);
      return new Promise<void>((resolve) => open.push(resolve));
    },
    release: () => {
      const waiting = open;
      open = [];
      for (const r of waiting) r();
    },
  };
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

void t.test('nobody subscribed: nothing is wanted and publishing does nothing', async (t) => {
  const bus = new EventBus(quiet);
  t.equal(bus.wants('RecordsAccepted'), false);
  t.equal(bus.publish(accepted(1)), undefined);
  t.same(bus.stats(), []);
  t.equal(NO_EVENTS.wants('BatchFormed'), false);
  t.equal(await bus.idle(1000), true);
});

void t.test('delivered after the publisher\'s turn, in publication order, only the types subscribed', async (t) => {
  const bus = new EventBus(quiet);
  const seen: number[] = [];
  const sub = bus.subscribe({ name: 'counts', types: ['RecordsAccepted'] }, (e) => {
    seen.push(e.count);
  });
  t.equal(bus.wants('RecordsAccepted'), true);
  t.equal(bus.wants('BatchFailed'), false);
  for (let i = 1; i <= 100; i++) bus.publish(accepted(i));
  bus.publish({ type: 'BatchFailed', batchId: 'b', attempts: 6, code: 'timeout' });
  t.same(seen, [], 'no subscriber code ran inside publish');
  t.equal(await bus.idle(5000), true);
  t.same(seen, Array.from({ length: 100 }, (_, i) => i + 1), 'every event, in order');
  t.same(sub.stats(), { name: 'counts', delivered: 100, dropped: 0, failed: 0, queued: 0 });
});

void t.test('a subscriber that does not keep up loses the newest events, counted; the publisher never waits and the others get everything', async (t) => {
  const bus = new EventBus(quiet);
  const slow = gated();
  const slowSub = bus.subscribe({ name: 'slow', types: ['RecordsAccepted'], capacity: 4 }, slow.handler);
  const fast: number[] = [];
  bus.subscribe({ name: 'fast', types: ['RecordsAccepted'] }, (e) => {
    fast.push(e.count);
  });
  for (let i = 1; i <= 10; i++) t.equal(bus.publish(accepted(i)), undefined, 'publish returns at once (no promise)');
  t.same(slowSub.stats(), { name: 'slow', delivered: 0, dropped: 6, failed: 0, queued: 4 }, 'four held, six dropped');
  await turn();
  t.same(slow.seen, [1], 'the slow handler holds the first event');
  for (let i = 11; i <= 12; i++) bus.publish(accepted(i));
  t.equal(slowSub.stats().queued, 4, 'the queue stays bounded while the handler waits');
  t.equal(slowSub.stats().dropped, 7);
  t.equal(await bus.idle(50), false, 'not idle while the slow handler holds an event');
  // Past the deadline the timer may have come first: the fast subscriber's turn follows.
  await turn();
  t.same(fast, Array.from({ length: 12 }, (_, i) => i + 1), 'the fast subscriber got all twelve meanwhile');
  for (let i = 0; i < 6; i++) {
    slow.release();
    await turn();
  }
  t.same(slow.seen, [1, 2, 3, 4, 11], 'the slow one saw what it held, in order');
  slow.release();
  t.equal(await bus.idle(5000), true);
  t.same(slowSub.stats(), { name: 'slow', delivered: 5, dropped: 7, failed: 0, queued: 0 });
});

void t.test('onLoss is called in place of the lost events, in order, with their count', async (t) => {
  const bus = new EventBus(quiet);
  const log: string[] = [];
  let release: () => void = () => undefined;
  bus.subscribe(
    { name: 'feed', types: ['RecordsAccepted'], capacity: 2, onLoss: (n) => log.push(`lost ${n}`) },
    (e) => {
      log.push(`event ${e.count}`);
      if (e.count !== 1) return undefined;
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    },
  );
  bus.publish(accepted(1));
  await turn();
  t.same(log, ['event 1'], 'the first event is being handled');
  bus.publish(accepted(2));
  bus.publish(accepted(3));
  bus.publish(accepted(4));
  bus.publish(accepted(5));
  release();
  await turn();
  bus.publish(accepted(6));
  t.equal(await bus.idle(5000), true);
  t.same(log, ['event 1', 'event 2', 'event 3', 'lost 2', 'event 6'], 'the loss is reported between the events it fell between');
});

void t.test('a handler that throws or rejects is counted and logged; the next events are delivered', async (t) => {
  const bus = new EventBus(quiet);
  const seen: number[] = [];
  const sub = bus.subscribe({ name: 'flaky', types: ['RecordsAccepted'] }, (e) => {
    if (e.count === 2) throw new Error('boom');
    if (e.count === 3) return Promise.reject(new Error('boom'));
    seen.push(e.count);
    return undefined;
  });
  for (let i = 1; i <= 4; i++) bus.publish(accepted(i));
  t.equal(await bus.idle(5000), true);
  t.same(seen, [1, 4]);
  t.same(sub.stats(), { name: 'flaky', delivered: 2, dropped: 0, failed: 2, queued: 0 });
});

void t.test('unsubscribed: nothing more is delivered, what was queued is discarded, and the type is no longer wanted', async (t) => {
  const bus = new EventBus(quiet);
  const seen: number[] = [];
  const sub = bus.subscribe({ name: 'once', types: ['RecordsAccepted'] }, (e) => {
    seen.push(e.count);
  });
  bus.publish(accepted(1));
  sub.unsubscribe();
  bus.publish(accepted(2));
  t.equal(bus.wants('RecordsAccepted'), false);
  t.equal(await bus.idle(1000), true);
  await turn();
  t.same(seen, []);
});

void t.test('the pipeline counters are a subscriber: they count what the use cases publish, and the bus\'s losses', async (t) => {
  const bus = new EventBus(quiet);
  const stats = PipelineStats.attach(bus);
  const slow = gated();
  bus.subscribe({ name: 'slow', types: ['BatchFailed'], capacity: 1 }, slow.handler);
  bus.publish({ type: 'RecordsAccepted', kind: 'bulk', tenantId: 'acme', count: 3, replayed: 1, atMs: 0 });
  bus.publish({ type: 'RecordsIndexed', consumer: 'indexer', count: 3, firstAcceptedAtMs: 1000, atMs: 1250 });
  bus.publish({ type: 'RecordsDeadLettered', consumer: 'indexer', count: 1, reason: 'index_refused' });
  bus.publish({ type: 'LeadershipChanged', leading: true, epoch: 7 });
  bus.publish({ type: 'AnchorSubmitted', batchId: 'b1', batchSeq: 4, attempt: 1, epoch: 7 });
  bus.publish({ type: 'AnchorAttemptFailed', batchId: 'b2', attempt: 6, code: 'timeout', willRetry: false });
  bus.publish({ type: 'BatchFailed', batchId: 'b2', attempts: 6, code: 'timeout' });
  bus.publish({ type: 'BatchFailed', batchId: 'b3', attempts: 6, code: 'timeout' });
  bus.publish({ type: 'BatchFailed', batchId: 'b4', attempts: 6, code: 'timeout' });
  bus.publish({ type: 'VerificationPerformed', mode: 'stored', tenantId: 'acme', verified: true, verificationStatus: 'pass', reasonCategory: 'verified_anchored', durationMs: 1 });
  bus.publish({ type: 'VerificationPerformed', mode: 'hash', tenantId: 'acme', verified: false, verificationStatus: 'fail', reasonCategory: 'not_found', durationMs: 1 });
  await turn();
  await turn();
  const c = stats.read();
  t.match(c, {
    recordsAccepted: 3,
    recordsReplayed: 1,
    recordsIndexed: 3,
    indexLagMs: 250,
    recordsDeadLettered: 1,
    leading: true,
    epoch: 7,
    anchorsSubmitted: 1,
    anchorAttemptsFailed: 1,
    batchesFailed: 3,
    verifications: 2,
    verificationsPassed: 1,
  });
  t.same(c.events, { dropped: 2, failed: 0 }, 'the slow subscriber\'s losses show');
  slow.release();
  stats.detach();
});

void t.test('an ingest id carries its acceptance time (BatchAnchored.firstAcceptedAtMs is read from it)', async (t) => {
  for (const at of [0, 1, 1_700_000_000_123, 2 ** 48 - 1]) t.equal(ingestIdTimeMs(newIngestId(at)), at);
  t.ok(Number.isNaN(ingestIdTimeMs('short')));
  t.ok(Number.isNaN(ingestIdTimeMs('u'.repeat(26))), 'a letter outside the alphabet');
});
