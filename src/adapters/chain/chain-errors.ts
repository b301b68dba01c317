import { isError, type Interface } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';

/**
 * ethers and JSON-RPC failures become DrisErrors here, at the adapter edge. The contract's own
 * refusals (sequence, root, anchorer) are decoded from the revert data, so the anchorer can tell
 * a stale leader (bad_sequence) from a batch already anchored (root_exists).
 */

export type AnchorRefusal = 'bad_sequence' | 'root_exists' | 'not_anchorer' | 'not_owner' | 'zero_address' | 'reverted';

/** Socket-level codes of Node's http client: the node is unreachable. */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function systemCode(err: unknown): string | null {
  let current: unknown = err;
  // The socket error may sit a few `cause`s deep; bounded walk.
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (UNREACHABLE.has(code) || code === 'ETIMEDOUT')) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return null;
}

/** The contract's custom error, decoded; null when the revert carries none. */
export function decodeRevert(err: unknown, iface: Interface): { readonly name: string; readonly args: readonly unknown[] } | null {
  if (!isError(err, 'CALL_EXCEPTION')) return null;
  if (err.revert !== null && err.revert !== undefined) return { name: err.revert.name, args: [...err.revert.args] };
  const data = err.data;
  if (typeof data === 'string' && data.length >= 10) {
    try {
      const parsed = iface.parseError(data);
      if (parsed !== null) return { name: parsed.name, args: [...parsed.args] };
    } catch {
      // not one of ours
    }
  }
  return null;
}

function toNumber(value: unknown): number | undefined {
  if (typeof value === 'bigint' && value <= BigInt(Number.MAX_SAFE_INTEGER)) return Number(value);
  if (typeof value === 'number') return value;
  return undefined;
}

/** A contract refusal as DrisError('invalid_state') with extra.reason. */
export function refusalError(name: string, args: readonly unknown[], cause: unknown): DrisError {
  switch (name) {
    case 'BadSequence': {
      const expected = toNumber(args[0]);
      const got = toNumber(args[1]);
      return new DrisError('invalid_state', `the contract expects batchSeq ${expected ?? '?'}, not ${got ?? '?'}`, {
        cause,
        extra: { reason: 'bad_sequence' satisfies AnchorRefusal, ...(expected === undefined ? {} : { expected }), ...(got === undefined ? {} : { got }) },
      });
    }
    case 'RootExists': {
      const batchSeq = toNumber(args[1]);
      return new DrisError('invalid_state', `the root is already anchored${batchSeq === undefined ? '' : ` as batchSeq ${batchSeq}`}`, {
        cause,
        extra: { reason: 'root_exists' satisfies AnchorRefusal, ...(batchSeq === undefined ? {} : { batchSeq }) },
      });
    }
    case 'NotAnchorer':
      return new DrisError('invalid_state', 'the signing key is not the contract anchorer', { cause, extra: { reason: 'not_anchorer' satisfies AnchorRefusal } });
    case 'NotOwner':
      return new DrisError('invalid_state', 'the signing key is not the contract owner', { cause, extra: { reason: 'not_owner' satisfies AnchorRefusal } });
    case 'ZeroAddress':
      return new DrisError('invalid_state', 'the zero address cannot be the anchorer', { cause, extra: { reason: 'zero_address' satisfies AnchorRefusal } });
    default:
      return new DrisError('invalid_state', `the contract refused the call (${name})`, { cause, extra: { reason: 'reverted' satisfies AnchorRefusal } });
  }
}

/** Any failure of a chain operation as a DrisError; `what` names the operation for the message. */
export function translateChainError(err: unknown, what: string, iface?: Interface): DrisError {
  if (err instanceof DrisError) return err;
  const sys = systemCode(err);
  if (sys === 'ETIMEDOUT') return new DrisError('timeout', `${what}: the chain node did not answer in time`, { cause: err });
  if (sys !== null) return new DrisError('dependency_unavailable', `${what}: the chain node is unreachable (${sys})`, { cause: err });
  if (isError(err, 'CALL_EXCEPTION')) {
    const decoded = iface === undefined ? null : decodeRevert(err, iface);
    if (decoded !== null) return refusalError(decoded.name, decoded.args, err);
    return new DrisError('invalid_state', `${what}: the call reverted`, { cause: err, extra: { reason: 'reverted' satisfies AnchorRefusal } });
  }
  if (isError(err, 'TIMEOUT')) return new DrisError('timeout', `${what}: the chain node did not answer in time`, { cause: err });
  if (isError(err, 'INSUFFICIENT_FUNDS')) {
    return new DrisError('dependency_unavailable', `${what}: the anchorer account cannot pay for gas`, { cause: err, extra: { reason: 'insufficient_funds' } });
  }
  if (isError(err, 'NETWORK_ERROR') || isError(err, 'SERVER_ERROR') || isError(err, 'CANCELLED')) {
    return new DrisError('dependency_unavailable', `${what}: the chain node is unavailable`, { cause: err });
  }
  if (isError(err, 'UNSUPPORTED_OPERATION') && /provider destroyed/.test(err.message)) {
    // A request in flight on an adapter being closed (the embedded node's adapter of a past life):
    // the node is fine, the request is worth sending again.
    return new DrisError('dependency_unavailable', `${what}: the connection to the chain node was closed`, { cause: err });
  }
  if (isError(err, 'UNKNOWN_ERROR') || isError(err, 'BAD_DATA') || isError(err, 'NONCE_EXPIRED') || isError(err, 'REPLACEMENT_UNDERPRICED')) {
    // An RPC error the node explained in its own words: the node answered, the request failed.
    return new DrisError('dependency_unavailable', `${what}: the chain node refused the request`, { cause: err });
  }
  return new DrisError('internal_error', `${what} failed`, { cause: err });
}
