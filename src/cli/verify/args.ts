import { parseArgs } from 'node:util';
import type { VerifyArgs } from '../../app/offline-verify/types.js';
import { DrisError } from '../../errors/dris-error.js';

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
