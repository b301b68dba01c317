import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

/**
 * The file-system calls of the segment log, behind one small port: tests wrap it to fail any
 * call, the way a disk would (EIO, ENOSPC), and to model what a crash keeps of unflushed writes.
 *
 * Files are opened without O_APPEND: the log writes at explicit offsets, and a write after a
 * failed one must land where the log says its durable end is, not after rejected bytes.
 */
export interface LogFileSystem {
  /** Creates `dir` and missing parents (0700); each parent of a created directory is fsynced. */
  mkdirSync(dir: string): void;
  readdirSync(dir: string): string[];
  /** Opens an existing file for reading and writing. */
  openSync(file: string): number;
  /** Opens `file` for writing, created (0600) or emptied: the caller knows it holds nothing durable. */
  create(file: string): Promise<number>;
  close(fd: number): Promise<void>;
  closeSync(fd: number): void;
  sizeSync(fd: number): number;
  readSync(fd: number, buffer: Buffer, offset: number, length: number, position: number): number;
  /** Fills `buffer` from `position` of `file` as far as the file goes; returns the bytes read. */
  readAt(file: string, buffer: Buffer, position: number): Promise<number>;
  /** One positional write; returns the bytes written (possibly fewer than asked). */
  writev(fd: number, buffers: readonly Buffer[], position: number): Promise<number>;
  fdatasync(fd: number): Promise<void>;
  fdatasyncSync(fd: number): void;
  ftruncate(fd: number, size: number): Promise<void>;
  ftruncateSync(fd: number, size: number): void;
  /** Makes the entries of `dir` (created, renamed, removed files) durable. */
  fsyncDir(dir: string): Promise<void>;
  fsyncDirSync(dir: string): void;
  unlinkSync(file: string): void;
}

const writevAsync = promisify(fs.writev);
const fdatasyncAsync = promisify(fs.fdatasync);
const ftruncateAsync = promisify(fs.ftruncate);
const openAsync = promisify(fs.open);
const closeAsync = promisify(fs.close);
const fsyncAsync = promisify(fs.fsync);

export const FILE_MODE = 0o600;
export const DIR_MODE = 0o700;

export function fsyncDirSync(dir: string): void {
  const fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export async function fsyncDir(dir: string): Promise<void> {
  const fd = await openAsync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY);
  try {
    await fsyncAsync(fd);
  } finally {
    await closeAsync(fd);
  }
}

/** mkdir -p with mode 0700, fsyncing the parent of every directory it creates. */
export function mkdirDurableSync(dir: string): void {
  const missing: string[] = [];
  for (let d = path.resolve(dir); !fs.existsSync(d); d = path.dirname(d)) {
    missing.unshift(d);
    if (path.dirname(d) === d) break;
  }
  for (const d of missing) {
    try {
      fs.mkdirSync(d, { mode: DIR_MODE });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    fsyncDirSync(path.dirname(d));
  }
}

export const nodeLogFileSystem: LogFileSystem = {
  mkdirSync: mkdirDurableSync,
  readdirSync: (dir) => fs.readdirSync(dir),
  openSync: (file) => fs.openSync(file, fs.constants.O_RDWR),
  create: (file) => openAsync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_TRUNC, FILE_MODE),
  close: (fd) => closeAsync(fd),
  closeSync: (fd) => fs.closeSync(fd),
  sizeSync: (fd) => fs.fstatSync(fd).size,
  readSync: (fd, buffer, offset, length, position) => fs.readSync(fd, buffer, offset, length, position),
  readAt: async (file, buffer, position) => {
    const handle = await fs.promises.open(file, 'r');
    try {
      let got = 0;
      while (got < buffer.length) {
        const { bytesRead } = await handle.read(buffer, got, buffer.length - got, position + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
      return got;
    } finally {
      await handle.close();
    }
  },
  writev: async (fd, buffers, position) => (await writevAsync(fd, buffers as Buffer[], position)).bytesWritten,
  fdatasync: (fd) => fdatasyncAsync(fd),
  fdatasyncSync: (fd) => fs.fdatasyncSync(fd),
  ftruncate: (fd, size) => ftruncateAsync(fd, size),
  ftruncateSync: (fd, size) => fs.ftruncateSync(fd, size),
  fsyncDir,
  fsyncDirSync,
  unlinkSync: (file) => fs.unlinkSync(file),
};
