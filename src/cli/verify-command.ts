import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import typia from 'typia';
import { AnchorReader, type AnchorReaderOptions } from '../adapters/chain/anchor-reader.js';
import { loadHashingBackend } from '../adapters/hashing/select-backend.js';
import { fetchVerified, type GatewayFetchOptions, type GatewayFetchResult } from '../adapters/ipfs/gateway-fetcher.js';
import { parseCid } from '../adapters/ipfs/unixfs.js';
import { toFieldErrors } from '../app/validators.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import { parseIJson } from '../domain/hashing/ijson.js';
import { assess, outcomeOf, type ChainObservation, type ManifestObservation } from '../domain/verification/assess.js';
import { parseManifest } from '../domain/verification/manifest.js';
import type { AnchorEventView, ChainReader } from '../domain/verification/ports.js';
import { claimOfReceipt } from '../domain/verification/receipt.js';
import { RECEIPT_VERSION, REASON_STATUS, type ReasonCategory, type Receipt, type VerificationStatus } from '../domain/verification/types.js';
import { DrisError, toDrisError, type DrisErrorCode, type FieldError } from '../errors/dris-error.js';

/**
 * `dris verify <receipt.json>`: checks a receipt with nothing but a JSON-RPC endpoint of the chain
 * (and, optionally, any IPFS gateway), without the service. The hashes are recomputed here, the
 * proof walked here, the contract read over JSON-RPC, the manifest checked against its CID here;
 * the verdict is the one the service gives (`assess`), plus the receipt's own claims about its
 * anchoring (transaction, block, time, manifest CID), which only a receipt makes.
 */

export const VERIFY_USAGE = `usage: dris verify <receipt.json> --rpc <url> [--payload <file>] [--ipfs-gateway <url>] [--json] [--timeout-ms N]
  <receipt.json>        a receipt downloaded from dris (GET /api/v1/receipts/record)
  --rpc URL             JSON-RPC endpoint of the chain the receipt names (http or https)
  --payload FILE        the record's payload (the recordPayload object as ingested): recomputes its hash
  --ipfs-gateway URL    an IPFS gateway (dris's own, Kubo's, a public one): fetches the batch manifest,
                        checks it against its CID, and checks the record's leaf and the root in it
  --json                one JSON object instead of the readable report
  --timeout-ms N        bound on each JSON-RPC request and on the manifest fetch (default 30000)
exit status: 0 verified; 1 a check failed; 2 usage error, invalid input, or the chain or gateway unreadable`;

const DEFAULT_TIMEOUT_MS = 30_000;
const MAX_TIMEOUT_MS = 3_600_000;

export interface VerifyArgs {
  readonly receiptPath: string;
  readonly payloadPath?: string;
  readonly rpcUrl: string;
  readonly gatewayUrl?: string;
  readonly json: boolean;
  readonly timeoutMs: number;
}

function usageError(message: string): DrisError {
  return new DrisError('validation_failed', message, { extra: { usage: true } });
}

