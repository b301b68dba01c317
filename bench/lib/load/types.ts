/**
 * What the load generator is told (LoadSpec, sent to each worker thread as is) and what it reports.
 * Everything here is plain data: it crosses the worker boundary by structured clone.
 */

/**
 * The requests to send. `fixed` cycles through prepared bodies; `template` builds each body from
 * a text with placeholders: {{W}} the worker's number, {{S}} the request's sequence number in its
 * worker (unique per worker and run), {{R}} a uniformly random whole number below `randomBelow`.
 */
export type RequestSource =
  | { readonly kind: 'fixed'; readonly method: string; readonly path: string; readonly headers: Readonly<Record<string, string>>; readonly bodies: readonly string[] }
  | {
      readonly kind: 'template';
      readonly method: string;
      readonly path: string;
      readonly headers: Readonly<Record<string, string>>;
      readonly template: string;
      readonly randomBelow?: number;
    };

/**
 * open: requests are due at a fixed arrival rate whatever the answers do, and each latency is
 * counted from the request's intended send time (coordinated omission corrected); connections are
 * opened as needed to hold the rate, up to maxConnections. closed: `connections` connections each
 * send their next request when the previous answer arrived (maximum throughput; latency from the
 * actual send).
 */
export type LoadMode = { readonly kind: 'open'; readonly ratePerSec: number } | { readonly kind: 'closed'; readonly connections: number };

export interface ResponseCheck {
  /** Statuses that count as success; any other is counted under its status. */
  readonly statuses: readonly number[];
  /** Texts a successful answer's body must contain (a miss is a 'check' error). */
  readonly bodyIncludes?: readonly string[];
}

export interface LoadSpec {
  readonly host: string;
  readonly port: number;
  readonly source: RequestSource;
  readonly mode: LoadMode;
  /** Not measured: the first seconds of the run (JIT, caches, connection set-up). */
  readonly warmupSec: number;
  readonly durationSec: number;
  readonly workers: number;
  /** Open loop: connections opened before the start (per run, spread over the workers). */
  readonly initialConnections: number;
  readonly maxConnections: number;
  /** An answer not complete this long after its send is a 'timeout' error. */
  readonly timeoutMs: number;
  readonly check: ResponseCheck;
  /** Report every successful request's sequence and times (pipeline: which records were accepted when). */
  readonly trackAccepted?: boolean;
}

/** One successful request: worker, sequence, intended send and answer times (ms since the run's t0). */
export type AcceptedRequest = readonly [worker: number, seq: number, intendedMs: number, doneMs: number];

/** Counts of one second (or of the whole run) of one worker, merged by the main thread. */
export interface Counts {
  ok: number;
  /** Answers by HTTP status (successful ones included). */
  statuses: Record<string, number>;
  /** connect, io (reset or closed mid-answer), timeout, parse, check, unsent. */
  errors: Record<string, number>;
}

export interface SecondReport {
  /** Seconds since the end of the warm-up (0 = first measured second). */
  readonly second: number;
  readonly counts: Counts;
  /** Latencies of the successful answers completed in this second (µs, encoded HDR). */
  readonly latency: string;
}

export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'second'; readonly report: SecondReport; readonly accepted?: AcceptedRequest[] }
  | {
      readonly type: 'done';
      readonly counts: Counts;
      /** Successful answers in the measured window, from the intended send (open) or the send (closed). */
      readonly latency: string;
      /** From the actual send to the answer: what the server alone took. */
      readonly service: string;
      /** Open loop: actual send - intended send, the generator's own lateness (µs). */
      readonly sendLag: string;
      readonly sent: number;
      readonly connectionsOpened: number;
      readonly peakBusy: number;
      readonly accepted?: AcceptedRequest[];
    }
  | { readonly type: 'error'; readonly message: string };

export interface WorkerInit {
  readonly spec: LoadSpec;
  readonly index: number;
  /** Epoch ms at which second 0 of the run (the warm-up's start) begins, shared by all workers. */
  readonly t0EpochMs: number;
}
