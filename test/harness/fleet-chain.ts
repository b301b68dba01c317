import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { ANVIL_DEV_ANCHORER_KEY, AnvilNode } from '../../src/adapters/chain/anvil-node.js';
import { ensureContractArtifact, trackNode } from './anvil.js';
import { signalsLeftToCaller } from './servers.js';
import { cliPath } from './service.js';

/**
 * The fleet's chain: anvil as a process of its own (state dumped every second, as the embedded
 * chain does, so a SIGKILL loses at most that: the anchorers' reconciliation re-anchors it), with
 * the anchor contract deployed by `dris chain deploy`, the way an operator deploys it.
 */

export interface FleetChain {
  readonly node: AnvilNode;
  readonly rpcUrl: string;
  readonly chainId: number;
  readonly contractAddress: string;
  readonly deployBlock: number;
  /** The anchorer's signing key (anvil's first dev account: public, local chains only). */
  readonly anchorerKey: string;
}

interface Deployment {
  readonly contractAddress: string;
  readonly blockNumber: number;
}

const execFileP = promisify(execFile);

async function rpc<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    signal: AbortSignal.timeout(5000),
  });
  const body = (await res.json()) as { result?: T; error?: { message?: string } };
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.message ?? 'error'}`);
  return body.result as T;
}

async function deploy(rpcUrl: string, chainId: number): Promise<Deployment> {
  const env = { PATH: process.env['PATH'] ?? '', HOME: process.env['HOME'] ?? '', EVM_RPC_URL: rpcUrl, DRIS_CHAIN_ID: String(chainId), DRIS_ANCHORER_KEY: ANVIL_DEV_ANCHORER_KEY, DRIS_LOG_LEVEL: 'warn' };
  const { stdout } = await execFileP(process.execPath, [cliPath, 'chain', 'deploy'], { env, timeout: 60_000 });
  const printed = JSON.parse(stdout) as { contractAddress: string; blockNumber: number };
  return { contractAddress: printed.contractAddress, blockNumber: printed.blockNumber };
}

/** Waits for anvil's next state dump after `sinceMs`, so that a SIGKILL from now on keeps the contract. */
async function waitStateDump(stateFile: string, sinceMs: number, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const m = await stat(stateFile).then((s) => s.mtimeMs, () => 0);
    if (m > sinceMs) return;
    await sleep(100);
  }
  throw new Error(`anvil did not dump its state to ${stateFile} within ${timeoutMs} ms`);
}

/**
 * Starts anvil on `dir` and deploys the contract, or finds the one deployed by an earlier run of
 * the same directory (deployment.json) when the chain kept it.
 */
export async function startFleetChain(dir: string, logFile: string, log: (line: string) => void): Promise<FleetChain> {
  ensureContractArtifact();
  // The node supervisor's own lines (started, exited) go to the fleet's logs, not the terminal.
  const logger = pino({ base: { component: 'anvil' } }, pino.destination({ dest: logFile, sync: true, mkdir: true }));
  const node = new AnvilNode({ stateDir: dir, stateIntervalSec: 1, stopGraceMs: 10_000, logger });
  // Tests: killed on a signal with the rest; the local fleet stops it itself, in order.
  if (!signalsLeftToCaller()) trackNode(node);
  await node.start();
  const record = path.join(dir, 'deployment.json');
  let deployment: Deployment | null = null;
  if (existsSync(record)) {
    const earlier = JSON.parse(await readFile(record, 'utf8')) as Deployment;
    const code = await rpc<string>(node.rpcUrl, 'eth_getCode', [earlier.contractAddress, 'latest']);
    if (code !== '0x') deployment = earlier;
    else log(`the contract ${earlier.contractAddress} is no longer on the chain (state lost): deploying a new one`);
  }
  if (deployment === null) {
    const before = Date.now();
    deployment = await deploy(node.rpcUrl, node.chainId);
    await writeFile(record, `${JSON.stringify(deployment, null, 2)}\n`, { mode: 0o600 });
    if (node.stateFile !== null) await waitStateDump(node.stateFile, before);
  }
  return { node, rpcUrl: node.rpcUrl, chainId: node.chainId, contractAddress: deployment.contractAddress, deployBlock: deployment.blockNumber, anchorerKey: ANVIL_DEV_ANCHORER_KEY };
}
