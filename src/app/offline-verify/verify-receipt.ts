import typia from 'typia';
import type { HashingBackend } from '../../domain/hashing/port.js';
import { parseIJson } from '../../domain/hashing/ijson.js';
import { envelopeOf } from '../../domain/records/envelope.js';
import { assess, outcomeOf } from '../../domain/verification/assess.js';
import { claimOfReceipt } from '../../domain/verification/receipt.js';
import { RECEIPT_VERSION, REASON_STATUS, type ReasonCategory, type Receipt, type VerificationStatus } from '../../domain/verification/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { toFieldErrors } from '../validators.js';
import { readChain } from './read-chain.js';
import { readManifest } from './read-manifest.js';
import { emptyChecks, inputFailure } from './summary.js';
import type { ReceiptSummary, VerifyArgs, VerifyDeps, VerifyReport } from './types.js';

/**
 * `dris verify <receipt.json>` as a use case: checks a receipt with nothing but a JSON-RPC endpoint
 * of the chain (and, optionally, any IPFS gateway), without the service. The hashes are recomputed
 * here, the proof walked here, the contract read over JSON-RPC, the manifest checked against its
 * CID here; the verdict is the one the service gives (`assess`), plus the receipt's own claims
 * about its anchoring (transaction, block, time, manifest CID), which only a receipt makes.
 */

const validateReceipt = typia.createValidate<Receipt>();

/** A file read as strict I-JSON: the rules ingestion applies to a payload. */
async function readIJson(deps: VerifyDeps, path: string, what: string): Promise<unknown> {
  let bytes: Uint8Array;
  try {
    bytes = await deps.readFile(path);
  } catch (err) {
    throw new DrisError('validation_failed', `cannot read the ${what} file ${path}`, { cause: err });
  }
  const parsed = parseIJson(bytes);
  if (parsed.syntaxError) throw new DrisError('invalid_json', `the ${what} file is not JSON`, { fields: parsed.errors });
  if (parsed.errors.length > 0) throw new DrisError('validation_failed', `the ${what} file is not I-JSON (RFC 7493)`, { fields: parsed.errors });
  return parsed.value;
}

function checkReceipt(value: unknown): Receipt {
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const version = (value as Record<string, unknown>)['receiptVersion'];
    if (version !== RECEIPT_VERSION) {
      throw new DrisError('validation_failed', `unsupported receiptVersion ${JSON.stringify(version) ?? 'missing'}; this verifier reads version ${RECEIPT_VERSION}`, {
        fields: [{ path: 'receiptVersion', code: 'invalid_enum', message: `must be ${RECEIPT_VERSION}` }],
      });
    }
  }
  const r = validateReceipt(value);
  if (!r.success) throw new DrisError('validation_failed', 'the file is not a dris receipt', { fields: toFieldErrors(r.errors, '') });
  return r.data;
}

function summarize(path: string, r: Receipt): ReceiptSummary {
  // The salt and source timestamp are not shown: the envelope's other members are.
  const { salt: _salt, sourceTimestamp: _sourceTimestamp, ...envelope } = envelopeOf(r);
  return {
    path,
    receiptVersion: r.receiptVersion,
    ...envelope,
    recordHash: r.recordHash,
    leafIndex: r.leafIndex,
    treeSize: r.treeSize,
    proofLength: r.merkleProof.length,
    merkleRoot: r.merkleRoot,
    batchId: r.batchId,
    batchSeq: r.batchSeq,
    manifestCid: r.manifestCid,
    chainId: r.chainId,
    contractAddress: r.contractAddress,
    chainTxHash: r.chainTxHash,
    blockNumber: r.blockNumber,
    anchoredAt: r.anchoredAt,
  };
}

