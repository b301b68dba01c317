import { CID } from 'multiformats/cid';
import { DrisError } from '../../../errors/dris-error.js';
import type { Reply, RequestContext, Route } from '../../router.js';
import { route, type Handler } from '../../route-spec.js';
import type { GatewayContent } from '../../services.js';
import { choice } from '../../query.js';

/**
 * `GET /ipfs/{cid}` as a Trustless Gateway (IPFS specs, http-gateways/trustless-gateway) over the
 * embedded block store, so anyone can fetch a manifest and check it against its CID without trusting
 * dris: `application/vnd.ipld.raw` answers one block, `application/vnd.ipld.car` the whole DAG
 * (CARv1, depth-first, no duplicates unless asked), anything else the file's bytes. Public: manifests
 * hold hashes only. Served only by a process with the embedded IPFS node (no DRIS_IPFS_API_URL).
 */

export const RAW_CONTENT_TYPE = 'application/vnd.ipld.raw';
export const CAR_CONTENT_TYPE = 'application/vnd.ipld.car';

export interface IpfsGatewayOptions {
  /** Bound on reading one answer from the store. Default 30 s. */
  readonly readTimeoutMs?: number;
}

interface CarRequest {
  readonly scope: 'all' | 'block';
  readonly duplicates: boolean;
}

type Wanted = { readonly kind: 'raw' } | { readonly kind: 'car'; readonly car: CarRequest } | { readonly kind: 'file' };

interface MediaRange {
  readonly type: string;
  readonly params: ReadonlyMap<string, string>;
  readonly q: number;
}

const IMMUTABLE = 'public, max-age=29030400, immutable';
const bytes = { type: 'string', contentMediaType: 'application/octet-stream' };

export const GetIpfsContent = route('GET /ipfs/:cid', 'GetIpfsContent', 'IPFS', 'A manifest from the embedded IPFS node (trustless gateway)', {
  auth: 'none',
  description:
    'Served only when the embedded IPFS node is used (no DRIS_IPFS_API_URL); otherwise 404. `format` (or the Accept header) chooses one raw block, a CAR of the DAG, or the file itself. ' +
    'CAR parameters: car-version (1), car-order (dfs, unk), car-dups (y, n), dag-scope (block, entity, all); entity-bytes is refused.',
  pathParams: { cid: 'CID of the content (CIDv1 base32 such as bafy…, or CIDv0 Qm…).' },
  // Documented here; read by negotiate(), where `format` and the Accept header meet.
  query: {
    format: choice(['raw', 'car'], 'raw: one block; car: the DAG as a CAR (overrides Accept).'),
    'car-version': choice(['1'], 'CAR version.'),
    'car-order': choice(['dfs', 'unk'], 'Block order of the CAR.'),
    'car-dups': choice(['y', 'n'], 'Whether repeated blocks are written again.'),
    'dag-scope': choice(['block', 'entity', 'all'], 'What of the DAG the CAR holds.'),
  },
  responses: {
    200: {
      description: 'The content: a block, a CAR or the file (JSON for a manifest); immutable, cacheable.',
      media: { 'application/json': { type: 'object' }, 'application/octet-stream': bytes, [RAW_CONTENT_TYPE]: bytes, [CAR_CONTENT_TYPE]: bytes },
      headers: ['Cache-Control', 'Etag', 'Content-Location', 'X-Ipfs-Path', 'X-Ipfs-Roots'],
    },
    404: { description: 'The store does not hold this CID (or this process has no embedded IPFS node).', schema: 'error' },
  },
  bind: (services) => (services.gateway === undefined ? null : gatewayHandler(services.gateway.content, services.gateway.readTimeoutMs)),
});

/** The gateway route over a block store (the embedded pinner). */
export function ipfsGatewayRoutes(content: GatewayContent, options: IpfsGatewayOptions = {}): Route[] {
  const handle = gatewayHandler(content, options.readTimeoutMs ?? 30_000);
  return [{ method: 'GET', pattern: GetIpfsContent.path, operationId: GetIpfsContent.operationId, auth: 'none', handle }];
}

function parseCid(text: string): CID {
  try {
    return CID.parse(text);
  } catch (err) {
    throw new DrisError('validation_failed', 'not a valid CID', { cause: err, fields: [{ path: 'cid', code: 'invalid_format', message: 'must be a CID (CIDv1 base32 such as bafy…/bafk…, or CIDv0 Qm…)' }] });
  }
}

