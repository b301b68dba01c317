import { execFile } from 'node:child_process';
import { DrisError } from '../../errors/dris-error.js';
import { withTimeout } from '../../util/with-timeout.js';
import { optionalNativeFunction } from '../hashing/native-addon.js';

/**
 * Flushes to disk everything written so far on the file systems holding `paths`. The files belong
 * to an engine that does not name them, so whole file systems are flushed: syncfs(2) through the
 * native addon on the thread pool where it is built (Linux), else `sync -f` (coreutils) in a child
 * process, or a whole-machine `sync` off Linux. Node has no syncfs of its own, and spawning forks
 * this process: at a gigabyte resident, with the engine's mappings, each spawn blocked the event
 * loop for 17-32 ms (four times in five seconds under the pipeline bench).
 */
export function syncFileSystems(paths: readonly string[], timeoutMs = 60_000): Promise<void> {
  const native = nativeSync();
  return native === undefined ? syncInChild(paths, timeoutMs) : syncThrough(native, paths, timeoutMs);
}

/** Flushes the file system holding one path. */
export type NativeSync = (path: string) => Promise<void>;

/** How this process flushes file systems (logged once by the journal). */
export function fileSystemSyncMethod(): 'syncfs' | 'sync -f' | 'sync' {
  return nativeSync() !== undefined ? 'syncfs' : process.platform === 'linux' ? 'sync -f' : 'sync';
}

function nativeSync(): NativeSync | undefined {
  return process.platform === 'linux' ? optionalNativeFunction('syncFileSystem') : undefined;
}

/** A syncfs still running past its deadline (a disk that hangs) holds a pool thread; none is added beside it. */
let stuck: Promise<unknown> | null = null;

/** `sync` on each path at once, within `timeoutMs`; exported for its tests. */
export async function syncThrough(sync: NativeSync, paths: readonly string[], timeoutMs: number): Promise<void> {
  if (stuck !== null) throw new DrisError('dependency_unavailable', 'an earlier flush of the index files has not returned');
  let settled = false;
  const all = Promise.all(paths.map((p) => sync(p))).finally(() => (settled = true));
  try {
    await withTimeout(all, timeoutMs, 'flushing the index files');
  } catch (err) {
    if (!settled) {
      stuck = all;
      void all.catch(() => undefined).finally(() => (stuck = null));
    }
    throw err;
  }
}

function syncInChild(paths: readonly string[], timeoutMs: number): Promise<void> {
  const args = process.platform === 'linux' ? ['-f', ...paths] : [];
  return new Promise<void>((resolve, reject) => {
    execFile('sync', args, { timeout: timeoutMs }, (err) => {
      if (err === null) resolve();
      else reject(err);
    });
  });
}
