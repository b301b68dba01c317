import { randomUUID } from 'node:crypto';
import uWS from 'uWebSockets.js';
import { DrisError, errorBody, toDrisError } from '../errors/dris-error.js';
import type { Authenticator, Principal } from '../app/authenticator.js';
import type { RateDecision, RateLimiter } from '../domain/limits/ports.js';
import type { AccessLevel } from '../domain/keys/types.js';
import { componentLogger } from '../util/logger.js';
import type { Reply, RequestContext, RequestHeaders, Router } from './router.js';

/** uWS ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (the typings list the option only without a host). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/**
 * The HTTP front: uWebSockets.js, one catch-all handler and our own router, so unknown routes
 * (404), wrong methods (405), content types (415), body limits (413), authentication (401/403),
 * rate limits (429) and error bodies are decided in one place for every route.
 */

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  204: 'No Content',
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

const CORRELATION_RE = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

export interface HttpServerOptions {
  readonly host: string;
  readonly port: number;
  readonly router: Router;
  readonly authenticator: Authenticator;
  readonly rateLimiter: RateLimiter;
  readonly rateLimits: Readonly<Record<AccessLevel, number>>;
  readonly rateWindowMs: number;
  /** Checks the admin token of `auth: 'admin'` routes; absent, those routes answer 401 (fail closed). */
  readonly adminAuth?: AdminTokenCheck;
  /** Most requests being handled at once before new ones answer 503. */
  readonly maxInFlight: number;
  readonly allowSlowHttp: boolean;
}

/** Throws the DrisError to answer (401, 429) unless `authorization` carries the admin token. */
export interface AdminTokenCheck {
  check(authorization: string | undefined, remoteAddress: string): void;
}

/** uWebSockets.js silently falls back to a pure-JS server on an unsupported Node ABI. */
export function uwsIsNative(): boolean {
  return typeof (uWS as unknown as { getParts?: unknown }).getParts === 'function';
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const mime = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return mime === 'application/json' || (mime.startsWith('application/') && mime.endsWith('+json'));
}

interface AuthOutcome {
  readonly principal: Principal | null;
  readonly error: DrisError | null;
  readonly headers: Record<string, string>;
}

interface Answer {
  status: number;
  headers: Readonly<Record<string, string>>;
  contentType: string;
  body: string | Buffer;
}

export class UwsHttpServer {
  private listenSocket: uWS.us_listen_socket | null = null;
  private inFlight = 0;
  private readonly log = componentLogger('http');
  private readonly app: uWS.TemplatedApp;

  constructor(private readonly options: HttpServerOptions) {
    if (!uwsIsNative() && !options.allowSlowHttp) {
      throw new DrisError('config_invalid', 'uWebSockets.js has no native build for this Node; set DRIS_ALLOW_SLOW_HTTP=true to run on its slow fallback');
    }
    this.app = uWS.App();
    this.app.any('/*', (res, req) => this.onRequest(res, req));
  }

  /** Resolves with the bound port (useful with port 0); rejects when the port is taken. */
  listen(): Promise<number> {
    return new Promise((resolve, reject) => {
      // Exclusive: uWS otherwise sets SO_REUSEPORT, and a second instance on the same port would
      // silently take half of the connections instead of failing to start.
      const listen = this.app.listen.bind(this.app) as unknown as (host: string, port: number, options: number, cb: (token: uWS.us_listen_socket | false) => void) => void;
      listen(this.options.host, this.options.port, LIBUS_LISTEN_EXCLUSIVE_PORT, (token) => {
        if (token === false) {
          reject(new DrisError('config_invalid', `cannot listen on ${this.options.host}:${this.options.port}`));
          return;
        }
        this.listenSocket = token;
        resolve(uWS.us_socket_local_port(token));
      });
    });
  }

  close(): void {
    if (this.listenSocket !== null) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
  }

  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    // Everything read from req must be read now: it is invalid after the first await.
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    const rawQuery = req.getQuery() ?? '';
    const sentCorrelation = req.getHeader('x-correlation-id');
    const correlationId = CORRELATION_RE.test(sentCorrelation) ? sentCorrelation : randomUUID();
    const lengthHeader = req.getHeader('content-length');
    const headers: RequestHeaders = {
      apiKey: req.getHeader('x-api-key') || undefined,
      contentType: req.getHeader('content-type') || undefined,
      contentLength: lengthHeader === '' ? undefined : Number(lengthHeader),
      idempotencyKey: req.getHeader('idempotency-key') || undefined,
      authorization: req.getHeader('authorization') || undefined,
      accept: req.getHeader('accept') || undefined,
    };
    // Read from the socket only when something needs it (an unauthenticated caller's rate bucket).
    let remote: string | undefined;
    const remoteAddress = (): string => (remote ??= Buffer.from(res.getRemoteAddressAsText()).toString());
    const state = { aborted: false, head: method === 'HEAD' };
    res.onAborted(() => {
      state.aborted = true;
    });

