/**
 * JSON text written by concatenation where an object built only to be stringified would cost more
 * than the text (answers and queue frames of the ingest path). Each writer gives exactly what
 * JSON.stringify gives for the same members in the same order; their tests compare the two.
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
