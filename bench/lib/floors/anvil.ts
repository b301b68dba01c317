import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Wallet } from 'ethers';
import { AnvilNode, ANVIL_DEV_PRIVATE_KEYS } from '../../../src/adapters/chain/anvil-node.js';
import { componentLogger } from '../../../src/util/logger.js';

/**
 * The anchoring floor: the transactions per second a fresh anvil (the embedded chain's binary,
 * mining each transaction as it arrives) accepts and mines, measured with plain value transfers
 * signed beforehand and sent raw, 16 in flight. One anchor transaction carries one batch, so the
 * chain alone cannot anchor more than this rate times the batch size.
 */

export interface AnvilFloor {
  readonly txPerSec: number;
  /** Mined, of `sent`. */
  readonly transactions: number;
  readonly sent: number;
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }), signal: AbortSignal.timeout(30_000) });
  const body = (await res.json()) as { result?: T; error?: { message?: string } };
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.message ?? 'error'}`);
  return body.result as T;
}

/**
 * Measures on `target` when given (the local fleet's own anvil, from a dev account the anchorer
 * does not use), else on a fresh anvil of its own.
 */
export async function anvilFloor(seconds: number, target?: { readonly rpcUrl: string; readonly chainId: number }): Promise<AnvilFloor> {
  if (target !== undefined) return measureTransfers(target.rpcUrl, target.chainId, seconds);
  const dir = await mkdtemp(path.join(tmpdir(), 'dris-floor-anvil-'));
  const node = new AnvilNode({ stateDir: dir, logger: componentLogger('bench-anvil-floor') });
  try {
    await node.start();
    return await measureTransfers(node.rpcUrl, node.chainId, seconds);
  } finally {
    await node.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

async function measureTransfers(rpcUrl: string, chainId: number, seconds: number): Promise<AnvilFloor> {
  const wallet = new Wallet(ANVIL_DEV_PRIVATE_KEYS[1]);
  const first = Number(BigInt(await rpc<string>(rpcUrl, 'eth_getTransactionCount', [wallet.address, 'pending'])));
  // Signed beforehand (about 2 ms each), so signing is not part of the measurement; the run ends
  // at `seconds` or when they are all mined, whichever comes first, over hundreds of transactions.
  const count = Math.min(3000, Math.max(300, Math.ceil(seconds * 300)));
  const signed: string[] = [];
  for (let nonce = first; nonce < first + count; nonce++) {
    signed.push(
      await wallet.signTransaction({ type: 2, chainId, nonce, to: '0x000000000000000000000000000000000000dEaD', value: 1n, gasLimit: 21_000n, maxFeePerGas: 100_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n }),
    );
  }
  let next = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  const lane = async (): Promise<void> => {
    while (next < signed.length && performance.now() < end) {
      const tx = signed[next++] as string;
      await rpc(rpcUrl, 'eth_sendRawTransaction', [tx]);
    }
  };
  await Promise.all(Array.from({ length: 16 }, lane));
  // Mined means counted in the sender's nonce at the latest block. The rate runs to the last
  // transaction seen mined: waiting out the deadline for one that never is would divide the
  // transactions by half a minute (runs that printed 7-12 tx/s where anvil mined 600-800).
  const deadline = Date.now() + 30_000;
  let mined = 0;
  let minedAt = performance.now();
  while (Date.now() < deadline) {
    const now = Number(BigInt(await rpc<string>(rpcUrl, 'eth_getTransactionCount', [wallet.address, 'latest']))) - first;
    if (now > mined) {
      mined = now;
      minedAt = performance.now();
    }
    if (mined >= next || performance.now() - minedAt > STALLED_AFTER_MS) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  if (mined === 0) throw new Error(`anvil floor: none of ${next} transactions mined`);
  const elapsed = (minedAt - start) / 1000;
  return { txPerSec: Math.round((10 * mined) / elapsed) / 10, transactions: mined, sent: next };
}

/** No transaction mined for this long: the rest never will be (the floor counts those mined). */
const STALLED_AFTER_MS = 2_000;
