import typia from 'typia';
import { DEFAULT_ADMIN_PORT } from '../config/config.js';
import type { ErrorResponse, RateLimitResponse } from './api-types.js';
import type { QuerySpec } from './query.js';
import type { HeaderName, ResponseSpec, RouteSpec, Schema } from './route-spec.js';
import { codesOf } from './status.js';

/**
 * The OpenAPI 3.1 document, made from the route table and nothing else: every operation, its
 * parameters, body and answers are those of a route the router serves. Component schemas are
 * typia's, generated from the types the handlers return and the validators check; the answers
 * every route of a kind can give (authentication, rate limits, body limits, overload) are added
 * here from the route's auth mode and body, as the HTTP front gives them.
 */

type Json = Record<string, unknown>;

export const TAGS = ['Records', 'Verification', 'Status', 'Audit', 'Health', 'Admin', 'IPFS'] as const;
/** The tag of the routes that serve the documentation (not in the document). */
export const DOCUMENTATION_TAG = 'Documentation';

const ERROR = typia.json.schema<ErrorResponse, '3.1'>();
const RATE_LIMIT = typia.json.schema<RateLimitResponse, '3.1'>();

const HEADERS: Readonly<Record<HeaderName | 'X-RateLimit-Limit' | 'X-RateLimit-Remaining' | 'X-RateLimit-Reset' | 'X-Correlation-Id', Json>> = {
  'X-Correlation-Id': { description: 'Echo of the request header (when 1 to 128 safe characters), or generated; quote it to support.', schema: { type: 'string' } },
  'X-RateLimit-Limit': { description: 'Requests allowed per window (one hour by default).', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window.', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix time (seconds) at which the window resets.', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer' } },
  'Content-Disposition': { description: 'attachment, with a file name.', schema: { type: 'string' } },
  Allow: { description: 'The methods the path takes.', schema: { type: 'string' } },
  'Cache-Control': { description: 'How long the answer may be cached.', schema: { type: 'string' } },
  Etag: { description: 'Entity tag of the content.', schema: { type: 'string' } },
  'Content-Location': { description: 'The URL of the format served.', schema: { type: 'string' } },
  'X-Ipfs-Path': { description: 'The IPFS path asked for.', schema: { type: 'string' } },
  'X-Ipfs-Roots': { description: 'The canonical root CID.', schema: { type: 'string' } },
};

/** A component name says what the schema is; generic instantiations would leak their arguments. */
export const SCHEMA_NAME = /^[A-Z][A-Za-z0-9]*$/;

class Components {
  readonly schemas: Record<string, unknown> = {};

  /** Takes a typia unit's components in; returns its schema. The same name must mean the same schema. */
  add(unit: Schema): Json {
    for (const [name, schema] of Object.entries(unit.components.schemas ?? {})) {
      const normal = normalize(schema);
      const known = this.schemas[name];
      if (known !== undefined && JSON.stringify(known) !== JSON.stringify(normal)) throw new Error(`two schemas named ${name}`);
      if (!SCHEMA_NAME.test(name)) throw new Error(`schema name ${name} is not a plain name`);
      this.schemas[name] = normal;
    }
    return normalize(unit.schema) as Json;
  }
}

/** Keywords that only annotate: beside a `$ref` they constrain nothing. */
const ANNOTATIONS = new Set(['$ref', 'description', 'title', 'readOnly', 'writeOnly', 'deprecated', 'default', 'example', 'examples']);

/**
 * `$ref` beside keywords that constrain (typia puts a schema plugin's keywords there) as `allOf`,
 * the form every tool reads the same way.
 */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (typeof value !== 'object' || value === null) return value;
  const out: Json = {};
  for (const [k, v] of Object.entries(value)) out[k] = normalize(v);
  // typia lists a union's members in the order the compiler met them, which differs between
  // units of one build: a stable order makes the same type the same schema everywhere (the
  // members of oneOf and anyOf are a set, their order means nothing).
  for (const k of ['oneOf', 'anyOf']) {
    const members = out[k];
    if (Array.isArray(members)) out[k] = [...members].sort((a, b) => compareText(JSON.stringify(a), JSON.stringify(b)));
  }
  // The same holds for the members an intersection or a spread brings into `required`.
  const required = out['required'];
  if (Array.isArray(required) && required.every((r) => typeof r === 'string')) out['required'] = [...required].sort(compareText);
  const ref = out['$ref'];
  if (ref === undefined || Object.keys(out).every((k) => ANNOTATIONS.has(k))) return out;
  delete out['$ref'];
  return { allOf: [{ $ref: ref }, out] };
}


