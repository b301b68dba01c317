import type { FieldError } from '../errors/dris-error.js';

/** The environment as configuration reads it (process.env by default, a plain object in tests). */
export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads variables of `env`, collecting every problem instead of stopping at the first, so that one
 * start-up names everything wrong. A blank value counts as unset.
 */
export class Reader {
  readonly problems: FieldError[] = [];
  constructor(private readonly env: Env) {}

  str(name: string): string | undefined {
    const v = this.env[name];
    return v === undefined || v.trim() === '' ? undefined : v.trim();
  }

  int(name: string, def: number, min: number, max: number): number {
    return this.numberOf(name, def, min, max, /^-?\d+$/, 'not_an_integer', 'an integer');
  }

  /** A decimal number (not only an integer), e.g. a fraction. */
  num(name: string, def: number, min: number, max: number): number {
    return this.numberOf(name, def, min, max, /^-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/, 'not_a_number', 'a number');
  }

  private numberOf(name: string, def: number, min: number, max: number, form: RegExp, code: string, what: string): number {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if (!form.test(raw)) {
      this.problems.push({ path: name, code, message: `must be ${what}, got ${JSON.stringify(raw)}` });
      return def;
    }
    const n = Number(raw);
    if (n < min || n > max) {
      this.problems.push({ path: name, code: 'out_of_range', message: `must be between ${min} and ${max}` });
      return def;
    }
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if (/^(1|true|yes|on)$/i.test(raw)) return true;
    if (/^(0|false|no|off)$/i.test(raw)) return false;
    this.problems.push({ path: name, code: 'not_a_boolean', message: 'must be true or false' });
    return def;
  }

  oneOf<T extends string>(name: string, values: readonly T[], def: T): T {
    const raw = this.str(name);
    if (raw === undefined) return def;
    if ((values as readonly string[]).includes(raw)) return raw as T;
    this.problems.push({ path: name, code: 'invalid_value', message: `must be one of ${values.join('|')}` });
    return def;
  }

  url(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.str(name);
    return raw === undefined ? undefined : this.checkUrl(name, raw, protocols) ? raw : undefined;
  }

  /** Comma-separated URLs (the servers of a cluster); each is checked like url(). */
  urls(name: string, protocols: readonly string[]): string | undefined {
    const raw = this.str(name);
    if (raw === undefined) return undefined;
    const parts = raw.split(',').map((p) => p.trim());
    if (parts.some((p) => p === '')) {
      this.problems.push({ path: name, code: 'invalid_url', message: 'must be URLs separated by commas, none empty' });
      return undefined;
    }
    return parts.every((p) => this.checkUrl(name, p, protocols)) ? parts.join(',') : undefined;
  }

  private checkUrl(name: string, raw: string, protocols: readonly string[]): boolean {
    try {
      const u = new URL(raw);
      if (!protocols.includes(u.protocol)) {
        this.problems.push({ path: name, code: 'invalid_url', message: `protocol must be one of ${protocols.join(' ')}` });
        return false;
      }
      return true;
    } catch {
      this.problems.push({ path: name, code: 'invalid_url', message: 'must be a URL' });
      return false;
    }
  }
}

/** `base` with the members of `extras` that are set (exactOptionalPropertyTypes: no `undefined` members). */
export function withOptional<T extends object>(base: T, extras: Record<string, string | number | undefined>): T {
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(extras)) if (v !== undefined) out[k] = v;
  return out as T;
}
