import type { DrisError, DrisErrorCode } from '../errors/dris-error.js';

/**
 * What each error code answers over HTTP. Below this edge an error is a code only; the status is
 * chosen here, where the answer is written, and the OpenAPI document declares these statuses.
 */
export const HTTP_STATUS: Readonly<Record<DrisErrorCode, number>> = {
  invalid_json: 400,
  validation_failed: 400,
  payload_too_large: 413,
  unsupported_media_type: 415,
  malformed_request: 400,
  request_timeout: 408,
  headers_too_large: 431,
  method_not_implemented: 501,
  http_version_not_supported: 505,
  missing_api_key: 401,
  invalid_api_key: 401,
  expired_api_key: 401,
  revoked_api_key: 401,
  forbidden_tenant: 403,
  forbidden_client: 403,
  admin_unauthorized: 401,
  not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  idempotency_conflict: 409,
  idempotency_in_progress: 409,
  invalid_state: 409,
  rate_limit_exceeded: 429,
  overloaded: 503,
  dependency_unavailable: 503,
  timeout: 504,
  storage_full: 503,
  storage_failed: 503,
  storage_corrupt: 500,
  not_implemented: 501,
  internal_error: 500,
  config_invalid: 500,
  backend_unavailable: 500,
};

export function httpStatusOf(err: DrisError): number {
  return HTTP_STATUS[err.code];
}

/** The codes that answer with `status`, for the document's descriptions. */
export function codesOf(status: number): DrisErrorCode[] {
  return (Object.keys(HTTP_STATUS) as DrisErrorCode[]).filter((c) => HTTP_STATUS[c] === status);
}
