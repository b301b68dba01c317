import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { toolsDir } from '../../test/harness/servers.js';
import { BenchRefusal } from './refusal.js';

/**
 * Programs a scenario needs beside Node, checked before anything starts: a missing one is refused
 * with what to install and how, never found out later as a stack trace.
 */

export interface ToolRequirement {
  readonly name: string;
  /** What needs it (an option, a mode). */
  readonly why: string;
  /** The path of the program, or null when it is not there. */
  readonly find: () => string | null;
  readonly install: readonly string[];
}

export function onPath(program: string): string | null {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    if (dir === '') continue;
    const p = path.join(dir, program);
    if (existsSync(p)) return p;
  }
  return null;
}

export const NATS_SERVER: ToolRequirement = {
  name: 'nats-server',
  why: 'NATS JetStream queue',
  find: () => {
    const bin = path.join(toolsDir(), 'bin', 'nats-server');
    return existsSync(bin) && spawnSync(bin, ['--version']).status === 0 ? bin : null;
  },
  install: ['bash scripts/tools.sh nats     (builds nats-server 2.12 with Go into ~/.cache/dris-tools/bin, about a minute; Go from https://go.dev/dl/)'],
};

export const REDIS_SERVER: ToolRequirement = {
  name: 'redis-server',
  why: 'Redis admission store',
  find: () => onPath('redis-server'),
  install: ['apt-get install -y redis-server     (or: bash scripts/tools.sh redis, which does that without starting a system service)'],
};

export const HAPROXY: ToolRequirement = {
  name: 'haproxy',
  why: 'load balancer of the fleet',
  find: () => onPath('haproxy') ?? (existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : null),
  install: ['apt-get install -y haproxy     (or: bash scripts/tools.sh haproxy, which does that without starting a system service)'],
};

export const KUBO: ToolRequirement = {
  name: 'ipfs (Kubo)',
  why: 'IPFS node of the fleet',
  find: () => {
    const bin = path.join(toolsDir(), 'bin', 'ipfs');
    return existsSync(bin) ? bin : null;
  },
  install: ['bash scripts/tools.sh kubo     (builds Kubo with Go into ~/.cache/dris-tools/bin, several minutes; Go from https://go.dev/dl/)'],
};

/** Refuses, listing every missing tool at once with how to install it. */
export function checkTools(requirements: readonly ToolRequirement[]): void {
  const missing = requirements.filter((r) => r.find() === null);
  if (missing.length === 0) return;
  throw new BenchRefusal(
    `missing ${missing.map((m) => `${m.name} (for the ${m.why})`).join(', ')}`,
    missing.flatMap((m) => m.install.map((l) => `${m.name}: ${l}`)),
  );
}