function gatewayHandler(pinner: GatewayContent, readTimeoutMs: number): Handler {
  return async (ctx) => {
    const cidText = ctx.params['cid'] ?? '';
    const canonical = parseCid(cidText).toString();
    const wanted = negotiate(ctx);
    const signal = AbortSignal.timeout(readTimeoutMs);
    const headers: Record<string, string> = {
      'Cache-Control': IMMUTABLE,
      'X-Ipfs-Path': `/ipfs/${cidText}`,
      'X-Ipfs-Roots': canonical,
      'X-Content-Type-Options': 'nosniff',
      'Access-Control-Allow-Origin': '*',
      Vary: 'Accept',
    };
    const formatGiven = ctx.query.get('format') !== null;
    switch (wanted.kind) {
      case 'raw': {
        const block = await pinner.getBlock(canonical, signal);
        headers['Etag'] = `"${canonical}.raw"`;
        headers['Content-Disposition'] = `attachment; filename="${canonical}.bin"`;
        if (!formatGiven) headers['Content-Location'] = `/ipfs/${cidText}?format=raw`;
        return reply(block, RAW_CONTENT_TYPE, headers);
      }
      case 'car': {
        const car = await pinner.car(canonical, { scope: wanted.car.scope, duplicates: wanted.car.duplicates, signal });
        const dups = wanted.car.duplicates ? 'y' : 'n';
        headers['Etag'] = `"${canonical}.car.dfs.${dups}.${wanted.car.scope}"`;
        headers['Content-Disposition'] = `attachment; filename="${canonical}.car"`;
        if (!formatGiven) headers['Content-Location'] = `/ipfs/${cidText}?format=car`;
        return reply(car, `${CAR_CONTENT_TYPE}; version=1; order=dfs; dups=${dups}`, headers);
      }
      case 'file': {
        const bytes = await pinner.cat(canonical, { timeoutMs: readTimeoutMs });
        headers['Etag'] = `"${canonical}"`;
        return reply(bytes, looksLikeJson(bytes) ? 'application/json' : 'application/octet-stream', headers);
      }
    }
  };
}

function reply(bytes: Uint8Array, contentType: string, headers: Record<string, string>): Reply {
  return { status: 200, body: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), contentType, headers };
}

/** `format` wins over `Accept` (trustless gateway spec); unknown formats are refused, not guessed. */
function negotiate(ctx: RequestContext): Wanted {
  const format = ctx.query.get('format');
  if (format !== null) {
    if (format === 'raw') return { kind: 'raw' };
    if (format === 'car') return { kind: 'car', car: carRequest(ctx, new Map()) };
    throw badParam('format', 'must be raw or car');
  }
  const ranges = parseAccept(ctx.headers.accept ?? '');
  for (const range of ranges) {
    if (range.type === RAW_CONTENT_TYPE) return { kind: 'raw' };
    if (range.type === CAR_CONTENT_TYPE) return { kind: 'car', car: carRequest(ctx, range.params) };
    // Any other acceptable type (*/*, application/json, …) is served the file itself.
    return { kind: 'file' };
  }
  return { kind: 'file' };
}

/** CAR parameters from the Accept media range, overridden by the `car-*` query parameters. */
function carRequest(ctx: RequestContext, params: ReadonlyMap<string, string>): CarRequest {
  const q = ctx.query;
  const version = q.get('car-version') ?? params.get('version') ?? '1';
  if (version !== '1') throw badParam('car-version', 'only CAR version 1 is served');
  const order = q.get('car-order') ?? params.get('order') ?? 'dfs';
  if (order !== 'dfs' && order !== 'unk') throw badParam('car-order', 'must be dfs or unk');
  const dups = q.get('car-dups') ?? params.get('dups') ?? 'n';
  if (dups !== 'y' && dups !== 'n') throw badParam('car-dups', 'must be y or n');
  const scope = q.get('dag-scope') ?? 'all';
  if (scope !== 'all' && scope !== 'entity' && scope !== 'block') throw badParam('dag-scope', 'must be block, entity or all');
  if (q.get('entity-bytes') !== null) throw badParam('entity-bytes', 'byte ranges are not served; fetch the whole manifest');
  // A manifest is one UnixFS file, whose entity is its whole DAG.
  return { scope: scope === 'block' ? 'block' : 'all', duplicates: dups === 'y' };
}

/** RFC 9110 §12.5.1 media ranges, best first (stable for equal q), q=0 dropped. */
function parseAccept(header: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const part of header.split(',')) {
    const [typePart, ...paramParts] = part.split(';');
    const type = (typePart ?? '').trim().toLowerCase();
    if (type === '') continue;
    const params = new Map<string, string>();
    let q = 1;
    for (const p of paramParts) {
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const key = p.slice(0, eq).trim().toLowerCase();
      const value = p.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
      if (key === 'q') {
        const n = Number(value);
        q = Number.isFinite(n) ? n : 0;
      } else {
        params.set(key, value);
      }
    }
    if (q > 0) out.push({ type, params, q });
  }
  return out.map((r, i) => ({ r, i })).sort((a, b) => b.r.q - a.r.q || a.i - b.i).map((x) => x.r);
}

function badParam(name: string, message: string): DrisError {
  return new DrisError('validation_failed', `${name} ${message}`, { fields: [{ path: name, code: 'unsupported', message }] });
}

function looksLikeJson(bytes: Uint8Array): boolean {
  let i = 0;
  while (i < bytes.length && (bytes[i] === 0x20 || bytes[i] === 0x0a || bytes[i] === 0x0d || bytes[i] === 0x09)) i++;
  if (bytes[i] !== 0x7b && bytes[i] !== 0x5b) return false;
  try {
    JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
    return true;
  } catch {
    return false;
  }
}
