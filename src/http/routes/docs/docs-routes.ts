import type { Reply, RequestContext } from '../../router.js';
import { route, type RouteSpec } from '../../route-spec.js';
import type { SwaggerAssets } from '../../swagger.js';

/**
 * The interactive documentation: Swagger UI, its assets, and the OpenAPI document itself. They
 * serve the document rather than the API, and are left out of it.
 */

const NOT_AN_OPERATION = 'serves the documentation, not the API';

function docsOf(make: (docs: SwaggerAssets, ctx: RequestContext) => Reply): RouteSpec['bind'] {
  return (services) => {
    const docs = services.docs;
    return docs === undefined ? null : async (ctx) => make(docs, ctx);
  };
}

const page = (type: string, description: string): RouteSpec['responses'][number] => ({ description, media: { [type]: { type: 'string' } } });

export const SwaggerUi = route('GET /swagger', 'SwaggerUi', 'Documentation', 'Swagger UI over this document', {
  auth: 'none', notInDocument: NOT_AN_OPERATION,
  responses: { 200: page('text/html', 'The Swagger UI page (its scripts and styles are served by this service, no CDN).') },
  bind: docsOf((docs) => docs.page()),
});

export const OpenApiDocument = route('GET /swagger/openapi.json', 'OpenApiDocument', 'Documentation', 'This OpenAPI 3.1 document (docs/openapi.json in the repository)', {
  auth: 'none', notInDocument: NOT_AN_OPERATION,
  responses: { 200: { description: 'The OpenAPI document.', media: { 'application/json': { type: 'object' } } } },
  bind: docsOf((docs) => docs.document()),
});

export const SwaggerAsset = route('GET /swagger/assets/:file', 'SwaggerAsset', 'Documentation', 'A Swagger UI asset (script, style sheet, icon)', {
  auth: 'none', notInDocument: NOT_AN_OPERATION,
  pathParams: { file: 'Asset file name, e.g. swagger-ui-bundle.js.' },
  responses: {
    200: { description: 'The asset (JavaScript, CSS or PNG), cached for a day.', media: { 'text/javascript': { type: 'string' }, 'text/css': { type: 'string' }, 'image/png': { type: 'string', contentMediaType: 'image/png' } }, headers: ['Cache-Control'] },
    404: { description: 'No such asset (route_not_found).', schema: 'error' },
  },
  bind: docsOf((docs, ctx) => docs.asset(ctx.params['file'] ?? '')),
});
