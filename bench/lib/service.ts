import { createKey, request, startService, type ServiceHandle } from '../../test/harness/service.js';
import { checkServiceBackend } from './environment.js';
import type { ScenarioContext } from './scenario.js';

/**
 * The service under test: the real compiled CLI (`dris serve`) started by the test harness with
 * the scenario's environment, its hashing backend read from its health answer (refused when it is
 * a fallback, unless allowed) and an enterprise key for the bench tenant.
 */

export const BENCH_TENANT = 'bench';

/** Rate limits out of the way: the bench measures the service, not its limiter's refusals. */
export const UNLIMITED = 'standard=1000,premium=10000,enterprise=1000000000';

export interface BenchService {
  readonly svc: ServiceHandle;
  readonly key: string;
  readonly backend: string;
  readonly health: Readonly<Record<string, unknown>>;
}

export async function startBenchService(ctx: ScenarioContext, options: { env: Record<string, string>; pinCpu?: string | null; dataDir?: string }): Promise<BenchService> {
  const svc = await startService({
    env: { DRIS_RATE_LIMITS: UNLIMITED, DRIS_LOG_LEVEL: 'info', ...options.env },
    ...(options.dataDir === undefined ? {} : { dataDir: options.dataDir }),
    pinCpu: options.pinCpu ?? undefined,
  });
  try {
    const health = await request<{ hashBackend?: { active?: string } }>(svc, 'GET', '/api/Admin/health');
    const backend = health.body.hashBackend?.active ?? 'unknown';
    checkServiceBackend(backend, ctx.allowFallback);
    ctx.environment.hashBackend.service = backend;
    const key = (await createKey(svc, { tenantId: BENCH_TENANT, clientId: 'bench', level: 'enterprise' })).apiKey;
    return { svc, key, backend, health: health.body as Record<string, unknown> };
  } catch (err) {
    if (options.dataDir === undefined) await svc.dispose();
    else await svc.stop();
    throw err;
  }
}
