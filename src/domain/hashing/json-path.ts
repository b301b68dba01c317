/**
 * Field paths in violations and validation errors. One format everywhere (JS parser, native
 * parser, validators) so a client sees the same path whichever backend found the problem:
 * identifier-like keys as `.key` (no dot at the start), other keys as `["key"]` with JSON string
 * escaping, array indices as `[3]`. Example: `records[2].recordPayload.a["b c"][0]`.
 */

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

export type PathSegment = string | number;

/** Appends one member name to a path (the path may be empty: top level). */
export function appendKey(path: string, key: string): string {
  if (IDENTIFIER.test(key)) return path === '' ? key : `${path}.${key}`;
  // JSON.stringify escapes lone surrogates as \udxxx, so even an invalid key prints as valid text.
  return `${path}[${JSON.stringify(key)}]`;
}

export function appendIndex(path: string, index: number): string {
  return `${path}[${index}]`;
}

/** Builds a path from a root name ('' for none) and segments: strings are keys, numbers indices. */
export function formatPath(root: string, segments: readonly PathSegment[] = []): string {
  let path = root;
  for (const s of segments) path = typeof s === 'number' ? appendIndex(path, s) : appendKey(path, s);
  return path;
}

/** Whether `path` is `prefix` itself or lies below it. */
export function isPathWithin(path: string, prefix: string): boolean {
  if (prefix === '') return true;
  if (!path.startsWith(prefix)) return false;
  if (path.length === prefix.length) return true;
  const next = path.charCodeAt(prefix.length);
  return next === 0x2e /* . */ || next === 0x5b /* [ */;
}
