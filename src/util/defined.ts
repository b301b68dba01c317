/**
 * `values` without its undefined members. With exactOptionalPropertyTypes an optional option is
 * absent, never undefined: configuration's optional settings are spread into adapter options
 * through this.
 */
export function definedOnly<T extends Record<string, unknown>>(values: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(values)) if (v !== undefined) out[k] = v;
  return out as { [K in keyof T]?: Exclude<T[K], undefined> };
}

/** `T` with its members that may be undefined made optional instead (for exactOptionalPropertyTypes). */
export type Defined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & { [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined> };

/** A copy of `o` without its undefined members. */
export function defined<T extends object>(o: T): Defined<T> {
  const out: Record<string, unknown> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as Defined<T>;
}
