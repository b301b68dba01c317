import type { Reader } from './reader.js';
import { withOptional } from './reader.js';
import type { ChainConfig } from './types.js';

/** The chain and its anchoring transactions (EVM_RPC_URL, DRIS_CHAIN_*, DRIS_ANCHORER_*, DRIS_ANVIL_*). */

/** Where the anchorer's signing key comes from: the raw key, else the keystore file and its password. */
export function anchorerKeySource(c: ChainConfig): { readonly privateKey: string } | { readonly keystorePath: string; readonly keystorePassword: string } {
  return c.anchorerKey !== undefined ? { privateKey: c.anchorerKey } : { keystorePath: c.keystoreFile ?? '', keystorePassword: c.keystorePassword ?? '' };
}

/** DRIS_CHAIN_FEE_BUMP_PERCENT: a decimal of at least 12.5 (nodes refuse smaller replacements). */
function feeBumpPercent(r: Reader): number {
  const raw = r.str('DRIS_CHAIN_FEE_BUMP_PERCENT');
  if (raw === undefined) return 12.5;
  const v = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !(v >= 12.5 && v <= 1000)) {
    r.problems.push({ path: 'DRIS_CHAIN_FEE_BUMP_PERCENT', code: 'out_of_range', message: 'must be a number from 12.5 to 1000' });
    return 12.5;
  }
  return v;
}

/** DRIS_CHAIN_MIN_PRIORITY_FEE_WEI: a non-negative integer, wei (beyond the safe-integer range). */
function minPriorityFeeWei(r: Reader): bigint {
  const raw = r.str('DRIS_CHAIN_MIN_PRIORITY_FEE_WEI');
  if (raw === undefined) return 1_000_000n;
  if (!/^\d{1,30}$/.test(raw)) {
    r.problems.push({ path: 'DRIS_CHAIN_MIN_PRIORITY_FEE_WEI', code: 'invalid_format', message: 'must be a whole number of wei' });
    return 1_000_000n;
  }
  return BigInt(raw);
}

export function readChainConfig(r: Reader, evmRpcUrl: string | undefined): ChainConfig {
  const chainIdRaw = r.str('DRIS_CHAIN_ID');
  const chain = withOptional(
    {
      confirmations: r.int('DRIS_CONFIRMATIONS', 1, 0, 1000),
      anvilStateIntervalSec: r.int('DRIS_ANVIL_STATE_INTERVAL_S', 1, 1, 86_400),
      replaceAfterMs: r.int('DRIS_CHAIN_REPLACE_AFTER_MS', 30_000, 1000, 86_400_000),
      feeBumpPercent: feeBumpPercent(r),
      minPriorityFeeWei: minPriorityFeeWei(r),
      txTimeoutMs: r.int('DRIS_CHAIN_TX_TIMEOUT_MS', 600_000, 10_000, 86_400_000),
      deployBlock: r.int('DRIS_CONTRACT_DEPLOY_BLOCK', 0, 0, Number.MAX_SAFE_INTEGER),
      logBlockRange: r.int('DRIS_CHAIN_LOG_BLOCK_RANGE', 10_000, 1, 1_000_000),
    } as ChainConfig,
    {
      publicRpcUrl: r.url('DRIS_PUBLIC_RPC_URL', ['http:', 'https:']),
      anvilPort: r.str('DRIS_ANVIL_PORT') === undefined ? undefined : r.int('DRIS_ANVIL_PORT', 0, 1, 65535),
      anvilBin: r.str('DRIS_ANVIL_BIN'),
      rpcUrl: evmRpcUrl,
      anchorerKey: r.str('DRIS_ANCHORER_KEY'),
      keystoreFile: r.str('DRIS_ANCHORER_KEYSTORE'),
      keystorePassword: r.str('DRIS_ANCHORER_KEYSTORE_PASSWORD'),
      contractAddress: r.str('DRIS_CONTRACT_ADDRESS'),
      explorerAddressUrl: r.str('DRIS_EXPLORER_ADDRESS_URL'),
      explorerTxUrl: r.str('DRIS_EXPLORER_TX_URL'),
    },
  );
  const chainWithId: ChainConfig = chainIdRaw === undefined ? chain : { ...chain, chainId: r.int('DRIS_CHAIN_ID', 31337, 1, Number.MAX_SAFE_INTEGER) };
  if (chain.anchorerKey !== undefined && !/^(0x)?[0-9a-fA-F]{64}$/.test(chain.anchorerKey)) {
    r.problems.push({ path: 'DRIS_ANCHORER_KEY', code: 'invalid_format', message: 'must be a 32-byte hex private key' });
  }
  if (chain.contractAddress !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(chain.contractAddress)) {
    r.problems.push({ path: 'DRIS_CONTRACT_ADDRESS', code: 'invalid_format', message: 'must be a 20-byte hex address' });
  }
  // Only an anchorer signs: an api process reads the chain with EVM_RPC_URL and holds no key.
  const anchors = (r.str('DRIS_ROLES') ?? 'anchorer').split(',').some((role) => role.trim() === 'anchorer');
  if (evmRpcUrl !== undefined && anchors && chain.anchorerKey === undefined && chain.keystoreFile === undefined) {
    r.problems.push({ path: 'DRIS_ANCHORER_KEY', code: 'required', message: 'an external chain (EVM_RPC_URL) needs DRIS_ANCHORER_KEY or DRIS_ANCHORER_KEYSTORE' });
  }
  return chainWithId;
}
