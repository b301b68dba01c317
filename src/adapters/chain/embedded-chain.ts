import { randomBytes } from 'node:crypto';
import { mkdir, open, readFile, rename } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DrisError } from '../../errors/dris-error.js';
import type { AnchorOptions, AnchorReceipt, AnchorRequest, Chain, ChainInfo, OnChainAnchor } from '../../domain/pipeline/ports.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { ANVIL_DEFAULT_CHAIN_ID, ANVIL_DEV_ANCHORER_KEY, AnvilNode } from './anvil-node.js';
import { EthersChain, type AnchorEvent, type Deployment, type EthersChainOptions } from './ethers-chain.js';

/**
 * The embedded default: anvil under `<dataDir>/anvil/`, the contract deployed on first start and
 * its address kept in `<dataDir>/chain.json`. If anvil's state is lost (all of it, or a deployment
 * not yet dumped) the contract is deployed again and chain.json rewritten; reconciliation then
 * finds every anchor missing and sends them again. anvil is supervised: if it exits unexpectedly
 * it is restarted on the same state and port, and the anchorer is told to reconcile.
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
  /** Restart anvil when it exits unexpectedly. Default true. */
  readonly supervise?: boolean;
}

export interface EmbeddedChain {
  readonly node: AnvilNode;
  /** The Chain port: delegates to the adapter of the node's current life (see SupervisedChain). */
  readonly chain: SupervisedChain;
  /** `<dataDir>/chain.json`. */
  readonly recordFile: string;
  /** Ends supervision, closes the adapter, then stops anvil with SIGTERM (it dumps its state). */
  close(): Promise<void>;
}

/**
 * The Chain port over the embedded node across its restarts. Each life of the node gets an
 * adapter of its own: a fresh nonce read from the restored state, and no anchor of the previous
 * life left waiting for a receipt the restored chain will never have (closing the old adapter
 * ends it with dependency_unavailable, and the anchorer retries it).
 */
export class SupervisedChain implements Chain {
  private current: EthersChain;
  private readonly listeners: (() => void)[] = [];

  constructor(
    initial: EthersChain,
    private readonly log: Logger,
  ) {
    this.current = initial;
    this.follow(initial);
  }

  /** Blocks lost within a life (found by its adapter) are a reset too; a life swapped out stays quiet. */
  private follow(adapter: EthersChain): void {
    adapter.onReset(() => {
      if (this.current === adapter) this.reset();
    });
  }

  /** Set when the adapter of the node's current life deployed the contract. */
  get deployment(): Deployment | null {
    return this.current.deployment;
  }

  get contractAddress(): string {
    return this.current.contractAddress;
  }

  /** Puts the adapter of a new life in place; returns the previous one for the caller to close. */
  swap(next: EthersChain): EthersChain {
    const previous = this.current;
    this.current = next;
    this.follow(next);
    return previous;
  }

