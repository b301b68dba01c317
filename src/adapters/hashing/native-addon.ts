import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DrisError } from '../../errors/dris-error.js';

/** The native addon (native/, napi-rs): its interface, where its file is, and its loading. */

/** What native/src/lib.rs exports (napi-rs turns snake_case into camelCase). */
export interface AllProofsNative {
  readonly root: Buffer;
  readonly hashes: Buffer;
  readonly offsets: Uint32Array;
}

export interface NativeAddon {
  /** Encoded as Prepared::encode_into in native/src/lib.rs documents. */
  prepareBody(body: Uint8Array, bulk: boolean): Buffer;
  /** The same answer written into `out` from `offset` on; its length, or minus the length needed. */
  prepareBodyAt(body: Uint8Array, bulk: boolean, out: Uint8Array, offset: number): number;
  prepareBodyAsync(body: Uint8Array, bulk: boolean): Promise<Buffer>;
  sha256Lines(text: string): string;
  /**
   * recordHash of each envelope, 64 hex digits each into `out`: the values in sorted member order
   * are the code units of `units` cut at `lengths` (ten per envelope, -1 for null). False when the
   * batch needs the checked path.
   */
  envelopeHashesUtf16(units: Uint16Array, lengths: Int32Array, out: Uint8Array): boolean;
  sha256Hex(data: Uint8Array): string;
  sha256(data: Uint8Array): Buffer;
  /** SHA-256 of `data` into `out` at `offset`; false when `out` has no 32 bytes there. */
  sha256Into(data: Uint8Array, out: Uint8Array, offset: number): boolean;
  canonicalizeJson(text: Uint8Array): string;
  merkleRoot(data: Uint8Array, offsets?: Uint32Array | null): Buffer;
  merkleAllProofs(data: Uint8Array, offsets?: Uint32Array | null): AllProofsNative;
  merkleAllProofsAsync(data: Uint8Array, offsets?: Uint32Array | null): Promise<AllProofsNative>;
  merkleInclusionProof(data: Uint8Array, offsets: Uint32Array | null | undefined, index: number): Buffer;
  shaExtensions(): boolean;
  /**
   * Leaves of 64 lowercase hex digits each, joined, in UTF-8: their root and bytes, on the thread
   * pool (native/src/hex_leaves.rs); null for any other text. Not in REQUIRED: without it the
   * backend decodes and roots them on the event loop.
   */
  hexLeavesRootAsync?(hex: Uint8Array): Promise<{ root: Buffer; packed: Buffer } | null>;
  /**
   * A record's inclusion checked from its hex text, the proof's hashes joined (native/src/
   * inclusion.rs). Not in REQUIRED: without it the backend decodes and checks on its own.
   */
  recordInclusionHolds?(recordHash: string, index: number, treeSize: number, proof: string, root: string): boolean;
  /**
   * syncfs(2) of the file system holding `path`, on the thread pool. Not in REQUIRED: hashing does
   * not need it, and an addon without it leaves file-system-sync.ts to spawn `sync -f`.
   */
  syncFileSystem?(path: string): Promise<void>;
  /**
   * posix_fadvise(WILLNEED) of `length` bytes of `path` from `offset`, in steps, on the thread
   * pool (native/src/prefetch.rs); 0, or the error number of the call that failed. Not in
   * REQUIRED: without it page-cache.ts reads the bytes.
   */
  prefetchFile?(path: string, offset: number, length: number): Promise<number>;
  /**
   * Queue message frames (native/src/frames.rs): the metadata values of each record are the code
   * units of `units` cut at `lengths` (17 per record, -1 for null, then the payload's bytes),
   * written from `offset`; each payload's offset goes to `payloadAt`. The end offset, or -1 when
   * the caller must write them. Not in REQUIRED: the codec writes them itself without it.
   */
  writeFramesUtf16?(units: Uint16Array, lengths: Int32Array, out: Uint8Array, offset: number, payloadAt: Uint32Array): number;
}

