import { CarReader } from '@ipld/car';
import type { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { DrisError, isDrisError } from '../../errors/dris-error.js';
import { blockMatches, catVerified, isIdentity, isVerifiableHash, parseCid, translateReadError } from './unixfs.js';

/**
 * A client of IPFS Trustless Gateways (dris's own `/ipfs/{cid}`, Kubo's gateway, any public one)
 * that trusts the gateway with nothing: every block it answers is hashed and compared with its
 * CID before it is used. A single-block file (raw CID, every manifest up to 256 KiB) is asked for
 * as `application/vnd.ipld.raw`; a larger one (dag-pb root) as `application/vnd.ipld.car`, whose
 * blocks are checked one by one while the UnixFS exporter assembles the file.
 */

export interface GatewayFetchOptions {
  /** Bound on the whole fetch. Default 30 s. */
  readonly timeoutMs?: number;
  /** Largest answer read. Default 64 MiB. */
  readonly maxBytes?: number;
  /** For tests; globalThis.fetch when unset. */
  readonly fetch?: typeof fetch;
}

export interface GatewayFetchResult {
  readonly bytes: Uint8Array;
  /** How the content was asked for. */
  readonly format: 'raw' | 'car' | 'identity';
  /** The URL it came from. */
  readonly url: string;
}

/** Why a fetch that reached the gateway failed (extra.reason of its DrisError). */
export type GatewayFailure = 'cid_mismatch' | 'incomplete_car' | 'bad_car' | 'http_error' | 'too_large';

const RAW_TYPE = 'application/vnd.ipld.raw';
const CAR_TYPE = 'application/vnd.ipld.car';

/**
 * The file under `cidText`, verified against it. not_found: the gateway does not have it;
 * dependency_unavailable: unreachable, an error status, or bytes that do not match the CID (a
 * faulty or lying gateway: try another); timeout; validation_failed: not a CID, or one whose hash
 * cannot be recomputed here.
 */
export async function fetchVerified(gatewayUrl: string, cidText: string, options: GatewayFetchOptions = {}): Promise<GatewayFetchResult> {
  const cid = parseCid(cidText);
  if (!isVerifiableHash(cid)) throw new DrisError('validation_failed', `${cidText} uses a hash this verifier cannot recompute`);
  if (isIdentity(cid)) return { bytes: cid.multihash.digest, format: 'identity', url: '' };
  const base = gatewayUrl.replace(/\/+$/, '');
  const signal = AbortSignal.timeout(options.timeoutMs ?? 30_000);
  const get = options.fetch ?? globalThis.fetch;
  const maxBytes = options.maxBytes ?? 64 * 1024 * 1024;
  const canonical = cid.toString();
  if (cid.code === raw.code) {
    const url = `${base}/ipfs/${canonical}?format=raw`;
    const bytes = await download(get, url, RAW_TYPE, signal, maxBytes);
    if (!blockMatches(cid, bytes)) {
      throw new DrisError('dependency_unavailable', `the gateway answered bytes that do not hash to ${canonical}`, { extra: { reason: 'cid_mismatch' satisfies GatewayFailure, url } });
    }
    return { bytes, format: 'raw', url };
  }
  const url = `${base}/ipfs/${canonical}?format=car`;
  const car = await download(get, url, CAR_TYPE, signal, maxBytes);
  const blocks = await carBlocks(car, url);
  const getBlock = (want: CID): Promise<Uint8Array> => {
    const bytes = blocks.get(want.multihash.bytes.toString());
    if (bytes === undefined) {
      return Promise.reject(new DrisError('dependency_unavailable', `the gateway's CAR lacks block ${want.toString()}`, { extra: { reason: 'incomplete_car' satisfies GatewayFailure, url } }));
    }
    if (!blockMatches(want, bytes)) {
      return Promise.reject(new DrisError('dependency_unavailable', `the gateway's CAR holds a block that does not hash to ${want.toString()}`, { extra: { reason: 'cid_mismatch' satisfies GatewayFailure, url } }));
    }
    return Promise.resolve(bytes);
  };
  try {
    return { bytes: await catVerified(cid, getBlock, signal), format: 'car', url };
  } catch (err) {
    const e = translateReadError(err, canonical, signal);
    // The exporter failing on verified blocks means the gateway sent a DAG that is not this file.
    if (e.code === 'not_found' || e.code === 'internal_error') {
      throw new DrisError('dependency_unavailable', `the gateway's CAR does not hold the file ${canonical}`, { cause: err, extra: { reason: 'bad_car' satisfies GatewayFailure, url } });
    }
    throw e;
  }
}

/** Blocks of a CAR by multihash, so a block named by a CIDv0 or v1 link is found alike. */
async function carBlocks(car: Uint8Array, url: string): Promise<Map<string, Uint8Array>> {
  const blocks = new Map<string, Uint8Array>();
  try {
    const reader = await CarReader.fromBytes(car);
    for await (const block of reader.blocks()) blocks.set(block.cid.multihash.bytes.toString(), block.bytes);
  } catch (err) {
    throw new DrisError('dependency_unavailable', 'the gateway did not answer a readable CAR', { cause: err, extra: { reason: 'bad_car' satisfies GatewayFailure, url } });
  }
  return blocks;
}

async function download(get: typeof fetch, url: string, accept: string, signal: AbortSignal, maxBytes: number): Promise<Uint8Array> {
  let res: Response;
  try {
    res = await get(url, { headers: { accept }, signal, redirect: 'follow' });
  } catch (err) {
    throw fetchError(err, url, signal);
  }
  if (res.status === 404 || res.status === 410) {
    await res.body?.cancel();
    throw new DrisError('not_found', `the gateway does not have ${url}`, { extra: { url, status: res.status } });
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new DrisError('dependency_unavailable', `the gateway answered ${res.status}`, { extra: { reason: 'http_error' satisfies GatewayFailure, url, status: res.status } });
  }
  const declared = Number(res.headers.get('content-length') ?? '0');
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw new DrisError('dependency_unavailable', `the gateway's answer is larger than ${maxBytes} bytes`, { extra: { reason: 'too_large' satisfies GatewayFailure, url } });
  }
  if (res.body === null) return new Uint8Array(0);
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for await (const chunk of res.body) {
      total += chunk.byteLength;
      if (total > maxBytes) {
        // Leaving the loop by a throw cancels the stream.
        throw new DrisError('dependency_unavailable', `the gateway's answer is larger than ${maxBytes} bytes`, { extra: { reason: 'too_large' satisfies GatewayFailure, url } });
      }
      chunks.push(chunk);
    }
  } catch (err) {
    throw fetchError(err, url, signal);
  }
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

function fetchError(err: unknown, url: string, signal: AbortSignal): DrisError {
  if (isDrisError(err)) return err;
  if (signal.aborted) return new DrisError('timeout', `the gateway did not answer ${url} in time`, { cause: err, extra: { url } });
  return new DrisError('dependency_unavailable', `the gateway at ${url} is unreachable`, { cause: err, extra: { url } });
}