function httpUrl(value: string, option: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usageError(`${option} must be an http or https URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw usageError(`${option} must be an http or https URL`);
  return value;
}

/** 'help' for --help; DrisError('validation_failed', extra.usage) for anything else not runnable. */
export function parseVerifyArgs(argv: readonly string[]): VerifyArgs | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        payload: { type: 'string' },
        rpc: { type: 'string' },
        'ipfs-gateway': { type: 'string' },
        json: { type: 'boolean' },
        'timeout-ms': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw usageError(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help === true) return 'help';
  if (positionals.length === 0) throw usageError('verify needs a receipt file');
  if (positionals.length > 1) throw usageError(`verify takes one receipt file, not ${positionals.length}`);
  if (values.rpc === undefined || values.rpc === '') throw usageError('verify needs --rpc <url>: a JSON-RPC endpoint of the chain the receipt names');
  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (values['timeout-ms'] !== undefined) {
    const raw = values['timeout-ms'];
    timeoutMs = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS) throw usageError(`--timeout-ms must be an integer from 1 to ${MAX_TIMEOUT_MS}`);
  }
  if (values.payload === '') throw usageError('--payload needs a file');
  return {
    receiptPath: positionals[0] as string,
    rpcUrl: httpUrl(values.rpc, '--rpc'),
    json: values.json === true,
    timeoutMs,
    ...(values.payload === undefined ? {} : { payloadPath: values.payload }),
    ...(values['ipfs-gateway'] === undefined ? {} : { gatewayUrl: httpUrl(values['ipfs-gateway'], '--ipfs-gateway') }),
  };
}

/** What the verifier reaches the outside through; tests put fakes here. */
export interface VerifyDeps {
  readonly loadHashing: () => Promise<HashingBackend>;
  readonly connectChain: (options: AnchorReaderOptions) => Promise<ChainReader>;
  readonly fetchManifest: (gatewayUrl: string, cid: string, options: GatewayFetchOptions) => Promise<GatewayFetchResult>;
  readonly readFile: (path: string) => Promise<Uint8Array>;
}

export const defaultVerifyDeps: VerifyDeps = {
  loadHashing: async () => (await loadHashingBackend('auto')).backend,
  connectChain: (options) => AnchorReader.connect(options),
  fetchManifest: fetchVerified,
  readFile: (path) => readFile(path),
};

/** Each check: true held, false failed, null not run (not asked for, or not reachable). */
export interface VerifyChecks {
  receiptValid: boolean;
  payloadHashMatches: boolean | null;
  recordHashMatches: boolean | null;
  proofValid: boolean | null;
  /** The node is on the receipt's chainId. */
  chainIdMatches: boolean | null;
  /** A DrisAnchor contract is at the receipt's contractAddress. */
  contractFound: boolean | null;
  /** The contract's anchorOf(merkleRoot) knows the root. */
  anchoredOnChain: boolean | null;
  /** ...under the receipt's batchSeq. */
  onChainRootMatches: boolean | null;
  /** The Anchored event of batchSeq names the receipt's root, batchId, treeSize, transaction, block and time. */
  anchorEventMatches: boolean | null;
  /** The Anchored event commits to the receipt's manifestCid. */
  manifestCidMatchesChain: boolean | null;
  /** The gateway's bytes hash to the manifest CID (a gateway that fails this is not believed). */
  manifestMatchesCid: boolean | null;
  /** The manifest lists the record hash at leafIndex, with treeSize leaves. */
  hashMatchesIpfs: boolean | null;
  /** The root recomputed from the manifest's leaves is the receipt's root, which is on-chain. */
  merkleRootMatchesChain: boolean | null;
}

export interface ReceiptSummary {
  path: string;
  receiptVersion: number;
  hashScheme: string;
  tenantId: string;
  database: string;
  collection: string;
  recordId: string;
  recordVersion: string;
  operationType: string;
  payloadHash: string;
  recordHash: string;
  leafIndex: number;
  treeSize: number;
  proofLength: number;
  merkleRoot: string;
  batchId: string;
  batchSeq: number;
  manifestCid: string;
  chainId: number;
  contractAddress: string;
  chainTxHash: string;
  blockNumber: number;
  anchoredAt: string;
}

export interface ErrorSummary {
  code: DrisErrorCode;
  message: string;
  reason?: string;
  fieldErrors?: FieldError[];
}

export interface ChainReport {
  /** The endpoint's origin only: provider URLs often carry an API key in their path. */
  rpc: string;
  /** The node's chain id, when it answered. */
  chainId: number | null;
  contractAddress: string;
  headBlock: number | null;
  /** anchorOf(merkleRoot) as read now. */
  anchor: { batchSeq: number; anchoredAt: string } | null;
  /** The Anchored event of the receipt's batchSeq. */
  event: (AnchorEventView & { anchoredAt: string; confirmations: number | null }) | null;
  /** Receipt fields the event contradicts. */
  mismatches: string[];
  error?: ErrorSummary;
}

export interface IpfsReport {
  gateway: string;
  cid: string;
  url?: string;
  format?: GatewayFetchResult['format'];
  bytes?: number;
  manifest?: { batchId: string; batchSeq: number; treeSize: number; merkleRoot: string; leafAtIndex: string | null; recomputedRoot: string | null } | null;
  error?: ErrorSummary;
}

/** The --json answer. */
export interface VerifyReport {
  verified: boolean;
  verificationStatus: VerificationStatus;
  /** null only when the input could not be read as a receipt (then `error` says why). */
  reasonCategory: ReasonCategory | null;
  message: string;
  checkedAt: string;
  checks: VerifyChecks;
  receipt: ReceiptSummary | null;
  computed: {
    /** SHA-256(JCS(payload)) of the payload checked, when one was. */
    payloadHash: string | null;
    /** Where that payload came from: --payload, or the receipt itself (downloaded with its payload). */
    payloadSource: 'file' | 'receipt' | null;
    /** SHA-256(JCS(envelope)), with the computed payloadHash when there is one. */
    recordHash: string | null;
    /** The root recomputed from the manifest's leaves. */
    manifestRoot: string | null;
  };
  chain: ChainReport | null;
  ipfs: IpfsReport | null;
  error?: ErrorSummary;
}

const validateReceipt = typia.createValidate<Receipt>();

function emptyChecks(): VerifyChecks {
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

function summarizeError(err: unknown): ErrorSummary {
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

function inputFailure(err: unknown, checks: VerifyChecks = emptyChecks(), receipt: ReceiptSummary | null = null): VerifyReport {
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
  return {
    path,
    receiptVersion: r.receiptVersion,
    hashScheme: r.hashScheme,
    tenantId: r.tenantId,
    database: r.database,
    collection: r.collection,
    recordId: r.recordId,
    recordVersion: r.recordVersion,
    operationType: r.operationType,
    payloadHash: r.payloadHash,
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

function rpcOrigin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}

const isoOfSec = (sec: number): string => new Date(sec * 1000).toISOString();

function sameCid(a: string, b: string): boolean {
  if (a === b) return true;
  try {
    return parseCid(a).equals(parseCid(b));
  } catch {
    return false;
  }
}

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

interface ChainRead {
  readonly observation: ChainObservation | null;
  readonly report: ChainReport;
}

/** An error that means "nothing of dris at this address on this chain", not "the chain is unreadable". */
function isNoContract(err: unknown): boolean {
  if (!(err instanceof DrisError) || err.code !== 'config_invalid') return false;
  const reason = err.extra['reason'];
  return reason === 'no_contract' || reason === 'not_anchor_contract' || reason === 'bad_address';
}

async function readChain(args: VerifyArgs, deps: VerifyDeps, r: Receipt, checks: VerifyChecks): Promise<ChainRead> {
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

interface IpfsRead {
  /** As assess takes it: undefined not fetched, null unavailable. */
  readonly observation: ManifestObservation | null | undefined;
  readonly report: IpfsReport | null;
}

/**
 * Bytes that hash to the CID but are not a manifest are evidence against the receipt (its CID names
 * something else); assess sees them as a manifest with no leaves, which matches nothing.
 */
const NOT_A_MANIFEST: ManifestObservation = { merkleRoot: '', treeSize: 0, leaves: [] };

async function readManifest(args: VerifyArgs, deps: VerifyDeps, r: Receipt, checks: VerifyChecks): Promise<IpfsRead> {
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
  let fetched: GatewayFetchResult;
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

/** Gathers every observation, then lets `assess` decide; never throws. */
export async function verifyReceipt(args: VerifyArgs, deps: VerifyDeps = defaultVerifyDeps): Promise<VerifyReport> {
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

export interface VerifyIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const processIo: VerifyIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
};

/** The whole command: arguments to exit status. */
export async function verifyCommand(argv: readonly string[], io: VerifyIo = processIo, deps: VerifyDeps = defaultVerifyDeps): Promise<0 | 1 | 2> {
  let args: VerifyArgs | 'help';
  try {
    args = parseVerifyArgs(argv);
  } catch (err) {
    io.stderr(`dris verify: ${toDrisError(err).message}\n${VERIFY_USAGE}\n`);
    return 2;
  }
  if (args === 'help') {
    io.stdout(`${VERIFY_USAGE}\n`);
    return 0;
  }
  const report = await verifyReceipt(args, deps);
  io.stdout(args.json ? `${JSON.stringify(report, null, 2)}\n` : renderReport(report));
  return exitCodeOf(report);
}
