import { constants as fsConstants } from 'node:fs';
import { access, open, readFile } from 'node:fs/promises';
import path from 'node:path';
import * as CarBufferWriter from '@ipld/car/buffer-writer';
import { FsBlockstore } from 'blockstore-fs';
import { NextToLast } from 'blockstore-fs/sharding';
import type { CID } from 'multiformats/cid';
import { DrisError } from '../../errors/dris-error.js';
import type { Pinner } from '../../domain/pipeline/ports.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import {
  blockMatches,
  catVerified,
  importManifestBytes,
  isIdentity,
  isVerifiableHash,
  linksOf,
  manifestCid,
  parseCid,
  translateReadError,
} from './unixfs.js';

export interface EmbeddedPinnerOptions {
  /** Directory of the block store, e.g. `${DRIS_DATA_DIR}/ipfs`; created when missing. */
  readonly directory: string;
  readonly logger?: Logger;
}

export interface CarOptions {
  /** `all` (default): the whole DAG under the root; `block`: the root block only. */
  readonly scope?: 'all' | 'block';
  /** Whether a block met twice in the walk is written twice (CAR `dups=y`). Default false. */
  readonly duplicates?: boolean;
  readonly signal?: AbortSignal;
}

interface Block {
  readonly cid: CID;
  readonly bytes: Uint8Array;
}

/**
 * The embedded IPFS node: a content-addressed block store on disk (blockstore-fs layout, one file
 * per block named by its multihash) written with the manifest UnixFS options.
 *
 * Pinning: nothing is ever removed from this store, so every block added is kept for as long as the
 * data directory lives; `add` is the pin and there is no pin set or garbage collector to consult.
 *
 * Every read re-hashes each block against its CID, so a block damaged on disk fails the read
 * (DrisError 'internal_error') rather than returning wrong bytes; a missing block is 'not_found'.
 */
export class EmbeddedPinner implements Pinner {
  private readonly log: Logger;
  private readonly sharding = new NextToLast();
  /**
   * Adds run concurrently, each block file written and synced by one at a time: blockstore-fs
   * writes a block through one fixed temporary name beside it.
   */
  private readonly writing = new Map<string, Promise<unknown>>();
  private readonly adding = new Set<Promise<unknown>>();
  private closed = false;

  private constructor(
    private readonly store: FsBlockstore,
    readonly directory: string,
    logger: Logger,
  ) {
    this.log = logger;
  }

  static async open(options: EmbeddedPinnerOptions): Promise<EmbeddedPinner> {
    const directory = path.resolve(options.directory);
    const store = new FsBlockstore(path.join(directory, 'blocks'), { createIfMissing: true });
    try {
      await store.open();
    } catch (err) {
      throw new DrisError('dependency_unavailable', `cannot open the IPFS block store in ${directory}`, { cause: err });
    }
    return new EmbeddedPinner(store, directory, options.logger ?? componentLogger('ipfs-embedded'));
  }

  add(bytes: Uint8Array): Promise<string> {
    const run = this.addNow(bytes);
    const settled = run.catch(() => undefined);
    this.adding.add(settled);
    void settled.then(() => this.adding.delete(settled));
    return run;
  }

  cidOf(bytes: Uint8Array): Promise<string> {
    return manifestCid(bytes);
  }

  async cat(cid: string, options: { readonly timeoutMs?: number } = {}): Promise<Uint8Array> {
    this.assertOpen();
    const parsed = parseCid(cid);
    const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
    try {
      return await catVerified(parsed, (c, s) => this.readBlock(c, s), signal);
    } catch (err) {
      throw translateReadError(err, cid, signal);
    }
  }

  /** One block, verified against its CID: the trustless gateway's `application/vnd.ipld.raw`. */
  async getBlock(cid: string | CID, signal?: AbortSignal): Promise<Uint8Array> {
    this.assertOpen();
    const parsed = typeof cid === 'string' ? parseCid(cid) : cid;
    try {
      return await this.readBlock(parsed, signal);
    } catch (err) {
      throw translateReadError(err, parsed.toString(), signal);
    }
  }

  /**
   * A CARv1 of the DAG under `cid`, its only root: blocks in depth-first pre-order (the order the
   * exporter walks them), each verified before it is written. Built whole in memory (manifests are
   * small), so a missing or damaged block fails the call before any byte is sent.
   */
  async car(cid: string | CID, options: CarOptions = {}): Promise<Uint8Array> {
    this.assertOpen();
    const root = typeof cid === 'string' ? parseCid(cid) : cid;
    try {
      return await this.buildCar(root, options);
    } catch (err) {
      throw translateReadError(err, root.toString(), options.signal);
    }
  }

