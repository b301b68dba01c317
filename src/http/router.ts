import type { Principal } from '../app/authenticator.js';

/** Transport-neutral request and reply, so handlers never see uWebSockets.js. */

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestHeaders {
  readonly apiKey: string | undefined;
  readonly contentType: string | undefined;
  readonly contentLength: number | undefined;
  readonly idempotencyKey: string | undefined;
  readonly authorization: string | undefined;
  readonly accept: string | undefined;
}

export interface RequestContext {
  readonly method: string;
  readonly path: string;
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  readonly headers: RequestHeaders;
  readonly body: Buffer;
  readonly correlationId: string;
  readonly remoteAddress: string;
  /** Set for routes with `auth: 'apiKey'`. */
  readonly principal: Principal | null;
}

export interface Reply {
  readonly status: number;
  /** Serialised as JSON unless a Buffer or string with its own contentType. */
  readonly body: unknown;
  readonly contentType?: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export type AuthMode = 'apiKey' | 'none' | 'admin';

export interface Route {
  readonly method: Method;
  /** Path with `:name` segments, e.g. `/api/v1/snapshots/:snapshotId`. */
  readonly pattern: string;
  readonly operationId: string;
  readonly auth: AuthMode;
  /** Largest accepted body in bytes; routes without it take no body. */
  readonly maxBodyBytes?: number;
  handle(ctx: RequestContext): Promise<Reply>;
}

interface Compiled {
  readonly route: Route;
  readonly re: RegExp;
  readonly names: readonly string[];
}

export type Match =
  | { readonly kind: 'found'; readonly route: Route; readonly params: Record<string, string> }
  | { readonly kind: 'method_not_allowed'; readonly allow: readonly string[] }
  | { readonly kind: 'not_found' };

export class Router {
  private readonly compiled: Compiled[];

  constructor(readonly routes: readonly Route[]) {
    this.compiled = routes.map((route) => {
      const names: string[] = [];
      const source = route.pattern
        .split('/')
        .map((seg) => {
          if (seg.startsWith(':')) {
            names.push(seg.slice(1));
            return '([^/]+)';
          }
          return seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
        })
        .join('/');
      return { route, re: new RegExp(`^${source}/?$`), names };
    });
  }

  /** HEAD is answered by the GET route of the path (the server sends the headers only). */
  match(method: string, path: string): Match {
    const wanted = method === 'HEAD' ? 'GET' : method;
    const allow: string[] = [];
    for (const c of this.compiled) {
      const m = c.re.exec(path);
      if (m === null) continue;
      if (c.route.method !== wanted) {
        allow.push(c.route.method);
        if (c.route.method === 'GET') allow.push('HEAD');
        continue;
      }
      const params: Record<string, string> = {};
      let bad = false;
      c.names.forEach((n, i) => {
        try {
          params[n] = decodeURIComponent(m[i + 1] ?? '');
        } catch {
          bad = true;
        }
      });
      if (bad) return { kind: 'not_found' };
      return { kind: 'found', route: c.route, params };
    }
    return allow.length > 0 ? { kind: 'method_not_allowed', allow: [...new Set(allow)] } : { kind: 'not_found' };
  }
}
