import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, makeTempDir, removeTempDir, terminate, track } from './servers.js';

/**
 * The ClickHouse HTTP bridge (clickhouse-http-bridge.ts) as a child process, as the local fleet
 * and the integration tests run it: one process owns the chDB data directory, everything else
 * talks HTTP to it.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
const mainPath = path.join(here, 'clickhouse-http-bridge-main.js');

export interface BridgeProcessOptions {
  /** user name -> password; default `default` with an empty password. */
  readonly users?: Readonly<Record<string, string>>;
  readonly maxQueries?: number;
  readonly statementTimeoutMs?: number;
  /** Directory to use and keep (the local fleet's); a temp directory removed by stop() otherwise. */
  readonly dir?: string;
}

export interface BridgeProcess {
  readonly url: string;
  readonly port: number;
  /** The chDB data directory (kept across kill/restart). */
  readonly dataDir: string;
  /** What the process wrote, bounded, for diagnostics. */
  output(): string;
  /** Sends a signal (SIGTERM by default) and waits for the exit; the data is kept. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts again on the same port and data directory (after kill, or stopping it first). */
  restart(): Promise<void>;
  /** Stops and removes the data directory; idempotent. */
  stop(): Promise<void>;
}

function launch(args: readonly string[], timeoutMs: number): Promise<{ child: ChildProcess; output: () => string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [mainPath, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    track(child);
    let output = '';
    let done = false;
    const finish = (err: Error | null): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err === null) resolve({ child, output: () => output });
      else {
        child.kill('SIGKILL');
        reject(err);
      }
    };
    const onData = (chunk: Buffer): void => {
      if (output.length < 64 * 1024) output += chunk.toString('utf8');
      if (!done && output.includes('"msg":"listening"')) finish(null);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => finish(err));
    child.once('exit', (code, signal) => finish(new Error(`clickhouse bridge exited (${code ?? signal}) before listening:\n${output}`)));
    const timer = setTimeout(() => finish(new Error(`clickhouse bridge not listening after ${timeoutMs} ms:\n${output}`)), timeoutMs);
  });
}

export async function startClickHouseBridge(options: BridgeProcessOptions = {}): Promise<BridgeProcess> {
  const owned = options.dir === undefined;
  const dir = options.dir ?? (await makeTempDir('dris-chbridge-'));
  const removeDir = async (): Promise<void> => {
    if (owned) await removeTempDir(dir);
  };
  const dataDir = path.join(dir, 'clickhouse');
  const port = await freePort();
  const args = [
    '--path',
    dataDir,
    '--port',
    String(port),
    ...Object.entries(options.users ?? {}).flatMap(([user, password]) => ['--user', `${user}:${password}`]),
    ...(options.maxQueries === undefined ? [] : ['--max-queries', String(options.maxQueries)]),
    ...(options.statementTimeoutMs === undefined ? [] : ['--statement-timeout-ms', String(options.statementTimeoutMs)]),
  ];
  let current: { child: ChildProcess; output: () => string } | null = null;
  let lastOutput = (): string => '';
  let stopped = false;
  const start = async (): Promise<void> => {
    current = await launch(args, 60_000);
    lastOutput = current.output;
  };
  await start().catch(async (err: unknown) => {
    await removeDir();
    throw err;
  });
  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const running = current;
    current = null;
    if (running !== null) await terminate(running.child, signal, 30_000);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dataDir,
    output: () => lastOutput(),
    kill,
    async restart() {
      if (stopped) throw new Error('bridge stopped');
      await kill('SIGTERM');
      await start();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill('SIGTERM');
      await removeDir();
    },
  };
}
