import t from 'tap';
import { decodeLabelled, decodeMessage, encodeFrame, encodeMessage, encodeRecords, labelBytes, messageLabel } from '../../src/adapters/queue/record-codec.js';
import type { AcceptedRecord } from '../../src/domain/records/types.js';
import { consumed, queued } from '../harness/records.js';

const rec = (i: number, payload: string): AcceptedRecord => ({
  hashScheme: 'dris-v1',
  tenantId: 'tenant-ü',
  database: 'db',
  collection: 'c',
  recordId: `r${i}`,
  recordVersion: '1',
  operationType: 'insert',
  sourceTimestamp: i % 2 === 0 ? null : '2026-01-01T00:00:00Z',
  payloadHash: 'a'.repeat(64),
  salt: 'b'.repeat(32),
  ingestId: `id-${i}`,
  clientId: 'app',
  keyId: 'k1',
  recordHash: 'c'.repeat(64),
  acceptedAt: '2026-11-23T00:00:00.000Z',
  payload,
  idempotencyKey: i === 1 ? 'key "quoted"' : null,
  correlationId: 'corr',
});

// Payloads with quotes, escapes, astral characters and an empty object: stored byte for byte.
const payloads = ['{}', '{"a":"x\\"y","b":[1,2.5,-0.001]}', '{"emoji":"😀","nl":"\\n","ü":"é"}', `{"big":"${'x'.repeat(70_000)}"}`];

void t.test('records survive a message unchanged, payload bytes included', (t) => {
  const records = payloads.map((p, i) => queued(rec(i, p)));
  const message = encodeMessage(records.map(encodeFrame));
  t.equal(message[0], 0x01, 'the format byte leads');
  t.same(encodeRecords(records), message, 'one buffer or frames joined: the same bytes');
  const back = decodeMessage(message);
  t.same(back, records.map(consumed));
  for (const [i, r] of back.entries()) t.equal(Buffer.byteLength(r.payload, 'utf8'), records[i]?.payloadBytes.byteLength, `payload ${i} keeps its length`);
  // A message read from a larger buffer (a view of a segment) decodes the same.
  const framed = Buffer.concat([Buffer.from('junk'), message, Buffer.from('tail')]);
  t.same(decodeMessage(framed.subarray(4, 4 + message.length)), records.map(consumed));
  t.end();
});

void t.test('a consumed record keeps its payload bytes, decoded to text only when read', (t) => {
  const records = payloads.map((p, i) => queued(rec(i, p)));
  const back = decodeMessage(encodeRecords(records));
  for (const [i, r] of back.entries()) {
    t.same(r.payloadBytes, records[i]?.payloadBytes, `record ${i}: the bytes as published`);
    t.notOk(Object.keys(r).includes('payloadBytes'), 'the bytes are not enumerated');
    t.same(JSON.parse(JSON.stringify(r)), consumed(records[i] as ReturnType<typeof queued>), 'a JSON text of the record carries its payload');
    t.equal({ ...r }.payload, records[i] === undefined ? undefined : payloads[i], 'a copy reads its payload');
  }
  t.end();
});

void t.test('messages of the earlier JSON format still decode', (t) => {
  const records = [rec(1, '{"a":1}'), rec(2, '{}')];
  t.same(decodeMessage(Buffer.from(JSON.stringify(records))), records);
  t.end();
});

void t.test('damaged or foreign messages are refused, never half read', (t) => {
  const message = encodeMessage([encodeFrame(queued(rec(1, '{"a":1}')))]);
  for (const cut of [2, 4, 10, message.length - 1]) t.throws(() => decodeMessage(message.subarray(0, cut)), `cut at ${cut}`);
  t.throws(() => decodeMessage(Buffer.alloc(0)));
  t.throws(() => decodeMessage(Buffer.from([0x02, 0, 0, 0, 0])), 'an unknown format');
  t.throws(() => decodeMessage(Buffer.from('[{"recordId":"x"}]')), 'legacy records without ingestId');
  t.throws(() => decodeMessage(Buffer.from('{"ingestId":"x"}')), 'not an array');
  const noId = Buffer.from('{"recordId":"x"}');
  const frame = Buffer.alloc(8 + noId.length);
  frame.writeUInt32LE(noId.length, 0);
  noId.copy(frame, 4);
  frame.writeUInt32LE(0, 4 + noId.length);
  t.throws(() => decodeMessage(encodeMessage([frame])), 'a frame without ingestId');
  t.same(decodeMessage(encodeMessage([])), [], 'an empty message holds no records');
  t.end();
});

