import type { IValidation } from 'typia';
import { DrisError } from '../errors/dris-error.js';
import type { Principal } from '../app/authenticator.js';
import type { Caller } from '../app/tenancy.js';
import { toFieldErrors } from '../app/validators.js';
import { parseIJson } from '../domain/hashing/ijson.js';
import type { RequestContext } from './router.js';

/** Request parts every route reads the same way: the caller and JSON bodies. */

export function principalOf(ctx: RequestContext): Principal {
  if (ctx.principal === null) throw new DrisError('internal_error', 'route without principal');
  return ctx.principal;
}

export function callerOf(ctx: RequestContext): Caller {
  return { principal: principalOf(ctx), correlationId: ctx.correlationId };
}

/** A path parameter (the router always sets those of the route's path). */
export function pathParam(ctx: RequestContext, name: string): string {
  return ctx.params[name] ?? '';
}

/**
 * A JSON body under the I-JSON rules of ingestion (duplicate names, unsafe integers, lone
 * surrogates, depth): a payload sent for verification is hashed exactly as it would have been
 * at ingestion, so it must be read the same way. No body at all reads as `{}`.
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

/** The body read as JSON (I-JSON rules) and checked against the route's request type. */
export function bodyOf<T>(ctx: RequestContext, validate: (v: unknown) => IValidation<T>): T {
  return checked(ijsonBody(ctx), validate);
}
