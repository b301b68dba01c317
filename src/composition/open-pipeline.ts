import path from 'node:path';
import { anchorerKeySource, type Config } from '../config/config.js';
import type { Chain, Pinner } from '../domain/pipeline/ports.js';
import type { ChainReader } from '../domain/verification/ports.js';
import type { GatewayContent } from '../http/services.js';
import { definedOnly } from '../util/defined.js';
import type { Logger } from '../util/logger.js';

/** What the anchorer role publishes to: IPFS and the chain, with the embedded node's blocks for the gateway. */
export interface Pipeline {
  readonly pinner: Pinner;
  readonly chain: Chain;
  /** The embedded IPFS node's blocks, for the gateway route; null with Kubo. */
  readonly gateway: GatewayContent | null;
  readonly adapters: { readonly ipfs: string; readonly chain: string };
  close(): Promise<void>;
}

/** Kubo when IPFS_API_URL is set, else the embedded blockstore, whose gateway this service serves. */
async function openPinner(cfg: Config, root: Logger): Promise<{ pinner: Pinner; gateway: GatewayContent | null }> {
  if (cfg.ipfsApiUrl !== undefined) {
    const { KuboPinner } = await import('../adapters/ipfs/kubo-pinner.js');
    return { pinner: new KuboPinner({ url: cfg.ipfsApiUrl, logger: root.child({ component: 'ipfs-kubo' }) }), gateway: null };
  }
  const { EmbeddedPinner } = await import('../adapters/ipfs/embedded-pinner.js');
  const embedded = await EmbeddedPinner.open({ directory: path.join(cfg.dataDir, 'ipfs'), logger: root.child({ component: 'ipfs-embedded' }) });
  return { pinner: embedded, gateway: embedded };
}

/** An external node when EVM_RPC_URL is set, else anvil under the data directory. */
async function openChain(cfg: Config, root: Logger): Promise<{ chain: Chain; close: () => Promise<void> }> {
  const c = cfg.chain;
  const common = {
    confirmations: c.confirmations,
    replaceAfterMs: c.replaceAfterMs,
    feeBumpPercent: c.feeBumpPercent,
    minPriorityFeeWei: c.minPriorityFeeWei,
    txTimeoutMs: c.txTimeoutMs,
    logBlockRange: c.logBlockRange,
    logger: root.child({ component: 'chain' }),
    ...definedOnly({ explorerAddressUrl: c.explorerAddressUrl, explorerTxUrl: c.explorerTxUrl }),
  };
  if (c.rpcUrl !== undefined) {
    const { EthersChain } = await import('../adapters/chain/ethers-chain.js');
    const chain = await EthersChain.connect({
      ...common,
      rpcUrl: c.rpcUrl,
      chainId: c.chainId ?? 31337,
      signer: anchorerKeySource(c),
      deployBlock: c.deployBlock,
      ...definedOnly({ contractAddress: c.contractAddress, publicRpcUrl: c.publicRpcUrl }),
    });
    return { chain, close: () => chain.close() };
  }
  const { startEmbeddedChain } = await import('../adapters/chain/embedded-chain.js');
  const embedded = await startEmbeddedChain({
    ...common,
    dataDir: cfg.dataDir,
    stateIntervalSec: c.anvilStateIntervalSec,
    ...definedOnly({ chainId: c.chainId, port: c.anvilPort, binaryPath: c.anvilBin }),
  });
  return { chain: embedded.chain, close: () => embedded.close() };
}

/** IPFS and the chain: embedded (blockstore + anvil under DRIS_DATA_DIR) unless URLs are configured. */
export async function openPipeline(cfg: Config, root: Logger): Promise<Pipeline> {
  const { pinner, gateway } = await openPinner(cfg, root);
  let chain: { chain: Chain; close: () => Promise<void> };
  try {
    chain = await openChain(cfg, root);
  } catch (err) {
    await pinner.close();
    throw err;
  }
  return {
    pinner,
    chain: chain.chain,
    gateway,
    adapters: { ipfs: cfg.ipfsApiUrl === undefined ? 'embedded' : 'kubo', chain: cfg.chain.rpcUrl === undefined ? 'embedded-anvil' : 'json-rpc' },
    close: async () => {
      await chain.close();
      await pinner.close();
    },
  };
}

/**
 * Verification reads the chain itself, with no key: through the anchorer's node when this process
 * anchors, else through EVM_RPC_URL and DRIS_CONTRACT_ADDRESS when both are configured.
 */
export async function openChainReader(
  cfg: Config,
  info: { rpcUrl: string; contractAddress: string; chainId: number; deployBlock?: number } | undefined,
  log: Logger,
): Promise<ChainReader | null> {
  const rpcUrl = info?.rpcUrl ?? cfg.chain.rpcUrl;
  const contractAddress = info?.contractAddress ?? cfg.chain.contractAddress;
  if (rpcUrl === undefined || contractAddress === undefined) {
    log.warn('verification has no chain access in this process (set EVM_RPC_URL and DRIS_CONTRACT_ADDRESS)');
    return null;
  }
  const { AnchorReader } = await import('../adapters/chain/anchor-reader.js');
  const expectedChainId = info?.chainId ?? cfg.chain.chainId;
  return AnchorReader.connect({
    rpcUrl,
    contractAddress,
    timeoutMs: 5_000,
    fromBlock: info?.deployBlock ?? cfg.chain.deployBlock,
    maxBlockRange: cfg.chain.logBlockRange,
    ...definedOnly({ expectedChainId }),
  });
}

/** An API process without the anchorer role reads manifests through Kubo when configured. */
export async function openVerifierPinner(cfg: Config, root: Logger): Promise<Pinner | null> {
  if (cfg.ipfsApiUrl === undefined) return null;
  const { KuboPinner } = await import('../adapters/ipfs/kubo-pinner.js');
  return new KuboPinner({ url: cfg.ipfsApiUrl, logger: root.child({ component: 'ipfs-kubo' }) });
}
