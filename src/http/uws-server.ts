import { randomUUID } from 'node:crypto';
import uWS from 'uWebSockets.js';
import { DrisError, toDrisError } from '../errors/dris-error.js';
import type { Authenticator, Principal } from '../app/authenticator.js';
import type { RateDecision, RateLimiter } from '../domain/limits/ports.js';
import type { AccessLevel } from '../domain/keys/types.js';
import { HTTP_DEFAULTS, type HttpConfig } from '../config/http-config.js';
import { componentLogger, type Logger } from '../util/logger.js';
import { AnswerWriter, type Answer, type AnswerState, type RequestBase } from './answer-writer.js';
import { BodyDeadlines, BodyReader, ByteBudget, type BodyFailure } from './body-reader.js';
import { HttpGuard } from './http-guard.js';
import { UNMATCHED_ROUTE, type RequestObserver } from './request-observer.js';
import type { Reply, RequestContext, RequestHeaders, Router } from './router.js';

export { headerValue } from './answer-writer.js';

/** uWS ListenOptions.LIBUS_LISTEN_EXCLUSIVE_PORT (the typings list the option only without a host). */
const LIBUS_LISTEN_EXCLUSIVE_PORT = 1;

/**
 * The HTTP front: uWebSockets.js, one catch-all handler and our own router, so unknown routes
 * (404), wrong methods (405), content types (415), body limits (413), authentication (401/403),
 * rate limits (429) and error bodies are decided in one place for every route. Malformed heads
 * are refused before uWS parses them by the native guard (http-guard.ts); bodies are read within
 * a shared byte budget and a deadline (body-reader.ts), and only once the caller is known.
 */

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
  /** Limits of the front (heads, bodies, deadlines); HTTP_DEFAULTS for any not given. */
  readonly limits?: Partial<Omit<HttpConfig, 'maxInFlight'>>;
  /** Where failed requests are logged; the `http` component logger by default. */
  readonly logger?: Logger;
  /** The native addon holding the request-framing guard; absent, the front runs without it. */
  readonly nativeAddonFile?: string | undefined;
  /** Told of every answer (metrics, access log). */
  readonly observer?: RequestObserver | undefined;
}

interface RequestState extends AnswerState {
  reader: BodyReader | null;
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

export class UwsHttpServer {
  private listenSocket: uWS.us_listen_socket | null = null;
  private inFlight = 0;
  /** Resolved when no request is in flight any more (drained()). */
  private idleWaiters: (() => void)[] = [];
  private readonly log: Logger;
  private readonly app: uWS.TemplatedApp;
  private readonly limits: Omit<HttpConfig, 'maxInFlight'>;
  private readonly answers: AnswerWriter;
  private readonly budget: ByteBudget;
  private readonly deadlines: BodyDeadlines;
  private guard: HttpGuard | null = null;

