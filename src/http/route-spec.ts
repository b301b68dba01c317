import type { IJsonSchemaUnit } from 'typia';
import type { AuthMode, Method, Reply, RequestContext } from './router.js';
import type { QuerySpec } from './query.js';
import type { HttpServices } from './services.js';

/**
 * One entry of the route table (route-table.ts): everything the router needs to serve an
 * operation and everything the OpenAPI document says of it, side by side, so the two cannot
 * drift. Schemas are typia's, generated from the same TypeScript types the handlers return and
 * the validators check.
 */

/** The listener a route is served on: the public port or the administration listener. */
export type Listener = 'public' | 'admin';

export type Schema<T = unknown> = IJsonSchemaUnit<'3.1', T>;

/** Which limit bounds a route's body: the configured single-record or bulk limit, or a fixed size. */
export type BodyLimit = 'record' | 'bulk' | { readonly bytes: number };

export interface BodySpec {
  readonly schema: Schema;
  /** false: the request may also come without a body (and then needs no Content-Type). */
  readonly required: boolean;
  readonly limit: BodyLimit;
  readonly description?: string;
  readonly example?: unknown;
}

/** A response header the document describes once (openapi-parts.ts). */
export type HeaderName = 'Retry-After' | 'Content-Disposition' | 'Allow' | 'Cache-Control' | 'Etag' | 'Content-Location' | 'X-Ipfs-Path' | 'X-Ipfs-Roots';

export interface ResponseSpec {
  readonly description: string;
  /** A JSON body of this schema; `error` for the error body. */
  readonly schema?: Schema | 'error';
  /** Bodies that are not JSON (pages, assets, IPFS content): media type → schema. */
  readonly media?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  readonly headers?: readonly HeaderName[];
  readonly example?: unknown;
}

export type Handler = (ctx: RequestContext) => Promise<Reply>;

export interface RouteSpec {
  readonly operationId: string;
  readonly method: Method;
  /** With `:name` segments, e.g. `/api/v1/snapshots/:snapshotId`. */
  readonly path: string;
  readonly listener: Listener;
  readonly auth: AuthMode;
  readonly tag: string;
  readonly summary: string;
  readonly description?: string;
  /** Path parameter name → description (and pattern, when the route enforces one); every `:name` of the path has one. */
  readonly pathParams?: Readonly<Record<string, string | { readonly description: string; readonly pattern: string }>>;
  readonly query?: QuerySpec;
  /** The Idempotency-Key header (the only request header a route reads besides the front's). */
  readonly idempotencyKey?: boolean;
  readonly body?: BodySpec;
  /**
   * The route's own answers: its success and the errors it decides. The answers every route of
   * its kind can give (authentication, rate limits, body limits, overload) are added from its auth
   * mode and body by openapi.ts.
   */
  readonly responses: Readonly<Record<number, ResponseSpec>>;
  /**
   * Why the route is not an operation of the document, for the few that serve the document itself
   * (Swagger UI, its assets, the document); every other route is documented.
   */
  readonly notInDocument?: string;
  /** The handler over this process's services, or null when the process does not serve the route. */
  readonly bind: (services: HttpServices) => Handler | null;
}

/** A JSON success or error answer of a route. */
export function json<T>(description: string, schema: Schema<T>, example?: T): ResponseSpec {
  return example === undefined ? { description, schema } : { description, schema, example };
}

export function error(description: string, headers?: readonly HeaderName[]): ResponseSpec {
  return headers === undefined ? { description, schema: 'error' } : { description, schema: 'error', headers };
}

/** The JSON reply of a route: status and body, typed by the schema the route documents. */
export function reply<T>(status: number, body: T, headers?: Readonly<Record<string, string>>): Reply {
  return headers === undefined ? { status, body } : { status, body, headers };
}

type RouteHead = `${Method} /${string}`;
type RouteRest = Omit<RouteSpec, 'operationId' | 'method' | 'path' | 'tag' | 'summary' | 'listener' | 'auth'> & Partial<Pick<RouteSpec, 'listener' | 'auth'>>;

/** A route of the table: `METHOD /path`, its operationId, tag and summary; public and keyed unless `rest` says otherwise. */
export function route(head: RouteHead, operationId: string, tag: string, summary: string, rest: RouteRest): RouteSpec {
  const space = head.indexOf(' ');
  return { listener: 'public', auth: 'apiKey', ...rest, operationId, method: head.slice(0, space) as Method, path: head.slice(space + 1), tag, summary };
}
