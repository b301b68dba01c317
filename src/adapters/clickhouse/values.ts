import { DrisError } from '../../errors/dris-error.js';
import { MAX_PAGE_LIMIT } from './schema.js';

/**
 * Values as ClickHouse takes and gives them, and the paging every listing shares: shared by the
 * stores so that each converts, bounds and pages the same way.
 */

/** 64-bit integers arrive as numbers from chDB and as strings from a server. */
export type Int64Out = number | string;

export const n = (v: Int64Out): number => Number(v);
export const nn = (v: Int64Out | null): number | null => (v === null ? null : Number(v));

/** `YYYY-MM-DD hh:mm:ss.sss` (UTC): the DateTime64 text every ClickHouse input parser accepts. */
export function dateTime64Text(ms: number): string {
  // DateTime64 holds 1900..2299; the ISO form below is also only 4-digit years in this range.
  if (!Number.isSafeInteger(ms) || ms < -2_208_988_800_000 || ms >= 10_413_792_000_000) {
    throw new DrisError('internal_error', 'timestamp outside the storable range');
  }
  // The records of a bulk request share their acceptance time: its text is made once.
  if (ms === lastDateTimeMs) return lastDateTimeText;
  const iso = new Date(ms).toISOString();
  lastDateTimeText = `${iso.slice(0, 10)} ${iso.slice(11, 23)}`;
  lastDateTimeMs = ms;
  return lastDateTimeText;
}
let lastDateTimeMs = NaN;
let lastDateTimeText = '';

/**
 * Strictly increasing microseconds of this writer, as DateTime64(6) text: the replacement version
 * of a row replaced whole (a key, a policy). Two puts in the same millisecond (create then
 * revoke) must not tie, or the merge would keep either.
 */
export class ReplacementClock {
  #lastUs = 0;

  /** The next version: its text, and the millisecond it falls in. */
  next(): { readonly text: string; readonly ms: number } {
    this.#lastUs = Math.max(Date.now() * 1000, this.#lastUs + 1);
    const us = this.#lastUs;
    const ms = Math.floor(us / 1000);
    return { text: dateTime64Text(ms) + String(us % 1000).padStart(3, '0'), ms };
  }
}

function invalid(path: string, message: string): DrisError {
  return new DrisError('validation_failed', `invalid ${path}`, { fields: [{ path, code: 'invalid', message }] });
}

function pageLimit(limit: number): number {
  if (!Number.isInteger(limit) || limit < 1) throw invalid('limit', 'must be a positive integer');
  return Math.min(limit, MAX_PAGE_LIMIT);
}

function epochMs(ms: number, path: string): number {
  if (!Number.isSafeInteger(ms)) throw invalid(path, 'must be an integer number of milliseconds');
  // Outside DateTime64's range a bound is just "before everything" or "after everything".
  return Math.min(Math.max(ms, -2_208_988_800_000), 10_413_791_999_999);
}

/** Opaque page cursor: base64url of [epoch ms, tie-breaking id] of the last item returned. */
export function encodeCursor(ms: number, id: string): string {
  return Buffer.from(JSON.stringify([ms, id]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): [number, string] {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw invalid('cursor', 'not a cursor returned by this endpoint');
  }
  if (
    Array.isArray(value) &&
    value.length === 2 &&
    Number.isSafeInteger(value[0]) &&
    typeof value[1] === 'string' &&
    cursor === encodeCursor(value[0] as number, value[1])
  ) {
    return [value[0] as number, value[1]];
  }
  throw invalid('cursor', 'not a cursor returned by this endpoint');
}

/** What a listing of one tenant's rows asks for, newest or oldest first, a page at a time. */
export interface PageRequest {
  readonly tenantId: string;
  readonly limit: number;
  /** Equality filters by parameter name; an undefined one is not applied. */
  readonly filters: Readonly<Record<string, string | undefined>>;
  readonly fromMs?: number | undefined;
  readonly toMs?: number | undefined;
  readonly cursor?: string | undefined;
  /** Parameter names the cursor's time and id go to, e.g. `['afterMs', 'afterId']`. */
  readonly cursorParams: readonly [string, string];
}

/**
 * The query parameters of a page: the tenant, one row more than the page (whether another page
 * follows), the filters given, the time range (bounded to what DateTime64 holds) and the cursor's
 * position. Invalid limits, bounds and cursors are refused as `validation_failed`.
 */
export function pageParams(p: PageRequest): { limit: number; params: Record<string, string | number> } {
  const limit = pageLimit(p.limit);
  const params: Record<string, string | number> = { tenantId: p.tenantId, limit: limit + 1 };
  for (const [name, value] of Object.entries(p.filters)) if (value !== undefined) params[name] = value;
  if (p.fromMs !== undefined) params['fromMs'] = epochMs(p.fromMs, 'from');
  if (p.toMs !== undefined) params['toMs'] = epochMs(p.toMs, 'to');
  if (p.cursor !== undefined) {
    const [ms, id] = decodeCursor(p.cursor);
    params[p.cursorParams[0]] = ms;
    params[p.cursorParams[1]] = id;
  }
  return { limit, params };
}

/** The page's items (the rows past `limit` only tell that another page follows) and its cursor. */
export function pageOf<R, T>(rows: readonly R[], limit: number, map: (row: R) => T, position: (row: R) => [number, string]): { items: T[]; nextCursor: string | null } {
  const items = rows.slice(0, limit).map(map);
  const last = rows.length > limit ? rows[limit - 1] : undefined;
  return { items, nextCursor: last === undefined ? null : encodeCursor(...position(last)) };
}

/**
 * A conjunction of predicates and the parameters they name, built a filter at a time: a filter
 * whose value is undefined is left out, predicate and parameter both.
 */
export class Conditions {
  readonly where: string[];
  readonly params: Record<string, string | number>;

  constructor(where: readonly string[], params: Record<string, string | number>) {
    this.where = [...where];
    this.params = params;
  }

  /** Adds `predicate`, which names the parameter `name`, when `value` is given. */
  add(predicate: string, name: string, value: string | number | undefined): this {
    if (value !== undefined) {
      this.where.push(predicate);
      this.params[name] = value;
    }
    return this;
  }

  text(separator = ' AND '): string {
    return this.where.join(separator);
  }
}
