/**
 * JSON text written by concatenation where an object built only to be stringified would cost more
 * than the text (answers, queue frames and index rows of the ingest path). A writer is declared
 * once as its members in order, each with the one type it may hold; it gives exactly what
 * JSON.stringify gives for such an object (the writers' tests compare the two), and null for a
 * value not of its declared type, which the caller then leaves to JSON.stringify.
 */

/** Characters JSON.stringify escapes; a string without them is itself between quotes. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u2028\u2029\ud800-\udfff]/;

/** A JSON string literal of `v`, as JSON.stringify writes it. */
export function jsonString(v: string): string {
  return NEEDS_ESCAPE.test(v) ? JSON.stringify(v) : '"' + v + '"';
}

/** `jsonString`, or `null`. */
export function jsonStringOrNull(v: string | null): string {
  return v === null ? 'null' : jsonString(v);
}

/**
 * What a member may hold: a string, a string or null, a safe integer, a boolean, only null, only
 * an empty array, or an array of lowercase hex strings (digests, proofs).
 */
export type JsonKind = 'string' | 'string|null' | 'integer' | 'boolean' | 'null' | 'empty-array' | 'hex-array';

const HEX = /^[0-9a-f]*$/;

/** The JSON text of `v` as `kind` declares it, or null when `v` is not of that kind. */
export function jsonValue(kind: JsonKind, v: unknown): string | null {
  switch (kind) {
    case 'string':
      return typeof v === 'string' ? jsonString(v) : null;
    case 'string|null':
      return v === null ? 'null' : typeof v === 'string' ? jsonString(v) : null;
    case 'integer':
      return Number.isSafeInteger(v) ? String(v) : null;
    case 'boolean':
      return v === true ? 'true' : v === false ? 'false' : null;
    case 'null':
      return v === null ? 'null' : null;
    case 'empty-array':
      return Array.isArray(v) && v.length === 0 ? '[]' : null;
    case 'hex-array':
      if (!Array.isArray(v) || !v.every((h) => typeof h === 'string' && HEX.test(h))) return null;
      return v.length === 0 ? '[]' : '["' + v.join('","') + '"]';
  }
}

/** A member: its name in the text, its kind, and where its value comes from (default: the member of that name). */
export type JsonMember<T> = readonly [name: string, kind: JsonKind, value?: (o: T) => unknown];

/**
 * The writer of an object with these members, in this order. `open`: without the closing brace,
 * for a caller that appends members of its own.
 */
export function jsonObjectWriter<T>(members: readonly JsonMember<T>[], open = false): (o: T) => string | null {
  return membersWriter(
    members,
    members.map(([name], i) => (i === 0 ? '{' : ',') + JSON.stringify(name) + ':'),
    open ? '' : '}',
  );
}

/**
 * The writer of an array of these members' values, in this order (a row of JSONCompactEachRow:
 * the names are the columns it is inserted into, not part of the text). `open`: without the
 * closing bracket, for a caller that appends values of its own.
 */
export function jsonArrayWriter<T>(members: readonly JsonMember<T>[], open = false): (o: T) => string | null {
  return membersWriter(
    members,
    members.map((_, i) => (i === 0 ? '[' : ',')),
    open ? '' : ']',
  );
}

/** Each member's value as its kind writes it, after the text `heads` gives it, then `close`. */
function membersWriter<T>(members: readonly JsonMember<T>[], heads: readonly string[], close: string): (o: T) => string | null {
  const kinds = members.map(([, kind]) => kind);
  const values = members.map(([name, , value]) => value ?? ((o: T) => (o as Record<string, unknown>)[name]));
  return (o) => {
    let out = '';
    for (let i = 0; i < heads.length; i++) {
      const text = jsonValue(kinds[i] as JsonKind, (values[i] as (o: T) => unknown)(o));
      if (text === null) return null;
      out += (heads[i] as string) + text;
    }
    return out + close;
  };
}

/** The writer of an array with these kinds of elements, in this order (a positional tuple). */
export function jsonTupleWriter(kinds: readonly JsonKind[]): (values: readonly unknown[]) => string | null {
  return (values) => {
    if (values.length !== kinds.length) return null;
    let out = '[';
    for (let i = 0; i < kinds.length; i++) {
      const text = jsonValue(kinds[i] as JsonKind, values[i]);
      if (text === null) return null;
      out += (i === 0 ? '' : ',') + text;
    }
    return out + ']';
  };
}
