import { toDrisError } from '../../errors/dris-error.js';
import type { ErrorSummary, ReceiptSummary, VerifyChecks, VerifyReport } from './types.js';

/** The parts of the report every step shares: no check run yet, an error as the report shows it. */

export function emptyChecks(): VerifyChecks {
  return {
    receiptValid: false,
    payloadHashMatches: null,
    recordHashMatches: null,
    proofValid: null,
    chainIdMatches: null,
    contractFound: null,
    anchoredOnChain: null,
    onChainRootMatches: null,
    anchorEventMatches: null,
    manifestCidMatchesChain: null,
    manifestMatchesCid: null,
    hashMatchesIpfs: null,
    merkleRootMatchesChain: null,
  };
}

export function summarizeError(err: unknown): ErrorSummary {
  const e = toDrisError(err);
  const reason = e.extra['reason'];
  const detail = e.code === 'internal_error' && e.cause instanceof Error ? `${e.message}: ${e.cause.message}` : e.message;
  return {
    code: e.code,
    message: detail,
    ...(typeof reason === 'string' ? { reason } : {}),
    ...(e.fields.length > 0 ? { fieldErrors: e.fields.map((f) => ({ ...f })) } : {}),
  };
}

export function inputFailure(err: unknown, checks: VerifyChecks = emptyChecks(), receipt: ReceiptSummary | null = null): VerifyReport {
  const error = summarizeError(err);
  return {
    verified: false,
    verificationStatus: 'error',
    reasonCategory: null,
    message: error.message,
    checkedAt: new Date().toISOString(),
    checks,
    receipt,
    computed: { payloadHash: null, payloadSource: null, recordHash: null, manifestRoot: null },
    chain: null,
    ipfs: null,
    error,
  };
}
