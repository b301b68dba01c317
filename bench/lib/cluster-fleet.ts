import { startFleet, type Fleet } from '../../test/harness/fleet.js';
import { anchorContract, type AnchorContractReader } from '../../test/harness/pipeline.js';
import { request } from '../../test/harness/service.js';
import { chainCounter, type ChainCounter } from './anchored-load.js';
import { checkServiceBackend } from './environment.js';
import { readRoles, type RoleReading } from './process-cpu.js';
import type { ScenarioContext } from './scenario.js';
import { BENCH_TENANT, UNLIMITED } from './service.js';

/**
 * The fleet under test of the cluster scenario: the local fleet of `npm run cluster`
 * (test/harness/fleet.ts, the same module the cluster tests start) in a temporary directory, with
 * the rate limits out of the way, an enterprise key for the bench tenant, the hashing backend of
 * its api processes checked, a reader of the anchor contract, and readings of every process's CPU
 * and memory by role.
 */

export interface FleetCounts {
  readonly api: number;
  readonly indexer: number;
  readonly anchorer: number;
}

export interface BenchFleet {
  readonly fleet: Fleet;
  readonly key: string;
  /** The load balancer: where every request goes. */
  readonly target: { readonly host: string; readonly port: number; readonly url: string };
  readonly backend: string;
  readonly chain: ChainCounter;
  /** CPU seconds so far and memory now of every process of the run, by role. */
  roles(): RoleReading;
  stop(): Promise<void>;
}

/** Roles in the order tables list them; the bench's own process last. */
export const ROLE_ORDER = ['api', 'indexer', 'anchorer', 'haproxy', 'nats', 'redis', 'clickhouse bridge', 'kubo', 'anvil', 'other', 'bench process'] as const;
export const DRIS_ROLES = ['api', 'indexer', 'anchorer'] as const;
export const BENCH_ROLE = 'bench process';

/** The fleet's servers, told apart by their command lines. */
export function classifyFleetProcess(cmdline: string): string | null {
  if (/(^|\/)nats-server(\s|$)/.test(cmdline)) return 'nats';
  if (/(^|\/)redis-server(\s|$)/.test(cmdline)) return 'redis';
  if (/clickhouse-http-bridge-main/.test(cmdline)) return 'clickhouse bridge';
  if (/(^|\/)ipfs(\s|$)/.test(cmdline)) return 'kubo';
  if (/(^|\/)anvil(\s|$)/.test(cmdline)) return 'anvil';
  if (/(^|\/)haproxy(\s|$)/.test(cmdline)) return 'haproxy';
  return null;
}

export async function startBenchFleet(ctx: ScenarioContext, counts: FleetCounts, env: Readonly<Record<string, string>>, say: (line: string) => void): Promise<BenchFleet> {
  const fleet = await startFleet({ apis: counts.api, indexers: counts.indexer, anchorers: counts.anchorer, env: { DRIS_RATE_LIMITS: UNLIMITED, ...env }, log: say });
  let reader: AnchorContractReader | null = null;
  try {
    const url = new URL(fleet.url);
    // Every api process's backend: each hashes the records it accepts.
    let backend = 'unknown';
    for (const p of fleet.byRole('api')) {
      const health = await request<{ hashBackend?: { active?: string } }>(p.handle, 'GET', '/api/Admin/health');
      backend = health.body.hashBackend?.active ?? 'unknown';
      checkServiceBackend(backend, ctx.allowFallback);
    }
    ctx.environment.hashBackend.service = backend;
    const key = (await fleet.createKey({ tenantId: BENCH_TENANT, clientId: 'bench', level: 'enterprise' })).apiKey;
    reader = await anchorContract(fleet.chain.rpcUrl, fleet.chain.contractAddress);
    const closing = reader;
    return {
      fleet,
      key,
      target: { host: url.hostname, port: Number(url.port), url: fleet.url },
      backend,
      chain: chainCounter(reader),
      roles: () =>
        readRoles({
          roots: fleet.processes.filter((p) => p.running).map((p) => ({ role: p.role, pid: p.handle.pid })),
          under: process.pid,
          classify: classifyFleetProcess,
          selfRole: BENCH_ROLE,
        }),
      async stop() {
        closing.close();
        await fleet.stop();
      },
    };
  } catch (err) {
    reader?.close();
    await fleet.stop();
    throw err;
  }
}
