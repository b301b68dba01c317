import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fillTemplate } from './nats-cluster.js';
import { freePort, terminate, track } from './servers.js';
import { repoRoot } from './service.js';

/**
 * HAProxy (Debian's) in front of the api processes of the local fleet, from
 * deploy/haproxy/haproxy.cfg.template: round robin, health checks, no retry of a request that
 * reached a process. Its stats page (CSV) tells which servers are up.
 */

export interface LoadBalancer {
  readonly url: string;
  readonly port: number;
  readonly statsUrl: string;
  /** Server name -> HAProxy status (UP, DOWN, MAINT, `UP 1/2`, …). */
  serverStatus(): Promise<Map<string, string>>;
  /** Resolves once every named server is UP (all of them when none are named). */
  waitUp(names?: readonly string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

export interface LoadBalancerOptions {
  /** Directory of the generated configuration (kept). */
  readonly dir: string;
  /** Public port; a free one when 0 or unset. */
  readonly port?: number;
  /** Each api process's public port, and its ops port, whose /readyz the health check asks. */
  readonly servers: readonly { readonly name: string; readonly port: number; readonly opsPort: number }[];
}

const TEMPLATE = path.join(repoRoot, 'deploy', 'haproxy', 'haproxy.cfg.template');

export function haproxyBinary(): string {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter).concat(['/usr/sbin', '/usr/local/sbin'])) {
    if (dir.length === 0) continue;
    const bin = path.join(dir, 'haproxy');
    if (existsSync(bin)) return bin;
  }
  throw new Error('haproxy not found on PATH or in /usr/sbin; run scripts/tools.sh haproxy');
}

/** The backend's servers and their status from the stats CSV (`# pxname,svname,…,status,…`). */
function parseStats(csv: string): Map<string, string> {
  const lines = csv.split('\n').filter((l) => l.trim() !== '');
  const header = (lines[0] ?? '').replace(/^# /, '').split(',');
  const px = header.indexOf('pxname');
  const sv = header.indexOf('svname');
  const status = header.indexOf('status');
  const out = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const cols = line.split(',');
    if (cols[px] !== 'dris_api' || cols[sv] === 'FRONTEND' || cols[sv] === 'BACKEND') continue;
    out.set(cols[sv] ?? '', cols[status] ?? '');
  }
  return out;
}

export async function startLoadBalancer(options: LoadBalancerOptions): Promise<LoadBalancer> {
  const bin = haproxyBinary();
  await mkdir(options.dir, { recursive: true, mode: 0o700 });
  const port = options.port !== undefined && options.port !== 0 ? options.port : await freePort();
  const statsPort = await freePort();
  const servers = options.servers.map((s) => `    server ${s.name} 127.0.0.1:${s.port} check port ${s.opsPort}`).join('\n');
  const config = fillTemplate(await readFile(TEMPLATE, 'utf8'), { bindPort: port, statsPort, servers });
  const file = path.join(options.dir, 'haproxy.cfg');
  await writeFile(file, config, { mode: 0o600 });
  // -db: stay in the foreground (no daemon), so the fleet owns the process.
  const child: ChildProcess = spawn(bin, ['-db', '-f', file], { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let output = '';
  const collect = (chunk: Buffer): void => {
    if (output.length < 64 * 1024) output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const statsUrl = `http://127.0.0.1:${statsPort}/stats`;
  const serverStatus = async (): Promise<Map<string, string>> => {
    const res = await fetch(`${statsUrl};csv`, { signal: AbortSignal.timeout(2000) });
    return parseStats(await res.text());
  };
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`haproxy exited (${child.exitCode ?? child.signalCode}) at start:\n${output}`);
    const up = await serverStatus().then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) {
      await terminate(child, 'SIGKILL');
      throw new Error(`haproxy's stats page did not answer within 15 s:\n${output}`);
    }
    await sleep(100);
  }
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    statsUrl,
    serverStatus,
    async waitUp(names, timeoutMs = 60_000) {
      const end = Date.now() + timeoutMs;
      for (;;) {
        const status = await serverStatus().catch(() => new Map<string, string>());
        const wanted = names ?? [...status.keys()];
        if (wanted.length > 0 && wanted.every((n) => status.get(n) === 'UP')) return;
        if (Date.now() > end) throw new Error(`load balancer servers not UP within ${timeoutMs} ms: ${JSON.stringify([...status])}`);
        await sleep(200);
      }
    },
    // SIGUSR1 is HAProxy's soft stop (connections finish); SIGTERM its hard stop.
    stop: () => terminate(child, 'SIGUSR1', 5_000),
  };
}
