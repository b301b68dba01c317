import type { AdminServices, ApiServices } from '../app/api-services.js';
import type { SwaggerAssets } from './swagger.js';

/**
 * What a listener's routes are bound to. A route whose services this process lacks is not
 * served (the public port has no admin services; a process without the embedded IPFS node has
 * no gateway).
 */
export interface HttpServices {
  readonly api?: ApiServices;
  readonly admin?: AdminServices;
  readonly docs?: SwaggerAssets;
  readonly gateway?: { readonly content: GatewayContent; /** Bound on reading one answer, milliseconds. */ readonly readTimeoutMs: number };
}

/** The embedded block store as the trustless gateway reads it (CIDs in their text form). */
export interface GatewayContent {
  getBlock(cid: string, signal?: AbortSignal): Promise<Uint8Array>;
  car(cid: string, options: { readonly scope: 'all' | 'block'; readonly duplicates: boolean; readonly signal?: AbortSignal }): Promise<Uint8Array>;
  cat(cid: string, options: { readonly timeoutMs?: number }): Promise<Uint8Array>;
}
