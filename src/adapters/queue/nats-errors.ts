import { AuthorizationError, ClosedConnectionError, DrainingConnectionError, PermissionViolationError, TimeoutError, UserAuthenticationExpiredError } from '@nats-io/transport-node';
import { JetStreamApiError } from '@nats-io/jetstream';
import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';

/** NATS errors as the queue decides on them, and as DrisError at the edge. */

/** Errors of the connection itself rather than of one request; a retry does not help. */
export function isTerminal(err: unknown): boolean {
  return err instanceof ClosedConnectionError || err instanceof DrainingConnectionError;
}

function hasCause(err: unknown, matches: (e: Error) => boolean): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    if (matches(e)) return true;
    e = e.cause;
  }
  return false;
}

export function isRetryablePublishError(err: unknown): boolean {
  if (isTerminal(err)) return false;
  // An API error is the server's considered answer (limits, size); only its 503 means "not now".
  if (err instanceof JetStreamApiError) return err.status === 503;
  return true;
}

export function translate(err: unknown, what: string): DrisError {
  if (err instanceof DrisError) return err;
  let code: DrisErrorCode = 'dependency_unavailable';
  if (hasCause(err, (e) => e instanceof TimeoutError)) code = 'timeout';
  else if (hasCause(err, (e) => e instanceof AuthorizationError || e instanceof UserAuthenticationExpiredError || e instanceof PermissionViolationError)) {
    code = 'config_invalid';
  }
  return new DrisError(code, `NATS ${what} failed`, { cause: err });
}

export function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