/** Gathers every observation, then lets `assess` decide; never throws. */
export async function verifyReceipt(args: VerifyArgs, deps: VerifyDeps): Promise<VerifyReport> {
  const checks = emptyChecks();
  let receipt: Receipt;
  try {
    receipt = checkReceipt(await readIJson(deps, args.receiptPath, 'receipt'));
  } catch (err) {
    return inputFailure(err, checks);
  }
  checks.receiptValid = true;
  const summary = summarize(args.receiptPath, receipt);

  let hashing: HashingBackend;
  let computedPayloadHash: string | undefined;
  let payloadSource: 'file' | 'receipt' | null = null;
  try {
    hashing = await deps.loadHashing();
    let payload: unknown;
    if (args.payloadPath !== undefined) {
      payload = await readIJson(deps, args.payloadPath, 'payload');
      payloadSource = 'file';
      if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
        throw new DrisError('validation_failed', 'the payload file must hold a JSON object: the recordPayload as ingested', {
          fields: [{ path: '(payload)', code: 'invalid_type', message: 'must be an object' }],
        });
      }
    } else if (receipt.payload !== undefined) {
      // A receipt downloaded with its payload: the payload is checked like a supplied one, having
      // passed the same I-JSON rules as part of the receipt file.
      payload = receipt.payload;
      payloadSource = 'receipt';
    }
    if (payloadSource !== null) computedPayloadHash = hashing.sha256Hex(Buffer.from(hashing.canonicalize(payload), 'utf8'));
  } catch (err) {
    return inputFailure(err, checks, summary);
  }

  const [chain, ipfs] = await Promise.all([readChain(args, deps, receipt, checks), readManifest(args, deps, receipt, checks)]);

  const a = assess(hashing, claimOfReceipt(receipt), {
    ...(computedPayloadHash === undefined ? {} : { computedPayloadHash }),
    chain: chain.observation,
    ...(ipfs.observation === undefined ? {} : { manifest: ipfs.observation }),
    // Asked for with --ipfs-gateway: a manifest that cannot be had leaves the verdict open.
    manifestRequired: args.gatewayUrl !== undefined,
  });
  checks.payloadHashMatches = a.checks.payloadHashMatches;
  checks.recordHashMatches = a.checks.recordHashMatches;
  checks.proofValid = a.checks.proofValid;
  checks.anchoredOnChain = a.checks.anchoredOnChain;
  checks.onChainRootMatches = a.checks.onChainRootMatches;
  checks.hashMatchesIpfs = a.checks.hashMatchesIpfs;
  checks.merkleRootMatchesChain = a.checks.merkleRootMatchesChain;
  if (ipfs.report?.manifest !== undefined && ipfs.report.manifest !== null) ipfs.report.manifest.recomputedRoot = a.manifestRoot;

  // What only a receipt claims (its anchoring transaction, block and time, its manifest CID) is
  // checked against the chain on top of assess: a receipt that passes assess but names another
  // anchoring than the chain's is not the evidence it says it is.
  let outcome: { status: VerificationStatus; reason: ReasonCategory; verified: boolean; message: string } = {
    status: a.status,
    reason: a.reason,
    verified: a.verified,
    message: a.message,
  };
  if (a.verified && checks.anchorEventMatches === false) outcome = outcomeOf('not_on_chain');
  else if (a.verified && checks.manifestCidMatchesChain === false) outcome = outcomeOf('ipfs_mismatch');

  return {
    verified: outcome.verified,
    verificationStatus: outcome.status,
    reasonCategory: outcome.reason,
    message: outcome.message,
    checkedAt: new Date().toISOString(),
    checks,
    receipt: summary,
    computed: { payloadHash: computedPayloadHash ?? null, payloadSource, recordHash: a.computedRecordHash, manifestRoot: a.manifestRoot },
    chain: chain.report,
    ipfs: ipfs.report,
  };
}

/** 0 verified; 1 a check failed; 2 the input or a dependency kept the verifier from deciding. */
export function exitCodeOf(report: VerifyReport): 0 | 1 | 2 {
  if (report.verified) return 0;
  if (report.reasonCategory === null) return 2;
  return REASON_STATUS[report.reasonCategory] === 'fail' || REASON_STATUS[report.reasonCategory] === 'pending' ? 1 : 2;
}
