import type { ErrorSummary, VerifyReport } from '../../app/offline-verify/types.js';

/** The readable report of `dris verify`: what was checked, one line per check, then the verdict. */

const MARK = { true: '✓', false: '✗', null: '·' } as const;

function mark(state: boolean | null): string {
  return state === null ? MARK.null : state ? MARK.true : MARK.false;
}

const short = (hex: string): string => (hex.length > 20 ? `${hex.slice(0, 12)}…${hex.slice(-6)}` : hex);

function line(state: boolean | null, label: string, detail: string): string {
  return `  ${mark(state)} ${label.padEnd(18)} ${detail}`;
}

function errorText(e: ErrorSummary | undefined): string {
  return e === undefined ? '' : `${e.code}: ${e.message}`;
}

/** The readable report: what was checked, one line per check, then the verdict. */
export function renderReport(report: VerifyReport): string {
  const out: string[] = [];
  const r = report.receipt;
  const c = report.checks;
  if (r === null) {
    out.push('dris verify: the input is not a receipt this verifier can check');
  } else {
    out.push(`dris verify ${r.path} (receipt v${r.receiptVersion}, ${r.hashScheme})`);
    out.push(`  record   tenant ${r.tenantId} · ${r.database}/${r.collection}/${r.recordId} · version ${r.recordVersion} · ${r.operationType}`);
    out.push(`  batch    ${r.batchId} · batchSeq ${r.batchSeq} · leaf ${r.leafIndex} of ${r.treeSize} · root ${short(r.merkleRoot)}`);
    out.push(`  anchor   chain ${r.chainId} · contract ${r.contractAddress} · tx ${short(r.chainTxHash)} · block ${r.blockNumber} · ${r.anchoredAt}`);
    out.push('');
    const comp = report.computed;
    out.push(
      line(
        c.payloadHashMatches,
        'payload hash',
        c.payloadHashMatches === null
          ? 'not checked (no --payload): the receipt\'s payloadHash is taken as given'
          : `SHA-256(JCS(${comp.payloadSource === 'receipt' ? 'the receipt\'s payload' : 'payload'})) = ${short(comp.payloadHash ?? '')}${c.payloadHashMatches ? ', as in the receipt' : `, the receipt says ${short(r.payloadHash)}`}`,
      ),
    );
    // With a payload, the envelope is hashed with the payload's hash: the record hash then proves the payload.
    const envelope = comp.payloadHash === null ? 'envelope' : 'envelope with that payload hash';
    out.push(
      line(
        c.recordHashMatches,
        'record hash',
        c.recordHashMatches === true
          ? `SHA-256(JCS(${envelope})) = ${short(r.recordHash)}, as in the receipt`
          : `SHA-256(JCS(${envelope})) = ${short(comp.recordHash ?? '')}, the receipt says ${short(r.recordHash)}`,
      ),
    );
    out.push(
      line(
        c.proofValid,
        'Merkle proof',
        c.proofValid === true
          ? `${r.proofLength} steps from leaf ${r.leafIndex} of ${r.treeSize} lead to root ${short(r.merkleRoot)}`
          : `the ${r.proofLength} steps from leaf ${r.leafIndex} of ${r.treeSize} do not lead to root ${short(r.merkleRoot)}`,
      ),
    );
    out.push(...chainLines(report));
    out.push(...ipfsLines(report));
  }
  out.push('');
  const verdict = report.verified ? 'VERIFIED' : 'NOT VERIFIED';
  const why = report.reasonCategory === null ? (report.error?.code ?? 'error') : report.reasonCategory;
  out.push(`${verdict}  ${report.verificationStatus} · ${why}: ${report.message}`);
  if (report.reasonCategory === null && report.error?.fieldErrors !== undefined) {
    for (const f of report.error.fieldErrors.slice(0, 20)) out.push(`  ${f.path}: ${f.message}`);
  }
  return `${out.join('\n')}\n`;
}

