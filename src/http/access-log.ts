import type { Logger } from '../util/logger.js';
import type { RequestObserver } from './request-observer.js';

/**
 * The access log: one line (component `access`, message `request`) per answered request, for a
 * share of them (DRIS_ACCESS_LOG_SAMPLE) and for every 5xx. It names the route (operationId, never
 * the path, whose segments and query carry tenant and record ids), method, status, duration and
 * correlation id, and the error code of an error answer; never a header, key, token or body.
 * Those members are all it logs: the service gives it a logger without path redaction
 * (`fixedFieldsChild`), which costs more than the rest of the line.
 */
export class AccessLog implements RequestObserver {
  constructor(
    private readonly log: Logger,
    /** 0..1. */
    private readonly sample: number,
    private readonly random: () => number = Math.random,
  ) {}

  answered(route: string, method: string, status: number, seconds: number, correlationId: string, code: string | undefined): void {
    if (status < 500 && (this.sample <= 0 || (this.sample < 1 && this.random() >= this.sample))) return;
    const durationMs = Math.round(seconds * 10_000) / 10;
    if (code === undefined) this.log.info({ route, method, status, durationMs, correlationId }, 'request');
    else this.log.info({ route, method, status, durationMs, correlationId, code }, 'request');
  }
}
