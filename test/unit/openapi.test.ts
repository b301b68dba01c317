import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import SwaggerParser from '@apidevtools/swagger-parser';
import t from 'tap';
import type { AdminServices, ApiServices } from '../../src/app/api-services.js';
import { buildOpenApi, DOCUMENTATION_TAG, openApiPath, SCHEMA_NAME, TAGS } from '../../src/http/openapi.js';
import { ROUTE_TABLE, routesOf } from '../../src/http/route-table.js';
import type { RouteSpec } from '../../src/http/route-spec.js';
import type { GatewayContent, HttpServices } from '../../src/http/services.js';
import type { SwaggerAssets } from '../../src/http/swagger.js';

/**
 * The route table, the routers made from it and the OpenAPI document agree: every route served is
 * documented with what a client needs, the document lists no operation no router serves, and the
 * checked-in docs/openapi.json is the document the service serves (`npm run openapi` renews it).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const version = (JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
const doc = buildOpenApi(ROUTE_TABLE, version) as { paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>; components: { schemas: Record<string, unknown> } };

/** Every service present, none used: binding only reads which services a process has. */
const everything: HttpServices = {
  api: {} as ApiServices,
  admin: {} as AdminServices,
  docs: {} as SwaggerAssets,
  gateway: { content: {} as GatewayContent, readTimeoutMs: 1 },
};

const documented = (): string[] => Object.entries(doc.paths).flatMap(([p, item]) => Object.entries(item).map(([verb, op]) => `${verb.toUpperCase()} ${p} ${op.operationId}`));

t.test('every route a router serves is documented, and every documented operation is served', async (t) => {
  const limits = { record: 1024, bulk: 2048 };
  const all = [...routesOf('public', everything, limits), ...routesOf('admin', everything, limits)];
  const left = new Set(ROUTE_TABLE.filter((s) => s.notInDocument !== undefined).map((s) => s.operationId));
  t.same([...left].sort(), ['OpenApiDocument', 'SwaggerAsset', 'SwaggerUi'], 'only the routes serving the documentation are left out, each saying why');
  const served = all.filter((r) => !left.has(r.operationId)).map((r) => `${r.method} ${openApiPath(r.pattern)} ${r.operationId}`);
  t.same([...served].sort(), [...documented()].sort());
  t.equal(new Set(served).size, served.length, 'no operation twice');
  t.equal(all.length, ROUTE_TABLE.length, 'every route of the table is served by one of the listeners');
  const publicOnly = routesOf('public', { api: {} as ApiServices }, limits).map((r) => r.operationId);
  t.notOk(publicOnly.includes('GetIpfsContent'), 'no gateway route without the embedded IPFS node');
  t.notOk(publicOnly.some((id) => ROUTE_TABLE.find((s) => s.operationId === id)?.listener === 'admin'), 'no admin route on the public port');
});

t.test('every route says what a client needs to call it', async (t) => {
  const ids = new Set<string>();
  for (const spec of ROUTE_TABLE) {
    const what = `${spec.method} ${spec.path}`;
    t.notOk(ids.has(spec.operationId), `${what}: operationId ${spec.operationId} is unique`);
    ids.add(spec.operationId);
    t.ok(spec.summary.length > 0, `${what}: summary`);
    t.ok([...TAGS, DOCUMENTATION_TAG].includes(spec.tag), `${what}: tag ${spec.tag}`);
    const names = [...spec.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]);
    t.same(Object.keys(spec.pathParams ?? {}).sort(), [...names].sort(), `${what}: every path parameter is described`);
    t.ok(Object.keys(spec.responses).some((s) => Number(s) < 300), `${what}: a success answer`);
    for (const [status, r] of Object.entries(spec.responses)) t.ok(r.description.length > 0, `${what} ${status}: description`);
    if (spec.method === 'POST' || spec.method === 'PUT') t.ok(spec.body !== undefined, `${what}: the body is documented`);
  }
});

t.test('every answer of every operation has a description and a body schema or media type', async (t) => {
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [verb, op] of Object.entries(item)) {
      const statuses = Object.keys(op.responses);
      for (const s of ['400', '413', '431', '500', '503']) t.ok(statuses.includes(s), `${verb} ${p}: ${s} declared`);
      const spec = ROUTE_TABLE.find((r) => r.operationId === op.operationId) as RouteSpec;
      if (spec.auth === 'apiKey') for (const s of ['401', '403', '429']) t.ok(statuses.includes(s), `${verb} ${p}: ${s} declared`);
      if (spec.body !== undefined) for (const s of ['408', '415']) t.ok(statuses.includes(s), `${verb} ${p}: ${s} declared`);
      for (const [status, r] of Object.entries(op.responses)) {
        const answer = r as { description?: string; content?: Record<string, unknown> };
        t.ok((answer.description ?? '').length > 0 && answer.content !== undefined, `${verb} ${p} ${status}`);
      }
    }
  }
});

t.test('schema names say what the schema is', async (t) => {
  const names = Object.keys(doc.components.schemas);
  t.ok(names.length > 40, `${names.length} schemas`);
  // typia names an instance of a generic type after its arguments: `Recordstringunknown`, `ReadonlyRecordstring__type`.
  const generic = /^(Recordstring|Omit[A-Z]|Pick[A-Z]|Partial[A-Z]|Readonly[A-Z]|Array[A-Z])|__|string|unknown/;
  t.same(names.filter((n) => !SCHEMA_NAME.test(n) || generic.test(n)), []);
});

t.test('the document is valid OpenAPI 3.1', async (t) => {
  await t.resolves(SwaggerParser.validate(structuredClone(doc) as never));
});

t.test('docs/openapi.json is the document the service serves (npm run openapi writes it)', async (t) => {
  const checkedIn = JSON.parse(readFileSync(path.join(root, 'docs', 'openapi.json'), 'utf8')) as unknown;
  t.same(checkedIn, JSON.parse(JSON.stringify(doc)), 'run `npm run openapi` and commit docs/openapi.json');
});
