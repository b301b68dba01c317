import { closeSync, fdatasyncSync, openSync, writeSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { setImmediate as yieldNow } from 'node:timers/promises';

/**
 * The durability floor: what the disk under the data directory allows when every write must be on
 * disk before it is acknowledged. A raw loop appends to one file and fdatasyncs after each append:
 * 1 KiB appends (one record per sync: the most acknowledgements per second a per-record commit
 * could give) and 1 MiB appends (a bulk request of 1000 records per sync: the durable bandwidth).
 */

export interface FsyncFloor {
  /** fdatasync'd 1 KiB appends per second. */
  readonly syncsPerSec: number;
  /** MB/s written in fdatasync'd 1 MiB appends. */
  readonly mbPerSec: number;
}

async function loop(file: string, size: number, seconds: number): Promise<{ perSec: number; bytesPerSec: number }> {
  const fd = openSync(file, 'a');
  const buf = Buffer.alloc(size, 0x61);
  let n = 0;
  const start = performance.now();
  const end = start + seconds * 1000;
  try {
    while (performance.now() < end) {
      // Slices of 100 ms so the progress line and other timers still run.
      const slice = performance.now() + 100;
      while (performance.now() < slice) {
        writeSync(fd, buf);
        fdatasyncSync(fd);
        n++;
      }
      await yieldNow();
    }
  } finally {
    closeSync(fd);
  }
  const elapsed = (performance.now() - start) / 1000;
  return { perSec: n / elapsed, bytesPerSec: (n * size) / elapsed };
}

/** Measures in a scratch directory under `parent` (the same file system as the data directory). */
export async function fsyncFloor(parent: string, seconds: number): Promise<FsyncFloor> {
  const dir = await mkdtemp(path.join(parent, 'dris-floor-fsync-'));
  try {
    const small = await loop(path.join(dir, 'small.log'), 1024, seconds / 2);
    const large = await loop(path.join(dir, 'large.log'), 1024 * 1024, seconds / 2);
    return { syncsPerSec: Math.round(small.perSec), mbPerSec: Math.round(large.bytesPerSec / 1e5) / 10 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