  constructor(private readonly options: HttpServerOptions) {
    if (!uwsIsNative() && !options.allowSlowHttp) {
      throw new DrisError('config_invalid', 'uWebSockets.js has no native build for this Node; set DRIS_ALLOW_SLOW_HTTP=true to run on its slow fallback');
    }
    this.log = options.logger ?? componentLogger('http');
    this.limits = { ...HTTP_DEFAULTS, ...options.limits };
    this.answers = new AnswerWriter(this.log, this.limits.retryAfterSeconds, options.observer);
    this.budget = new ByteBudget(this.limits.bodyBudgetBytes);
    this.deadlines = new BodyDeadlines(this.limits.bodyTimeoutMs);
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
        const port = uWS.us_socket_local_port(token);
        // Before the loop turns again, so that no connection is accepted without it.
        if (uwsIsNative()) this.guard = HttpGuard.install(token, port, { ...this.limits, maxBodyBytes: this.largestBody() }, this.log, this.options.nativeAddonFile);
        resolve(port);
      });
    });
  }

  close(): void {
    this.stopAccepting();
    this.deadlines.close();
  }

  /**
   * The first step of a graceful stop: no new connection is accepted, and every answer from now
   * on closes its connection, so a client on a kept-alive one gets the answer to what it sent and
   * goes elsewhere for the next request. Requests in flight go on.
   */
  stopAccepting(): void {
    if (this.listenSocket !== null) uWS.us_listen_socket_close(this.listenSocket);
    this.listenSocket = null;
    this.answers.closeConnections = true;
  }

  /** Requests being handled now (past the route's match, until their answer). */
  get requestsInFlight(): number {
    return this.inFlight;
  }

  /** Resolves true once no request is in flight, false at `deadlineAtMs` (Date.now() time). */
  drained(deadlineAtMs: number): Promise<boolean> {
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(this.inFlight === 0), Math.max(0, deadlineAtMs - Date.now()));
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  private requestDone(): void {
    this.inFlight -= 1;
    if (this.inFlight === 0 && this.idleWaiters.length > 0) {
      const waiting = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiting) w();
    }
  }

  /** Whether malformed heads are refused before uWS parses them (the native guard is installed). */
  get guarded(): boolean {
    return this.guard !== null;
  }

  /** Bytes of request bodies buffered now, all requests together. */
  get bufferedBodyBytes(): number {
    return this.budget.inUse;
  }

  private largestBody(): number {
    return this.options.router.routes.reduce((m, r) => Math.max(m, r.maxBodyBytes ?? 0), 0);
  }

  // Longer than most: reading req (valid only until the first await), the answers given before
  // the body and the run of the route read best in the order uWS calls them.
  private onRequest(res: uWS.HttpResponse, req: uWS.HttpRequest): void {
    // Everything read from req must be read now: it is invalid after the first await.
    const startedMs = performance.now();
    const method = req.getMethod().toUpperCase();
    const path = req.getUrl();
    if (this.guard !== null && path.startsWith(this.guard.prefix)) {
      this.refuse(res, this.guard, path, method, startedMs);
      return;
    }
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
    const declared = headers.contentLength;
    const hasBody = declared === undefined ? req.getHeader('transfer-encoding') !== '' : declared > 0;
    // Read from the socket only when something needs it (an unauthenticated caller's rate bucket).
    let remote: string | undefined;
    const remoteAddress = (): string => (remote ??= Buffer.from(res.getRemoteAddressAsText()).toString());
    const state: RequestState = { aborted: false, head: method === 'HEAD', bodyPending: hasBody, reader: null };
    res.onAborted(() => {
      state.aborted = true;
      state.reader?.abort();
    });

    const match = this.options.router.match(method, path);
    const base: RequestBase = { correlationId, headers: {}, route: match.kind === 'found' ? match.route.operationId : UNMATCHED_ROUTE, method, startedMs };

    // Answers given before the body is read close the connection rather than read the body.
    if (match.kind !== 'found') {
      const err =
        match.kind === 'not_found'
          ? new DrisError('route_not_found', `no route ${path}`)
          : new DrisError('method_not_allowed', `${method} is not allowed on ${path}`, { headers: { Allow: match.allow.join(', ') } });
      this.answers.error(res, state, base, err);
      return;
    }
    const route = match.route;
    const maxBody = route.maxBodyBytes ?? 0;
    if (hasBody && declared !== undefined && declared > maxBody) {
      this.answers.error(res, state, base, bodyError('too_large', maxBody));
      return;
    }
    if (this.inFlight >= this.options.maxInFlight) {
      this.answers.error(res, state, base, new DrisError('overloaded', 'the server is at capacity; retry with backoff'));
      return;
    }
    this.inFlight += 1;
    // uWS needs the data handler before this handler returns; the reader is attached now (and the
    // socket paused while an unknown key is looked up).
    if (hasBody) state.reader = new BodyReader(res, maxBody, this.budget, this.deadlines);

    // One async function for the whole request (no then/finally chain: fewer promises and closures per request).
    const run = async (): Promise<void> => {
      let answer: Answer;
      try {
        let principal: Principal | null = null;
        if (route.auth === 'apiKey') {
          const outcome = this.authorizeNow(headers.apiKey) ?? (await this.authorizePaused(res, state, headers.apiKey, remoteAddress));
          Object.assign(base.headers, outcome.headers);
          if (outcome.error !== null) throw outcome.error;
          principal = outcome.principal;
        } else if (route.auth === 'admin') {
          if (this.options.adminAuth === undefined) throw new DrisError('admin_unauthorized', 'administration needs the admin token');
          this.options.adminAuth.check(headers.authorization, remoteAddress());
        }
        let payload: Buffer = EMPTY_BODY;
        if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
          // A request without a body has no media type to refuse: a route that needs a body refuses its absence itself.
          if (hasBody && maxBody > 0 && !isJson(headers.contentType)) throw new DrisError('unsupported_media_type', 'the body must be application/json');
          if (state.reader !== null) {
            const read = await state.reader.result;
            if (typeof read === 'string') throw bodyError(read, maxBody);
            payload = read;
          }
        }
        state.bodyPending = state.reader !== null && !state.reader.complete;
        const ctx = new UwsRequestContext(method, path, match.params, rawQuery, headers, payload, correlationId, remoteAddress, principal);
        answer = this.toAnswer(await route.handle(ctx));
      } catch (err) {
        this.answers.error(res, state, base, err);
        return;
      } finally {
        this.requestDone();
        state.reader?.release();
      }
      this.answers.write(res, state, base, answer);
    };
    void run();
  }

  /**
   * A request of the guard: the refusal it stands for. The guard closes the connection itself,
   * after letting a client still sending its body finish, so that it reads the answer.
   */
  private refuse(res: uWS.HttpResponse, guard: HttpGuard, path: string, method: string, startedMs: number): void {
    const base: RequestBase = { correlationId: randomUUID(), headers: {}, route: UNMATCHED_ROUTE, method, startedMs };
    this.answers.error(res, { aborted: false, head: false, bodyPending: false }, base, guard.refusal(path));
  }

  /** The key is looked up in the store: nothing more of the body is read until it is known good. */
  private async authorizePaused(res: uWS.HttpResponse, state: RequestState, apiKey: string | undefined, remoteAddress: () => string): Promise<AuthOutcome> {
    const pause = state.reader !== null && !state.reader.complete;
    if (pause) res.pause();
    const outcome = await this.authorize(apiKey, remoteAddress);
    if (pause && outcome.error === null && !state.aborted) res.resume();
    return outcome;
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

  private toAnswer(reply: Reply): Answer {
    const headers = reply.headers ?? NO_HEADERS;
    if (Buffer.isBuffer(reply.body) || typeof reply.body === 'string') {
      return { status: reply.status, headers, contentType: reply.contentType ?? 'application/octet-stream', body: reply.body };
    }
    return { status: reply.status, headers, contentType: reply.contentType ?? 'application/json', body: JSON.stringify(reply.body) };
  }
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});
/** The body of a request without one (never written to: it has no bytes). */
const EMPTY_BODY = Buffer.alloc(0);