void t.test('a labelled message carries its id and note before the same frames', (t) => {
  const records = payloads.map((p, i) => queued(rec(i, p)));
  const label = { id: 'msg-ü-1', note: '{"k":"idem:t:key \\"x\\"","p":0,"idx":[0,1,2,3]}' };
  const message = encodeRecords(records, label);
  t.equal(message[0], 0x02, 'the labelled format byte leads');
  t.same(encodeMessage(records.map(encodeFrame), label), message, 'one buffer or frames joined: the same bytes');
  t.equal(message.length, encodeRecords(records).length + labelBytes(label), 'the label adds exactly its bytes');
  t.same(messageLabel(message), label);
  t.equal(messageLabel(encodeRecords(records)), null, 'an unlabelled message has none');
  t.same(decodeLabelled(message), { label, records: records.map(consumed) });
  t.same(decodeMessage(message), records.map(consumed), 'consumers read the records alike');
  t.same(decodeLabelled(encodeRecords([], { id: 'empty', note: '' })), { label: { id: 'empty', note: '' }, records: [] });
  t.throws(() => decodeMessage(message.subarray(0, 5)), /truncated/);
  t.throws(() => encodeRecords(records, { id: 'x'.repeat(70_000), note: '' }), /too long/);
  t.end();
});

void t.test('a frame\'s metadata is the text JSON.stringify writes, escapes included', (t) => {
  const odd = ['plain', 'quote " and \\ backslash', 'line\nbreak\ttab\u0001', 'sep \u2028 \u2029', 'lone \ud800 surrogate', 'pair 😀', 'ü é', ''];
  // Labels in ASCII: a raw U+2028 in a TAP line is a line break to the reader.
  const label = (s: string): string => JSON.stringify(s).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const s of odd) {
    const r = queued({ ...rec(1, '{}'), recordId: s, tenantId: s, correlationId: s, idempotencyKey: s, sourceTimestamp: s });
    const frame = encodeFrame(r);
    const metaLength = frame.readUInt32LE(0);
    const { payloadBytes: _bytes, ...meta } = r;
    const want = JSON.stringify({
      ingestId: meta.ingestId, clientId: meta.clientId, keyId: meta.keyId, hashScheme: meta.hashScheme, tenantId: meta.tenantId, database: meta.database,
      collection: meta.collection, recordId: meta.recordId, recordVersion: meta.recordVersion, operationType: meta.operationType, sourceTimestamp: meta.sourceTimestamp,
      payloadHash: meta.payloadHash, salt: meta.salt, recordHash: meta.recordHash, acceptedAt: meta.acceptedAt, idempotencyKey: meta.idempotencyKey, correlationId: meta.correlationId,
    });
    t.equal(frame.toString('utf8', 4, 4 + metaLength), want, label(s));
    t.same(decodeMessage(encodeMessage([frame])), [consumed(r)], `${label(s)} decodes back`);
  }
  t.end();
});

void t.test('messages written one after another stay as written, across slabs and sizes', (t) => {
  // Small messages share slabs of 256 KiB; larger ones get buffers of their own. Each must keep
  // its bytes while later ones are written.
  const sizes = [10, 3000, 20_000, 10, 200_000, 10];
  const kept: { message: Buffer; records: ReturnType<typeof queued>[] }[] = [];
  for (let i = 0; i < 600; i++) {
    const records = [queued(rec(i, `{"i":${i},"s":"${'x'.repeat(sizes[i % sizes.length] ?? 0)}"}`))];
    kept.push({ message: i % 2 === 0 ? encodeRecords(records) : encodeMessage(records.map(encodeFrame)), records });
  }
  for (const [i, { message, records }] of kept.entries()) t.same(decodeMessage(message), records.map(consumed), `message ${i} decodes to its own records`);
  t.end();
});