    const match = this.options.router.match(method, path);
    const base = { correlationId, headers: {} as Record<string, string> };

    if (match.kind !== 'found') {
      const err =
        match.kind === 'not_found'
          ? new DrisError('route_not_found', `no route ${path}`)
          : new DrisError('method_not_allowed', `${method} is not allowed on ${path}`, { headers: { Allow: match.allow.join(', ') } });
      // Unknown routes still drain their body, so the connection can be reused.
      res.onData(() => undefined);
      this.finishError(res, state, base, err);
      return;
    }
    const route = match.route;
    const maxBody = route.maxBodyBytes ?? 0;

    if (this.inFlight >= this.options.maxInFlight) {
      res.onData(() => undefined);
      this.finishError(res, state, base, new DrisError('overloaded', 'the server is at capacity; retry with backoff'));
      return;
    }
    this.inFlight += 1;

    // Start reading at once (uWS needs onData before returning); decide on the body afterwards.
    const body = this.readBody(res, maxBody, headers.contentLength);

    const run = async (): Promise<Answer> => {
      let principal: Principal | null = null;
      if (route.auth === 'apiKey') {
        const outcome = this.authorizeNow(headers.apiKey) ?? (await this.authorize(headers.apiKey, remoteAddress));
        Object.assign(base.headers, outcome.headers);
        if (outcome.error !== null) throw outcome.error;
        principal = outcome.principal;
      } else if (route.auth === 'admin') {
        if (this.options.adminAuth === undefined) throw new DrisError('admin_unauthorized', 'administration needs the admin token');
        this.options.adminAuth.check(headers.authorization, remoteAddress());
      }
      let payload: Buffer = Buffer.alloc(0);
      if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
        if (maxBody > 0 && !isJson(headers.contentType)) throw new DrisError('unsupported_media_type', 'the body must be application/json');
        const read = await body;
        if (read === 'too_large') throw new DrisError('payload_too_large', `the body exceeds ${maxBody} bytes`, { extra: { limitBytes: maxBody } });
        payload = read;
      }
      let query: URLSearchParams | undefined;
      const ctx: RequestContext = {
        method,
        path,
        params: match.params,
        get query(): URLSearchParams {
          return (query ??= new URLSearchParams(rawQuery));
        },
        headers,
        body: payload,
        correlationId,
        get remoteAddress(): string {
          return remoteAddress();
        },
        principal,
      };
      return this.toAnswer(await route.handle(ctx));
    };

    run()
      .then(
        (answer) => this.write(res, state, correlationId, answer, base.headers),
        (err: unknown) => this.finishError(res, state, base, err),
      )
      .finally(() => {
        this.inFlight -= 1;
      });
  }

  /**
   * authorize() answered at once, without a turn of the event loop, when the key is cached and the
   * rate limiter keeps its counters in this process (the common case); undefined otherwise.
   */
  private authorizeNow(apiKey: string | undefined): AuthOutcome | undefined {
    const takeNow = this.options.rateLimiter.takeNow;
    if (takeNow === undefined) return undefined;
    const principal = this.options.authenticator.authenticateNow(apiKey);
    if (principal === undefined) return undefined;
    const now = Date.now();
    const d = takeNow.call(this.options.rateLimiter, `key:${principal.keyId}`, this.options.rateLimits[principal.level], this.options.rateWindowMs, now);
    return this.rateOutcome(principal, null, d, now);
  }

  private async authorize(apiKey: string | undefined, remoteAddress: () => string): Promise<AuthOutcome> {
    let principal: Principal | null = null;
    let error: DrisError | null = null;
    try {
      principal = await this.options.authenticator.authenticate(apiKey);
    } catch (err) {
      error = toDrisError(err);
    }
    // Unauthenticated calls are limited per address at the standard level, which also slows guessing.
    const bucket = principal === null ? `ip:${remoteAddress()}` : `key:${principal.keyId}`;
    const limit = this.options.rateLimits[principal?.level ?? 'standard'];
    const now = Date.now();
    const d = await this.options.rateLimiter.take(bucket, limit, this.options.rateWindowMs, now);
    return this.rateOutcome(principal, error, d, now);
  }

  private rateOutcome(principal: Principal | null, error: DrisError | null, d: RateDecision, now: number): AuthOutcome {
    const headers: Record<string, string> = {
      'X-RateLimit-Limit': String(d.limit),
      'X-RateLimit-Remaining': String(d.remaining),
      'X-RateLimit-Reset': String(Math.ceil(d.resetAtMs / 1000)),
    };
    if (!d.allowed) {
      const retryAfter = Math.max(1, Math.ceil((d.resetAtMs - now) / 1000));
      headers['Retry-After'] = String(retryAfter);
      return {
        principal: null,
        headers,
        error: new DrisError('rate_limit_exceeded', `rate limit of ${d.limit} requests per window exceeded`, {
          extra: { status: 429, retryAfter, resetTime: new Date(d.resetAtMs).toISOString() },
        }),
      };
    }
    return { principal, error, headers };
  }

  /** Collects the body up to maxBytes; beyond it keeps draining but reports too_large. */
  private readBody(res: uWS.HttpResponse, maxBytes: number, declared: number | undefined): Promise<Buffer | 'too_large'> {
    return new Promise((resolve) => {
      const chunks: Buffer[] = [];
      let size = 0;
      let tooLarge = declared !== undefined && Number.isFinite(declared) && declared > maxBytes;
      res.onData((chunk, isLast) => {
        if (!tooLarge) {
          size += chunk.byteLength;
          if (size > maxBytes) {
            tooLarge = true;
            chunks.length = 0;
          } else {
            // The chunk's memory belongs to uWS and is reused after this callback: copy it, into
            // Node's buffer pool for small bodies rather than a fresh allocation each.
            const copy = Buffer.allocUnsafe(chunk.byteLength);
            copy.set(new Uint8Array(chunk));
            chunks.push(copy);
          }
        }
        if (isLast) resolve(tooLarge ? 'too_large' : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
      });
    });
  }

  private toAnswer(reply: Reply): Answer {
    const headers = reply.headers ?? NO_HEADERS;
    if (Buffer.isBuffer(reply.body) || typeof reply.body === 'string') {
      return { status: reply.status, headers, contentType: reply.contentType ?? 'application/octet-stream', body: reply.body };
    }
    return { status: reply.status, headers, contentType: reply.contentType ?? 'application/json', body: JSON.stringify(reply.body) };
  }

  private finishError(res: uWS.HttpResponse, state: { aborted: boolean; head: boolean }, base: { correlationId: string; headers: Record<string, string> }, err: unknown): void {
    const e = toDrisError(err);
    if (e.status >= 500) this.log.error({ err: e.cause ?? e, code: e.code, correlationId: base.correlationId }, 'request failed');
    this.write(
      res,
      state,
      base.correlationId,
      { status: e.status, headers: e.headers, contentType: 'application/json', body: JSON.stringify(errorBody(e)) },
      base.headers,
    );
  }

  /** `a.headers` win over `base` (the rate-limit headers every /api/v1 answer carries). */
  private write(res: uWS.HttpResponse, state: { aborted: boolean; head: boolean }, correlationId: string, a: Answer, base: Readonly<Record<string, string>>): void {
    if (state.aborted) return;
    // One writeHeader call for all of them: each call crosses into native code, and five of them
    // cost more than the rest of a small answer. uWS writes `name: value\r\n` as given, so the
    // block is the value of the first header with the others after line breaks.
    let block = headerValue(a.contentType) + '\r\nX-Correlation-Id: ' + correlationId;
    for (const k in base) if (!(k in a.headers)) block += '\r\n' + k + ': ' + headerValue(base[k] as string);
    for (const k in a.headers) block += '\r\n' + k + ': ' + headerValue(a.headers[k] as string);
    res.cork(() => {
      res.writeStatus(STATUS_LINE[a.status] ?? `${a.status} Status`);
      res.writeHeader('Content-Type', block);
      // A HEAD answer carries the length its GET body would have, and no body.
      if (state.head) res.endWithoutBody(typeof a.body === 'string' ? Buffer.byteLength(a.body) : a.body.byteLength);
      else res.end(a.body);
    });
  }
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

const STATUS_LINE: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(STATUS_TEXT).map(([code, text]) => [code, `${code} ${text}`]));

/** A header value on one line: a line break in a value must never start a header of its own. */
export function headerValue(v: string): string {
  return /[\r\n]/.test(v) ? v.replace(/[\r\n]+/g, ' ') : v;
}
