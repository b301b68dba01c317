import { CID } from 'multiformats/cid';
import { DrisError } from '../errors/dris-error.js';

/**
 * Content identifiers in their text form, as the edges meet them: the IPFS adapters, the gateway
 * route, and the offline verifier, which compares a receipt's CID with the one the chain names.
 */

/** A CID from its text form; DrisError('validation_failed') when it is not one. */
export function parseCid(text: string): CID {
  try {
    return CID.parse(text);
  } catch (err) {
    throw new DrisError('validation_failed', 'not a valid CID', {
      cause: err,
      fields: [{ path: 'cid', code: 'invalid_format', message: 'must be a CID (CIDv1 base32 such as bafy…/bafk…, or CIDv0 Qm…)' }],
    });
  }
}

/** Whether two texts name the same content (a CIDv0 and its CIDv1 do); false when either is not a CID. */
export function sameCid(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return parseCid(a).equals(parseCid(b));
  } catch {
    return false;
  }
}
