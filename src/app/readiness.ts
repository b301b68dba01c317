import type { ComponentStatus, HealthMonitor } from './health.js';

/**
 * Whether this process should be sent work (the ops port's /readyz): not while it starts, not once
 * it was told to stop, and not while a dependency of its roles is down. The dependencies are the
 * health monitor's probes (queue, index, admission store, IPFS, chain, storage: those of the roles
 * this process runs), run with its deadline and shared for a second, so probing readiness often
 * cannot multiply load on them. A component `degraded` still works: the process stays ready.
 */

export type ReadinessStatus = 'starting' | 'ready' | 'not_ready' | 'stopping';

export interface ReadinessReport {
  readonly ready: boolean;
  readonly status: ReadinessStatus;
  /** The components that are down (names only: `queue`, `index`, ...), when not_ready. */
  readonly failed?: readonly string[];
}

export class Readiness {
  #health: HealthMonitor | null = null;
  #stopping = false;

  /** Every role is running: from now on readiness follows the components. */
  started(health: HealthMonitor): void {
    this.#health = health;
  }

  /** Told to stop: not ready from now on, whatever the components say. */
  stopping(): void {
    this.#stopping = true;
  }

  get isStopping(): boolean {
    return this.#stopping;
  }

  async check(): Promise<ReadinessReport> {
    if (this.#stopping) return { ready: false, status: 'stopping' };
    const health = this.#health;
    if (health === null) return { ready: false, status: 'starting' };
    const report = await health.report();
    // Told to stop while the probes ran.
    if (this.#stopping) return { ready: false, status: 'stopping' };
    const failed = Object.entries(report.dependencies)
      .filter(([, c]) => c.status === ('down' satisfies ComponentStatus))
      .map(([name]) => name);
    return failed.length === 0 ? { ready: true, status: 'ready' } : { ready: false, status: 'not_ready', failed };
  }
}
