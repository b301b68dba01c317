import { readFile } from 'node:fs/promises';
import { FetchRequest, Interface, JsonRpcProvider, Network, Wallet } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { translateChainError } from './chain-errors.js';
import { loadAnchorArtifact, type AnchorArtifact } from './contract-artifact.js';
import { TxSender, type TxSubmission } from './tx-sender.js';

/**
 * What every use of the anchor contract over JSON-RPC starts from: the anchorer's wallet, a
 * provider checked to be on the expected chain, and the ordered transaction stream (TxSender).
 */

/** Where the anchorer's key comes from; its text is never logged nor put in an error. */
export type AnchorerKeySource =
  | { readonly privateKey: string }
  | { readonly keystorePath: string; readonly keystorePassword: string }
  | { readonly keystoreJson: string; readonly keystorePassword: string };

export interface ChainConnectionOptions {
  readonly rpcUrl: string;
  /** The chain the node must be on; checked with eth_chainId before anything else. */
  readonly chainId: number;
  readonly signer: AnchorerKeySource | Wallet;
  /** Per JSON-RPC request. Default 10 s. */
  readonly rpcTimeoutMs?: number;
  /** Blocks on top of (and including) the one holding a transaction before it counts. Default 1. */
  readonly confirmations?: number;
  /** A transaction not mined after this long is replaced with higher fees. Default 30 s. */
  readonly replaceAfterMs?: number;
  /** Default 5. */
  readonly maxReplacements?: number;
  /** Percent added to both fee caps per replacement; at least 12.5 (the default). */
  readonly feeBumpPercent?: number;
  /** Floor of maxPriorityFeePerGas, wei. Default 1 000 000 (0.001 gwei). */
  readonly minPriorityFeeWei?: bigint;
  /** From first broadcast to confirmations. Default 10 min. */
  readonly txTimeoutMs?: number;
  /** How long the node may stay unreachable while a transaction is awaited. Default 30 s. */
  readonly unreachableAfterMs?: number;
  /** Longest pause between receipt polls. Default 1 s. */
  readonly pollIntervalMs?: number;
  /** contracts/artifacts/DrisAnchor.json when unset. */
  readonly artifactPath?: string;
  readonly logger?: Logger;
}

/** The anchorer's wallet from a raw key or an encrypted JSON keystore (scrypt; takes a second). */
export async function loadAnchorerWallet(source: AnchorerKeySource | Wallet): Promise<Wallet> {
  if (source instanceof Wallet) return source;
  if ('privateKey' in source) {
    const raw = source.privateKey.trim();
    const hex = raw.startsWith('0x') ? raw : `0x${raw}`;
    if (!/^0x[0-9a-fA-F]{64}$/.test(hex)) throw new DrisError('config_invalid', 'the anchorer key is not a 32-byte hex private key');
    try {
      return new Wallet(hex);
    } catch {
      // No cause: the library's error could quote the key.
      throw new DrisError('config_invalid', 'the anchorer key is not a valid secp256k1 private key');
    }
  }
  let json: string;
  if ('keystoreJson' in source) json = source.keystoreJson;
  else {
    try {
      json = await readFile(source.keystorePath, 'utf8');
    } catch (err) {
      throw new DrisError('config_invalid', `cannot read the anchorer keystore ${source.keystorePath}`, { cause: err });
    }
  }
  try {
    const decrypted = await Wallet.fromEncryptedJson(json, source.keystorePassword);
    return new Wallet(decrypted.privateKey);
  } catch {
    throw new DrisError('config_invalid', 'cannot decrypt the anchorer keystore (wrong password or not a keystore)');
  }
}

