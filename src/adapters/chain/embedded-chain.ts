import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger } from '../../util/logger.js';
import { ANVIL_DEFAULT_CHAIN_ID, ANVIL_DEV_ANCHORER_KEY, AnvilNode } from './anvil-node.js';
import { EthersChain, type EthersChainOptions } from './ethers-chain.js';

/**
 * The embedded default: anvil under `<dataDir>/anvil/`, the contract deployed on first start and
 * its address kept in `<dataDir>/chain.json`. If anvil's state is lost (all of it, or a deployment
 * not yet dumped) the contract is deployed again and chain.json rewritten; reconciliation then
 * finds every anchor missing and sends them again.
 */

export interface ChainRecord {
  readonly chainId: number;
  readonly contractAddress: string;
  readonly deployTxHash: string;
  readonly deployBlock: number;
  readonly anchorer: string;
}

export interface EmbeddedChainOptions
  extends Omit<EthersChainOptions, 'rpcUrl' | 'chainId' | 'signer' | 'contractAddress' | 'deployIfMissing' | 'deployBlock' | 'publicRpcUrl'> {
  readonly dataDir: string;
  /** Default 31337. */
  readonly chainId?: number;
  /** Loopback port of anvil; a free one when unset. */
  readonly port?: number;
  /** Seconds between state dumps (what a SIGKILL of anvil can lose). Default 1. */
  readonly stateIntervalSec?: number;
  readonly binaryPath?: string;
}

export interface EmbeddedChain {
  readonly node: AnvilNode;
  readonly chain: EthersChain;
  /** `<dataDir>/chain.json`. */
  readonly recordFile: string;
  /** Closes the adapter, then stops anvil with SIGTERM (it dumps its state). */
  close(): Promise<void>;
}

export async function readChainRecord(file: string): Promise<ChainRecord | null> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new DrisError('config_invalid', `cannot read ${file}`, { cause: err });
  }
  try {
    const r = JSON.parse(text) as Partial<ChainRecord>;
    if (typeof r.chainId !== 'number' || typeof r.contractAddress !== 'string') throw new Error('fields missing');
    return {
      chainId: r.chainId,
      contractAddress: r.contractAddress,
      deployTxHash: r.deployTxHash ?? '',
      deployBlock: r.deployBlock ?? 0,
      anchorer: r.anchorer ?? '',
    };
  } catch (err) {
    throw new DrisError('config_invalid', `${file} is not a chain record`, { cause: err });
  }
}

/** Written aside, fsynced, then renamed: a crash leaves the old record or the new one. */
export async function writeChainRecord(file: string, record: ChainRecord): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  const handle = await open(tmp, 'w', 0o644);
  try {
    await handle.writeFile(`${JSON.stringify(record, null, 2)}\n`);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(tmp, file);
}

export async function startEmbeddedChain(options: EmbeddedChainOptions): Promise<EmbeddedChain> {
  const log = options.logger ?? componentLogger('chain');
  const chainId = options.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
  const recordFile = path.join(options.dataDir, 'chain.json');
  const record = await readChainRecord(recordFile);
  if (record !== null && record.chainId !== chainId) {
    throw new DrisError('config_invalid', `${recordFile} is for chain id ${record.chainId}, the configuration says ${chainId}`);
  }
  const node = new AnvilNode({
    stateDir: path.join(options.dataDir, 'anvil'),
    chainId,
    logger: options.logger ?? componentLogger('anvil'),
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.stateIntervalSec === undefined ? {} : { stateIntervalSec: options.stateIntervalSec }),
    ...(options.binaryPath === undefined ? {} : { binaryPath: options.binaryPath }),
  });
  await node.start();
  try {
    const chain = await EthersChain.connect({
      pollIntervalMs: 100,
      unreachableAfterMs: 10_000,
      ...options,
      rpcUrl: node.rpcUrl,
      chainId,
      signer: { privateKey: ANVIL_DEV_ANCHORER_KEY },
      deployIfMissing: true,
      ...(record === null ? {} : { contractAddress: record.contractAddress, deployBlock: record.deployBlock }),
    });
    const d = chain.deployment;
    if (d !== null) {
      await writeChainRecord(recordFile, { chainId, contractAddress: d.address, deployTxHash: d.txHash, deployBlock: d.blockNumber, anchorer: d.anchorer });
      log.info({ contractAddress: d.address, recordFile }, 'embedded chain: contract address recorded');
    }
    return {
      node,
      chain,
      recordFile,
      async close() {
        await chain.close();
        await node.stop();
      },
    };
  } catch (err) {
    await node.stop();
    throw err;
  }
}