function chainLines(report: VerifyReport): string[] {
  const c = report.checks;
  const ch = report.chain;
  const r = report.receipt;
  if (ch === null || r === null) return [];
  const out: string[] = [];
  if (c.contractFound === false) {
    out.push(line(false, 'contract', `no DrisAnchor contract at ${r.contractAddress} on chain ${r.chainId}`));
    return out;
  }
  if (c.chainIdMatches !== true) {
    const detail = c.chainIdMatches === false ? `the node at ${ch.rpc} is on chain id ${ch.chainId ?? '?'}, the receipt names ${r.chainId}` : `cannot read the chain at ${ch.rpc}: ${errorText(ch.error)}`;
    out.push(line(c.chainIdMatches, 'chain', detail));
    return out;
  }
  out.push(line(true, 'chain', `${ch.rpc} is on chain id ${r.chainId}, DrisAnchor at ${r.contractAddress}`));
  if (ch.error !== undefined) {
    out.push(line(null, 'on-chain root', `cannot read the contract: ${errorText(ch.error)}`));
    return out;
  }
  out.push(
    line(
      c.anchoredOnChain === true ? c.onChainRootMatches : c.anchoredOnChain,
      'on-chain root',
      ch.anchor === null ? `anchorOf(root) knows no ${short(r.merkleRoot)}` : `anchorOf(root) = batchSeq ${ch.anchor.batchSeq}, ${ch.anchor.anchoredAt}${ch.anchor.batchSeq === r.batchSeq ? '' : ` (the receipt says ${r.batchSeq})`}`,
    ),
  );
  const e = ch.event;
  out.push(
    line(
      c.anchorEventMatches,
      'Anchored event',
      e === null
        ? `no Anchored event for batchSeq ${r.batchSeq} from block ${r.blockNumber} on`
        : ch.mismatches.length === 0
          ? `batchSeq ${e.batchSeq} names this root in tx ${short(e.txHash)}, block ${e.blockNumber} (${e.confirmations ?? '?'} confirmations), ${e.anchoredAt}`
          : `batchSeq ${e.batchSeq} (tx ${short(e.txHash)}, block ${e.blockNumber}, root ${short(e.merkleRoot)}) contradicts the receipt's ${ch.mismatches.join(', ')}`,
    ),
  );
  if (e !== null) {
    out.push(line(c.manifestCidMatchesChain, 'manifest CID', c.manifestCidMatchesChain === true ? `the event commits to ${r.manifestCid}` : `the event commits to ${e.manifestCid}, the receipt says ${r.manifestCid}`));
  }
  return out;
}

function ipfsLines(report: VerifyReport): string[] {
  const c = report.checks;
  const ip = report.ipfs;
  const r = report.receipt;
  if (r === null) return [];
  if (ip === null) return [line(null, 'IPFS manifest', 'not checked (no --ipfs-gateway)')];
  const out: string[] = [];
  if (ip.error !== undefined) {
    out.push(line(c.manifestMatchesCid === false ? false : null, 'IPFS manifest', `${ip.cid} from ${ip.gateway}: ${errorText(ip.error)}`));
    return out;
  }
  out.push(line(c.manifestMatchesCid, 'IPFS manifest', `${ip.cid} from ${ip.gateway} (${ip.format ?? '?'}, ${ip.bytes ?? 0} bytes) hashes to its CID`));
  const m = ip.manifest;
  if (m === null || m === undefined) {
    out.push(line(false, 'manifest leaves', 'the content under the CID is not a dris manifest'));
    return out;
  }
  out.push(
    line(
      c.hashMatchesIpfs,
      'manifest leaf',
      c.hashMatchesIpfs === true
        ? `leaf ${r.leafIndex} of ${m.treeSize} is the record hash`
        : `leaf ${r.leafIndex} is ${m.leafAtIndex === null ? 'absent' : short(m.leafAtIndex)} of ${m.treeSize} (batch ${m.batchSeq}), the record hash is ${short(r.recordHash)}`,
    ),
  );
  out.push(
    line(
      c.merkleRootMatchesChain,
      'manifest root',
      `the leaves recompute root ${short(m.recomputedRoot ?? '')}${c.merkleRootMatchesChain === true ? ', the on-chain root' : `; the receipt's root is ${short(r.merkleRoot)}`}`,
    ),
  );
  return out;
}
