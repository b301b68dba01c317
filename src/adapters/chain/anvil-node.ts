import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { processAlive } from '../process-lock.js';

/**
 * The embedded chain: the real anvil binary shipped by `@foundry-rs/anvil`, run as a child process
 * on loopback. It is a local development chain: its accounts come from the well-known test
 * mnemonic, and its state is dumped to `<stateDir>/state.json` every `stateIntervalSec` seconds and
 * on SIGTERM, so a SIGKILL loses at most that interval (the caller reconciles on start).
 */

/** The mnemonic every anvil and hardhat node uses by default; its keys are public. */
export const ANVIL_DEV_MNEMONIC = 'test test test test test test test test test test test junk';

/**
 * Private keys of the first dev accounts of ANVIL_DEV_MNEMONIC (m/44'/60'/0'/0/i). Public test keys,
 * valid only on a local dev chain; still never logged.
 */
export const ANVIL_DEV_PRIVATE_KEYS = [
  '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80',
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
  '0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a',
] as const;

/** The embedded anchorer's key: the first dev account. */
export const ANVIL_DEV_ANCHORER_KEY: string = ANVIL_DEV_PRIVATE_KEYS[0];

export const ANVIL_DEFAULT_CHAIN_ID = 31337;

export interface AnvilNodeOptions {
  /** Directory of the persisted chain; without it the chain lives in memory only. */
  readonly stateDir?: string;
  /** Loopback port; a free one is picked on the first start (and kept for restarts) when unset or 0. */
  readonly port?: number;
  readonly chainId?: number;
  /** Seconds between state dumps; what a SIGKILL can lose. */
  readonly stateIntervalSec?: number;
  /** Seconds between blocks; unset mines one block per transaction as it arrives. */
  readonly blockTimeSec?: number;
  readonly accounts?: number;
  /** The anvil executable; resolved from node_modules when unset. */
  readonly binaryPath?: string;
  readonly startTimeoutMs?: number;
  /** Time a SIGTERM gets to dump the state and exit before SIGKILL. */
  readonly stopGraceMs?: number;
  readonly logger?: Logger;
  /**
   * Called when a node that had started exits without stop() or kill() (crashed, or killed from
   * outside): the embedded chain's supervisor restarts it.
   */
  readonly onUnexpectedExit?: (exit: { readonly code: number | null; readonly signal: NodeJS.Signals | null }) => void;
}

const PLATFORM_PACKAGES: Readonly<Record<string, string>> = {
  'linux-x64': '@foundry-rs/anvil-linux-amd64',
  'linux-arm64': '@foundry-rs/anvil-linux-arm64',
  'darwin-x64': '@foundry-rs/anvil-darwin-amd64',
  'darwin-arm64': '@foundry-rs/anvil-darwin-arm64',
  'win32-x64': '@foundry-rs/anvil-win32-amd64',
};

/**
 * Path of the anvil binary of the platform package `@foundry-rs/anvil` depends on. Resolved here,
 * not through the package's postinstall, which `npm ci --ignore-scripts` never runs.
 */
export function anvilBinaryPath(configured?: string): string {
  if (configured !== undefined && configured !== '') {
    if (!existsSync(configured)) throw new DrisError('config_invalid', `no anvil binary at ${configured}`);
    return configured;
  }
  const key = `${process.platform}-${process.arch}`;
  const pkg = PLATFORM_PACKAGES[key];
  if (pkg === undefined) throw new DrisError('config_invalid', `the embedded chain (anvil) has no build for ${key}; configure EVM_RPC_URL`);
  const require = createRequire(import.meta.url);
  const binary = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  let candidate: string | null = null;
  try {
    candidate = path.join(path.dirname(require.resolve(`${pkg}/package.json`)), 'bin', binary);
  } catch {
    candidate = null;
  }
  if (candidate === null || !existsSync(candidate)) {
    throw new DrisError(
      'config_invalid',
      `the anvil binary is missing: install ${pkg} (npm ci installs it as an optional dependency of @foundry-rs/anvil), configure its path, or configure EVM_RPC_URL`,
    );
  }
  return candidate;
}

