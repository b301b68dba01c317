import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';

/**
 * Real servers for integration tests: each on a loopback port of its own with a temp directory of
 * its own, so tests and concurrent runs never share state. Callers stop them with t.teardown;
 * children still running when the process exits are killed, so a crashed test leaves none behind.
 */

const children = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;
let signalHooks = true;

/**
 * A program that stops its servers itself on SIGINT/SIGTERM (the local fleet, in order) calls this
 * before starting any: the children are then killed on process exit only, not on the first signal.
 */
export function leaveSignalsToCaller(): void {
  signalHooks = false;
}

export function signalsLeftToCaller(): boolean {
  return !signalHooks;
}

function killAll(): void {
  for (const c of children) c.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
}

export async function makeTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export async function removeTempDir(dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

export function track(child: ChildProcess): void {
  children.add(child);
  child.once('exit', () => children.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', killAll);
    if (!signalHooks) return;
    // A test runner ends a hung test with a signal, and 'exit' does not run then: kill the
    // servers, then let the signal take its default course.
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.once(signal, () => {
        killAll();
        process.kill(process.pid, signal);
      });
    }
  }
}

export function toolsDir(): string {
  return process.env['DRIS_TOOLS_DIR'] ?? path.join(homedir(), '.cache', 'dris-tools');
}

/** A TCP port free on 127.0.0.1 at the time of the call. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new Error('no port assigned'));
      });
    });
  });
}

/**
 * Runs `launch` on a free port, and again on another when the port was taken between freePort()
 * and the server's bind (other suites and outgoing connections draw from the same range).
 */
export async function onFreePort<T>(launch: (port: number) => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await launch(port);
    } catch (err) {
      if (attempt >= attempts || !/address already in use/i.test((err as Error).message)) throw err;
    }
  }
}

interface StartedProcess {
  readonly child: ChildProcess;
  /** Everything the process wrote, for diagnostics when it fails to start. */
  readonly output: () => string;
}

/** Spawns and resolves once `ready` appears in its output; rejects if it exits or times out first. */
export function spawnUntil(command: string, args: readonly string[], ready: string, timeoutMs: number): Promise<StartedProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
      // Bounded: only the start of the log matters for diagnostics.
      if (output.length < 64 * 1024) output += chunk.toString('utf8');
      if (!done && output.includes(ready)) finish(null);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('error', (err) => finish(err));
    child.once('exit', (code, signal) => finish(new Error(`${path.basename(command)} exited (${code ?? signal}) before ready:\n${output}`)));
    const timer = setTimeout(() => finish(new Error(`${path.basename(command)} not ready after ${timeoutMs} ms:\n${output}`)), timeoutMs);
  });
}

