import path from 'node:path';
import { readFile } from 'node:fs/promises';
import { anchorerKeySource, type Config } from '../config/config.js';
import type { ToolConfig } from '../config/cli-config.js';
import { DrisError } from '../errors/dris-error.js';
import type { VerifyDeps } from '../app/offline-verify/types.js';
import type { LogReport, RepairOutcome } from '../adapters/storage/segment-repair.js';
import { loadBackend } from './open-hashing.js';
import { openStorage } from './open-index.js';

/**
 * The CLI's other commands get their dependencies here, from the same composition root as
 * `dris serve` (src/main.ts re-exports this module): the CLI itself imports no adapter. Adapters
 * are loaded on first use, so a command loads only what it runs. The CLI makes the root logger
 * from configuration before it runs one (rootLoggerOf).
 */

export type { LogReport, RepairOutcome };

/** `dris migrate`: creates or upgrades the hot index schema. */
export async function migrateIndex(cfg: Config): Promise<void> {
  const { storage } = await openStorage(cfg);
  try {
    await storage.database.migrate();
  } finally {
    await storage.close();
  }
}

export interface Deployment {
  readonly contractAddress: string;
  readonly chainId: number;
  readonly txHash: string;
  readonly blockNumber: number;
  readonly owner: string;
  readonly anchorer: string;
}

/** `dris chain deploy`: the anchor contract on the external chain of the configuration. */
export async function deployContract(cfg: Config, anchorerAddress?: string): Promise<Deployment> {
  const c = cfg.chain;
  if (c.rpcUrl === undefined) {
    throw new DrisError('config_invalid', 'dris chain deploy needs EVM_RPC_URL (the embedded chain deploys its contract on first start)');
  }
  const { deployAnchorContract } = await import('../adapters/chain/ethers-chain.js');
  const d = await deployAnchorContract({
    rpcUrl: c.rpcUrl,
    chainId: c.chainId ?? 31337,
    signer: anchorerKeySource(c),
    confirmations: c.confirmations,
    ...(anchorerAddress === undefined ? {} : { anchorerAddress }),
  });
  return { contractAddress: d.address, chainId: d.chainId, txHash: d.txHash, blockNumber: d.blockNumber, owner: d.deployer, anchorer: d.anchorer };
}

/** `dris queue check|repair`: the durable logs of a data directory, and its lock. */
export interface QueueMaintenance {
  findLogs(dataDir: string): string[];
  checkLog(dir: string): LogReport;
  repairLog(dir: string): Promise<RepairOutcome>;
  /** Takes the data directory's lock (the service must not run while its files are cut); returns its release. */
  lockDataDir(dataDir: string): () => void;
}

export async function queueMaintenance(): Promise<QueueMaintenance> {
  const { checkLog, findLogs, repairLog } = await import('../adapters/storage/segment-repair.js');
  const { ProcessLock } = await import('../adapters/process-lock.js');
  return {
    findLogs,
    checkLog,
    repairLog,
    lockDataDir: (dataDir) => {
      const lock = ProcessLock.acquire(path.join(dataDir, 'dris.lock'));
      return () => lock.release();
    },
  };
}

/** `dris verify`: a chain reader over JSON-RPC, a verifying gateway fetch, the configured hashing backend. */
export function offlineVerifyDeps(tool: ToolConfig): VerifyDeps {
  return {
    loadHashing: async () => (await loadBackend('auto', tool.nativeAddon)).backend,
    connectChain: async (options) => (await import('../adapters/chain/anchor-reader.js')).AnchorReader.connect(options),
    fetchManifest: async (gatewayUrl, cid, options) => (await import('../adapters/ipfs/gateway-fetcher.js')).fetchVerified(gatewayUrl, cid, options),
    readFile: (file) => readFile(file),
  };
}
