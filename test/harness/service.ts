import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { track } from './servers.js';

/**
 * Starts the real service (the compiled CLI, `dris serve`) as a child process with its own data
 * directory and port, as an operator would, and talks to it over HTTP only.
 */

const here = path.dirname(fileURLToPath(import.meta.url));
/** dist*\/test/harness -> repository root */
export const repoRoot = path.resolve(here, '..', '..', '..');
/** The CLI of the same build as this harness, so a build into another out dir tests itself. */
export const cliPath = path.resolve(here, '..', '..', 'src', 'cli', 'dris.js');


export interface ServiceOptions {
  readonly env?: Readonly<Record<string, string>>;
  /** Reuse a data directory (restart after a crash). */
  readonly dataDir?: string;
  /** Pin the service to these CPUs with taskset (benchmarks). */
  readonly pinCpu?: string | undefined;
  /** A command the service runs under (e.g. strace with fault injection); its last argument is followed by node. */
  readonly wrap?: readonly string[];
  /** Sees every JSON log line as it arrives, with the time it arrived (ms since the epoch). */
  readonly onLog?: (rec: Readonly<Record<string, unknown>>, receivedAtMs: number) => void;
}

export interface ServiceHandle {
  readonly url: string;
  readonly port: number;
  /** Base URL of the administration listener (keys, retrieval policies, detailed health). */
  readonly adminUrl: string;
  readonly adminPort: number;
  /** Base URL of the ops listener (/metrics, /livez, /readyz), whatever the roles. */
  readonly opsUrl: string;
  readonly opsPort: number;
  /** Process id of the service (for /proc readings). */
  readonly pid: number;
  readonly dataDir: string;
  readonly env: Readonly<Record<string, string>>;
  /** The key a first start writes (empty when keys existed already, as on a second api process of a fleet). */
  readonly bootstrapKey: string;
  readonly adminToken: string;
  readonly logs: string[];
  /** Settles when the child (the wrapper, when there is one) exits. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM and wait. */
  stop(): Promise<void>;
  /** Sends a signal (SIGKILL by default) and waits for the exit. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Stops (if running) and removes the data directory. */
  dispose(): Promise<void>;
}

