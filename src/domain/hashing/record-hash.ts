import { DrisError } from '../../errors/dris-error.js';
import { ENVELOPE_FIELDS, type EnvelopeField, type RecordEnvelope } from '../records/envelope.js';
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

/** The one member of the envelope that may be null. */
export const NULLABLE_ENVELOPE_FIELD = 'sourceTimestamp' satisfies EnvelopeField;

/**
 * JCS of the envelope. Its members are fixed and all strings (or null), so they are written in
 * ENVELOPE_FIELDS' order, which is RFC 8785's; the result equals canonicalize(envelope), which the
 * tests check.
 */
export function envelopeCanonical(e: RecordEnvelope): string {
  let out = '{';
  for (let i = 0; i < ENVELOPE_FIELDS.length; i++) {
    const field = ENVELOPE_FIELDS[i] as EnvelopeField;
    const value = e[field];
    out += `${i === 0 ? '"' : ',"'}${field}":${value === null && field === NULLABLE_ENVELOPE_FIELD ? 'null' : str(value, field)}`;
  }
  return `${out}}`;
}

export { ENVELOPE_FIELDS };

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
