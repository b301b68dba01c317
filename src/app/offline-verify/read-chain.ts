import type { ChainObservation } from '../../domain/verification/assess.js';
import type { AnchorEventView, ChainReader } from '../../domain/verification/ports.js';
import type { Receipt } from '../../domain/verification/types.js';
import { DrisError, toDrisError } from '../../errors/dris-error.js';
import { sameCid } from '../../util/cid.js';
import { summarizeError } from './summary.js';
import type { ChainReport, VerifyArgs, VerifyChecks, VerifyDeps } from './types.js';

/** The chain's side of a receipt: the contract's anchorOf(root) and the Anchored event of its batchSeq. */

function rpcOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

const isoOfSec = (sec: number): string => new Date(sec * 1000).toISOString();

/** Receipt fields the chain's Anchored event contradicts; every one is part of the receipt's claim. */
function eventMismatches(r: Receipt, e: AnchorEventView | null): string[] {
  if (e === null) return ['event'];
  const out: string[] = [];
  if (e.merkleRoot !== r.merkleRoot) out.push('merkleRoot');
  if (e.batchId !== r.batchId) out.push('batchId');
  if (e.recordCount !== r.treeSize) out.push('treeSize');
  if (e.txHash.toLowerCase() !== r.chainTxHash.toLowerCase()) out.push('chainTxHash');
  if (e.blockNumber !== r.blockNumber) out.push('blockNumber');
  if (e.timestampSec * 1000 !== Date.parse(r.anchoredAt)) out.push('anchoredAt');
  return out;
}

export interface ChainRead {
  readonly observation: ChainObservation | null;
  readonly report: ChainReport;
}

/** An error that means "nothing of dris at this address on this chain", not "the chain is unreadable". */
function isNoContract(err: unknown): boolean {
  if (!(err instanceof DrisError) || err.code !== 'config_invalid') return false;
  const reason = err.extra['reason'];
  return reason === 'no_contract' || reason === 'not_anchor_contract' || reason === 'bad_address';
}

export async function readChain(args: VerifyArgs, deps: VerifyDeps, r: Receipt, checks: VerifyChecks): Promise<ChainRead> {
  const report: ChainReport = { rpc: rpcOrigin(args.rpcUrl), chainId: null, contractAddress: r.contractAddress, headBlock: null, anchor: null, event: null, mismatches: [] };
  // The event is expected in the receipt's block: searching from there keeps the log scan short on
  // a long chain. A receipt naming a later block than the real one then finds no event and fails,
  // as it should; one naming an earlier block finds the event and fails on the block number.
  const fromBlock = Number.isSafeInteger(r.blockNumber) && r.blockNumber >= 0 ? r.blockNumber : 0;
  let reader: ChainReader;
  try {
    reader = await deps.connectChain({ rpcUrl: args.rpcUrl, contractAddress: r.contractAddress, expectedChainId: r.chainId, timeoutMs: args.timeoutMs, fromBlock });
  } catch (err) {
    report.error = summarizeError(err);
    const e = toDrisError(err);
    if (e.code === 'config_invalid' && e.extra['reason'] === 'chain_id_mismatch') {
      checks.chainIdMatches = false;
      const actual = e.extra['actual'];
      if (typeof actual === 'number') report.chainId = actual;
      return { observation: null, report };
    }
    if (isNoContract(err)) {
      // A malformed address is refused before the node is asked its chain id.
      if (e.extra['reason'] !== 'bad_address') {
        checks.chainIdMatches = true;
        report.chainId = r.chainId;
      }
      checks.contractFound = false;
      return { observation: { anchorOfRoot: null, rootAtSeq: null }, report };
    }
    return { observation: null, report };
  }
  checks.chainIdMatches = true;
  checks.contractFound = true;
  report.chainId = reader.chainId;
  try {
    const rootOk = /^[0-9a-f]{64}$/.test(r.merkleRoot);
    const seqOk = Number.isSafeInteger(r.batchSeq) && r.batchSeq >= 1;
    const [anchor, event, head] = await Promise.all([
      rootOk ? reader.anchorOf(r.merkleRoot) : Promise.resolve(null),
      seqOk ? reader.eventBySeq(r.batchSeq) : Promise.resolve(null),
      reader.headBlock(),
    ]);
    report.headBlock = head;
    report.anchor = anchor === null ? null : { batchSeq: anchor.batchSeq, anchoredAt: isoOfSec(anchor.anchoredAtSec) };
    report.event = event === null ? null : { ...event, anchoredAt: isoOfSec(event.timestampSec), confirmations: Math.max(0, head - event.blockNumber + 1) };
    report.mismatches = eventMismatches(r, event);
    checks.anchorEventMatches = report.mismatches.length === 0;
    checks.manifestCidMatchesChain = event === null ? null : sameCid(event.manifestCid, r.manifestCid);
    return { observation: { anchorOfRoot: anchor, rootAtSeq: event?.merkleRoot ?? null }, report };
  } catch (err) {
    report.error = summarizeError(err);
    return { observation: null, report };
  } finally {
    await reader.close();
  }
}