function waitExit(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

export async function startService(options: ServiceOptions = {}): Promise<ServiceHandle> {
  const dataDir = options.dataDir ?? (await mkdtemp(path.join(tmpdir(), 'dris-svc-')));
  const env: Record<string, string> = {
    PORT: '0',
    HOST: '127.0.0.1',
    DRIS_ADMIN_PORT: '0',
    // A free port each: tests (and engineers) run many services on one machine.
    DRIS_OPS_PORT: '0',
    DRIS_DATA_DIR: dataDir,
    DRIS_LOG_LEVEL: 'info',
    ...(options.env ?? {}),
  };
  const childEnv: NodeJS.ProcessEnv = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', ...env };
  // Node flags for the service alone, space-separated (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile a bench run).
  const nodeArgs = (process.env['DRIS_SERVICE_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');
  // Another build's CLI (an absolute path to its dist/src/cli/dris.js) to measure it with this build's bench: an A/B on one generator.
  const cli = process.env['DRIS_SERVICE_CLI'] ?? cliPath;
  const argv = [process.execPath, ...nodeArgs, cli, 'serve'];
  const cmd = [...(options.wrap ?? []), ...(options.pinCpu === undefined ? argv : ['taskset', '-c', options.pinCpu, ...argv])];
  const child = spawn(cmd[0] as string, cmd.slice(1), { env: childEnv, stdio: ['ignore', 'pipe', 'pipe'] });
  // Killed when the test process exits or is ended by a signal, with the servers.
  track(child);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const logs: string[] = [];
  // The administration listener is bound (and logged) before the public one. A process without
  // the api role has neither: it is up at its `started` line.
  const roles = (env['DRIS_ROLES'] ?? 'api').split(',').map((r) => r.trim());
  const listens = roles.includes('api');
  let adminPort: number | undefined;
  let opsPort: number | undefined;
  const started = new Promise<number>((resolve, reject) => {
    let buf = '';
    const timer = setTimeout(() => {
      // Not left running behind the failed start.
      child.kill('SIGKILL');
      reject(new Error(`service did not start within 60 s:\n${logs.join('\n')}`));
    }, 60_000);
    const onLine = (line: string): void => {
      logs.push(line);
      if (logs.length > 5000) logs.shift();
      try {
        const rec = JSON.parse(line) as { msg?: string; port?: number };
        options.onLog?.(rec, Date.now());
        if (!listens && rec.msg === 'started') {
          clearTimeout(timer);
          resolve(0);
        }
        if (rec.msg === 'admin listening' && typeof rec.port === 'number') adminPort = rec.port;
        if (rec.msg === 'ops listening' && typeof rec.port === 'number') opsPort = rec.port;
        if (listens && rec.msg === 'listening' && typeof rec.port === 'number') {
          clearTimeout(timer);
          if (adminPort === undefined) reject(new Error(`the service listens without an administration listener:\n${logs.join('\n')}`));
          else resolve(rec.port);
        }
      } catch {
        // not a log line
      }
    };
    child.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    child.stderr?.on('data', (d: Buffer) => logs.push(d.toString()));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`service exited (${code ?? signal}) before listening:\n${logs.join('\n')}`));
    });
  });
  let port: number;
  try {
    port = await started;
  } catch (err) {
    // A start that failed (often on purpose: a refused configuration) leaves no process and no
    // directory behind that the harness made; one the caller gave is the caller's.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await waitExit(child);
    if (options.dataDir === undefined) await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const bootstrap = listens ? await readBootstrap(dataDir) : { apiKey: '' };
  const adminToken = env['DRIS_ADMIN_TOKEN'] ?? (listens ? (await readFile(path.join(dataDir, 'admin-token'), 'utf8')).trim() : '');
  const kill = async (signal: NodeJS.Signals = 'SIGKILL'): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    await waitExit(child);
  };
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    adminUrl: `http://127.0.0.1:${adminPort ?? 0}`,
    adminPort: adminPort ?? 0,
    opsUrl: `http://127.0.0.1:${opsPort ?? 0}`,
    opsPort: opsPort ?? 0,
    pid: child.pid ?? 0,
    dataDir,
    env,
    bootstrapKey: bootstrap.apiKey,
    adminToken,
    logs,
    exited,
    stop: () => kill('SIGTERM'),
    kill,
    async dispose() {
      await kill('SIGTERM');
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** The bootstrap key file; a process that found keys in the index writes none. */
async function readBootstrap(dataDir: string): Promise<{ apiKey: string }> {
  try {
    return JSON.parse(await readFile(path.join(dataDir, 'bootstrap-credentials.json'), 'utf8')) as { apiKey: string };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { apiKey: '' };
    throw err;
  }
}

export interface ApiAnswer<T = unknown> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: T;
  readonly text: string;
}

export async function request<T = Record<string, unknown>>(
  svc: { url: string },
  method: string,
  route: string,
  opts: { key?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<ApiAnswer<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key !== undefined) headers['x-api-key'] = opts.key;
  let body: string | Buffer | undefined;
  if (opts.raw !== undefined) body = opts.raw;
  else if (opts.body !== undefined) body = JSON.stringify(opts.body);
  if (body !== undefined && headers['content-type'] === undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${svc.url}${route}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

export interface CreatedKey {
  readonly apiKey: string;
  readonly key: { keyId: string; tenantId: string; clientId: string; level: string };
}

export async function createKey(
  svc: Pick<ServiceHandle, 'adminUrl' | 'adminToken'>,
  input: { tenantId: string; clientId: string; level?: string; alsoTenants?: string[]; expiresAt?: string },
): Promise<CreatedKey> {
  const res = await adminRequest<CreatedKey>(svc, 'POST', '/admin/v1/keys', { body: input });
  if (res.status !== 201) throw new Error(`key creation failed: ${res.status} ${res.text}`);
  return res.body;
}

/** A request to the administration listener with the admin token. */
export function adminRequest<T = Record<string, unknown>>(
  svc: Pick<ServiceHandle, 'adminUrl' | 'adminToken'>,
  method: string,
  route: string,
  opts: { body?: unknown; headers?: Record<string, string> } = {},
): Promise<ApiAnswer<T>> {
  return request<T>({ url: svc.adminUrl }, method, route, { ...opts, headers: { authorization: `Bearer ${svc.adminToken}`, ...(opts.headers ?? {}) } });
}

/** Polls until `check` returns a value that is not undefined, or fails after timeoutMs. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last instanceof Error ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
