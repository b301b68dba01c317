import { createHash } from 'node:crypto';
import * as dagPb from '@ipld/dag-pb';
import { exporter, type ReadableStorage } from 'ipfs-unixfs-exporter';
import { importBytes, type ImporterOptions, type WritableStorage } from 'ipfs-unixfs-importer';
import { fixedSize } from 'ipfs-unixfs-importer/chunker';
import { balanced } from 'ipfs-unixfs-importer/layout';
import type { CID } from 'multiformats/cid';
import * as raw from 'multiformats/codecs/raw';
import { identity } from 'multiformats/hashes/identity';
import { sha256 } from 'multiformats/hashes/sha2';
import { DrisError, isDrisError } from '../../errors/dris-error.js';

/**
 * The manifest CID options of DECISIONS, shared by both Pinner adapters, so that the embedded store
 * and `ipfs add --cid-version=1 --raw-leaves --chunker=size-262144` (Kubo's balanced layout with at
 * most 174 links per node) give the same CID for the same bytes.
 */
export const CHUNK_SIZE_BYTES = 262_144;
export const MAX_LINKS_PER_NODE = 174;

export function manifestImporterOptions(): ImporterOptions {
  return {
    cidVersion: 1,
    rawLeaves: true,
    // A single-chunk file is its raw leaf, as Kubo does with raw leaves: no dag-pb wrapper.
    reduceSingleLeafToSelf: true,
    chunker: fixedSize({ chunkSize: CHUNK_SIZE_BYTES }),
    layout: balanced({ maxChildrenPerNode: MAX_LINKS_PER_NODE }),
    wrapWithDirectory: false,
  };
}

/** Imports bytes as a UnixFS file into `store` with the manifest options; returns the root CID. */
export async function importManifestBytes(bytes: Uint8Array, store: WritableStorage): Promise<CID> {
  const result = await importBytes(bytes, store, manifestImporterOptions());
  return result.cid;
}

/** The root CID `importManifestBytes` gives these bytes, text form, computed without a store. */
export async function manifestCid(bytes: Uint8Array): Promise<string> {
  return (await importManifestBytes(bytes, { put: (key) => Promise.resolve(key) })).toString();
}

export { parseCid } from '../../util/cid.js';

/** Only hashes this service can recompute can be served or read as verified. */
export function isVerifiableHash(cid: CID): boolean {
  return cid.multihash.code === sha256.code || cid.multihash.code === identity.code;
}

export function isIdentity(cid: CID): boolean {
  return cid.multihash.code === identity.code;
}

/** Whether `bytes` hash to the multihash of `cid` (sha2-256, or identity for inline CIDs). */
export function blockMatches(cid: CID, bytes: Uint8Array): boolean {
  const mh = cid.multihash;
  if (mh.code === identity.code) return Buffer.compare(Buffer.from(mh.digest), Buffer.from(bytes)) === 0;
  if (mh.code !== sha256.code) return false;
  const digest = createHash('sha256').update(bytes).digest();
  return digest.length === mh.digest.length && Buffer.compare(digest, Buffer.from(mh.digest)) === 0;
}

/** Reads one block by CID; implementations verify it against the CID before returning it. */
export type VerifiedBlockSource = (cid: CID, signal: AbortSignal | undefined) => Promise<Uint8Array>;

/**
 * The whole content of a UnixFS file (or raw block) through the exporter, every block coming from
 * `getBlock`, which verifies it: a mismatch anywhere fails the read instead of yielding wrong bytes.
 */
export async function catVerified(cid: CID, getBlock: VerifiedBlockSource, signal: AbortSignal | undefined): Promise<Uint8Array> {
  const storage: ReadableStorage = {
    get: async function* (key, options) {
      yield await getBlock(key, options?.signal ?? signal);
    },
  };
  const opts = signal === undefined ? {} : { signal };
  const entry = await exporter(cid, storage, opts);
  if (entry.type === 'directory' || entry.type === 'object') {
    throw new DrisError('validation_failed', `${cid.toString()} is not a file`);
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of entry.content(opts)) chunks.push(chunk);
  return chunks.length === 1 ? (chunks[0] as Uint8Array) : Buffer.concat(chunks);
}

/** The CIDs a block links to, in link order: dag-pb links; raw and identity blocks have none. */
export function linksOf(cid: CID, bytes: Uint8Array): CID[] {
  if (cid.code === raw.code || isIdentity(cid)) return [];
  if (cid.code !== dagPb.code) return [];
  let node: dagPb.PBNode;
  try {
    node = dagPb.decode(bytes);
  } catch (err) {
    throw new DrisError('not_found', `${cid.toString()} is not a dag-pb block`, { cause: err });
  }
  return node.Links.map((l) => l.Hash);
}

/**
 * Turns what the exporter and an aborted signal throw into DrisErrors. DrisErrors from the block
 * source pass through; the exporter's own "not UnixFS" and "no resolver" mean nothing readable
 * exists under that CID.
 */
export function translateReadError(err: unknown, cid: string, signal: AbortSignal | undefined): DrisError {
  if (isDrisError(err)) return err;
  if (signal?.aborted === true) return new DrisError('timeout', `reading ${cid} timed out`, { cause: err });
  const name = err instanceof Error ? err.name : '';
  if (name === 'NotUnixFSError' || name === 'NoResolverError' || name === 'NotFoundError') {
    return new DrisError('not_found', `no readable content under ${cid}`, { cause: err });
  }
  if (name === 'OverReadError' || name === 'UnderReadError') {
    return new DrisError('internal_error', `the DAG of ${cid} is inconsistent`, { cause: err });
  }
  return new DrisError('internal_error', `reading ${cid} failed`, { cause: err });
}
