import { Counter, Histogram, type Registry } from 'prom-client';

/**
 * The HTTP front's series: answered requests by route, method and status, their latency by route
 * and method, and the refusals for load and limits. Fed once per answer on the hot path (the
 * front's RequestObserver), so each label combination's child is looked up in nested maps once
 * made: no label object, hash string or array per request.
 */

/** Latency buckets, seconds: a few hundred microseconds (a cached key, a small answer) to 10 s. */
export const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The statuses that refuse a request for load or limits (and only those, with their error code). */
const REJECTED = new Set([408, 413, 429, 431, 503]);

/** Methods named as they are; anything else is `OTHER`, so a client cannot add label values. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

interface RouteMethod {
  readonly latency: Histogram.Internal<string>;
  readonly byStatus: Map<number, Counter.Internal>;
}

export class HttpSeries {
  readonly #requests: Counter<'route' | 'method' | 'status'>;
  readonly #duration: Histogram<'route' | 'method'>;
  readonly #rejected: Counter<'status' | 'reason'>;
  /** route → method → children. Routes are operationIds and `unmatched`: a bounded set. */
  readonly #children = new Map<string, Map<string, RouteMethod>>();
  /** status → error code → child. */
  readonly #refusals = new Map<number, Map<string, Counter.Internal>>();

  constructor(registry: Registry) {
    this.#requests = new Counter({ name: 'dris_http_requests_total', help: 'Requests answered, by route (operationId or unmatched), method and status.', labelNames: ['route', 'method', 'status'], registers: [registry] });
    this.#duration = new Histogram({ name: 'dris_http_request_duration_seconds', help: 'Request latency from the head to the answer, seconds.', labelNames: ['route', 'method'], buckets: LATENCY_BUCKETS, registers: [registry] });
    this.#rejected = new Counter({ name: 'dris_http_rejected_total', help: 'Requests refused for load or limits, by status and reason (error code).', labelNames: ['status', 'reason'], registers: [registry] });
  }

  answered(route: string, rawMethod: string, status: number, seconds: number, _correlationId: string, code: string | undefined): void {
    const method = METHODS.has(rawMethod) ? rawMethod : 'OTHER';
    let methods = this.#children.get(route);
    if (methods === undefined) {
      methods = new Map();
      this.#children.set(route, methods);
    }
    let c = methods.get(method);
    if (c === undefined) {
      c = { latency: this.#duration.labels(route, method), byStatus: new Map() };
      methods.set(method, c);
    }
    let counter = c.byStatus.get(status);
    if (counter === undefined) {
      counter = this.#requests.labels(route, method, String(status));
      c.byStatus.set(status, counter);
    }
    counter.inc();
    c.latency.observe(seconds);
    if (code !== undefined && REJECTED.has(status)) this.#refused(status, code);
  }

  #refused(status: number, code: string): void {
    let codes = this.#refusals.get(status);
    if (codes === undefined) {
      codes = new Map();
      this.#refusals.set(status, codes);
    }
    let counter = codes.get(code);
    if (counter === undefined) {
      counter = this.#rejected.labels(String(status), code);
      codes.set(code, counter);
    }
    counter.inc();
  }
}
