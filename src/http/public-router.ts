import type { ApiServices } from '../app/api-services.js';
import { buildOpenApi } from './openapi.js';
import { ROUTE_TABLE, routesOf, type BodyLimits } from './route-table.js';
import { Router } from './router.js';
import type { GatewayContent } from './services.js';
import { swaggerAssets } from './swagger.js';

export interface PublicRouterOptions {
  readonly api: ApiServices;
  /** The embedded IPFS node's block store, served at /ipfs/{cid}; null without one. */
  readonly gateway: GatewayContent | null;
  readonly version: string;
  readonly limits: BodyLimits;
  /** Bound on reading one gateway answer, milliseconds. Default 30 s. */
  readonly gatewayReadTimeoutMs?: number;
}

/** The public listener's router: the route table's public routes over this process's services. */
export function publicRouter(o: PublicRouterOptions): Router {
  const docs = swaggerAssets(buildOpenApi(ROUTE_TABLE, o.version));
  const gateway = o.gateway === null ? {} : { gateway: { content: o.gateway, readTimeoutMs: o.gatewayReadTimeoutMs ?? 30_000 } };
  return new Router(routesOf('public', { api: o.api, docs, ...gateway }, o.limits));
}
