import type { Reader } from './reader.js';

/**
 * The ops listener and the process's life cycle (DRIS_OPS_*, DRIS_ACCESS_LOG_SAMPLE,
 * DRIS_SHUTDOWN_TIMEOUT_MS), read with the rest of the configuration in config.ts. What the ops
 * port serves and how a process stops: docs/operations.md ("Ops port", "Stopping").
 */
export interface OpsConfig {
  /** Interface of the ops listener (/metrics, /livez, /readyz). */
  readonly host: string;
  /** Its port; 0 picks a free one (logged as `ops listening`). */
  readonly port: number;
  /** Share of answered requests the access log writes, 0..1; answers 5xx are always written. */
  readonly accessLogSample: number;
  /** From SIGTERM (or SIGINT) to exit, milliseconds: past it the process exits 1 whatever still closes. */
  readonly shutdownTimeoutMs: number;
}

/**
 * Prometheus's customary exporter port. Every process serves one, whatever its roles: two dris
 * processes on one machine need two ports, as they need two PORTs (the local fleet gives each its own).
 */
export const DEFAULT_OPS_PORT = 9464;

export const OPS_DEFAULTS: OpsConfig = {
  host: '127.0.0.1',
  port: DEFAULT_OPS_PORT,
  accessLogSample: 0.01,
  shutdownTimeoutMs: 15_000,
};

export function readOpsConfig(r: Reader): OpsConfig {
  const d = OPS_DEFAULTS;
  return {
    host: r.str('DRIS_OPS_HOST') ?? d.host,
    port: r.int('DRIS_OPS_PORT', d.port, 0, 65535),
    accessLogSample: r.num('DRIS_ACCESS_LOG_SAMPLE', d.accessLogSample, 0, 1),
    shutdownTimeoutMs: r.int('DRIS_SHUTDOWN_TIMEOUT_MS', d.shutdownTimeoutMs, 1000, 600_000),
  };
}