const compareText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

const headersOf = (names: readonly string[]): Json => Object.fromEntries(names.map((n) => [n, { $ref: `#/components/headers/${n}` }]));

function describe(status: number, text: string): string {
  const codes = codesOf(status);
  return codes.length === 0 ? text : `${text} Error codes: ${codes.map((c) => `\`${c}\``).join(', ')}.`;
}

/** The answers the front gives any route of this kind, before or around the route's own. */
function commonAnswers(spec: RouteSpec): Record<number, ResponseSpec> {
  const out: Record<number, ResponseSpec> = {
    400: { description: spec.body === undefined && spec.query === undefined ? 'A malformed request (refused by the front).' : 'Invalid parameters or body: one `details` entry per offending field.', schema: 'error' },
    413: { description: spec.body === undefined ? 'A body was sent; this route takes none.' : 'Body larger than the limit (1 MiB single record, 16 MiB bulk by default; `limitBytes`).', schema: 'error' },
    431: { description: 'Request head too large (more than 16 KiB or 50 fields by default).', schema: 'error' },
    500: { description: 'Server error; retry with exponential backoff and quote X-Correlation-Id.', schema: 'error' },
    503: { description: 'Overloaded, storage full, or a dependency is unavailable; retry after Retry-After.', schema: 'error', headers: ['Retry-After'] },
  };
  if (spec.body !== undefined) {
    out[408] = { description: 'The body did not arrive before the body deadline.', schema: 'error' };
    out[415] = { description: 'A body whose Content-Type is not application/json (or +json).', schema: 'error' };
  }
  if (spec.pathParams !== undefined) out[404] = { description: 'Not found.', schema: 'error' };
  if (spec.auth === 'apiKey') {
    out[401] = { description: 'API key missing, malformed, unknown, expired or revoked.', schema: 'error' };
    out[403] = { description: 'The key may not act for the requested tenant.', schema: 'error' };
    out[429] = { description: 'Rate limit exceeded (per key, per address without a valid key).', schema: 'error', headers: ['Retry-After'] };
  }
  if (spec.auth === 'admin') {
    out[401] = { description: 'Admin token missing or wrong.', schema: 'error' };
    out[429] = { description: 'Too many failed admin token attempts from this address.', schema: 'error', headers: ['Retry-After'] };
  }
  if (spec.auth !== 'none') out[504] = { description: 'A dependency did not answer in time; retry with backoff.', schema: 'error' };
  return out;
}

function content(c: Components, r: ResponseSpec, status: number): Json | undefined {
  if (r.media !== undefined) return Object.fromEntries(Object.entries(r.media).map(([type, schema]) => [type, { schema }]));
  if (r.schema === undefined) return undefined;
  const schema = r.schema === 'error' ? c.add(status === 429 ? RATE_LIMIT : ERROR) : c.add(r.schema);
  return { 'application/json': r.example === undefined ? { schema } : { schema, example: r.example } };
}

/** The route's own answer and the common one of the same status: both bodies are possible. */
function merged(c: Components, own: ResponseSpec | undefined, common: ResponseSpec | undefined, status: number): ResponseSpec {
  if (own === undefined) return common as ResponseSpec;
  if (common === undefined || own.schema === 'error' || own.schema === undefined) return own;
  const unit = own.schema;
  const either: Schema = { ...unit, schema: { oneOf: [unit.schema, c.add(status === 429 ? RATE_LIMIT : ERROR)] } } as Schema;
  return { ...own, schema: either, headers: [...new Set([...(own.headers ?? []), ...(common.headers ?? [])])] };
}

function responses(c: Components, spec: RouteSpec): Json {
  const common = commonAnswers(spec);
  const statuses = [...new Set([...Object.keys(spec.responses), ...Object.keys(common)].map(Number))].sort((a, b) => a - b);
  const out: Json = {};
  for (const status of statuses) {
    const r = merged(c, spec.responses[status], common[status], status);
    const headers = [...(spec.auth === 'apiKey' ? ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset'] : []), 'X-Correlation-Id', ...(r.headers ?? [])];
    const body = content(c, r, status);
    out[String(status)] = { description: r.schema === 'error' ? describe(status, r.description) : r.description, headers: headersOf(headers), ...(body === undefined ? {} : { content: body }) };
  }
  return out;
}

function parameters(spec: RouteSpec): Json[] {
  const out: Json[] = [];
  for (const [name, doc] of Object.entries(spec.pathParams ?? {})) {
    const [description, schema] = typeof doc === 'string' ? [doc, { type: 'string', minLength: 1 }] : [doc.description, { type: 'string', pattern: doc.pattern }];
    out.push({ name, in: 'path', required: true, description, schema });
  }
  for (const [name, q] of Object.entries(spec.query ?? ({} as QuerySpec))) out.push({ name, in: 'query', required: q.required, description: q.description, schema: q.schema });
  if (spec.idempotencyKey === true) {
    out.push({
      name: 'Idempotency-Key',
      in: 'header',
      required: false,
      description: 'Deduplication key with a 24-hour window: a retry answers the first request. An empty value counts as none; longer than 256 characters is refused (400).',
      schema: { type: 'string', maxLength: 256 },
    });
  }
  return out;
}

function operation(c: Components, spec: RouteSpec): Json {
  const op: Json = { operationId: spec.operationId, summary: spec.summary, tags: [spec.tag] };
  if (spec.description !== undefined) op['description'] = spec.description;
  op['security'] = spec.auth === 'apiKey' ? [{ ApiKey: [] }] : spec.auth === 'admin' ? [{ AdminToken: [] }] : [];
  const params = parameters(spec);
  if (params.length > 0) op['parameters'] = params;
  if (spec.body !== undefined) {
    const b = spec.body;
    const media: Json = { schema: c.add(b.schema) };
    if (b.example !== undefined) media['example'] = b.example;
    op['requestBody'] = { required: b.required, ...(b.description === undefined ? {} : { description: b.description }), content: { 'application/json': media } };
  }
  op['responses'] = responses(c, spec);
  return op;
}

/** OpenAPI's form of a route path: `{name}` for `:name`. */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}

export function buildOpenApi(table: readonly RouteSpec[], version: string): Json {
  const c = new Components();
  const paths: Record<string, Json> = {};
  // Served by the administration listener only; the public port answers 404 for admin paths.
  const adminServers = [{ url: `http://127.0.0.1:${DEFAULT_ADMIN_PORT}`, description: 'administration listener (DRIS_ADMIN_HOST:DRIS_ADMIN_PORT), not the public port' }];
  for (const spec of table) {
    if (spec.notInDocument !== undefined) continue;
    const path = openApiPath(spec.path);
    const item = paths[path] ?? {};
    // Per operation rather than per path: every member of a path item is then a method.
    item[spec.method.toLowerCase()] = spec.listener === 'admin' ? { ...operation(c, spec), servers: adminServers } : operation(c, spec);
    paths[path] = item;
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Durable Records Integrity Service',
      version: '1.0.0',
      description: `dris ${version}. Accepts JSON records, hashes them (RFC 8785 + SHA-256), batches them into RFC 9162 Merkle trees, pins manifests to IPFS and anchors roots on an EVM chain.`,
    },
    servers: [{ url: '/' }],
    tags: TAGS.map((name) => ({ name })),
    paths,
    components: {
      securitySchemes: { ApiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' }, AdminToken: { type: 'http', scheme: 'bearer' } },
      headers: HEADERS,
      schemas: Object.fromEntries(Object.entries(c.schemas).sort(([a], [b]) => a.localeCompare(b))),
    },
    security: [{ ApiKey: [] }],
  };
}
