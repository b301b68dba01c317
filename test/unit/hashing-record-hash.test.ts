import t from 'tap';
import { createHash } from 'node:crypto';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { envelopeCanonical, payloadDigest, recordHash } from '../../src/domain/hashing/record-hash.js';
import type { RecordEnvelope } from '../../src/domain/records/types.js';
import { isDrisError } from '../../src/errors/dris-error.js';
import { availableBackends } from '../conformance/helpers/backends.js';

const sha = (d: string | Uint8Array): string => createHash('sha256').update(d).digest('hex');

const envelope: RecordEnvelope = {
  hashScheme: 'dris-v1',
  tenantId: 'acme',
  database: 'crm',
  collection: 'customers',
  recordId: 'c-42 "é"',
  recordVersion: '1',
  operationType: 'upsert',
  sourceTimestamp: null,
  payloadHash: sha('{"a":1}'),
  salt: '00112233445566778899aabbccddeeff',
};

t.test('envelope canonical form equals the generic canonicaliser', async (t) => {
  t.equal(envelopeCanonical(envelope), canonicalize(envelope));
  const withTs = { ...envelope, sourceTimestamp: '2024-01-02T03:04:05.678Z' };
  t.equal(envelopeCanonical(withTs), canonicalize(withTs));
  t.equal(recordHash(envelope, sha), sha(canonicalize(envelope)));
  t.match(recordHash(envelope, sha), /^[0-9a-f]{64}$/);
});

t.test('known answer', async (t) => {
  // Computed by hand from DECISIONS: the envelope members in code-unit order, no whitespace.
  const text =
    '{"collection":"customers","database":"crm","hashScheme":"dris-v1","operationType":"upsert",' +
    `"payloadHash":"${sha('{"a":1}')}","recordId":"c-42 \\"é\\"","recordVersion":"1",` +
    '"salt":"00112233445566778899aabbccddeeff","sourceTimestamp":null,"tenantId":"acme"}';
  t.equal(envelopeCanonical(envelope), text);
  t.equal(recordHash(envelope, sha), sha(Buffer.from(text, 'utf8')));
});

t.test('payload digest', async (t) => {
  const d = payloadDigest({ b: [1, 2], a: 'x' }, sha);
  t.equal(d.canonical, '{"a":"x","b":[1,2]}');
  t.equal(d.payloadHash, sha('{"a":"x","b":[1,2]}'));
});

t.test('an envelope field with a lone surrogate is rejected', async (t) => {
  try {
    recordHash({ ...envelope, recordId: 'x\ud800' }, sha);
    t.fail('should throw');
  } catch (e) {
    t.ok(isDrisError(e));
    if (isDrisError(e)) t.same([e.code, e.fields[0]?.code, e.fields[0]?.path], ['validation_failed', 'lone_surrogate', 'recordId']);
  }
});

t.test('every backend hashes envelope batches as recordHash does, and rejects the same fields', async (t) => {
  const { backends } = await availableBackends();
  const values = ['', 'é', '😀x', 'a\u2028b\u2029', '"q"\\', '\u0000\u0001\u001f\u007f\b\t\n\f\r', 'x'.repeat(70), '中文\ud83d\ude00', '\ufeff\uffff'];
  const batch: RecordEnvelope[] = values.flatMap((v, i) => [
    { ...envelope, recordId: v, sourceTimestamp: i % 2 === 0 ? null : v },
    { ...envelope, collection: v, tenantId: v, salt: `${i}` },
    // The same first 64 canonical bytes as its neighbour, a different rest.
    { ...envelope, collection: 'c'.repeat(80), recordId: v },
    { ...envelope, collection: 'c'.repeat(80), recordId: `${v}!` },
  ]);
  const many = Array.from({ length: 3000 }, (_, i) => ({ ...envelope, recordId: `r-${i}-${'é'.repeat(i % 50)}` }));
  for (const b of backends) {
    t.same(b.recordHashes([]), [], `${b.name}: empty batch`);
    t.same(b.recordHashes(batch), batch.map((e) => sha(envelopeCanonical(e))), `${b.name}: mixed batch`);
    t.same(b.recordHashes(many), many.map((e) => sha(envelopeCanonical(e))), `${b.name}: large batch`);
  }
  const bad: [Partial<Record<keyof RecordEnvelope, unknown>>, string, string][] = [
    [{ recordId: 'x\ud800' }, 'lone_surrogate', 'recordId'],
    [{ recordId: '\udc00x' }, 'lone_surrogate', 'recordId'],
    [{ salt: '\ud83d\ud83d' }, 'lone_surrogate', 'salt'],
    [{ tenantId: 'x\ud83d' }, 'lone_surrogate', 'tenantId'],
    [{ sourceTimestamp: undefined }, 'unsupported_type', 'sourceTimestamp'],
    [{ collection: null }, 'unsupported_type', 'collection'],
    [{ recordVersion: 1 }, 'unsupported_type', 'recordVersion'],
  ];
  for (const [change, code, path] of bad) {
    for (const b of backends) {
      const broken = [envelope, { ...envelope, ...change } as RecordEnvelope, envelope];
      try {
        b.recordHashes(broken);
        t.fail(`${b.name}: ${path} should be rejected`);
      } catch (e) {
        t.same(isDrisError(e) ? [e.code, e.fields[0]?.code, e.fields[0]?.path] : e, ['validation_failed', code, path], `${b.name}: ${path} ${code}`);
      }
    }
  }
});
