import { create, type KuboRPCClient } from 'kubo-rpc-client';
import type { CID } from 'multiformats/cid';
import { DrisError, isDrisError } from '../../errors/dris-error.js';
import type { Pinner } from '../../domain/pipeline/ports.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { CHUNK_SIZE_BYTES, blockMatches, catVerified, importManifestBytes, isIdentity, isVerifiableHash, manifestCid, parseCid, translateReadError } from './unixfs.js';

export interface KuboPinnerOptions {
  /** Kubo RPC endpoint (IPFS_API_URL), e.g. `http://127.0.0.1:5001`. */
  readonly url: string;
  /** Bound on add and check, and on cat when the caller gives none. Default 30 s. */
  readonly requestTimeoutMs?: number;
  /**
   * Read only what this node holds (Kubo's `offline` request option, default true). The manifests
   * are pinned on this node, so a block it lacks is reported at once as not_found instead of being
   * searched for on the network until the timeout.
   */
  readonly offlineReads?: boolean;
  readonly logger?: Logger;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/**
 * Manifests on a Kubo node through its RPC API. `add` pins with the manifest CID options and checks
 * that Kubo's CID is the one the embedded node computes for the same bytes; `cat` fetches block by
 * block and re-hashes each against its CID, so a faulty or hostile node cannot hand back other bytes.
 */
export class KuboPinner implements Pinner {
  private readonly client: KuboRPCClient;
  private readonly timeoutMs: number;
  private readonly offlineReads: boolean;
  private readonly log: Logger;

  constructor(private readonly options: KuboPinnerOptions) {
    let url: URL;
    try {
      url = new URL(options.url);
    } catch (err) {
      throw new DrisError('config_invalid', 'IPFS_API_URL is not a URL', { cause: err });
    }
    this.client = create({ url });
    this.timeoutMs = options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.offlineReads = options.offlineReads ?? true;
    this.log = options.logger ?? componentLogger('ipfs-kubo');
  }

  cidOf(bytes: Uint8Array): Promise<string> {
    return manifestCid(bytes);
  }

  async add(bytes: Uint8Array): Promise<string> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    // Computed locally with no store: it costs one hash pass and proves the adapters agree.
    const expected = await importManifestBytes(bytes, { put: (key) => Promise.resolve(key) });
    let added: CID;
    try {
      const result = await this.client.add(bytes, {
        cidVersion: 1,
        rawLeaves: true,
        chunker: `size-${CHUNK_SIZE_BYTES}`,
        hashAlg: 'sha2-256',
        pin: true,
        signal,
      });
      added = result.cid;
    } catch (err) {
      throw this.translate(err, 'add', signal);
    }
    const addedText = added.toString();
    const expectedText = expected.toString();
    if (addedText !== expectedText) {
      this.log.error({ kuboCid: addedText, expectedCid: expectedText }, 'Kubo gave another CID than the manifest options give');
      throw new DrisError('config_invalid', 'the Kubo node does not produce manifest CIDs with the configured UnixFS options (check its Import settings)');
    }
    return addedText;
  }

  async cat(cid: string, options: { readonly timeoutMs?: number } = {}): Promise<Uint8Array> {
    const parsed = parseCid(cid);
    const signal = AbortSignal.timeout(options.timeoutMs ?? this.timeoutMs);
    try {
      return await catVerified(parsed, (c, s) => this.getBlock(c, s ?? signal), signal);
    } catch (err) {
      throw translateReadError(err, cid, signal);
    }
  }

  async check(): Promise<void> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    try {
      await this.client.version({ signal });
    } catch (err) {
      throw this.translate(err, 'check', signal);
    }
  }

  close(): Promise<void> {
    // The client holds no resources of its own: requests go through the global fetch dispatcher.
    return Promise.resolve();
  }

  /** One block from the node, verified against its CID. */
  async getBlock(cid: CID, signal: AbortSignal): Promise<Uint8Array> {
    if (isIdentity(cid)) return cid.multihash.digest;
    if (!isVerifiableHash(cid)) {
      throw new DrisError('validation_failed', `${cid.toString()} uses a hash function this service cannot verify`);
    }
    let bytes: Uint8Array;
    try {
      // `offline` is one of Kubo's global request options; the client's typings do not list it.
      const requestOptions = { signal, offline: this.offlineReads };
      bytes = await this.client.block.get(cid, requestOptions);
    } catch (err) {
      throw this.translate(err, `block/get ${cid.toString()}`, signal);
    }
    if (!blockMatches(cid, bytes)) {
      this.log.error({ cid: cid.toString(), url: this.options.url }, 'Kubo returned a block that does not match its CID');
      throw new DrisError('dependency_unavailable', `the IPFS node returned a block that does not match ${cid.toString()}`);
    }
    return bytes;
  }

  private translate(err: unknown, what: string, signal: AbortSignal): DrisError {
    if (isDrisError(err)) return err;
    const name = err instanceof Error ? err.name : '';
    const message = err instanceof Error ? err.message : String(err);
    if (signal.aborted || name === 'TimeoutError' || name === 'AbortError') {
      return new DrisError('timeout', `IPFS ${what} timed out`, { cause: err });
    }
    if (name === 'HTTPError') {
      // Kubo answers 500 with a message; these are the ones that mean "this node does not have it".
      if (/not found|could not find|no link named|block was not found/i.test(message)) {
        return new DrisError('not_found', `IPFS ${what}: not found on the node`, { cause: err });
      }
      if (/invalid (cid|path)|selected encoding not supported|illegal base/i.test(message)) {
        return new DrisError('validation_failed', `IPFS ${what}: the node refused the request`, { cause: err });
      }
      return new DrisError('dependency_unavailable', `IPFS ${what} failed on the node`, { cause: err });
    }
    // fetch() failures (refused, reset, DNS) are TypeErrors whose cause carries the socket error.
    return new DrisError('dependency_unavailable', `IPFS node unreachable during ${what}`, { cause: err });
  }
}