const REQUIRED: readonly (keyof NativeAddon)[] = [
  'prepareBody',
  'prepareBodyAt',
  'prepareBodyAsync',
  'sha256Lines',
  'envelopeHashesUtf16',
  'sha256Hex',
  'sha256',
  'sha256Into',
  'canonicalizeJson',
  'merkleRoot',
  'merkleAllProofs',
  'merkleAllProofsAsync',
  'merkleInclusionProof',
  'shaExtensions',
];

function platformTag(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  const report = process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined;
  return report?.header?.glibcVersionRuntime === undefined ? `${base}-musl` : `${base}-gnu`;
}

/** native/ of the project, found upward from this module (it runs from src/ or a dist dir). */
function nativeDir(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'native');
    if (existsSync(join(candidate, 'Cargo.toml'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

/** The addon file configuration names (DRIS_NATIVE_ADDON), for this thread; see useNativeAddon. */
let configured: string | undefined;

/**
 * Names the addon file to load instead of the one built under native/ (configuration's
 * DRIS_NATIVE_ADDON, passed down by the composition root, and by the hashing pool to its workers).
 * Process-wide on purpose: the addon is a shared library, loaded once per thread, and the HTTP
 * guard loads the same file. Undefined goes back to the search under native/.
 */
export function useNativeAddon(file: string | undefined): void {
  if (file !== configured) {
    cached = undefined;
    optional.clear();
  }
  configured = file;
}

/** The file useNativeAddon named, if any. */
export function configuredNativeAddon(): string | undefined {
  return configured;
}

/** The addon file: the configured one, else native/dris-native.<platform>.node, else any dris-native*.node. */
export function findNativeAddon(): string | undefined {
  if (configured !== undefined) return configured;
  const dir = nativeDir();
  if (dir === undefined) return undefined;
  const exact = join(dir, `dris-native.${platformTag()}.node`);
  if (existsSync(exact)) return exact;
  const any = readdirSync(dir).find((f) => f.startsWith('dris-native') && f.endsWith('.node'));
  return any === undefined ? undefined : join(dir, any);
}

let cached: NativeAddon | undefined;

/** Loads the addon once per thread; a missing or unloadable addon is DrisError('backend_unavailable'). */
export function loadNativeAddon(): NativeAddon {
  if (cached !== undefined) return cached;
  const file = findNativeAddon();
  if (file === undefined) {
    throw new DrisError('backend_unavailable', 'native hashing addon not found: build it with `npm run build:native` (needs cargo)');
  }
  let addon: Partial<NativeAddon>;
  try {
    addon = createRequire(import.meta.url)(file) as Partial<NativeAddon>;
  } catch (cause) {
    throw new DrisError('backend_unavailable', `native hashing addon ${file} could not be loaded`, { cause });
  }
  const missing = REQUIRED.filter((k) => typeof addon[k] !== 'function');
  if (missing.length > 0) {
    throw new DrisError('backend_unavailable', `native hashing addon ${file} is stale (missing ${missing.join(', ')}): rebuild it`);
  }
  cached = addon as NativeAddon;
  return cached;
}

/** The functions of the addon that are not in REQUIRED: each caller has a way without it. */
type OptionalName = { [K in keyof NativeAddon]-?: undefined extends NativeAddon[K] ? K : never }[keyof NativeAddon];

/** Each optional function once looked up, bound, or null where this thread's addon lacks it. */
const optional = new Map<OptionalName, unknown>();

/**
 * An optional function of the addon, bound to it; undefined when no addon loads here (no cargo,
 * or a stale build) or the one that loads lacks it. Looked up once per thread.
 */
export function optionalNativeFunction<K extends OptionalName>(name: K): NonNullable<NativeAddon[K]> | undefined {
  if (!optional.has(name)) {
    let fn: unknown = null;
    try {
      const addon = loadNativeAddon();
      const f: unknown = addon[name];
      if (typeof f === 'function') fn = (f as (...args: unknown[]) => unknown).bind(addon);
    } catch {
      // No addon here: the caller's own way.
    }
    optional.set(name, fn);
  }
  const fn = optional.get(name);
  return fn === null ? undefined : (fn as NonNullable<NativeAddon[K]>);
}
