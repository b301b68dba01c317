import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';

/**
 * Server and load generator on separate CPUs (taskset), so that they do not take turns on one
 * core and the figure is the server's: the server on CPU 0, this process (the generator and its
 * threads) on the others. Needs taskset and at least two CPUs; otherwise nothing is pinned and
 * the results say so.
 */

export interface Pinning {
  readonly server: string;
  readonly generator: string;
}

export function tasksetAvailable(): boolean {
  return spawnSync('taskset', ['-c', '0', 'true']).status === 0;
}

export function pinProcesses(enabled: boolean): Pinning | null {
  const cores = availableParallelism();
  if (!enabled || cores < 2 || !tasksetAvailable()) return null;
  const generator = cores === 2 ? '1' : `1-${cores - 1}`;
  // -a: every thread of this process; threads started later inherit the set.
  const r = spawnSync('taskset', ['-a', '-p', '-c', generator, String(process.pid)], { encoding: 'utf8' });
  if (r.status !== 0) return null;
  return { server: '0', generator };
}
