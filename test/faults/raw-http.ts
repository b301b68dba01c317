import net from 'node:net';
import { findNativeAddon } from '../../src/adapters/hashing/native-backend.js';

/**
 * HTTP/1.1 on a raw loopback socket, for requests no HTTP client library would send: the bytes
 * go out as given, and the first answer is parsed by hand.
 */

/**
 * "Answered at once" means before any deadline of the server could have produced the answer (the
 * shortest these tests set is 1000 ms), not within a latency: the suites run side by side on two
 * cores, where a loaded scheduler or a collection in the service adds a few hundred milliseconds.
 */
export const AT_ONCE_MS = 800;

export interface RawAnswer {
  /** 0 when no complete answer arrived. */
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  /** Milliseconds from the first byte sent to the last byte of the answer (-1: none). */
  readonly answeredMs: number;
  /** The server closed the connection (FIN or reset) before the wait ended. */
  readonly closed: boolean;
  /** Bytes written, the streamed body included. */
  readonly sent: number;
}

export interface RawOptions {
  /** Pieces written one after the other, `gapMs` apart. */
  readonly gapMs?: number;
  /** After the pieces, this chunk is written again and again (one per turn of the event loop, respecting backpressure) until the connection ends. */
  readonly stream?: Buffer;
  /** Give up this long after the first byte; the answer so far is returned. */
  readonly timeoutMs?: number;
  /** After a complete answer, wait this long for the server to close. */
  readonly closeWaitMs?: number;
}

function parse(buf: Buffer): { status: number; headers: Record<string, string>; body: string } | null {
  const end = buf.indexOf('\r\n\r\n');
  if (end < 0) return null;
  const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) /.exec(lines[0] ?? '');
  if (m === null) return null;
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? '0');
  if (buf.length < end + 4 + length) return null;
  return { status: Number(m[1]), headers, body: buf.subarray(end + 4, end + 4 + length).toString('utf8') };
}

export function rawRequest(port: number, pieces: readonly (string | Buffer)[] | string, opts: RawOptions = {}): Promise<RawAnswer> {
  const list = typeof pieces === 'string' ? [pieces] : pieces;
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = Date.now();
    let received = Buffer.alloc(0);
    let answer: ReturnType<typeof parse> = null;
    let answeredMs = -1;
    let closed = false;
    let sent = 0;
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      clearTimeout(closeTimer);
      socket.destroy();
      resolve({ status: answer?.status ?? 0, headers: answer?.headers ?? {}, body: answer?.body ?? '', answeredMs, closed, sent });
    };
    const timer = setTimeout(finish, opts.timeoutMs ?? 3000);
    let closeTimer: NodeJS.Timeout | undefined;
    socket.on('data', (d: Buffer) => {
      received = Buffer.concat([received, d]);
      if (answer === null) {
        answer = parse(received);
        if (answer !== null) {
          answeredMs = Date.now() - started;
          closeTimer = setTimeout(finish, opts.closeWaitMs ?? 500);
        }
      }
    });
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      finish();
    });
    const write = (b: string | Buffer): boolean => {
      sent += typeof b === 'string' ? Buffer.byteLength(b, 'latin1') : b.length;
      return socket.write(typeof b === 'string' ? Buffer.from(b, 'latin1') : b);
    };
    // One chunk per turn of the event loop, so the answer is read while the body goes out. A
    // loop of writes would not yield while the kernel takes them: on loopback the server discards
    // as fast as they come, and the whole linger allowance went out, and the connection was reset,
    // before the answer sitting in the socket was ever read.
    const stream = (): void => {
      const chunk = opts.stream;
      if (chunk === undefined || done || socket.destroyed) return;
      if (write(chunk)) setImmediate(stream);
      else socket.once('drain', stream);
    };
    void (async () => {
      for (const [i, p] of list.entries()) {
        if (done || socket.destroyed) return;
        if (i > 0 && (opts.gapMs ?? 0) > 0) await new Promise((r) => setTimeout(r, opts.gapMs));
        write(p);
      }
      stream();
    })();
  });
}

/** Resident memory of a process, bytes (Linux /proc). */
export async function residentBytes(pid: number): Promise<number> {
  const { readFile } = await import('node:fs/promises');
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(status);
  if (m === null) throw new Error('no VmRSS');
  return Number(m[1]) * 1024;
}

/**
 * Tests of the request-framing guard need the native addon; without cargo the test command does
 * not build it, and the service then runs without the guard (its documented fallback).
 */
export const GUARD_TESTS: { skip?: string } = findNativeAddon() === undefined ? { skip: 'the native addon is not built (no cargo): the HTTP guard is off' } : {};
