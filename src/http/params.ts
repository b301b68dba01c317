import type { IValidation } from 'typia';
import { DrisError, type FieldError } from '../errors/dris-error.js';
import { assertTenant, type Principal } from '../app/authenticator.js';
import { toFieldErrors } from '../app/validators.js';
import { parseIJson } from '../domain/hashing/ijson.js';
import type { RequestContext } from './router.js';

/** Request parts every route reads the same way: the caller, its tenants, paging, time bounds, bodies. */

export function principalOf(ctx: RequestContext): Principal {
  if (ctx.principal === null) throw new DrisError('internal_error', 'route without principal');
  return ctx.principal;
}

/** The tenants a read may look in: the one named in `tenantId` (checked), or all of the key's. */
export function tenantsOf(ctx: RequestContext): string[] {
  const p = principalOf(ctx);
  const named = ctx.query.get('tenantId');
  if (named !== null && named !== '') {
    assertTenant(p, named);
    return [named];
  }
  return [p.tenantId, ...[...p.tenants].filter((t) => t !== p.tenantId)];
}

/** The one tenant a request acts for: the one named (checked), else the key's own. */
export function tenantOf(ctx: RequestContext, named: string | null | undefined): string {
  const p = principalOf(ctx);
  const tenantId = named === null || named === undefined || named === '' ? p.tenantId : named;
  assertTenant(p, tenantId);
  return tenantId;
}

export function limitOf(q: URLSearchParams, fields: FieldError[]): number {
  const raw = q.get('limit');
  if (raw === null) return 100;
  const n = Number(raw);
  if (!/^\d+$/.test(raw) || n < 1 || n > 1000) fields.push({ path: 'limit', code: 'out_of_range', message: 'must be an integer from 1 to 1000' });
  return n;
}

/** Parses a time bound given as an ISO 8601 date-time or epoch milliseconds. */
export function timeParam(q: URLSearchParams, name: string, fields: FieldError[]): number | undefined {
  const raw = q.get(name);
  if (raw === null || raw === '') return undefined;
  const ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
  if (!Number.isFinite(ms) || (!/^\d+$/.test(raw) && !/^\d{4}-\d{2}-\d{2}T/.test(raw))) {
    fields.push({ path: name, code: 'invalid_format', message: 'must be an ISO 8601 date-time or epoch milliseconds' });
    return undefined;
  }
  return ms;
}

/** A query parameter when present and not empty. */
export function optional(q: URLSearchParams, name: string): string | undefined {
  const v = q.get(name);
  return v === null || v === '' ? undefined : v;
}

/**
 * A JSON body under the I-JSON rules of ingestion (duplicate names, unsafe integers, lone
 * surrogates, depth): a payload sent for verification is hashed exactly as it would have been
 * at ingestion, so it must be read the same way.
 */
export function ijsonBody(ctx: RequestContext): unknown {
  const parsed = parseIJson(ctx.body.length === 0 ? Buffer.from('{}') : ctx.body);
  if (parsed.syntaxError) throw new DrisError('invalid_json', 'the body is not valid JSON');
  if (parsed.errors.length > 0) throw new DrisError('validation_failed', 'the body breaks the I-JSON rules', { fields: [...parsed.errors] });
  return parsed.value;
}

/** Checks a value with a typia validator; 400 with one detail per offending field. */
export function checked<T>(value: unknown, validate: (v: unknown) => IValidation<T>): T {
  const r = validate(value);
  if (!r.success) throw new DrisError('validation_failed', 'invalid request', { fields: toFieldErrors(r.errors, '') });
  return r.data;
}


/** `{ [name]: value }` when the value is present, else `{}`: for exactOptionalPropertyTypes. */
export function opt<K extends string, V>(name: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [name]: value }) as { [P in K]?: V };
}

export interface Listing<K extends string> {
  readonly tenantId: string;
  readonly limit: number;
  /** fromMs, toMs and cursor, each only when given. */
  readonly window: { fromMs?: number; toMs?: number; cursor?: string };
  /** The named string filters that were given. */
  readonly filters: { [P in K]?: string };
}

/**
 * The common query of a tenant's listing: `tenantId` (default the key's, checked), `limit`,
 * `from`/`to` and `cursor`, plus string filters; `check` may add field errors of its own. Every
 * problem is reported at once (400 with one detail per parameter).
 */
export function listingOf<K extends string>(ctx: RequestContext, filters: readonly K[], check?: (q: URLSearchParams, fields: FieldError[]) => void): Listing<K> {
  const q = ctx.query;
  const fields: FieldError[] = [];
  const limit = limitOf(q, fields);
  const fromMs = timeParam(q, 'from', fields);
  const toMs = timeParam(q, 'to', fields);
  check?.(q, fields);
  if (fields.length > 0) throw new DrisError('validation_failed', 'invalid query', { fields });
  const given: { [P in K]?: string } = {};
  for (const name of filters) {
    const v = optional(q, name);
    if (v !== undefined) given[name] = v;
  }
  return {
    tenantId: tenantOf(ctx, q.get('tenantId')),
    limit,
    window: { ...opt('fromMs', fromMs), ...opt('toMs', toMs), ...opt('cursor', optional(q, 'cursor')) },
    filters: given,
  };
}
