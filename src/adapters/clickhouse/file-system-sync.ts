import { execFile } from 'node:child_process';

/**
 * Flushes to disk everything written so far on the file systems holding `paths`: `sync -f`
 * (syncfs(2), coreutils) on Linux, a whole-machine `sync` elsewhere. Node has no syncfs, and the
 * files to flush belong to an engine that does not name them; the call runs in a child process,
 * so nothing in this process waits on the disk meanwhile.
 */
export function syncFileSystems(paths: readonly string[], timeoutMs = 60_000): Promise<void> {
  const args = process.platform === 'linux' ? ['-f', ...paths] : [];
  return new Promise<void>((resolve, reject) => {
    execFile('sync', args, { timeout: timeoutMs }, (err) => {
      if (err === null) resolve();
      else reject(err);
    });
  });
}