  private async buildCar(root: CID, options: CarOptions): Promise<Uint8Array> {
    const blocks: Block[] = [];
    const seen = new Set<string>();
    // Explicit stack instead of recursion: a deep DAG cannot overflow the call stack.
    const stack: CID[] = [root];
    while (stack.length > 0) {
      const next = stack.pop() as CID;
      const key = next.toString();
      const first = !seen.has(key);
      if (!first && options.duplicates !== true) continue;
      seen.add(key);
      // The trustless gateway spec forbids identity blocks in a CAR: their bytes are in the CID.
      if (isIdentity(next)) continue;
      const bytes = await this.readBlock(next, options.signal);
      blocks.push({ cid: next, bytes });
      if (options.scope === 'block') break;
      const links = linksOf(next, bytes);
      for (let i = links.length - 1; i >= 0; i--) stack.push(links[i] as CID);
    }
    const headerSize = CarBufferWriter.headerLength({ roots: [root] });
    const total = blocks.reduce((n, b) => n + CarBufferWriter.blockLength(b), headerSize);
    const writer = CarBufferWriter.createWriter(new ArrayBuffer(total), { roots: [root], headerSize });
    for (const b of blocks) writer.write(b);
    return writer.close();
  }

  async check(): Promise<void> {
    this.assertOpen();
    try {
      await access(this.store.path, fsConstants.R_OK | fsConstants.W_OK);
    } catch (err) {
      throw new DrisError('dependency_unavailable', 'the IPFS block store is not writable', { cause: err });
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all([...this.adding]);
    await this.store.close();
  }

  private async addNow(bytes: Uint8Array): Promise<string> {
    this.assertOpen();
    const touchedDirs = new Set<string>();
    try {
      const cid = await importManifestBytes(bytes, {
        put: async (key, value, options) => {
          const block = await collect(value);
          const file = this.blockPath(key);
          // A block another add wrote is synced here too: this add answers only for durable blocks.
          await this.exclusive(file, async () => {
            if (!(await this.holdsIntact(key, file))) await this.store.put(key, block, options);
            await fsyncPath(file);
          });
          touchedDirs.add(path.dirname(file));
          return key;
        },
      });
      // The renames that put the blocks in place are durable only once their directories are synced.
      await Promise.all([...touchedDirs].map((dir) => fsyncPath(dir)));
      if (touchedDirs.size > 0) await fsyncPath(this.store.path);
      return cid.toString();
    } catch (err) {
      if (err instanceof DrisError) throw err;
      throw new DrisError('dependency_unavailable', 'writing to the IPFS block store failed', { cause: err });
    }
  }

  /** Runs `task` once the writes of `file` queued before it have ended. */
  private async exclusive(file: string, task: () => Promise<void>): Promise<void> {
    const before = this.writing.get(file) ?? Promise.resolve();
    const run = before.then(task);
    const settled = run.catch(() => undefined);
    this.writing.set(file, settled);
    try {
      await run;
    } finally {
      if (this.writing.get(file) === settled) this.writing.delete(file);
    }
  }

  /** Whether the block is already stored with the right bytes (a damaged copy is rewritten). */
  private async holdsIntact(cid: CID, file: string): Promise<boolean> {
    try {
      return blockMatches(cid, await readFile(file));
    } catch {
      return false;
    }
  }

  private async readBlock(cid: CID, signal: AbortSignal | undefined): Promise<Uint8Array> {
    signal?.throwIfAborted();
    if (isIdentity(cid)) return cid.multihash.digest;
    // Only sha2-256 blocks are ever written here; a CID under another hash cannot be in the store.
    if (!isVerifiableHash(cid)) throw new DrisError('not_found', `${cid.toString()} is not in the IPFS block store`);
    let bytes: Uint8Array;
    try {
      // Read directly from blockstore-fs's layout: its own get() reports every failure, EIO included,
      // as "not found", and a disk fault must not look like an absent manifest.
      bytes = await readFile(this.blockPath(cid), signal === undefined ? {} : { signal });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') {
        throw new DrisError('not_found', `${cid.toString()} is not in the IPFS block store`, { cause: err });
      }
      if (signal?.aborted === true) throw new DrisError('timeout', `reading ${cid.toString()} timed out`, { cause: err });
      throw new DrisError('internal_error', `reading block ${cid.toString()} failed`, { cause: err });
    }
    if (!blockMatches(cid, bytes)) {
      this.log.error({ cid: cid.toString(), file: this.blockPath(cid) }, 'IPFS block does not match its CID: the stored copy is damaged');
      throw new DrisError('internal_error', `block ${cid.toString()} failed verification against its CID`);
    }
    return bytes;
  }

  private blockPath(cid: CID): string {
    const { dir, file } = this.sharding.encode(cid);
    return path.join(this.store.path, dir, file);
  }

  private assertOpen(): void {
    if (this.closed) throw new DrisError('dependency_unavailable', 'the IPFS block store is closed');
  }
}

async function collect(value: Uint8Array | Iterable<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  if (value instanceof Uint8Array) return value;
  const parts: Uint8Array[] = [];
  for await (const part of value) parts.push(part);
  return Buffer.concat(parts);
}

async function fsyncPath(p: string): Promise<void> {
  const handle = await open(p, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
