/**
 * The one error type of dris. Every failure that can reach a caller is a DrisError with a stable
 * `code`; vendor errors are translated into one at the adapter that met them, keeping the vendor
 * error as `cause` for logs. Retryability comes from ERROR_TABLE; what a code answers over HTTP is
 * decided at the HTTP edge (src/http/status.ts), so nothing below it knows of HTTP.
 */

export type DrisErrorCode =
  // request shape and content
  | 'invalid_json'
  | 'validation_failed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  // HTTP framing (answered by the front before any route runs)
  | 'malformed_request'
  | 'request_timeout'
  | 'headers_too_large'
  | 'method_not_implemented'
  | 'http_version_not_supported'
  // identity
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'expired_api_key'
  | 'revoked_api_key'
  | 'forbidden_tenant'
  | 'forbidden_client'
  | 'admin_unauthorized'
  // resources
  | 'not_found'
  | 'route_not_found'
  | 'method_not_allowed'
  | 'idempotency_conflict'
  | 'idempotency_in_progress'
  | 'invalid_state'
  // limits and load
  | 'rate_limit_exceeded'
  | 'overloaded'
  | 'dependency_unavailable'
  | 'timeout'
  // storage (the data directory)
  | 'storage_full'
  | 'storage_failed'
  | 'storage_corrupt'
  // server side
  | 'not_implemented'
  | 'internal_error'
  | 'config_invalid'
  | 'backend_unavailable';

export interface ErrorTraits {
  /** Whether the same request may succeed when sent again later. */
  readonly retryable: boolean;
}

export const ERROR_TABLE: Readonly<Record<DrisErrorCode, ErrorTraits>> = {
  invalid_json: { retryable: false },
  validation_failed: { retryable: false },
  payload_too_large: { retryable: false },
  unsupported_media_type: { retryable: false },
  malformed_request: { retryable: false },
  request_timeout: { retryable: true },
  headers_too_large: { retryable: false },
  method_not_implemented: { retryable: false },
  http_version_not_supported: { retryable: false },
  missing_api_key: { retryable: false },
  invalid_api_key: { retryable: false },
  expired_api_key: { retryable: false },
  revoked_api_key: { retryable: false },
  forbidden_tenant: { retryable: false },
  forbidden_client: { retryable: false },
  admin_unauthorized: { retryable: false },
  not_found: { retryable: false },
  route_not_found: { retryable: false },
  method_not_allowed: { retryable: false },
  idempotency_conflict: { retryable: false },
  idempotency_in_progress: { retryable: true },
  invalid_state: { retryable: false },
  rate_limit_exceeded: { retryable: true },
  overloaded: { retryable: true },
  dependency_unavailable: { retryable: true },
  timeout: { retryable: true },
  storage_full: { retryable: true },
  storage_failed: { retryable: true },
  storage_corrupt: { retryable: false },
  not_implemented: { retryable: false },
  internal_error: { retryable: true },
  config_invalid: { retryable: false },
  backend_unavailable: { retryable: false },
};

/** One field-level problem: where (a path such as `records[2].recordPayload.a`), what, and why. */
export interface FieldError {
  readonly path: string;
  readonly code: string;
  readonly message: string;
}

export interface DrisErrorOptions {
  readonly cause?: unknown;
  readonly fields?: readonly FieldError[];
  /** Extra members merged into the answer body (e.g. retryAfter on a 429). */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Extra response headers (e.g. Allow on a 405). */
  readonly headers?: Readonly<Record<string, string>>;
}

export class DrisError extends Error {
  override readonly name = 'DrisError';
  readonly code: DrisErrorCode;
  readonly fields: readonly FieldError[];
  readonly extra: Readonly<Record<string, unknown>>;
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: DrisErrorCode, message: string, options: DrisErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.fields = options.fields ?? [];
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  get retryable(): boolean {
    return ERROR_TABLE[this.code].retryable;
  }
}

export function isDrisError(value: unknown): value is DrisError {
  return value instanceof DrisError;
}

/** Anything thrown becomes a DrisError; unknown failures are internal and keep their cause. */
export function toDrisError(value: unknown): DrisError {
  if (value instanceof DrisError) return value;
  return new DrisError('internal_error', 'internal error', { cause: value });
}

/** The spec's error body: `{ error, message, details }`, plus structured `fieldErrors`. */
export interface ErrorBody {
  readonly error: DrisErrorCode;
  readonly message: string;
  readonly details: string[];
  readonly fieldErrors?: FieldError[];
  readonly [extra: string]: unknown;
}

export function errorBody(err: DrisError): ErrorBody {
  const body: Record<string, unknown> = { ...err.extra };
  body['error'] = err.code;
  // Internal failures never describe themselves to callers: the correlation id is what support needs.
  body['message'] = err.code === 'internal_error' ? 'internal error' : err.message;
  body['details'] = err.fields.map((f) => `${f.path}: ${f.message}`);
  if (err.fields.length > 0) body['fieldErrors'] = err.fields.map((f) => ({ ...f }));
  return body as unknown as ErrorBody;
}
