import typia, { type tags } from 'typia';
import { DrisError, type FieldError } from '../errors/dris-error.js';

/**
 * Query parameters as the route table declares them: each kind reads and checks its value and
 * carries the schema the document gives it, so what is documented is what is enforced. Every
 * problem of a request is reported at once (400, one detail per parameter).
 */

export interface QueryParam<T> {
  readonly description: string;
  readonly required: boolean;
  readonly schema: Readonly<Record<string, unknown>>;
  /** `raw` is null when the parameter is absent. */
  read(raw: string | null, name: string, fields: FieldError[]): T;
}

export type QuerySpec = Readonly<Record<string, QueryParam<unknown>>>;

export type QueryValues<S extends QuerySpec> = { -readonly [K in keyof S]: S[K] extends QueryParam<infer T> ? T : never };

export function readQuery<S extends QuerySpec>(query: URLSearchParams, spec: S): QueryValues<S> {
  const fields: FieldError[] = [];
  const out: Record<string, unknown> = {};
  for (const name in spec) out[name] = (spec[name] as QueryParam<unknown>).read(query.get(name), name, fields);
  if (fields.length > 0) throw new DrisError('validation_failed', 'invalid query', { fields });
  return out as QueryValues<S>;
}

/** A string; empty counts as absent. Required: absent or empty is refused. */
export function text(description: string): QueryParam<string | undefined> {
  return { description, required: false, schema: { type: 'string' }, read: (raw) => (raw === null || raw === '' ? undefined : raw) };
}

export function requiredText(description: string): QueryParam<string> {
  return {
    description,
    required: true,
    schema: { type: 'string', minLength: 1 },
    read: (raw, name, fields) => {
      if (raw === null || raw === '') fields.push({ path: name, code: 'required', message: 'is required' });
      return raw ?? '';
    },
  };
}

export const MAX_PAGE = 1000;
export const DEFAULT_PAGE = 100;

/** A page size: an integer from 1 to 1000, 100 when absent. */
export function pageSize(): QueryParam<number> {
  return {
    description: `Page size, 1 to ${MAX_PAGE} (default ${DEFAULT_PAGE}).`,
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE },
    read: (raw, name, fields) => {
      if (raw === null) return DEFAULT_PAGE;
      const n = Number(raw);
      if (!/^\d+$/.test(raw) || n < 1 || n > MAX_PAGE) fields.push({ path: name, code: 'out_of_range', message: `must be an integer from 1 to ${MAX_PAGE}` });
      return n;
    },
  };
}

const isDateTime = typia.createIs<string & tags.Format<'date-time'>>();

/** A point in time: an RFC 3339 date-time or epoch milliseconds; epoch milliseconds when read. */
export function instant(description: string): QueryParam<number | undefined> {
  return {
    description: `${description} An RFC 3339 date-time (e.g. 2026-01-31T12:00:00Z) or epoch milliseconds.`,
    required: false,
    schema: { anyOf: [{ type: 'string', format: 'date-time' }, { type: 'string', pattern: '^[0-9]+$' }] },
    read: (raw, name, fields) => {
      if (raw === null) return undefined;
      const ms = /^\d+$/.test(raw) ? Number(raw) : isDateTime(raw) ? Date.parse(raw) : NaN;
      if (!Number.isFinite(ms)) {
        fields.push({ path: name, code: 'invalid_format', message: 'must be an RFC 3339 date-time or epoch milliseconds' });
        return undefined;
      }
      return ms;
    },
  };
}

/** One of a fixed list of values. */
export function choice<const V extends string>(values: readonly V[], description: string): QueryParam<V | undefined> {
  return {
    description,
    required: false,
    schema: { type: 'string', enum: [...values] },
    read: (raw, name, fields) => {
      if (raw === null) return undefined;
      if (values.includes(raw as V)) return raw as V;
      fields.push({ path: name, code: 'invalid_enum', message: `must be one of ${values.join(', ')}` });
      return undefined;
    },
  };
}

/** `true` or `false`; false when absent. */
export function flag(description: string): QueryParam<boolean> {
  return {
    description,
    required: false,
    schema: { type: 'boolean', default: false },
    read: (raw, name, fields) => {
      if (raw === null || raw === 'false') return false;
      if (raw === 'true') return true;
      fields.push({ path: name, code: 'invalid_type', message: 'must be true or false' });
      return false;
    },
  };
}

/** The tenant a request acts for or reads; the key's when absent (checked by the application). */
export function tenant(description = "Tenant; the key's own when absent. A tenant the key may not act for answers 403."): QueryParam<string | undefined> {
  return text(description);
}

/** Cursor and page size of a listing. */
export function paging(): { readonly cursor: QueryParam<string | undefined>; readonly limit: QueryParam<number> } {
  return { cursor: text('nextCursor of the previous page of the same listing (an opaque token: any other value is refused, 400).'), limit: pageSize() };
}

/** `from`, `to`, `cursor` and `limit` of a listing over time. */
export function timeWindow(what = ''): { readonly from: QueryParam<number | undefined>; readonly to: QueryParam<number | undefined>; readonly cursor: QueryParam<string | undefined>; readonly limit: QueryParam<number> } {
  return { from: instant(`${what}Earliest time, inclusive.`), to: instant(`${what}Latest time, exclusive.`), ...paging() };
}

type Windowed<S extends QuerySpec> = Omit<QueryValues<S>, 'from' | 'to'> & { fromMs: number | undefined; toMs: number | undefined };

/** A listing's query read, its time bounds as epoch milliseconds (fromMs, toMs). */
export function readListing<S extends QuerySpec & ReturnType<typeof timeWindow>>(query: URLSearchParams, spec: S): Windowed<S> {
  const { from, to, ...rest } = readQuery(query, spec) as QueryValues<S> & { from: number | undefined; to: number | undefined };
  return { ...rest, fromMs: from, toMs: to } as Windowed<S>;
}
