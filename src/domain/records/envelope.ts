/**
 * The record envelope, defined once: its ten members, in the order RFC 8785 writes them (sorted by
 * UTF-16 code units), the type derived from them, and the one function that takes an envelope out
 * of anything carrying its members (a request, a stored record, a receipt). The canonical text,
 * the native hashing path, the queue codec and receipts all derive from these.
 */
export const HASH_SCHEME = 'dris-v1' as const;
export type HashScheme = typeof HASH_SCHEME;

export type OperationType = 'insert' | 'update' | 'delete' | 'upsert';

export const ENVELOPE_FIELDS = [
  'collection',
  'database',
  'hashScheme',
  'operationType',
  'payloadHash',
  'recordId',
  'recordVersion',
  'salt',
  'sourceTimestamp',
  'tenantId',
] as const;

export type EnvelopeField = (typeof ENVELOPE_FIELDS)[number];

/** The value type of each member: three are narrower than a string. */
type EnvelopeValue<K extends EnvelopeField> = K extends 'hashScheme' ? HashScheme : K extends 'operationType' ? OperationType : K extends 'sourceTimestamp' ? string | null : string;

/** The envelope whose canonical form is hashed into recordHash (DECISIONS, hashing contract). */
export type RecordEnvelope = { [K in EnvelopeField]: EnvelopeValue<K> };

/**
 * The envelope members of `source`, and nothing else. Written out member by member rather than
 * looped over ENVELOPE_FIELDS: it runs per record on the ingest path, where one literal shape keeps
 * the objects monomorphic; the test of this module checks the two agree.
 */
export function envelopeOf(source: RecordEnvelope): RecordEnvelope {
  return {
    hashScheme: source.hashScheme,
    tenantId: source.tenantId,
    database: source.database,
    collection: source.collection,
    recordId: source.recordId,
    recordVersion: source.recordVersion,
    operationType: source.operationType,
    sourceTimestamp: source.sourceTimestamp,
    payloadHash: source.payloadHash,
    salt: source.salt,
  };
}