  onReset(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Tells the listeners the node came back from its last dump. */
  reset(): void {
    for (const listener of this.listeners) {
      try {
        listener();
      } catch (err) {
        this.log.error({ err }, 'a chain reset listener failed');
      }
    }
  }

  info(): ChainInfo {
    return this.current.info();
  }

  lastSequence(): Promise<number> {
    return this.current.lastSequence();
  }

  anchor(request: AnchorRequest, options?: AnchorOptions): Promise<AnchorReceipt> {
    return this.current.anchor(request, options);
  }

  anchorOf(merkleRoot: string): Promise<OnChainAnchor | null> {
    return this.current.anchorOf(merkleRoot);
  }

  findAnchorEvent(merkleRoot: string, fromBlock?: number): Promise<AnchorEvent | null> {
    return this.current.findAnchorEvent(merkleRoot, fromBlock);
  }

  receiptOf(txHash: string): Promise<{ readonly blockNumber: number; readonly confirmations: number } | null> {
    return this.current.receiptOf(txHash);
  }

  headTimestampMs(): Promise<number> {
    return this.current.headTimestampMs();
  }

  check(): Promise<void> {
    return this.current.check();
  }

  close(): Promise<void> {
    return this.current.close();
  }
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

/** Restart delays of a node that keeps failing to come back: from the first to the cap, doubling. */
const RESTART_FIRST_DELAY_MS = 250;
const RESTART_MAX_DELAY_MS = 10_000;

export async function startEmbeddedChain(options: EmbeddedChainOptions): Promise<EmbeddedChain> {
  const log = options.logger ?? componentLogger('chain');
  const chainId = options.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
  const recordFile = path.join(options.dataDir, 'chain.json');
  const initialRecord = await readChainRecord(recordFile);
  if (initialRecord !== null && initialRecord.chainId !== chainId) {
    throw new DrisError('config_invalid', `${recordFile} is for chain id ${initialRecord.chainId}, the configuration says ${chainId}`);
  }
  const { supervise = true, stateIntervalSec, port, binaryPath, ...adapterOptions } = options;
  let supervisor: Supervisor | null = null;
  const node = new AnvilNode({
    stateDir: path.join(options.dataDir, 'anvil'),
    chainId,
    logger: options.logger ?? componentLogger('anvil'),
    ...(port === undefined ? {} : { port }),
    ...(stateIntervalSec === undefined ? {} : { stateIntervalSec }),
    ...(binaryPath === undefined ? {} : { binaryPath }),
    onUnexpectedExit: () => supervisor?.nodeExited(),
  });

  /** An adapter for the node's current life: the recorded contract, or a new one if the state lost it. */
  const connect = async (): Promise<EthersChain> => {
    const record = await readChainRecord(recordFile);
    const chain = await EthersChain.connect({
      pollIntervalMs: 100,
      unreachableAfterMs: 10_000,
      ...adapterOptions,
      rpcUrl: node.rpcUrl,
      chainId,
      signer: { privateKey: ANVIL_DEV_ANCHORER_KEY },
      deployIfMissing: true,
      ...(record === null ? {} : { contractAddress: record.contractAddress, deployBlock: record.deployBlock }),
    });
    const d = chain.deployment;
    if (d !== null) {
      try {
        await writeChainRecord(recordFile, { chainId, contractAddress: d.address, deployTxHash: d.txHash, deployBlock: d.blockNumber, anchorer: d.anchorer });
      } catch (err) {
        await chain.close();
        throw err;
      }
      log.info({ contractAddress: d.address, recordFile }, 'embedded chain: contract address recorded');
    }
    return chain;
  };

  await node.start();
  let initial: EthersChain;
  try {
    initial = await connect();
  } catch (err) {
    await node.stop();
    throw err;
  }
  const chain = new SupervisedChain(initial, log);
  const active = new Supervisor(node, chain, connect, log);
  if (supervise) supervisor = active;
  return {
    node,
    chain,
    recordFile,
    async close() {
      await active.close();
      await chain.close();
      await node.stop();
    },
  };
}

/**
 * Keeps the embedded node alive without a dris restart: when anvil exits unexpectedly (a crash,
 * an OOM kill, a SIGKILL) it is started again on the same state file and port, a new adapter is
 * connected, and the chain's reset listeners (the anchorer) reconcile what the restored state
 * lacks. A node that fails to come back is tried again with growing delays; meanwhile the chain
 * answers dependency_unavailable, which the anchorer retries like any outage.
 */
class Supervisor {
  private healthy = true;
  private closing = false;
  private recovery: Promise<void> | null = null;
  private readonly abort = new AbortController();

  constructor(
    private readonly node: AnvilNode,
    private readonly chain: SupervisedChain,
    private readonly connect: () => Promise<EthersChain>,
    private readonly log: Logger,
  ) {}

  nodeExited(): void {
    this.healthy = false;
    if (this.closing || this.recovery !== null) return;
    this.recovery = this.recover().finally(() => {
      this.recovery = null;
    });
  }

  private async recover(): Promise<void> {
    let delay = RESTART_FIRST_DELAY_MS;
    let restarts = 0;
    while (!this.closing && !this.healthy) {
      // An exit from here on (the new node dying too) turns this back to false: go round again.
      this.healthy = true;
      restarts += 1;
      try {
        if (!this.node.running) await this.node.start();
        if (this.closing) return;
        const next = await this.connect();
        if (this.closing) {
          await next.close();
          return;
        }
        // The old adapter may hold an anchor waiting on a transaction the restored state lost.
        await this.chain.swap(next).close();
        this.log.warn({ rpcUrl: this.node.rpcUrl, restarts, contractAddress: next.contractAddress }, 'embedded chain restarted from its last state dump; reconciling');
        this.chain.reset();
      } catch (err) {
        this.healthy = false;
        this.log.error({ err, restarts, retryInMs: delay }, 'embedded chain could not be restarted; trying again');
        try {
          await sleep(delay, undefined, { signal: this.abort.signal });
        } catch {
          return; // closing
        }
        delay = Math.min(delay * 2, RESTART_MAX_DELAY_MS);
      }
    }
  }

  /** Ends supervision; a restart under way is finished or abandoned first. */
  async close(): Promise<void> {
    this.closing = true;
    this.abort.abort();
    await this.recovery;
  }
}
