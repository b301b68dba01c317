import { closeSync, existsSync, ftruncateSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { nodeLogFileSystem, type LogFileSystem } from '../../src/adapters/storage/log-file-system.js';

/**
 * A LogFileSystem over real files that fails a chosen call the way a disk does, and models what a
 * crash keeps: each file keeps what its last successful fdatasync covered (plus, after a power
 * loss, some random part of what came after, as a torn write would); a file whose creation no
 * directory flush covered is gone; a removal no directory flush covered is undone.
 *
 * With `crash('process')` (SIGKILL: the page cache survives) every byte written stays.
 */

export type FaultOp = keyof LogFileSystem;

interface Tracked {
  /** Size the last successful fdatasync made durable. */
  durableSize: number;
  /** The directory entry is durable (a directory flush followed its creation). */
  entryDurable: boolean;
}

export class FaultyLogFs implements LogFileSystem {
  private readonly calls = new Map<FaultOp, number>();
  private faults: { op: FaultOp; nth: number; code: string }[] = [];
  private readonly files = new Map<string, Tracked>();
  private readonly fds = new Map<number, string>();
  /** Removed files not yet covered by a directory flush: path → where the bytes were kept. */
  private readonly removed = new Map<string, string>();
  private trashSeq = 0;
  /** Every injected failure, in order. */
  readonly injected: { op: FaultOp; code: string }[] = [];
  private readonly real = nodeLogFileSystem;

  constructor(
    private readonly trash: string,
    private readonly random: () => number = Math.random,
  ) {
    mkdirSync(trash, { recursive: true });
  }

  /** Fails the nth call of `op` from now on (1 = the next one) with `code`. */
  failAt(op: FaultOp, nth: number, code = 'EIO'): void {
    this.faults.push({ op, nth: (this.calls.get(op) ?? 0) + nth, code });
  }

  private enter(op: FaultOp): void {
    const n = (this.calls.get(op) ?? 0) + 1;
    this.calls.set(op, n);
    const i = this.faults.findIndex((f) => f.op === op && f.nth === n);
    if (i < 0) return;
    const [f] = this.faults.splice(i, 1);
    const code = f?.code ?? 'EIO';
    this.injected.push({ op, code });
    throw Object.assign(new Error(`${code}: injected ${op} failure`), { code });
  }

  private track(file: string, fresh: boolean): Tracked {
    let t = this.files.get(file);
    if (t === undefined || fresh) {
      t = fresh ? { durableSize: 0, entryDurable: false } : { durableSize: statSync(file).size, entryDurable: true };
      this.files.set(file, t);
    }
    return t;
  }

  mkdirSync(dir: string): void {
    this.enter('mkdirSync');
    this.real.mkdirSync(dir);
  }
  readdirSync(dir: string): string[] {
    this.enter('readdirSync');
    return this.real.readdirSync(dir);
  }
  openSync(file: string): number {
    this.enter('openSync');
    const fd = this.real.openSync(file);
    this.track(file, false);
    this.fds.set(fd, file);
    return fd;
  }
  async create(file: string): Promise<number> {
    this.enter('create');
    const fd = await this.real.create(file);
    this.track(file, true);
    this.fds.set(fd, file);
    return fd;
  }
  async close(fd: number): Promise<void> {
    this.enter('close');
    this.fds.delete(fd);
    await this.real.close(fd);
  }
  closeSync(fd: number): void {
    this.enter('closeSync');
    this.fds.delete(fd);
    this.real.closeSync(fd);
  }
  sizeSync(fd: number): number {
    this.enter('sizeSync');
    return this.real.sizeSync(fd);
  }
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number {
    this.enter('readSync');
    return this.real.readSync(fd, buffer, offset, length, position);
  }
  readAt(file: string, buffer: Buffer, position: number): Promise<number> {
    this.enter('readAt');
    return this.real.readAt(file, buffer, position);
  }
  async writev(fd: number, buffers: readonly Buffer[], position: number): Promise<number> {
    try {
      this.enter('writev');
    } catch (err) {
      // A disk that runs out of room mid-write keeps part of it.
      const whole = Buffer.concat(buffers);
      const part = Math.floor(whole.length * this.random());
      if (part > 0) await this.real.writev(fd, [whole.subarray(0, part)], position);
      throw err;
    }
    return this.real.writev(fd, buffers, position);
  }
  async fdatasync(fd: number): Promise<void> {
    this.enter('fdatasync');
    await this.real.fdatasync(fd);
    this.markSynced(fd);
  }
  fdatasyncSync(fd: number): void {
    this.enter('fdatasyncSync');
    this.real.fdatasyncSync(fd);
    this.markSynced(fd);
  }
  private markSynced(fd: number): void {
    const file = this.fds.get(fd);
    if (file !== undefined) this.track(file, false).durableSize = statSync(file).size;
  }
  async ftruncate(fd: number, size: number): Promise<void> {
    this.enter('ftruncate');
    await this.real.ftruncate(fd, size);
  }
  ftruncateSync(fd: number, size: number): void {
    this.enter('ftruncateSync');
    this.real.ftruncateSync(fd, size);
  }
  async fsyncDir(dir: string): Promise<void> {
    this.enter('fsyncDir');
    await this.real.fsyncDir(dir);
    this.markDirSynced(dir);
  }
  fsyncDirSync(dir: string): void {
    this.enter('fsyncDirSync');
    this.real.fsyncDirSync(dir);
    this.markDirSynced(dir);
  }
  private markDirSynced(dir: string): void {
    for (const [file, t] of this.files) if (path.dirname(file) === dir) t.entryDurable = true;
    for (const [file, kept] of this.removed) {
      if (path.dirname(file) !== dir) continue;
      rmSync(kept, { force: true });
      this.removed.delete(file);
    }
  }
  unlinkSync(file: string): void {
    this.enter('unlinkSync');
    const t = this.files.get(file);
    const kept = path.join(this.trash, `${this.trashSeq++}`);
    renameSync(file, kept);
    this.files.delete(file);
    if (t === undefined || t.entryDurable) this.removed.set(file, kept);
    else rmSync(kept, { force: true });
  }

  /**
   * What a restart finds. 'process': the process died, the kernel kept every write. 'power':
   * only what was flushed, plus a random part of each file's unflushed end.
   */
  crash(kind: 'process' | 'power'): void {
    for (const fd of this.fds.keys()) closeSync(fd);
    this.fds.clear();
    if (kind === 'process') {
      for (const kept of this.removed.values()) rmSync(kept, { force: true });
      this.removed.clear();
      return;
    }
    for (const [file, t] of this.files) {
      if (!existsSync(file)) continue;
      if (!t.entryDurable) {
        rmSync(file, { force: true });
        continue;
      }
      const size = statSync(file).size;
      if (size > t.durableSize) ftruncateSync2(file, t.durableSize + Math.floor((size - t.durableSize) * this.random()));
    }
    for (const [file, kept] of this.removed) renameSync(kept, file);
    this.removed.clear();
    this.files.clear();
    for (const f of readdirSync(this.trash)) rmSync(path.join(this.trash, f), { force: true });
  }
}

function ftruncateSync2(file: string, size: number): void {
  const fd = nodeLogFileSystem.openSync(file);
  try {
    ftruncateSync(fd, size);
  } finally {
    closeSync(fd);
  }
}

/** A small deterministic generator (mulberry32), so a failing case can be run again. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
