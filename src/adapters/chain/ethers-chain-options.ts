import type { AnchorReceipt } from '../../domain/pipeline/ports.js';
import type { ChainConnectionOptions } from './chain-runtime.js';
import type { TxSubmission } from './tx-sender.js';

/** What EthersChain (ethers-chain.ts) is opened with, and what it reads back from the contract's events. */

export interface EthersChainOptions extends ChainConnectionOptions {
  /** The DrisAnchor contract; without it, deployIfMissing must be set. */
  readonly contractAddress?: string;
  /**
   * Deploy the contract when no address is given or no code is at it (the embedded chain's first
   * start, or its state lost). The new address is `deployment` on the result: persist it.
   */
  readonly deployIfMissing?: boolean;
  /** Block the contract was deployed in; the lower bound of event searches. Default 0. */
  readonly deployBlock?: number;
  /** Most blocks one eth_getLogs call covers (fewer once the provider refuses a page). Default 10 000. */
  readonly logBlockRange?: number;
  /** Anchors waiting to be sent behind the one being sent; beyond it anchor() answers 'overloaded'. Default 16. */
  readonly maxQueued?: number;
  /** Time allowed to check(). Default 2 s. */
  readonly checkTimeoutMs?: number;
  /**
   * The RPC URL info() reports for independent checks. Default: rpcUrl when it is a loopback
   * node, else its origin only, since provider URLs often carry an API key in the path.
   */
  readonly publicRpcUrl?: string;
  /** Explorer link templates with `{address}` and `{tx}` placeholders. */
  readonly explorerAddressUrl?: string;
  readonly explorerTxUrl?: string;
  /** Awaited before every broadcast (first version and replacements) with its hash. */
  readonly onTransaction?: (submission: TxSubmission) => void | Promise<void>;
}

/** An anchor found from its Anchored event. */
export interface AnchorEvent extends AnchorReceipt {
  readonly batchSeq: number;
  readonly merkleRoot: string;
  readonly batchId: string;
  readonly manifestCid: string;
  readonly recordCount: number;
}