/** The request as routes see it; the query and the remote address are read only when asked for. */
class UwsRequestContext implements RequestContext {
  private parsedQuery: URLSearchParams | undefined;

  constructor(
    readonly method: string,
    readonly path: string,
    readonly params: Readonly<Record<string, string>>,
    private readonly rawQuery: string,
    readonly headers: RequestHeaders,
    readonly body: Buffer,
    readonly correlationId: string,
    private readonly remote: () => string,
    readonly principal: Principal | null,
  ) {}

  get query(): URLSearchParams {
    return (this.parsedQuery ??= new URLSearchParams(this.rawQuery));
  }

  get remoteAddress(): string {
    return this.remote();
  }
}

function bodyError(kind: BodyFailure, maxBody: number): DrisError {
  switch (kind) {
    case 'too_large':
      return new DrisError('payload_too_large', `the body exceeds ${maxBody} bytes`, {
        extra: { limitBytes: maxBody },
        fields: [{ path: '(body)', code: 'too_large', message: `exceeds the limit of ${maxBody} bytes` }],
      });
    case 'over_budget':
      return new DrisError('overloaded', 'the server buffers as many request bodies as it may; retry with backoff');
    case 'timeout':
    case 'aborted':
      return new DrisError('request_timeout', 'the body did not arrive in time', { fields: [{ path: '(body)', code: 'timeout', message: 'did not arrive before the body deadline' }] });
  }
}