/** A TCP port free on 127.0.0.1 at the time of the call. */
export function freeLoopbackPort(): Promise<number> {
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

const STATE_FILE = 'state.json';
const STATE_BACKUP = 'state.json.last-good';
const PID_FILE = 'anvil.pid';

export class AnvilNode {
  readonly chainId: number;
  private readonly log: Logger;
  private readonly options: AnvilNodeOptions;
  private child: ChildProcess | null = null;
  private portInUse: number;
  private stderrTail = '';
  private stopping = false;
  private readonly onProcessExit = (): void => {
    // Synchronous last resort when the parent exits without stop(): SIGTERM still lets anvil dump.
    this.child?.kill('SIGTERM');
  };

  constructor(options: AnvilNodeOptions = {}) {
    this.options = options;
    this.chainId = options.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
    this.portInUse = options.port ?? 0;
    this.log = options.logger ?? componentLogger('anvil');
    if (!Number.isSafeInteger(this.chainId) || this.chainId <= 0) throw new DrisError('config_invalid', 'anvil chain id must be a positive integer');
  }

  get port(): number {
    return this.portInUse;
  }

  get rpcUrl(): string {
    if (this.portInUse === 0) throw new DrisError('invalid_state', 'anvil has not been started');
    return `http://127.0.0.1:${this.portInUse}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** The state file when persisted. */
  get stateFile(): string | null {
    return this.options.stateDir === undefined ? null : path.join(this.options.stateDir, STATE_FILE);
  }

  /** Starts anvil and resolves once it answers eth_chainId with the configured chain id. */
  async start(): Promise<void> {
    if (this.running) return;
    const binary = anvilBinaryPath(this.options.binaryPath);
    const stateDir = this.options.stateDir;
    if (stateDir !== undefined) {
      await mkdir(stateDir, { recursive: true });
      await this.stopOrphan(stateDir);
      await this.prepareStateFile(stateDir);
    }
    if (this.portInUse === 0) this.portInUse = await freeLoopbackPort();

    const args = [
      '--quiet',
      '--host',
      '127.0.0.1',
      '--port',
      String(this.portInUse),
      '--chain-id',
      String(this.chainId),
      '--mnemonic',
      ANVIL_DEV_MNEMONIC,
      '--accounts',
      String(this.options.accounts ?? ANVIL_DEV_PRIVATE_KEYS.length),
    ];
    if (this.options.blockTimeSec !== undefined) args.push('--block-time', String(this.options.blockTimeSec));
    if (stateDir !== undefined) {
      args.push('--state', path.join(stateDir, STATE_FILE), '--state-interval', String(this.options.stateIntervalSec ?? 1));
    }

    this.stderrTail = '';
    this.stopping = false;
    const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    child.stderr?.on('data', (chunk: Buffer) => {
      // Bounded: the tail is for the error of a failed start.
      this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-8192);
    });
    let ready = false;
    child.once('exit', (code, signal) => {
      process.removeListener('exit', this.onProcessExit);
      // Only a node that was serving counts: a failed start is reported by start() itself.
      if (this.stopping || !ready || this.child !== child) return;
      this.log.error({ code, signal, pid: child.pid }, 'anvil exited unexpectedly');
      this.options.onUnexpectedExit?.({ code, signal });
    });
    process.once('exit', this.onProcessExit);

    try {
      await this.waitReady(child);
    } catch (err) {
      child.kill('SIGKILL');
      this.child = null;
      throw err;
    }
    ready = true;
    if (stateDir !== undefined && child.pid !== undefined) await writeFile(path.join(stateDir, PID_FILE), String(child.pid));
    this.log.info({ rpcUrl: this.rpcUrl, chainId: this.chainId, pid: child.pid, persisted: stateDir !== undefined }, 'anvil started');
  }

  /** SIGTERM (anvil dumps its state on the way out), then waits for the exit. */
  async stop(): Promise<void> {
    await this.kill('SIGTERM');
  }

  /** Sends a signal and waits for the exit; SIGKILL after the grace period. */
  async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (child === null) return;
    this.child = null;
    this.stopping = true;
    await terminate(child, signal, this.options.stopGraceMs ?? 15_000);
    const stateDir = this.options.stateDir;
    if (stateDir !== undefined) await rm(path.join(stateDir, PID_FILE), { force: true });
  }

  private async waitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + (this.options.startTimeoutMs ?? 20_000);
    const state: { exited: string | null } = { exited: null };
    child.once('exit', (code, signal) => {
      state.exited = `anvil exited (${code ?? signal}) during start-up`;
    });
    child.once('error', (err) => {
      state.exited = `anvil could not be started: ${err.message}`;
    });
    const url = `http://127.0.0.1:${this.portInUse}`;
    for (;;) {
      if (state.exited !== null) throw new DrisError('dependency_unavailable', `${state.exited}: ${this.stderrTail.trim()}`);
      if (Date.now() > deadline) throw new DrisError('timeout', `anvil did not answer on ${url}: ${this.stderrTail.trim()}`);
      const chainId = await rpcChainId(url);
      if (chainId !== null) {
        if (chainId !== this.chainId) throw new DrisError('config_invalid', `port ${this.portInUse} answers with chain id ${chainId}, not ${this.chainId}`);
        // A port taken by another process answers too; ours is the one still running.
        if (state.exited === null) return;
      }
      await sleep(25);
    }
  }

  /**
   * An anvil left running by a dris that was SIGKILLed still holds the state file (and maybe the
   * port): SIGTERM it, which also dumps its newer state, before a second one loads the file.
   */
  private async stopOrphan(stateDir: string): Promise<void> {
    const pidFile = path.join(stateDir, PID_FILE);
    let pid: number;
    try {
      pid = Number((await readFile(pidFile, 'utf8')).trim());
    } catch {
      return;
    }
    if (Number.isSafeInteger(pid) && pid > 0 && pid !== this.child?.pid && isOurAnvil(pid, path.join(stateDir, STATE_FILE))) {
      this.log.warn({ pid }, 'stopping an anvil left running on this state directory');
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const deadline = Date.now() + (this.options.stopGraceMs ?? 15_000);
      while (processAlive(pid) && Date.now() < deadline) await sleep(50);
      if (processAlive(pid)) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
    await rm(pidFile, { force: true });
  }

  /**
   * anvil writes its dump in place, so a SIGKILL during a write leaves a torn file it refuses to
   * load. Keep a copy of the last file that parsed, and fall back to it: the chain then lacks
   * what came after that copy, which reconciliation re-anchors.
   */
  private async prepareStateFile(stateDir: string): Promise<void> {
    const file = path.join(stateDir, STATE_FILE);
    const backup = path.join(stateDir, STATE_BACKUP);
    if (!existsSync(file)) return;
    if (parsesAsJson(file)) {
      const tmp = `${backup}.tmp`;
      await copyFile(file, tmp);
      await rename(tmp, backup);
      return;
    }
    const torn = `${file}.torn-${Date.now()}`;
    await rename(file, torn);
    if (existsSync(backup) && parsesAsJson(backup)) {
      await copyFile(backup, file);
      this.log.error({ torn }, 'anvil state file was torn; restored the last good copy, anchors after it will be reconciled');
    } else {
      this.log.error({ torn }, 'anvil state file was torn and no good copy exists; the chain starts empty');
    }
  }
}

function parsesAsJson(file: string): boolean {
  try {
    JSON.parse(readFileSync(file, 'utf8'));
    return true;
  } catch {
    return false;
  }
}

/** Only a process whose command line names this state file is ours to stop (pids are reused). */
function isOurAnvil(pid: number, stateFile: string): boolean {
  try {
    const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return cmdline.some((a) => path.basename(a).startsWith('anvil')) && cmdline.includes(stateFile);
  } catch {
    return false;
  }
}

async function rpcChainId(url: string): Promise<number | null> {
  try {
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
      signal: AbortSignal.timeout(1000),
    });
    const body = (await res.json()) as { result?: unknown };
    return typeof body.result === 'string' ? Number.parseInt(body.result, 16) : null;
  } catch {
    return null;
  }
}

function terminate(child: ChildProcess, signal: NodeJS.Signals, graceMs: number): Promise<void> {
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
