import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** Mounting a file system needs root (CI runs as root); tests that need it skip otherwise. */
export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

export interface Tmpfs {
  readonly dir: string;
  unmount(): void;
}

/** A tmpfs of `sizeMiB` on a new directory: a disk that really fills up. */
export function mountTmpfs(sizeMiB: number): Tmpfs {
  const dir = mkdtempSync(path.join(tmpdir(), 'dris-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${sizeMiB}m,mode=0700`, 'tmpfs', dir]);
  let mounted = true;
  return {
    dir,
    unmount() {
      if (!mounted) return;
      mounted = false;
      // Lazy: a process killed a moment ago may still hold a file open.
      execFileSync('umount', ['-l', dir]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function freeBytes(dir: string): number {
  const s = statfsSync(dir);
  return s.bavail * s.bsize;
}

/**
 * Writes `file` until the file system refuses (ENOSPC), or until only `leaveBytes` are free.
 * Bounded by the file system's size. Returns the bytes written.
 */
export function fill(file: string, leaveBytes = 0): number {
  const fd = openSync(file, 'w');
  let written = 0;
  try {
    for (const chunk of [1024 * 1024, 64 * 1024, 4096, 512]) {
      const buf = Buffer.alloc(chunk, 0x5a);
      // Bounded twice: by the file system's size, and by a count.
      for (let i = 0; i < 100_000; i++) {
        if (leaveBytes > 0 && freeBytes(path.dirname(file)) - chunk < leaveBytes) break;
        try {
          written += writeSync(fd, buf);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw err;
        }
      }
    }
  } finally {
    closeSync(fd);
  }
  return written;
}
