import t from 'tap';
import { encodeFrame } from '../../src/adapters/queue/record-codec.js';
import { formParts, messageIdOf, messageWeight, parseNote, type Candidate } from '../../src/app/ingest-messages.js';
import type { OutgoingRecord } from '../../src/domain/records/types.js';

/** Parts of a keyed bulk request depend on its body alone, and a record never outweighs its bound. */

const tricky = ['plain', 'quote " and \\ backslash', 'ctl \u0000\u0001\n\t', 'é ü 中文', '😀 emoji', 'lone \ud800 surrogate', '\u2028 separators \u2029', 'x'.repeat(256)];

function candidate(i: number, s: string, payload: string): Candidate {
  return {
    index: i,
    req: { tenantId: 'acme.eu-1', clientId: 'app_2', database: s, collection: s, recordId: s, recordVersion: s.slice(0, 128), operationType: 'upsert', recordPayload: {}, sourceTimestamp: i % 2 === 0 ? null : '2026-01-01T00:00:00.123456789+01:00' },
    payload: { canonical: payload, payloadHash: 'a'.repeat(64) },
    idempotencyKey: i % 3 === 0 ? null : s,
    fingerprint: () => 'fp',
  };
}

function recordOf(c: Candidate): OutgoingRecord {
  // The largest values acceptance chooses: ids, hashes, times, a 128-character correlation id.
  return {
    hashScheme: 'dris-v1',
    tenantId: c.req.tenantId,
    database: c.req.database,
    collection: c.req.collection,
    recordId: c.req.recordId,
    recordVersion: c.req.recordVersion,
    operationType: c.req.operationType,
    sourceTimestamp: c.req.sourceTimestamp,
    payloadHash: 'a'.repeat(64),
    salt: 'b'.repeat(32),
    ingestId: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
    clientId: c.req.clientId,
    keyId: 'K'.repeat(26),
    recordHash: 'c'.repeat(64),
    acceptedAt: '2026-11-25T14:18:19.790Z',
    payloadBytes: Buffer.from(c.payload.canonical, 'utf8'),
    idempotencyKey: c.idempotencyKey,
    correlationId: 'z'.repeat(128),
  };
}

t.test('a record is never heavier in a message than its weight', (t) => {
  for (const [i, s] of tricky.entries()) {
    const c = candidate(i, s, JSON.stringify({ s, n: i }));
    const frame = encodeFrame(recordOf(c));
    t.ok(messageWeight(c) >= frame.length, `tricky string ${i}: weight ${messageWeight(c)} >= frame ${frame.length}`);
  }
  t.end();
});

t.test('parts: in order, within the budget, alike for the same items', (t) => {
  const items = Array.from({ length: 50 }, (_, i) => ({ i, w: 10 + (i % 7) * 10 }));
  const parts = formParts(items, (x) => x.w, 200);
  t.same(parts.flat().map((x) => x.i), items.map((x) => x.i), 'every item once, in order');
  t.ok(parts.every((p) => p.reduce((n, x) => n + x.w, 0) <= 200), 'each part within the budget');
  t.same(formParts(items, (x) => x.w, 200), parts, 'the same items form the same parts');
  t.same(formParts([{ i: 0, w: 500 }, { i: 1, w: 1 }], (x) => x.w, 200).map((p) => p.map((x) => x.i)), [[0], [1]], 'an item over the budget travels alone');
  t.same(formParts([], () => 1, 10), []);
  t.end();
});

t.test('message ids: one per key and part, never shared between a key and a part', (t) => {
  const ids = new Set([messageIdOf('idem:a:k'), messageIdOf('idem:a:k', 0), messageIdOf('idem:a:k', 1), messageIdOf('idem:b:k'), messageIdOf('idem:a:k2')]);
  t.equal(ids.size, 5);
  t.equal(messageIdOf('idem:a:k'), messageIdOf('idem:a:k'), 'stable');
  t.match(messageIdOf('idem:a:k'), /^[A-Za-z0-9_-]{43}$/, 'a header-safe id');
  t.same(parseNote('{"k":"idem:a:k","p":1,"idx":[3]}'), { k: 'idem:a:k', p: 1, idx: [3] });
  t.equal(parseNote('not json'), null);
  t.equal(parseNote(null), null);
  t.equal(parseNote('{"p":1}'), null, 'a note names its key');
  t.end();
});
