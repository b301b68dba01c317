import { isDrisError } from '../errors/dris-error.js';
import type { PipelineCounts } from './pipeline-stats.js';

/**
 * Health: each component probed with a deadline, the result shared for a second (concurrent
 * callers wait for one run, so health cannot be used to multiply load on the dependencies).
 *
 * Two views of one report. The public one (GET /api/Admin/health, no key) holds component
 * statuses and facts anyone may know (version, roles, hash backend, chain id, contract, anchorer
 * address); never an internal URL, adapter, latency or error text. The detailed one (the
 * administration listener, admin token) adds adapters, latencies, reason codes, the hash backends
 * that failed to load, the chain's RPC URL and the process's pipeline counters (pipeline-stats.ts).
 */

export type ComponentStatus = 'ok' | 'degraded' | 'down';

export interface ProbeResult {
  readonly status: ComponentStatus;
  /** Stable code of why it is not ok (detailed view only), e.g. `disk_budget_exceeded`. */
  readonly reason?: string;
}

/**
 * One component. check() resolves (nothing, 'ok') when it works, 'degraded' or a ProbeResult when
 * it works but is impaired (a disk budget exceeded); a rejection or the deadline is `down`.
 * A component is added by pushing one more probe.
 */
export interface Probe {
  readonly name: string;
  readonly adapter: string;
  check(): Promise<void | ComponentStatus | ProbeResult>;
}

export interface ComponentHealth {
  readonly status: ComponentStatus;
  readonly adapter: string;
  readonly latencyMs: number;
  /** Code only (`timeout`, a DrisError code or the probe's reason): vendor messages may name hosts or users. */
  readonly error?: string;
}

export interface ChainFacts {
  readonly chainId: number;
  readonly contractAddress: string;
  /** The anchorer's address (public on-chain). */
  readonly anchorer: string;
  /** The node this process uses (detailed view only). */
  readonly rpcUrl: string;
  /** An RPC URL the operator declared public (DRIS_PUBLIC_RPC_URL), shown in the public view. */
  readonly publicRpcUrl?: string;
}

/** The chain's facts for the report; the public RPC URL only when the operator declared one. */
export function chainFacts(info: { chainId: number; contractAddress: string; anchorerAddress: string; rpcUrl: string }, publicRpcUrl: string | undefined): ChainFacts {
  const facts = { chainId: info.chainId, contractAddress: info.contractAddress, anchorer: info.anchorerAddress, rpcUrl: info.rpcUrl };
  return publicRpcUrl === undefined ? facts : { ...facts, publicRpcUrl };
}

/** The components' reports by name (queue, index, storage, ipfs, chain, admission). */
export type DependencyReport = Record<string, ComponentHealth>;

/** Hash backends that could not be loaded, by name, with why. */
export type UnavailableBackends = Record<string, string>;

export interface HashBackendReport {
  readonly active: string;
  readonly requested: string;
  readonly unavailable: UnavailableBackends;
}

export interface HttpEngine {
  readonly engine: string;
  readonly native: boolean;
}

export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly version: string;
  readonly uptimeSeconds: number;
  readonly roles: readonly string[];
  readonly hashBackend: HashBackendReport;
  readonly http: HttpEngine;
  readonly dependencies: DependencyReport;
  readonly chain?: ChainFacts;
  /** What this process did since it started (detailed view only). */
  readonly pipeline?: PipelineCounts;
}

export interface PublicComponent {
  readonly status: ComponentStatus;
}

export type PublicDependencies = Record<string, PublicComponent>;

export interface PublicHashBackend {
  readonly active: string;
  readonly requested: string;
}

export interface PublicChainFacts {
  readonly chainId: number;
  readonly contractAddress: string;
  readonly anchorer: string;
  /** The RPC URL the operator declared public (DRIS_PUBLIC_RPC_URL). */
  readonly rpcUrl?: string;
}

