import t from 'tap';
import { canonicalize } from '../../src/domain/hashing/canonical.js';
import { envelopeCanonical } from '../../src/domain/hashing/record-hash.js';
import { ENVELOPE_FIELDS, envelopeOf, HASH_SCHEME, type RecordEnvelope } from '../../src/domain/records/envelope.js';

/**
 * The envelope is defined once: the field tuple, and envelopeOf, which spells the members out for
 * speed. These keep the two in step and the tuple in RFC 8785's order.
 */

const sample: RecordEnvelope = {
  hashScheme: HASH_SCHEME,
  tenantId: 'acme',
  database: 'erp',
  collection: 'invoices',
  recordId: 'inv-1',
  recordVersion: '2',
  operationType: 'update',
  sourceTimestamp: '2026-01-01T00:00:00Z',
  payloadHash: 'ab'.repeat(32),
  salt: 'cd'.repeat(16),
};

t.test('the field tuple is in RFC 8785 order (UTF-16 code units) and has ten members', async (t) => {
  t.equal(ENVELOPE_FIELDS.length, 10);
  t.same([...ENVELOPE_FIELDS], [...ENVELOPE_FIELDS].sort());
});

t.test('envelopeOf takes exactly the tuple members, and nothing else of its source', async (t) => {
  const source = { ...sample, ingestId: 'x', payload: '{}', clientId: 'c', recordHash: 'h' };
  const e = envelopeOf(source);
  t.same(Object.keys(e).sort(), [...ENVELOPE_FIELDS]);
  for (const f of ENVELOPE_FIELDS) t.equal(e[f], sample[f], f);
});

t.test('the canonical text derived from the tuple is the RFC 8785 form of the envelope', async (t) => {
  t.equal(envelopeCanonical(sample), canonicalize(sample));
  const unset = { ...sample, sourceTimestamp: null };
  t.equal(envelopeCanonical(unset), canonicalize(unset));
});

t.test('a member that is not a string is refused with its field', async (t) => {
  const bad = { ...sample, recordVersion: 2 } as unknown as RecordEnvelope;
  t.throws(() => envelopeCanonical(bad), { code: 'validation_failed' });
  const nullId = { ...sample, recordId: null } as unknown as RecordEnvelope;
  t.throws(() => envelopeCanonical(nullId), { code: 'validation_failed' });
});
