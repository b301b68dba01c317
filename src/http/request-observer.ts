/**
 * What the HTTP front reports of every request it answered: the route (its operationId, or
 * `unmatched` for requests no route took: 404, 405, refused heads), the method, the status, the
 * time from the request's head to its answer, its correlation id and, for an error answer, the
 * error code. Called once per answer on the hot path, with plain arguments (no object per call);
 * an observer must not throw and should not allocate much. Not called for a request whose client
 * went away before its answer.
 */
export interface RequestObserver {
  answered(route: string, method: string, status: number, seconds: number, correlationId: string, code: string | undefined): void;
}

/** The route label of a request no route took. */
export const UNMATCHED_ROUTE = 'unmatched';

/** One observer for several (the metrics and the access log). */
export function observeAll(observers: readonly RequestObserver[]): RequestObserver | undefined {
  if (observers.length === 0) return undefined;
  if (observers.length === 1) return observers[0];
  return {
    answered(route, method, status, seconds, correlationId, code) {
      for (const o of observers) o.answered(route, method, status, seconds, correlationId, code);
    },
  };
}