/** The provider options every adapter of the chain uses (see docs/chain.md for why each). */
export function makeProvider(rpcUrl: string, chainId: number, timeoutMs: number, batch?: { readonly maxCount: number; readonly stallMs: number }): JsonRpcProvider {
  const request = new FetchRequest(rpcUrl);
  request.timeout = timeoutMs;
  const network = Network.from(chainId);
  // staticNetwork: ethers would otherwise retry network detection forever against a dead node.
  // cacheTimeout -1: a cached nonce or receipt is exactly what an ordered stream must not read.
  // batchMaxCount 1: each failure belongs to one request (a reader of views may batch instead).
  return new JsonRpcProvider(request, network, {
    staticNetwork: network,
    cacheTimeout: -1,
    batchMaxCount: batch?.maxCount ?? 1,
    ...(batch === undefined ? {} : { batchStallTime: batch.stallMs }),
  });
}

async function checkChainId(provider: JsonRpcProvider, expected: number): Promise<void> {
  let actual: number;
  try {
    actual = Number(BigInt(String(await provider.send('eth_chainId', []))));
  } catch (err) {
    throw translateChainError(err, 'reading the chain id');
  }
  if (actual !== expected) {
    throw new DrisError('config_invalid', `the node is on chain id ${actual}, the configuration says ${expected}`, { extra: { expected, actual } });
  }
}

function positiveInt(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) throw new DrisError('config_invalid', `${name} must be a positive integer`);
  return value;
}

function isLoopbackUrl(url: string): boolean {
  try {
    const host = new URL(url).hostname;
    return host === '127.0.0.1' || host === 'localhost' || host === '[::1]' || host === '::1';
  } catch {
    return false;
  }
}

export function defaultPublicRpcUrl(rpcUrl: string): string {
  if (isLoopbackUrl(rpcUrl)) return rpcUrl;
  try {
    return new URL(rpcUrl).origin;
  } catch {
    return '';
  }
}

export interface Runtime {
  readonly provider: JsonRpcProvider;
  readonly wallet: Wallet;
  readonly sender: TxSender;
  readonly artifact: AnchorArtifact;
  readonly iface: Interface;
  readonly chainId: number;
  readonly log: Logger;
  closed: boolean;
}

export async function openRuntime(options: ChainConnectionOptions, onTransaction?: (s: TxSubmission) => void | Promise<void>): Promise<Runtime> {
  const chainId = positiveInt(options.chainId, 'the chain id');
  const confirmations = positiveInt(options.confirmations ?? 1, 'confirmations');
  const log = options.logger ?? componentLogger('chain');
  const artifact = loadAnchorArtifact(options.artifactPath);
  const wallet = await loadAnchorerWallet(options.signer);
  const provider = makeProvider(options.rpcUrl, chainId, options.rpcTimeoutMs ?? 10_000);
  const runtime: Runtime = {
    provider,
    wallet,
    artifact,
    iface: new Interface(artifact.abi),
    chainId,
    log,
    closed: false,
    sender: new TxSender({
      provider,
      wallet,
      chainId,
      confirmations,
      replaceAfterMs: positiveInt(options.replaceAfterMs ?? 30_000, 'replaceAfterMs'),
      maxReplacements: options.maxReplacements ?? 5,
      feeBumpPercent: options.feeBumpPercent ?? 12.5,
      minPriorityFeeWei: options.minPriorityFeeWei ?? 1_000_000n,
      txTimeoutMs: positiveInt(options.txTimeoutMs ?? 600_000, 'txTimeoutMs'),
      unreachableAfterMs: positiveInt(options.unreachableAfterMs ?? 30_000, 'unreachableAfterMs'),
      pollIntervalMs: positiveInt(options.pollIntervalMs ?? 1_000, 'pollIntervalMs'),
      logger: log,
      ...(onTransaction === undefined ? {} : { onSubmission: onTransaction }),
      isClosed: () => runtime.closed,
    }),
  };
  try {
    await checkChainId(provider, chainId);
    try {
      await runtime.sender.init();
    } catch (err) {
      throw translateChainError(err, 'reading the anchorer nonce');
    }
    return runtime;
  } catch (err) {
    provider.destroy();
    throw err;
  }
}

export function gasWithMargin(estimate: bigint): bigint {
  // Estimates are exact for this contract; the margin covers a node that estimates a little low.
  return (estimate * 125n) / 100n + 10_000n;
}
