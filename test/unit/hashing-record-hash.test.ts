import t from 'tap';
import { createHash } from 'node:crypto';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { envelopeCanonical, payloadDigest, recordHash } from '../../src/domain/hashing/record-hash.js';
import type { RecordEnvelope } from '../../src/domain/records/types.js';
import { isDrisError } from '../../src/errors/dris-error.js';

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
