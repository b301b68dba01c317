import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AnvilNode, type AnvilNodeOptions } from '../../src/adapters/chain/anvil-node.js';
import { defaultArtifactPath } from '../../src/adapters/chain/contract-artifact.js';

/**
 * A real anvil per test: a temp state directory and a free loopback port of its own. Callers stop
 * it with t.teardown; nodes and directories still there when the process exits (or is ended by a
 * signal, as tap does with a hung test) are removed.
 */

const nodes = new Set<AnvilNode>();
const dirs = new Set<string>();
let hooksInstalled = false;

function cleanupNow(): void {
  for (const n of nodes) {
    const pid = n.pid;
    if (pid !== undefined && n.running) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.once('exit', cleanupNow);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      cleanupNow();
      process.kill(process.pid, signal);
    });
  }
}

/** The repository root, from dist*\/test/harness or test/harness. */
function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'contracts'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('repository root not found above the test harness');
}

/** Compiles the contract when its artifact is missing (a tsc-only build does not run solc). */
export function ensureContractArtifact(): string {
  const existing = defaultArtifactPath();
  if (existing !== null) return existing;
  const root = repoRoot();
  execFileSync(process.execPath, [path.join(root, 'scripts', 'compile-contracts.mjs')], { stdio: 'inherit' });
  const built = defaultArtifactPath();
  if (built === null) throw new Error('the contract artifact is still missing after compiling');
  return built;
}

export interface TestAnvil {
  readonly node: AnvilNode;
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly stateDir: string;
  /** JSON-RPC call to the node (anvil_*, evm_* control methods included). */
  rpc<T = unknown>(method: string, params?: readonly unknown[]): Promise<T>;
  /** Stops (SIGTERM: state dumped) and removes the directory; idempotent. */
  stop(): Promise<void>;
}

export type StartAnvilOptions = Omit<AnvilNodeOptions, 'stateDir' | 'logger'>;

export async function startAnvil(options: StartAnvilOptions = {}): Promise<TestAnvil> {
  installHooks();
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-anvil-'));
  dirs.add(dir);
  const node = new AnvilNode({ ...options, stateDir: dir });
  nodes.add(node);
  try {
    await node.start();
  } catch (err) {
    nodes.delete(node);
    await rm(dir, { recursive: true, force: true });
    dirs.delete(dir);
    throw err;
  }
  let stopped = false;
  const rpcUrl = node.rpcUrl;
  return {
    node,
    rpcUrl,
    chainId: node.chainId,
    stateDir: dir,
    async rpc<T>(method: string, params: readonly unknown[] = []): Promise<T> {
      const res = await fetch(rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
      });
      const body = (await res.json()) as { result?: T; error?: { message?: string } };
      if (body.error !== undefined) throw new Error(`${method}: ${body.error.message ?? 'error'}`);
      return body.result as T;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await node.stop();
      nodes.delete(node);
      await rm(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}

/** Registers a node started elsewhere (the embedded chain) for the exit clean-up. */
export function trackNode(node: AnvilNode): void {
  installHooks();
  nodes.add(node);
}

/** A temp directory removed on process exit, for tests that run their own node (embedded chain). */
export async function tempDir(prefix = 'dris-chain-'): Promise<{ readonly dir: string; remove(): Promise<void> }> {
  installHooks();
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  dirs.add(dir);
  return {
    dir,
    async remove() {
      await rm(dir, { recursive: true, force: true });
      dirs.delete(dir);
    },
  };
}
