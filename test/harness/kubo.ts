import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, makeTempDir, removeTempDir, terminate, toolsDir, track } from './servers.js';

/**
 * A real Kubo daemon for integration tests, on loopback only: its own IPFS_PATH in a temp dir, the
 * `test` profile (no bootstrap peers, no mDNS), no swarm listener, no routing, no AutoConf, no
 * telemetry, and `--offline`, so it opens no connection beyond its RPC API and gateway on 127.0.0.1.
 * Stopped by stop() (t.teardown) and killed on process exit so a crashed test leaves none behind.
 */

export interface KuboTestDaemon {
  /** Kubo RPC base URL, e.g. `http://127.0.0.1:40123` (what IPFS_API_URL holds). */
  readonly apiUrl: string;
  /** Kubo's own HTTP gateway on loopback. */
  readonly gatewayUrl: string;
  readonly ipfsPath: string;
  /** Stops the daemon and removes its repo; idempotent. */
  stop(): Promise<void>;
  /** Sends a signal and waits for exit; the repo is kept, so restart() brings the same data back. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops if running, then starts again on the same ports with the same repo. */
  restart(): Promise<void>;
}

const execFileP = promisify(execFile);
export function kuboBinary(): string {
  const bin = path.join(toolsDir(), 'bin', 'ipfs');
  if (!existsSync(bin)) throw new Error(`Kubo not found at ${bin}; run scripts/tools.sh kubo`);
  return bin;
}

function daemonEnv(ipfsPath: string): NodeJS.ProcessEnv {
  // IPFS_TELEMETRY=off is belt and braces beside the plugin setting in the config.
  return { ...process.env, IPFS_PATH: ipfsPath, IPFS_TELEMETRY: 'off', GOLOG_LOG_LEVEL: 'error' };
}

/** Everything that could make the daemon reach beyond loopback, switched off in the repo config. */
async function confineToLoopback(ipfsPath: string, apiPort: number, gatewayPort: number): Promise<void> {
  const file = path.join(ipfsPath, 'config');
  const config = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  const section = (name: string): Record<string, unknown> => {
    const existing = config[name];
    if (existing !== null && typeof existing === 'object' && !Array.isArray(existing)) return existing as Record<string, unknown>;
    const created: Record<string, unknown> = {};
    config[name] = created;
    return created;
  };
  Object.assign(section('Addresses'), {
    API: `/ip4/127.0.0.1/tcp/${apiPort}`,
    Gateway: `/ip4/127.0.0.1/tcp/${gatewayPort}`,
    Swarm: [],
    Announce: [],
    AppendAnnounce: [],
  });
  config['Bootstrap'] = [];
  Object.assign(section('Routing'), { Type: 'none', DelegatedRouters: [] });
  Object.assign(section('AutoConf'), { Enabled: false });
  Object.assign(section('AutoTLS'), { Enabled: false });
  Object.assign(section('Discovery'), { MDNS: { Enabled: false } });
  Object.assign(section('Provide'), { Enabled: false });
  Object.assign(section('Plugins'), { Plugins: { telemetry: { Config: { Mode: 'off' } } } });
  Object.assign(section('Gateway'), { NoFetch: true, NoDNSLink: true });
  await writeFile(file, JSON.stringify(config, null, 2));
}

function waitReady(child: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    let done = false;
    const finish = (err: Error | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err === null) resolve();
      else {
        child.kill('SIGKILL');
        reject(err);
      }
    };
    const onData = (chunk: Buffer): void => {
      if (output.length < 64 * 1024) output += chunk.toString('utf8');
      if (output.includes('Daemon is ready')) finish(null);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => finish(err));
    child.once('exit', (code, signal) => finish(new Error(`ipfs daemon exited (${code ?? signal}) before ready:\n${output}`)));
    const timer = setTimeout(() => finish(new Error(`ipfs daemon not ready after ${timeoutMs} ms:\n${output}`)), timeoutMs);
  });
}

export interface KuboOptions {
  /** Repository to use and keep (initialised when empty: the local fleet's); a temp one removed by stop() otherwise. */
  readonly dir?: string;
}

export async function startKubo(options: KuboOptions = {}): Promise<KuboTestDaemon> {
  const bin = kuboBinary();
  const ipfsPath = options.dir ?? (await makeTempDir('dris-kubo-'));
  const cleanup = async (): Promise<void> => {
    if (options.dir === undefined) await removeTempDir(ipfsPath);
  };
  const apiPort = await freePort();
  const gatewayPort = await freePort();
  try {
    if (!existsSync(path.join(ipfsPath, 'config'))) await execFileP(bin, ['init', '--profile', 'test', '--empty-repo'], { env: daemonEnv(ipfsPath) });
    // Rewritten at every start: a kept repository gets this run's ports and stays on loopback.
    await confineToLoopback(ipfsPath, apiPort, gatewayPort);
  } catch (err) {
    await cleanup();
    throw err;
  }

  let current: ChildProcess | null = null;
  let stopped = false;
  const launch = async (): Promise<void> => {
    // --offline: add, cat, pin and block get need no network, and the daemon then dials nothing.
    const child = spawn(bin, ['daemon', '--offline'], { env: daemonEnv(ipfsPath), stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    await waitReady(child, 60_000);
    current = child;
  };
  await launch().catch(async (err: unknown) => {
    await cleanup();
    throw err;
  });

  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const child = current;
    current = null;
    if (child !== null) await terminate(child, signal);
  };
  return {
    apiUrl: `http://127.0.0.1:${apiPort}`,
    gatewayUrl: `http://127.0.0.1:${gatewayPort}`,
    ipfsPath,
    kill,
    async restart() {
      if (stopped) throw new Error('daemon stopped');
      await kill('SIGTERM');
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill('SIGTERM');
      await cleanup();
    },
  };
}