/** Sends a signal and waits for the process to exit (SIGKILL after graceMs). */
export function terminate(child: ChildProcess, signal: NodeJS.Signals, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

export interface NatsServerOptions {
  /** Require this user and password from clients. */
  readonly user?: string;
  readonly pass?: string;
}

export interface NatsTestServer {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** Stops gracefully and removes the temp directory; idempotent. */
  stop(): Promise<void>;
  /** Sends a signal and waits for exit; the store is kept, so restart() recovers it. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Sends a signal without waiting (SIGSTOP / SIGCONT pause and resume the server). */
  signal(signal: NodeJS.Signals): void;
  /**
   * SIGSTOP, then waits until the kernel shows the process stopped: kill() only queues the signal,
   * and a server running on the other core may still answer a request sent right after it.
   */
  pause(): Promise<void>;
  /** Stops if running, then starts again on the same port with the same store. */
  restart(): Promise<void>;
}

export function natsServerBinary(): string {
  const bin = path.join(toolsDir(), 'bin', 'nats-server');
  if (!existsSync(bin)) throw new Error(`nats-server not found at ${bin}; run scripts/tools.sh nats`);
  return bin;
}

export async function startNats(options: NatsServerOptions = {}): Promise<NatsTestServer> {
  const bin = natsServerBinary();
  const dir = await makeTempDir('dris-nats-');
  const storeDir = path.join(dir, 'jetstream');
  const name = `dris-test-${randomBytes(4).toString('hex')}`;
  const auth =
    options.user !== undefined ? `authorization { user: ${JSON.stringify(options.user)}, password: ${JSON.stringify(options.pass ?? '')} }\n` : '';
  // sync_interval: always makes every stored message fsync'd before its PubAck, as in production.
  const config = (port: number): string =>
    `server_name: ${name}\n` +
    `listen: 127.0.0.1:${port}\n` +
    `max_payload: 8MB\n` +
    auth +
    `jetstream {\n  store_dir: ${JSON.stringify(storeDir)}\n  sync_interval: always\n  max_memory_store: 64MB\n  max_file_store: 1GB\n}\n`;
  const configFile = path.join(dir, 'nats-server.conf');

  let current: ChildProcess | null = null;
  let stopped = false;
  const launch = async (): Promise<void> => {
    const started = await spawnUntil(bin, ['-c', configFile], 'Server is ready', 30_000);
    current = started.child;
  };
  const port = await onFreePort(async (p) => {
    await writeFile(configFile, config(p));
    await launch();
    return p;
  }).catch(async (err: unknown) => {
    await removeTempDir(dir);
    throw err;
  });

  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const child = current;
    current = null;
    if (child !== null) await terminate(child, signal);
  };
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    kill,
    signal(signal) {
      const child = current as ChildProcess | null;
      child?.kill(signal);
    },
    async pause() {
      const child = current as ChildProcess | null;
      if (child?.pid === undefined) throw new Error('nats-server is not running');
      child.kill('SIGSTOP');
      for (const deadline = Date.now() + 5000; Date.now() < deadline; ) {
        // /proc/<pid>/stat: "pid (comm) state ...": T is stopped by a signal.
        const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8');
        if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('T')) return;
        await new Promise((r) => setTimeout(r, 5));
      }
      throw new Error('nats-server did not stop within 5 s of SIGSTOP');
    },
    async restart() {
      if (stopped) throw new Error('server stopped');
      await kill('SIGTERM');
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill('SIGTERM');
      await removeTempDir(dir);
    },
  };
}

export interface RedisTestServer {
  readonly url: string;
  readonly port: number;
  /** Stops and removes the temp directory; idempotent. */
  stop(): Promise<void>;
  /** Sends a signal and waits for exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops if running, then starts again on the same port (empty unless started durable). */
  restart(): Promise<void>;
}

export function redisServerBinary(): string {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter).concat(['/usr/bin', '/usr/local/bin'])) {
    if (dir.length === 0) continue;
    const bin = path.join(dir, 'redis-server');
    if (existsSync(bin)) return bin;
  }
  throw new Error('redis-server not found on PATH; run scripts/tools.sh redis');
}

export interface RedisServerOptions {
  /** Append-only file with an fsync per write (appendfsync always): a SIGKILL loses nothing acknowledged. */
  readonly durable?: boolean;
  /** Data directory to use and keep (the local fleet's); a temp directory removed by stop() otherwise. */
  readonly dir?: string;
  /** Require this password from clients (requirepass). */
  readonly password?: string;
}

export async function startRedis(options: RedisServerOptions = {}): Promise<RedisTestServer> {
  const bin = redisServerBinary();
  const owned = options.dir === undefined;
  const dir = options.dir ?? (await makeTempDir('dris-redis-'));
  const persistence = options.durable === true ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
  const auth = options.password === undefined ? [] : ['--requirepass', options.password];
  let args: string[] = [];
  let current: ChildProcess | null = null;
  let stopped = false;
  const removeDir = async (): Promise<void> => {
    if (owned) await removeTempDir(dir);
  };
  const launch = async (): Promise<void> => {
    current = (await spawnUntil(bin, args, 'Ready to accept connections', 30_000)).child;
  };
  const port = await onFreePort(async (p) => {
    args = ['--port', String(p), '--bind', '127.0.0.1', '--save', '', ...persistence, ...auth, '--dir', dir, '--protected-mode', 'yes'];
    await launch();
    return p;
  }).catch(async (err: unknown) => {
    await removeDir();
    throw err;
  });
  const kill = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<void> => {
    const child = current;
    current = null;
    if (child !== null) await terminate(child, signal);
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    kill,
    async restart() {
      if (stopped) throw new Error('server stopped');
      await kill('SIGTERM');
      await launch();
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await kill('SIGTERM');
      await removeDir();
    },
  };
}
