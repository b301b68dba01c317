import { DrisError } from '../../errors/dris-error.js';
import { appendIndex, appendKey } from './json-path.js';
import { isWellFormed } from './well-formed.js';

/**
 * RFC 8785 (JCS) canonical form of a JSON value. Member names sort by UTF-16 code units (the
 * default string order of Array.prototype.sort); numbers print as ECMAScript Number::toString;
 * strings escape only what RFC 8785 requires, which is exactly what JSON.stringify does for
 * well-formed strings.
 */

export type CanonicalProblemCode = 'lone_surrogate' | 'invalid_number' | 'unsupported_type';

class Unrepresentable extends Error {
  constructor(
    readonly problem: CanonicalProblemCode,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/**
 * Throws DrisError('validation_failed') with one field (code lone_surrogate, invalid_number or
 * unsupported_type, and its path) for values that have no canonical form.
 */
export function canonicalize(value: unknown): string {
  try {
    return serialize(value);
  } catch (e) {
    if (!(e instanceof Unrepresentable)) throw e;
    // Paths are only built once a problem is known: the hot path carries none.
    const found = locate(value, '') ?? { path: '', code: e.problem, message: e.detail };
    throw new DrisError('validation_failed', `value has no RFC 8785 canonical form: ${found.message}`, {
      fields: [found],
    });
  }
}

/** Throws exactly what canonicalize would for a value without a canonical form; else nothing. */
export function assertCanonicalizable(value: unknown): void {
  const found = locate(value, '');
  if (found !== undefined) {
    throw new DrisError('validation_failed', `value has no RFC 8785 canonical form: ${found.message}`, { fields: [found] });
  }
}

const encoder = new TextEncoder();

export function canonicalBytes(value: unknown): Uint8Array {
  return encoder.encode(canonicalize(value));
}

function serialize(value: unknown): string {
  switch (typeof value) {
    case 'string':
      if (!isWellFormed(value)) throw new Unrepresentable('lone_surrogate', 'unpaired UTF-16 surrogate');
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new Unrepresentable('invalid_number', 'non-finite number');
      // String(-0) is "0", as RFC 8785 wants.
      return String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        const len = value.length;
        if (len === 0) return '[]';
        let s = '[';
        for (let i = 0; i < len; i++) {
          if (i > 0) s += ',';
          s += serialize(value[i]);
        }
        return s + ']';
      }
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj);
      if (keys.length === 0) return '{}';
      if (keys.length > 1) keys.sort();
      let s = '{';
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        if (!isWellFormed(k)) throw new Unrepresentable('lone_surrogate', 'unpaired UTF-16 surrogate');
        if (i > 0) s += ',';
        s += JSON.stringify(k);
        s += ':';
        s += serialize(obj[k]);
      }
      return s + '}';
    }
    default:
      throw new Unrepresentable('unsupported_type', `${typeof value} is not a JSON value`);
  }
}

interface Problem {
  path: string;
  code: CanonicalProblemCode;
  message: string;
}

/** The first problem in serialisation order, with its path. */
function locate(value: unknown, path: string): Problem | undefined {
  switch (typeof value) {
    case 'string':
      return isWellFormed(value) ? undefined : { path, code: 'lone_surrogate', message: 'unpaired UTF-16 surrogate' };
    case 'number':
      return Number.isFinite(value) ? undefined : { path, code: 'invalid_number', message: 'non-finite number' };
    case 'boolean':
      return undefined;
    case 'object': {
      if (value === null) return undefined;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) {
          const p = locate(value[i], appendIndex(path, i));
          if (p !== undefined) return p;
        }
        return undefined;
      }
      const obj = value as Record<string, unknown>;
      for (const k of Object.keys(obj).sort()) {
        const kp = appendKey(path, k);
        if (!isWellFormed(k)) return { path: kp, code: 'lone_surrogate', message: 'unpaired UTF-16 surrogate in a member name' };
        const p = locate(obj[k], kp);
        if (p !== undefined) return p;
      }
      return undefined;
    }
    default:
      return { path, code: 'unsupported_type', message: `${typeof value} is not a JSON value` };
  }
}
