import t from 'tap';
import { decodeLabelled, encodeFrameWith, encodeRecords } from '../../src/adapters/queue/record-codec.js';
import { nativeFrameWriter, writeNativeFrames, type WriteFrames } from '../../src/adapters/queue/native-frames.js';
import type { AcceptedRecord, OutgoingRecord } from '../../src/domain/records/types.js';
import { consumed, queued, sampleRecord } from '../harness/records.js';

/** The codec's two writers of frames, the addon's and its own, give the same bytes. */

const native = nativeFrameWriter();

/** A deterministic generator (xorshift), so that a failure names a seed that reproduces it. */
function random(seed: number): () => number {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x / 0x1_0000_0000;
  };
}

/** Code units JSON treats apart: quotes, backslashes, controls, DEL, separators, both halves of a surrogate pair, and the widths of UTF-8. */
const UNITS = ['a', 'Z', '0', ' ', '"', '\\', '/', '\n', '\t', '\b', '\f', '\r', '\u0000', '\u001f', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '€', '\u2028', '\u2029', '\ufffd', '\uffff', '\ud83d', '\ude00', '😀'];

function oddString(next: () => number): string {
  const n = Math.floor(next() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += UNITS[Math.floor(next() * UNITS.length)] as string;
  return s;
}

function oddRecord(next: () => number, i: number): OutgoingRecord {
  const r: AcceptedRecord = { ...sampleRecord(i), payload: `{"i":${i},"s":${JSON.stringify(oddString(next))}}` };
  for (const k of ['tenantId', 'database', 'collection', 'recordId', 'recordVersion', 'clientId', 'keyId', 'correlationId', 'acceptedAt'] as const) r[k] = oddString(next);
  r.sourceTimestamp = next() < 0.5 ? null : oddString(next);
  r.idempotencyKey = next() < 0.5 ? null : oddString(next);
  return queued(r);
}

void t.test('the addon built here writes frames', (t) => {
  // Where the native backend is required (the test command with cargo), so is its frame writer.
  const required = (process.env['DRIS_REQUIRE_BACKENDS'] ?? '').split(',').includes('native');
  if (required || native !== undefined) t.type(native, 'function', 'native/src/frames.rs is in the addon');
  else t.comment('native addon not built: only the codec\'s own writer is tested');
  t.end();
});

void t.test('both writers give the same bytes for any values, escapes and surrogates included', (t) => {
  if (native === undefined) {
    t.end();
    return;
  }
  for (let seed = 1; seed <= 200; seed++) {
    const next = random(seed);
    const records = Array.from({ length: 1 + Math.floor(next() * 8) }, (_, i) => oddRecord(next, i));
    const label = next() < 0.5 ? undefined : { id: `m-${oddString(next)}`, note: oddString(next) };
    const fromNative = encodeRecords(records, label, native);
    const fromJs = encodeRecords(records, label, undefined);
    if (!fromNative.equals(fromJs)) {
      t.fail(`seed ${seed}: the writers differ`);
      break;
    }
    t.same(decodeLabelled(fromNative).records, records.map((r) => consumed(r as ReturnType<typeof queued>)), `seed ${seed}: decodes back`);
    for (const r of records) t.same(encodeFrameWith(r, native), encodeFrameWith(r, undefined), `seed ${seed}: one frame`);
  }
  t.end();
});

void t.test('a thousand records of a bulk request: the same bytes, in one call', (t) => {
  if (native === undefined) {
    t.end();
    return;
  }
  const records = Array.from({ length: 1000 }, (_, i) => queued({ ...sampleRecord(i), recordId: `inv-${i}-ü`, payload: `{"n":${i},"x":"${'y'.repeat(1000)}"}` }));
  let calls = 0;
  const counted: WriteFrames = (...args) => {
    calls++;
    return native(...args);
  };
  t.ok(encodeRecords(records, undefined, counted).equals(encodeRecords(records, undefined, undefined)));
  t.equal(calls, 1);
  t.end();
});

void t.test('a value not of its member\'s type is left to the codec\'s own writer', (t) => {
  if (native === undefined) {
    t.end();
    return;
  }
  const odd = { ...queued(sampleRecord(1)), recordVersion: 7 } as unknown as OutgoingRecord;
  const nullId = { ...queued(sampleRecord(2)), recordId: null } as unknown as OutgoingRecord;
  for (const r of [odd, nullId]) {
    t.equal(writeNativeFrames([r], native, (bound) => ({ out: Buffer.alloc(bound), offset: 0 })), null, 'the native path declines');
    t.same(encodeRecords([r], undefined, native), encodeRecords([r], undefined, undefined), 'and the message is written all the same');
  }
  t.end();
});

void t.test('when the addon refuses, the codec writes the frames itself', (t) => {
  const refusing: WriteFrames = () => -1;
  const records = [queued(sampleRecord(1)), queued(sampleRecord(2))];
  t.same(encodeRecords(records, undefined, refusing), encodeRecords(records, undefined, undefined));
  t.same(encodeFrameWith(records[0] as OutgoingRecord, refusing), encodeFrameWith(records[0] as OutgoingRecord, undefined));
  t.end();
});

void t.test('the room asked for holds the worst case: every unit a control character', (t) => {
  if (native === undefined) {
    t.end();
    return;
  }
  const r = queued({ ...sampleRecord(1), recordId: '\u0001'.repeat(5000), tenantId: '😀'.repeat(3000), sourceTimestamp: null, idempotencyKey: null });
  let asked = 0;
  const written = writeNativeFrames([r], native, (bound) => {
    asked = bound;
    // Exactly the room asked for, after 3 bytes of something else: nothing may be written past it.
    return { out: Buffer.alloc(3 + bound), offset: 3 };
  });
  t.not(written, null);
  t.ok(written !== null && written.end <= 3 + asked, 'written within the bound');
  t.same(written?.out.subarray(3, written.end), encodeFrameWith(r, undefined));
  t.end();
});
