import { DrisError } from '../../errors/dris-error.js';
import type { RecordEnvelope } from '../records/types.js';
import { canonicalize } from './canonical.js';
import { isWellFormed } from './well-formed.js';

/**
 * The hashing contract (hashScheme dris-v1): payloadHash = SHA-256(JCS(recordPayload)),
 * recordHash = SHA-256(JCS(envelope)), both lowercase hex. SHA-256 comes from the caller so this
 * module stays free of I/O and of any particular implementation.
 */

/** SHA-256 as lowercase hex; a string argument is hashed as its UTF-8 bytes. */
export type Sha256Hex = (data: string | Uint8Array) => string;

export interface PayloadDigest {
  /** RFC 8785 canonical text of the payload. */
  readonly canonical: string;
  readonly payloadHash: string;
}

export function payloadDigest(payload: unknown, sha256Hex: Sha256Hex): PayloadDigest {
  const canonical = canonicalize(payload);
  return { canonical, payloadHash: sha256Hex(canonical) };
}

/**
 * JCS of the envelope. Its members are fixed and all strings (or null), so their sorted order is
 * written out once here; the result equals canonicalize(envelope), which the tests check.
 */
export function envelopeCanonical(e: RecordEnvelope): string {
  return (
    '{"collection":' + str(e.collection, 'collection') +
    ',"database":' + str(e.database, 'database') +
    ',"hashScheme":' + str(e.hashScheme, 'hashScheme') +
    ',"operationType":' + str(e.operationType, 'operationType') +
    ',"payloadHash":' + str(e.payloadHash, 'payloadHash') +
    ',"recordId":' + str(e.recordId, 'recordId') +
    ',"recordVersion":' + str(e.recordVersion, 'recordVersion') +
    ',"salt":' + str(e.salt, 'salt') +
    ',"sourceTimestamp":' + (e.sourceTimestamp === null ? 'null' : str(e.sourceTimestamp, 'sourceTimestamp')) +
    ',"tenantId":' + str(e.tenantId, 'tenantId') +
    '}'
  );
}

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

function str(v: unknown, field: string): string {
  if (typeof v !== 'string') {
    throw new DrisError('validation_failed', `envelope field ${field} must be a string`, {
      fields: [{ path: field, code: 'unsupported_type', message: 'must be a string' }],
    });
  }
  if (!isWellFormed(v)) {
    throw new DrisError('validation_failed', `envelope field ${field} holds an unpaired surrogate`, {
      fields: [{ path: field, code: 'lone_surrogate', message: 'unpaired UTF-16 surrogate' }],
    });
  }
  return JSON.stringify(v);
}

export function recordHash(envelope: RecordEnvelope, sha256Hex: Sha256Hex): string {
  return sha256Hex(envelopeCanonical(envelope));
}
