import type { Metric, Registry } from 'prom-client';

/**
 * The HTTP front's series: answered requests by route, method and status, their latency by route
 * and method, and the refusals for load and limits. Fed once per answer on the hot path (the
 * front's RequestObserver): each answer adds to plain tallies found through nested maps (numbers
 * in place, nothing allocated once a combination has been seen), and the series are built from
 * the tallies when Prometheus scrapes. prom-client's own children would validate and hash their
 * labels, and allocate, at every increment.
 */

/** Latency buckets, seconds: a few hundred microseconds (a cached key, a small answer) to 10 s. */
export const LATENCY_BUCKETS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The statuses that refuse a request for load or limits (and only those, with their error code). */
const REJECTED = new Set([408, 413, 429, 431, 503]);

/** Methods named as they are; anything else is `OTHER`, so a client cannot add label values. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** One route and method: answers by status, and the latency histogram (per-bucket counts). */
interface Cell {
  readonly route: string;
  readonly method: string;
  readonly byStatus: Map<number, number>;
  /** Observations in each bucket alone (not cumulative); past the last bound only in `count`. */
  readonly buckets: Float64Array;
  sum: number;
  count: number;
}

interface Sample {
  readonly value: number;
  readonly labels: Record<string, string>;
  readonly metricName?: string;
}

/**
 * A metric family computed when scraped, in the shape prom-client's registry reads from its own
 * metrics (name, help, type, and get() resolving the samples).
 */
class ScrapedFamily {
  readonly aggregator = 'sum';

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: 'counter' | 'histogram',
    private readonly samples: () => Sample[],
  ) {}

  get(): Promise<{ name: string; help: string; type: string; aggregator: string; values: Sample[] }> {
    return Promise.resolve({ name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: this.samples() });
  }

  /** The registry's resetMetrics(): the tallies are the process's, never reset. */
  reset(): void {}

  register(registry: Registry): void {
    registry.registerMetric(this as unknown as Metric);
  }
}

export class HttpSeries {
  /** route → method → cell. Routes are operationIds and `unmatched`: a bounded set. */
  readonly #cells = new Map<string, Map<string, Cell>>();
  /** status → error code → refusals. */
  readonly #refusals = new Map<number, Map<string, number>>();

  constructor(registry: Registry) {
    new ScrapedFamily('dris_http_requests_total', 'Requests answered, by route (operationId or unmatched), method and status.', 'counter', () => this.#requestSamples()).register(registry);
    new ScrapedFamily('dris_http_request_duration_seconds', 'Request latency from the head to the answer, seconds.', 'histogram', () => this.#latencySamples()).register(registry);
    new ScrapedFamily('dris_http_rejected_total', 'Requests refused for load or limits, by status and reason (error code).', 'counter', () => this.#refusalSamples()).register(registry);
  }

  answered(route: string, rawMethod: string, status: number, seconds: number, _correlationId: string, code: string | undefined): void {
    const method = METHODS.has(rawMethod) ? rawMethod : 'OTHER';
    let methods = this.#cells.get(route);
    if (methods === undefined) {
      methods = new Map();
      this.#cells.set(route, methods);
    }
    let cell = methods.get(method);
    if (cell === undefined) {
      cell = { route, method, byStatus: new Map(), buckets: new Float64Array(LATENCY_BUCKETS.length), sum: 0, count: 0 };
      methods.set(method, cell);
    }
    cell.byStatus.set(status, (cell.byStatus.get(status) ?? 0) + 1);
    cell.count += 1;
    cell.sum += seconds;
    let i = 0;
    while (i < LATENCY_BUCKETS.length && seconds > (LATENCY_BUCKETS[i] as number)) i += 1;
    if (i < LATENCY_BUCKETS.length) cell.buckets[i] = (cell.buckets[i] as number) + 1;
    if (code !== undefined && REJECTED.has(status)) this.#refused(status, code);
  }

  #refused(status: number, code: string): void {
    let codes = this.#refusals.get(status);
    if (codes === undefined) {
      codes = new Map();
      this.#refusals.set(status, codes);
    }
    codes.set(code, (codes.get(code) ?? 0) + 1);
  }

  *#allCells(): Generator<Cell> {
    for (const methods of this.#cells.values()) yield* methods.values();
  }

  #requestSamples(): Sample[] {
    const out: Sample[] = [];
    for (const c of this.#allCells()) {
      for (const [status, n] of c.byStatus) out.push({ value: n, labels: { route: c.route, method: c.method, status: String(status) } });
    }
    return out;
  }

  #latencySamples(): Sample[] {
    const out: Sample[] = [];
    const bucket = 'dris_http_request_duration_seconds_bucket';
    for (const c of this.#allCells()) {
      let cumulative = 0;
      LATENCY_BUCKETS.forEach((le, i) => {
        cumulative += c.buckets[i] as number;
        out.push({ metricName: bucket, value: cumulative, labels: { le: String(le), route: c.route, method: c.method } });
      });
      out.push({ metricName: bucket, value: c.count, labels: { le: '+Inf', route: c.route, method: c.method } });
      out.push({ metricName: 'dris_http_request_duration_seconds_sum', value: c.sum, labels: { route: c.route, method: c.method } });
      out.push({ metricName: 'dris_http_request_duration_seconds_count', value: c.count, labels: { route: c.route, method: c.method } });
    }
    return out;
  }

  #refusalSamples(): Sample[] {
    const out: Sample[] = [];
    for (const [status, codes] of this.#refusals) for (const [reason, n] of codes) out.push({ value: n, labels: { status: String(status), reason } });
    return out;
  }
}
