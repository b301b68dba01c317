import { isError, type Contract, type Interface, type JsonRpcProvider, type Log, type LogDescription } from 'ethers';
import { DrisError } from '../../errors/dris-error.js';
import type { AnchorEventView, BlockRef } from '../../domain/verification/ports.js';
import { translateChainError } from './chain-errors.js';

/** Reads of the DrisAnchor contract shared by the anchorer's chain adapter and the key-less reader. */

const ROOT_RE = /^[0-9a-f]{64}$/;

export function assertRoot(merkleRoot: string): void {
  if (!ROOT_RE.test(merkleRoot)) throw new DrisError('validation_failed', 'a Merkle root is 64 lowercase hex digits without 0x');
}

/** anchorOf(root): the root's batchSeq and anchoring time (seconds); null for a root never anchored. */
export async function readAnchorOf(contract: Contract, iface: Interface, merkleRoot: string): Promise<{ readonly batchSeq: number; readonly timestampSec: number } | null> {
  assertRoot(merkleRoot);
  let result: [bigint, bigint];
  try {
    result = (await contract.getFunction('anchorOf').staticCall(`0x${merkleRoot}`)) as [bigint, bigint];
  } catch (err) {
    throw translateChainError(err, 'reading an anchor', iface);
  }
  const [batchSeq, timestamp] = result;
  // The contract numbers batches from 1, so 0 is its "never anchored".
  if (batchSeq === 0n) return null;
  return { batchSeq: Number(batchSeq), timestampSec: Number(timestamp) };
}

/**
 * anchorOf(root) in one block, sent as a bare eth_call: the contract wrapper would resolve,
 * populate and copy the call each time, and verification reads many roots. `byHash` (EIP-1898,
 * required canonical): a node refuses the call once that block has left the canonical chain;
 * otherwise the block is named by its number, for nodes that take no block object.
 */
export async function readAnchorOfAt(
  provider: JsonRpcProvider,
  iface: Interface,
  address: string,
  merkleRoot: string,
  at: BlockRef,
  byHash = true,
): Promise<{ readonly batchSeq: number; readonly timestampSec: number } | null> {
  assertRoot(merkleRoot);
  let result: [bigint, bigint];
  try {
    const data = iface.encodeFunctionData('anchorOf', [`0x${merkleRoot}`]);
    const block = byHash ? { blockHash: at.hash, requireCanonical: true } : `0x${at.number.toString(16)}`;
    const answer = (await provider.send('eth_call', [{ to: address, data }, block])) as string;
    result = iface.decodeFunctionResult('anchorOf', answer) as unknown as [bigint, bigint];
  } catch (err) {
    // ethers calls every error of an eth_call an exception of the call; the view never reverts, so
    // one without revert data is the node refusing the block (gone from the chain, or unknown to it).
    if (isError(err, 'CALL_EXCEPTION') && err.data === null) {
      throw new DrisError('dependency_unavailable', 'reading an anchor: the node refused the block asked for', { cause: err });
    }
    throw translateChainError(err, 'reading an anchor', iface);
  }
  const [batchSeq, timestamp] = result;
  if (batchSeq === 0n) return null;
  return { batchSeq: Number(batchSeq), timestampSec: Number(timestamp) };
}

/** An Anchored event of the contract; null for a removed log (a reorg) or one that is not an Anchored event. */
export function parseAnchoredLog(iface: Interface, log: Log): AnchorEventView | null {
  // Removed logs come from a reorg notification; they are not on the canonical chain.
  if (log.removed) return null;
  let parsed: LogDescription | null;
  try {
    parsed = iface.parseLog({ topics: [...log.topics], data: log.data });
  } catch {
    return null;
  }
  if (parsed === null || parsed.name !== 'Anchored') return null;
  const root = parsed.args.getValue('merkleRoot') as string;
  return {
    batchSeq: Number(parsed.args.getValue('batchSeq') as bigint),
    merkleRoot: root.toLowerCase().replace(/^0x/, ''),
    batchId: parsed.args.getValue('batchId') as string,
    manifestCid: parsed.args.getValue('manifestCid') as string,
    recordCount: Number(parsed.args.getValue('recordCount') as bigint),
    timestampSec: Number(parsed.args.getValue('timestamp') as bigint),
    txHash: log.transactionHash.toLowerCase(),
    blockNumber: log.blockNumber,
  };
}
