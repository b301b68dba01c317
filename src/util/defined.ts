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
