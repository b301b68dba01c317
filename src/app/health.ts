import { toDrisError } from '../errors/dris-error.js';

/** GET /api/Admin/health: each dependency probed with a deadline; 200 only when all are up. */

export interface DependencyHealth {
  readonly status: 'ok' | 'down';
  readonly adapter: string;
  readonly latencyMs: number;
  readonly error?: string;
}

export interface HealthReport {
  readonly status: 'ok' | 'degraded';
  readonly version: string;
  readonly uptimeSeconds: number;
  readonly roles: readonly string[];
  readonly hashBackend: { readonly active: string; readonly requested: string; readonly unavailable: Readonly<Record<string, string>> };
  readonly http: { readonly engine: string; readonly native: boolean };
  readonly dependencies: Readonly<Record<string, DependencyHealth>>;
  /** Where anyone can check anchors independently (anchorer role only). */
  readonly chain?: { readonly chainId: number; readonly contractAddress: string; readonly rpcUrl: string; readonly anchorer: string };
}

export interface Probe {
  readonly name: string;
  readonly adapter: string;
  check(): Promise<void>;
}

export interface HealthInputs {
  readonly version: string;
  readonly startedAtMs: number;
  readonly roles: readonly string[];
  readonly hashBackend: HealthReport['hashBackend'];
  readonly http: HealthReport['http'];
  readonly probes: readonly Probe[];
  readonly timeoutMs: number;
  readonly chain?: HealthReport['chain'];
}

async function probe(p: Probe, timeoutMs: number): Promise<DependencyHealth> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      p.check(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return { status: 'ok', adapter: p.adapter, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    // Only the stable code reaches the answer: vendor messages may name hosts or users.
    const code = err instanceof Error && !('code' in err && typeof err.code === 'string') ? 'timeout' : toDrisError(err).code;
    return { status: 'down', adapter: p.adapter, latencyMs: Math.round(performance.now() - started), error: code };
  } finally {
    if (timer !== undefined) clearTimeout(timer);
  }
}

export function healthReporter(inputs: HealthInputs): () => Promise<HealthReport> {
  return async () => {
    const results = await Promise.all(inputs.probes.map(async (p) => [p.name, await probe(p, inputs.timeoutMs)] as const));
    const dependencies = Object.fromEntries(results);
    return {
      status: results.every(([, r]) => r.status === 'ok') ? 'ok' : 'degraded',
      version: inputs.version,
      uptimeSeconds: Math.round((Date.now() - inputs.startedAtMs) / 1000),
      roles: inputs.roles,
      hashBackend: inputs.hashBackend,
      http: inputs.http,
      dependencies,
      ...(inputs.chain === undefined ? {} : { chain: inputs.chain }),
    };
  };
}
