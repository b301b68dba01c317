import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, release, totalmem, type } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { loadHashingBackend } from '../../src/adapters/hashing/select-backend.js';
import { repoRoot } from '../../test/harness/service.js';
import { BenchRefusal } from './refusal.js';

/**
 * What a result depends on besides the code: the machine (CPU model, cores, kernel, memory), the
 * runtime, the commit, the hashing backend, and how busy the machine was before the run started
 * (another job on a shared machine skews every figure).
 */

export interface Environment {
  readonly cpuModel: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly os: string;
  readonly node: string;
  readonly v8: string;
  readonly commit: string | null;
  /** Uncommitted changes in the tree that was measured. */
  readonly commitDirty: boolean | null;
  readonly hashBackend: {
    /** What the bench process itself loads (DRIS_HASH_BACKEND=auto). */
    bench: string;
    /** What the service under test reported in its health answer (null: no service in this scenario). */
    service: string | null;
  };
  readonly loadAvg1mBefore: number;
  /** Share of all CPUs busy in the 2 s before the run (other work on the machine). */
  readonly cpuBusyBeforePercent: number | null;
  /** Another build's CLI started as the service under test (DRIS_SERVICE_CLI), with its checkout's commit; null: this build's. */
  readonly serviceCli: { readonly path: string; readonly commit: string | null } | null;
  /** CPU sets of the service under test and of the generator, when pinned. */
  pinning: { readonly server: string; readonly generator: string } | null;
}

function git(args: string[], cwd = repoRoot): string | null {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', timeout: 10_000 });
  return r.status === 0 ? r.stdout.trim() : null;
}

export function cpuTimes(): { busy: number; total: number } | null {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    const total = fields.reduce((a, b) => a + b, 0);
    // idle and iowait are the 4th and 5th fields.
    return { busy: total - (fields[3] ?? 0) - (fields[4] ?? 0), total };
  } catch {
    return null;
  }
}

export function busyPercent(from: ReturnType<typeof cpuTimes>, to: ReturnType<typeof cpuTimes>): number | null {
  if (from === null || to === null || to.total === from.total) return null;
  return Math.round((100 * (to.busy - from.busy)) / (to.total - from.total));
}

/**
 * The native hashing backend, or a refusal: a bench on the wasm or js fallback measures a slower
 * service than the one operators run, without saying so.
 */
export async function checkHashBackend(allowFallback: boolean): Promise<string> {
  const loaded = await loadHashingBackend('auto');
  const name = loaded.backend.name;
  if (name !== 'native' && !allowFallback) {
    const why = loaded.tried.find((t) => t.name === 'native')?.error;
    throw new BenchRefusal(
      `the native hashing backend is not available here (${why instanceof Error ? why.message.split('\n')[0] : 'not built'}); the service would run on the slower ${name} fallback`,
      ['build it: npm run build:native   (needs a Rust toolchain: https://rustup.rs)', `or measure the fallback on purpose: add --allow-fallback`],
    );
  }
  return name;
}

/** The service's hashing backend must be the same as the bench's: it is what the figures are of. */
export function checkServiceBackend(service: string, allowFallback: boolean): void {
  if (service !== 'native' && !allowFallback) {
    throw new BenchRefusal(`the service under test runs the ${service} hashing backend, not native`, ['check DRIS_HASH_BACKEND and the native addon (npm run build:native), or add --allow-fallback']);
  }
}

export async function captureEnvironment(hashBackend: string): Promise<Environment> {
  const before = cpuTimes();
  await sleep(2000);
  const status = git(['status', '--porcelain', '--untracked-files=no']);
  const serviceCli = process.env['DRIS_SERVICE_CLI'];
  return {
    cpuModel: cpus()[0]?.model.trim() ?? 'unknown',
    cores: availableParallelism(),
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    os: type(),
    node: process.version,
    v8: process.versions.v8,
    commit: git(['rev-parse', 'HEAD']),
    commitDirty: status === null ? null : status !== '',
    hashBackend: { bench: hashBackend, service: null },
    loadAvg1mBefore: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    cpuBusyBeforePercent: busyPercent(before, cpuTimes()),
    serviceCli: serviceCli === undefined ? null : { path: serviceCli, commit: git(['rev-parse', 'HEAD'], path.dirname(serviceCli)) },
    pinning: null,
  };
}

export function describeEnvironment(e: Environment): string {
  const commit = e.commit === null ? 'no git' : `${e.commit.slice(0, 12)}${e.commitDirty === true ? '+dirty' : ''}`;
  const pin = e.pinning === null ? 'not pinned' : `server on CPU ${e.pinning.server}, generator on CPU ${e.pinning.generator}`;
  const other = e.serviceCli === null ? [] : [`service under test: ${e.serviceCli.path} (commit ${e.serviceCli.commit?.slice(0, 12) ?? 'unknown'}), not this build's`];
  return [
    ...other,
    `${e.cpuModel}, ${e.cores} cores, ${e.memoryGiB} GiB, ${e.os} ${e.kernel}, Node ${e.node}, commit ${commit}`,
    `hash backend: bench ${e.hashBackend.bench}, service ${e.hashBackend.service ?? 'n/a'}; ${pin}; machine busy before the run ${e.cpuBusyBeforePercent ?? 'n/a'} %, load average ${e.loadAvg1mBefore}`,
  ].join('\n');
}
