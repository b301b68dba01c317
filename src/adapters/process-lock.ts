import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { DrisError } from '../errors/dris-error.js';

/**
 * A pid file taken with O_EXCL: the embedded engines (queue log, chDB, idempotency log) must have
 * one owner. A lock left by a crashed process (its pid no longer alive) is taken over.
 */
export class ProcessLock {
  private constructor(private readonly file: string) {}

  static acquire(file: string): ProcessLock {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(file, 'wx', 0o600);
        writeSync(fd, String(process.pid));
        closeSync(fd);
        return new ProcessLock(file);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw new DrisError('config_invalid', `cannot create ${file}`, { cause: err });
        const holder = Number(readFileSync(file, 'utf8').trim());
        if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && processAlive(holder)) {
          throw new DrisError('config_invalid', `the data directory is in use by process ${holder}`);
        }
        unlinkSync(file);
      }
    }
    throw new DrisError('config_invalid', `cannot lock ${file}`);
  }

  release(): void {
    try {
      unlinkSync(this.file);
    } catch {
      // already gone
    }
  }
}

/** Whether a process with this id exists (one of another user counts). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
