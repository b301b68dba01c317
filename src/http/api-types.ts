import type { tags } from 'typia';
import type { DrisErrorCode } from '../errors/dris-error.js';
import type { BulkItemRejected } from '../domain/records/types.js';
import type { RetrievalScope } from '../domain/evidence/policy.js';

/** The error bodies as they exist on the wire; the OpenAPI schemas are generated from them. */

export interface FieldErrorBody {
  /** Path of the offending field, e.g. `records[2].recordPayload.amount`, or `(body)`. */
  path: string;
  /** Stable code, e.g. `required`, `duplicate_key`, `unsafe_integer`. */
  code: string;
  message: string;
}

/** The error body of every 4xx and 5xx answer; members past `details` appear where they apply. */
export interface ErrorResponse {
  /** Stable error code (docs/errors.md). */
  error: DrisErrorCode;
  message: string;
  /** One entry per offending field: `<path>: <message>`. */
  details: string[];
  /** The same problems, structured. */
  fieldErrors?: FieldErrorBody[];
  /** Bulk ingestion with no record accepted: every item and why. */
  rejected?: BulkItemRejected[];
  /** 413: the limit the body exceeded, bytes. */
  limitBytes?: number & tags.Type<'uint64'>;
  /** 409 invalid_state: the state the resource is in (e.g. a snapshot's status); 429: 429. */
  status?: string | number;
  /** 429 and some 503 answers: seconds to wait, also in Retry-After. */
  retryAfter?: number & tags.Type<'uint32'>;
  /** 429: when the rate-limit window resets. */
  resetTime?: string & tags.Format<'date-time'>;
  /** 403 forbidden_client of a receipt: the scope the retrieval policy denied. */
  scope?: RetrievalScope;
  /** 403 forbidden_client of a receipt: the policy's reason. */
  reason?: string;
}

/** The 429 body. */
export interface RateLimitResponse extends ErrorResponse {
  status: 429;
  error: 'rate_limit_exceeded';
  /** Seconds to wait; also in the Retry-After header. */
  retryAfter: number & tags.Type<'uint32'>;
  resetTime: string & tags.Format<'date-time'>;
}
