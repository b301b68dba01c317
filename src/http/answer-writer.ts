import type uWS from 'uWebSockets.js';
import { errorBody, toDrisError } from '../errors/dris-error.js';
import type { Logger } from '../util/logger.js';
import type { RequestObserver } from './request-observer.js';
import { httpStatusOf } from './status.js';

/** Writing answers: one place for the status line, headers, error bodies and Retry-After. */

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
  408: 'Request Timeout',
  409: 'Conflict',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
  507: 'Insufficient Storage',
};

const STATUS_LINE: Readonly<Record<number, string>> = Object.fromEntries(Object.entries(STATUS_TEXT).map(([code, text]) => [code, `${code} ${text}`]));

export interface Answer {
  status: number;
  headers: Readonly<Record<string, string>>;
  contentType: string;
  body: string | Buffer;
}

/** What the writer needs to know of a request. */
export interface AnswerState {
  /** The client went away: res may not be touched. */
  aborted: boolean;
  head: boolean;
  /**
   * Part of the request body is still unread (an answer before the body, or a body cut short):
   * the answer closes the connection rather than read the rest of it.
   */
  bodyPending: boolean;
}

export interface RequestBase {
  readonly correlationId: string;
  /** Headers every answer of the request carries (rate-limit headers), under the answer's own. */
  readonly headers: Record<string, string>;
  /** What the request observer is told: the route's operationId (or `unmatched`), the method, and when the head arrived (performance.now()). */
  readonly route: string;
  readonly method: string;
  readonly startedMs: number;
}

/** A header value on one line: a line break in a value must never start a header of its own. */
export function headerValue(v: string): string {
  return /[\r\n]/.test(v) ? v.replace(/[\r\n]+/g, ' ') : v;
}

export class AnswerWriter {
  private readonly retryAfter: string;
  /** Set once the server drains (graceful stop): every answer closes its connection. */
  closeConnections = false;

  constructor(
    private readonly log: Logger,
    retryAfterSeconds: number,
    private readonly observer: RequestObserver | undefined = undefined,
  ) {
    this.retryAfter = String(retryAfterSeconds);
  }

  error(res: uWS.HttpResponse, state: AnswerState, base: RequestBase, err: unknown): void {
    const e = toDrisError(err);
    const status = httpStatusOf(e);
    if (status >= 500) this.log.error({ err: e.cause ?? e, code: e.code, correlationId: base.correlationId }, 'request failed');
    this.write(res, state, base, { status, headers: e.headers, contentType: 'application/json', body: JSON.stringify(errorBody(e)) }, e.code);
  }

  /** `a.headers` win over `base.headers`; `code`: the error code of an error answer. */
  write(res: uWS.HttpResponse, state: AnswerState, base: RequestBase, a: Answer, code?: string): void {
    if (state.aborted) return;
    // One writeHeader call for all of them: each call crosses into native code, and five of them
    // cost more than the rest of a small answer. uWS writes `name: value\r\n` as given, so the
    // block is the value of the first header with the others after line breaks.
    let block = headerValue(a.contentType) + '\r\nX-Correlation-Id: ' + base.correlationId;
    for (const k in base.headers) if (!(k in a.headers)) block += '\r\n' + k + ': ' + headerValue(base.headers[k] as string);
    for (const k in a.headers) block += '\r\n' + k + ': ' + headerValue(a.headers[k] as string);
    // Every 503 tells the client when to come back, whichever layer produced it.
    if (a.status === 503 && !('Retry-After' in a.headers) && !('Retry-After' in base.headers)) block += '\r\nRetry-After: ' + this.retryAfter;
    const close = state.bodyPending || this.closeConnections;
    res.cork(() => {
      res.writeStatus(STATUS_LINE[a.status] ?? `${a.status} Status`);
      res.writeHeader('Content-Type', block);
      // A HEAD answer carries the length its GET body would have, and no body.
      if (state.head) res.endWithoutBody(typeof a.body === 'string' ? Buffer.byteLength(a.body) : a.body.byteLength, close);
      else res.end(a.body, close);
    });
    this.observer?.answered(base.route, base.method, a.status, (performance.now() - base.startedMs) / 1000, base.correlationId, code);
  }
}
