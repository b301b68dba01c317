import t from 'tap';
import { SeenBefore, SUSPECT_CLOCK_MARGIN_MS } from '../../src/app/seen-before.js';
import type { Delivery } from '../../src/domain/records/ports.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { sampleRecord } from '../harness/records.js';

const START_MS = Date.parse('2026-01-01T00:00:00Z');

function delivery(acceptedAtMs: readonly number[], deliveryCount = 1): Delivery {
  const records: AcceptedRecord[] = acceptedAtMs.map((ms, i) => ({ ...sampleRecord(i), acceptedAt: new Date(ms).toISOString() }));
  return { records, seq: 1, deliveryCount, ack: () => Promise.resolve(), nak: () => undefined, deadLetter: () => Promise.resolve() };
}

void t.test('before start every delivery is suspect', (t) => {
  t.ok(new SeenBefore().suspect(delivery([START_MS + 3_600_000])));
  t.end();
});

void t.test('a first delivery of records accepted past the start and its margin is not suspect', (t) => {
  const seen = new SeenBefore();
  seen.start(START_MS);
  const after = START_MS + SUSPECT_CLOCK_MARGIN_MS + 1;
  t.notOk(seen.suspect(delivery([after, after + 5])));
  t.ok(seen.suspect(delivery([after], 2)), 'a redelivery');
  t.ok(seen.suspect(delivery([after, START_MS + SUSPECT_CLOCK_MARGIN_MS])), 'one record within the margin');
  t.ok(seen.suspect(delivery([START_MS - 1])), 'accepted before the start');
  t.end();
});

void t.test('a record whose acceptance time cannot be read is suspect', (t) => {
  const seen = new SeenBefore();
  seen.start(START_MS);
  const d = delivery([START_MS + 3_600_000]);
  const bad: Delivery = { ...d, records: [{ ...(d.records[0] as AcceptedRecord), acceptedAt: 'not a time' }] };
  t.ok(seen.suspect(bad));
  t.end();
});

void t.test('a new term starts a new window', (t) => {
  const seen = new SeenBefore();
  seen.start(START_MS);
  const d = delivery([START_MS + SUSPECT_CLOCK_MARGIN_MS + 10]);
  t.notOk(seen.suspect(d));
  seen.start(START_MS + 60_000);
  t.ok(seen.suspect(d));
  t.end();
});

void t.test('a doubt moves the window forward, never back, and keeps everything suspect before start', (t) => {
  const seen = new SeenBefore();
  seen.doubt(START_MS);
  t.ok(seen.suspect(delivery([START_MS + 3_600_000])), 'still before start');
  seen.start(START_MS);
  const later = START_MS + 60_000;
  const d = delivery([later]);
  t.notOk(seen.suspect(d));
  seen.doubt(later);
  t.ok(seen.suspect(d), 'accepted before the doubt');
  t.notOk(seen.suspect(delivery([later + SUSPECT_CLOCK_MARGIN_MS + 1])), 'accepted past it');
  seen.doubt(START_MS);
  t.ok(seen.suspect(d), 'an earlier doubt does not narrow it');
  t.end();
});