export interface PublicHealth {
  readonly status: 'ok' | 'degraded';
  readonly version: string;
  readonly roles: readonly string[];
  readonly hashBackend: PublicHashBackend;
  readonly dependencies: PublicDependencies;
  readonly chain?: PublicChainFacts;
}

export interface HealthInputs {
  readonly version: string;
  readonly startedAtMs: number;
  readonly roles: readonly string[];
  readonly hashBackend: HealthReport['hashBackend'];
  readonly http: HealthReport['http'];
  readonly probes: readonly Probe[];
  readonly timeoutMs: number;
  /** How long one report is answered again, milliseconds (default 1000). */
  readonly cacheMs?: number;
  readonly chain?: ChainFacts;
  /** The pipeline counters, read with each report. */
  readonly pipeline?: () => PipelineCounts;
  readonly now?: () => number;
}

function resultOf(value: void | ComponentStatus | ProbeResult): ProbeResult {
  if (value === undefined) return { status: 'ok' };
  return typeof value === 'string' ? { status: value } : value;
}

async function probe(p: Probe, timeoutMs: number): Promise<ComponentHealth> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  const latency = (): number => Math.round(performance.now() - started);
  try {
    const r = resultOf(
      await Promise.race([
        p.check(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new ProbeTimeout()), timeoutMs);
        }),
      ]),
    );
    return { status: r.status, adapter: p.adapter, latencyMs: latency(), ...(r.reason === undefined ? {} : { error: r.reason }) };
  } catch (err) {
    const code = err instanceof ProbeTimeout ? 'timeout' : isDrisError(err) ? err.code : 'unavailable';
    return { status: 'down', adapter: p.adapter, latencyMs: latency(), error: code };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

class ProbeTimeout extends Error {}

export function publicView(r: HealthReport): PublicHealth {
  const dependencies: PublicDependencies = {};
  for (const [name, c] of Object.entries(r.dependencies)) dependencies[name] = { status: c.status };
  return {
    status: r.status,
    version: r.version,
    roles: r.roles,
    hashBackend: { active: r.hashBackend.active, requested: r.hashBackend.requested },
    dependencies,
    ...(r.chain === undefined
      ? {}
      : {
          chain: {
            chainId: r.chain.chainId,
            contractAddress: r.chain.contractAddress,
            anchorer: r.chain.anchorer,
            ...(r.chain.publicRpcUrl === undefined ? {} : { rpcUrl: r.chain.publicRpcUrl }),
          },
        }),
  };
}

export class HealthMonitor {
  #last: { atMs: number; report: HealthReport } | null = null;
  #running: Promise<HealthReport> | null = null;
  readonly #now: () => number;
  readonly #cacheMs: number;

  constructor(private readonly inputs: HealthInputs) {
    this.#now = inputs.now ?? Date.now;
    this.#cacheMs = inputs.cacheMs ?? 1000;
  }

  /** The detailed report: the last one when younger than the cache time, else the run in progress or a new run. */
  report(): Promise<HealthReport> {
    const last = this.#last;
    if (last !== null && this.#now() - last.atMs < this.#cacheMs) return Promise.resolve(last.report);
    this.#running ??= this.#run().finally(() => {
      this.#running = null;
    });
    return this.#running;
  }

  async publicReport(): Promise<PublicHealth> {
    return publicView(await this.report());
  }

  async #run(): Promise<HealthReport> {
    const i = this.inputs;
    const results = await Promise.all(i.probes.map(async (p) => [p.name, await probe(p, i.timeoutMs)] as const));
    const report: HealthReport = {
      status: results.every(([, r]) => r.status === 'ok') ? 'ok' : 'degraded',
      version: i.version,
      uptimeSeconds: Math.round((this.#now() - i.startedAtMs) / 1000),
      roles: i.roles,
      hashBackend: i.hashBackend,
      http: i.http,
      dependencies: Object.fromEntries(results),
      ...(i.chain === undefined ? {} : { chain: i.chain }),
      ...(i.pipeline === undefined ? {} : { pipeline: i.pipeline() }),
    };
    this.#last = { atMs: this.#now(), report };
    return report;
  }
}
