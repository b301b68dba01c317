import type { tags } from 'typia';
import type { RecordSummary } from '../domain/records/types.js';
import type { HealthReport } from '../app/health.js';

/** Answer shapes that exist only on the wire; the OpenAPI schemas are generated from them. */

export interface FieldErrorBody {
  /** Path of the offending field, e.g. `records[2].recordPayload.amount`. */
  path: string;
  /** Stable code, e.g. `required`, `duplicate_key`, `unsafe_integer`. */
  code: string;
  message: string;
}

/** The error body of every 4xx and 5xx answer. */
export interface ErrorResponse {
  /** Stable error code (see docs/errors.md). */
  error: string;
  message: string;
  /** One entry per offending field: `<path>: <message>`. */
  details: string[];
  /** The same problems, structured. */
  fieldErrors?: FieldErrorBody[];
}

/** The 429 body. */
export interface RateLimitResponse extends ErrorResponse {
  status: 429;
  error: 'rate_limit_exceeded';
  /** Seconds to wait; also in the Retry-After header. */
  retryAfter: number & tags.Type<'uint32'>;
  resetTime: string & tags.Format<'date-time'>;
}

export interface RecordsPage {
  items: RecordSummary[];
  /** Pass as `cursor` for the next page; null on the last page. */
  nextCursor: string | null;
}

export type HealthResponse = HealthReport;
