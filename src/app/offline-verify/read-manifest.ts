import type { ManifestObservation } from '../../domain/verification/assess.js';
import { parseManifest } from '../../domain/verification/manifest.js';
import type { Receipt } from '../../domain/verification/types.js';
import { DrisError } from '../../errors/dris-error.js';
import { parseCid } from '../../util/cid.js';
import { summarizeError } from './summary.js';
import type { IpfsReport, ManifestFetchResult, VerifyArgs, VerifyChecks, VerifyDeps } from './types.js';

/** The manifest's side of a receipt, through an IPFS gateway, checked against its CID. */

export interface IpfsRead {
  /** As assess takes it: undefined not fetched, null unavailable. */
  readonly observation: ManifestObservation | null | undefined;
  readonly report: IpfsReport | null;
}

/**
 * Bytes that hash to the CID but are not a manifest are evidence against the receipt (its CID names
 * something else); assess sees them as a manifest with no leaves, which matches nothing.
 */
const NOT_A_MANIFEST: ManifestObservation = { merkleRoot: '', treeSize: 0, leaves: [] };

export async function readManifest(args: VerifyArgs, deps: VerifyDeps, r: Receipt, checks: VerifyChecks): Promise<IpfsRead> {
  if (args.gatewayUrl === undefined) return { observation: undefined, report: null };
  const report: IpfsReport = { gateway: args.gatewayUrl, cid: r.manifestCid };
  try {
    parseCid(r.manifestCid);
  } catch (err) {
    // The receipt's CID is not a CID: nothing to fetch, and the receipt is wrong.
    report.error = summarizeError(err);
    checks.manifestMatchesCid = false;
    return { observation: NOT_A_MANIFEST, report };
  }
  let fetched: ManifestFetchResult;
  try {
    fetched = await deps.fetchManifest(args.gatewayUrl, r.manifestCid, { timeoutMs: args.timeoutMs });
  } catch (err) {
    report.error = summarizeError(err);
    if (err instanceof DrisError && err.extra['reason'] === 'cid_mismatch') checks.manifestMatchesCid = false;
    return { observation: null, report };
  }
  checks.manifestMatchesCid = true;
  report.url = fetched.url;
  report.format = fetched.format;
  report.bytes = fetched.bytes.byteLength;
  const manifest = parseManifest(fetched.bytes);
  if (manifest === null) {
    report.manifest = null;
    return { observation: NOT_A_MANIFEST, report };
  }
  const leaf = manifest.leaves[r.leafIndex];
  report.manifest = {
    batchId: manifest.batchId,
    batchSeq: manifest.batchSeq,
    treeSize: manifest.treeSize,
    merkleRoot: manifest.merkleRoot,
    leafAtIndex: leaf ?? null,
    recomputedRoot: null,
  };
  return { observation: manifest, report };
}
