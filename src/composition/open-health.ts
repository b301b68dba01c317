import type { Config } from '../config/config.js';
import type { ChainInfo } from '../domain/pipeline/ports.js';
import { chainFacts, HealthMonitor, type Probe } from '../app/health.js';
import type { PipelineStats } from '../app/pipeline-stats.js';
import { uwsIsNative } from '../http/uws-server.js';
import type { Hashing } from './open-hashing.js';

export interface HealthInputs {
  readonly cfg: Config;
  readonly version: string;
  readonly startedAtMs: number;
  readonly hashing: Hashing;
  /** The probes of every role of this process; roles started later push theirs into the same array. */
  readonly probes: Probe[];
  readonly stats: PipelineStats;
  /** The chain of the anchorer role, when this process runs it. */
  readonly chain: ChainInfo | undefined;
}

/**
 * The process's health monitor, whatever its roles: the api role answers health with it, and the
 * ops port's /readyz asks it whether the dependencies of this process's roles answer.
 */
export function openHealth(w: HealthInputs): HealthMonitor {
  const { cfg, hashing } = w;
  return new HealthMonitor({
    version: w.version,
    startedAtMs: w.startedAtMs,
    roles: cfg.roles,
    hashBackend: {
      active: hashing.backend.name,
      requested: cfg.hashBackend,
      unavailable: Object.fromEntries(hashing.tried.map((t) => [t.name, t.error instanceof Error ? t.error.message : String(t.error)])),
    },
    http: { engine: 'uWebSockets.js', native: uwsIsNative() },
    ...(w.chain === undefined ? {} : { chain: chainFacts(w.chain, cfg.chain.publicRpcUrl) }),
    probes: w.probes,
    timeoutMs: 2000,
    pipeline: () => w.stats.read(),
  });
}
