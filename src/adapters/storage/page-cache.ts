import { open } from 'node:fs/promises';
import { getSystemErrorName } from 'node:util';
import { optionalNativeFunction } from '../hashing/native-addon.js';

/**
 * Reading files ahead into the operating system's page cache, as PostgreSQL's pg_prewarm does in
 * its `prefetch` mode: a look-up that finds its pages there is served from memory, one that does
 * not waits for the disk. On this machine a look-up of 36 records in a table of ten million, most
 * of its pages not cached, took 23 ms in the service instead of 14.
 *
 * posix_fadvise(WILLNEED) through the native addon (native/src/prefetch.rs) where it is built:
 * the kernel reads into its cache and nothing is copied into this process. Else the bytes are
 * read, a buffer at a time, which costs this process the copies (about 1.3 s of system time per
 * GiB here).
 */

export type ReadAheadMethod = 'fadvise' | 'read';

/** Bytes of one read of the fallback. */
const READ_BUFFER_BYTES = 1 << 20;

/** 0, or the error number of the call that failed. */
type Prefetch = (path: string, offset: number, length: number) => Promise<number>;

function nativePrefetch(): Prefetch | undefined {
  return process.platform === 'linux' ? optionalNativeFunction('prefetchFile') : undefined;
}

/** How this process reads files ahead. */
export function readAheadMethod(): ReadAheadMethod {
  return nativePrefetch() === undefined ? 'read' : 'fadvise';
}

/**
 * Asks for `length` bytes of `file` from `offset` to be in the page cache. With fadvise it
 * resolves once the kernel was asked (its reads may still run); with reads, once they are done.
 * Rejects with the file system's error (ENOENT for a file removed meanwhile).
 */
export function readAhead(file: string, offset: number, length: number): Promise<void> {
  const prefetch = nativePrefetch();
  return prefetch === undefined ? readThrough(file, offset, length) : prefetchThrough(prefetch, file, offset, length);
}

async function prefetchThrough(prefetch: Prefetch, file: string, offset: number, length: number): Promise<void> {
  const errno = await prefetch(file, offset, length);
  if (errno === 0) return;
  const code = getSystemErrorName(-errno);
  // The shape of Node's own file-system errors, so callers test `code` alike for both methods.
  throw Object.assign(new Error(`${code}: reading ${file} ahead failed`), { code, errno: -errno, path: file });
}

/** Exported for its test: the fallback, whichever method this process has. */
export async function readThrough(file: string, offset: number, length: number): Promise<void> {
  const handle = await open(file, 'r');
  try {
    const buffer = Buffer.allocUnsafe(Math.min(READ_BUFFER_BYTES, Math.max(1, length)));
    for (let at = offset, end = offset + length; at < end; ) {
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - at), at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
  } finally {
    await handle.close();
  }
}
