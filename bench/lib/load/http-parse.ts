/**
 * The load generator's HTTP/1.1 side: requests prepared as whole buffers, answers parsed from the
 * socket's bytes (status, Content-Length or chunked body, Connection: close). Small on purpose: it
 * runs once per request in the generator's hot path and measures its own cost.
 */

export interface ParsedResponse {
  readonly status: number;
  /** The body, when the parser was asked to keep it. */
  readonly body: Buffer | null;
  /** The server will close the connection after this answer. */
  readonly close: boolean;
}

export class HttpParseError extends Error {
  override readonly name = 'HttpParseError';
}

const CRLFCRLF = Buffer.from('\r\n\r\n');

interface Head {
  readonly status: number;
  readonly length: number | null;
  readonly chunked: boolean;
  readonly close: boolean;
  readonly bodyStart: number;
}

function parseHead(buf: Buffer, end: number): Head {
  const text = buf.toString('latin1', 0, end);
  // "HTTP/1.1 202 Accepted"
  if (!text.startsWith('HTTP/1.')) throw new HttpParseError('not an HTTP/1.x answer');
  const status = Number(text.slice(9, 12));
  if (!Number.isInteger(status) || status < 100) throw new HttpParseError('bad status line');
  let length: number | null = null;
  let chunked = false;
  let close = text.startsWith('HTTP/1.0');
  for (const line of text.split('\r\n').slice(1)) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim().toLowerCase();
    if (name === 'content-length') length = Number(value);
    else if (name === 'transfer-encoding') chunked = value.includes('chunked');
    else if (name === 'connection') close = value.includes('close');
  }
  if (length !== null && (!Number.isInteger(length) || length < 0)) throw new HttpParseError('bad Content-Length');
  return { status, length, chunked, close, bodyStart: end + 4 };
}

/** End of a chunked body starting at `from` (index after the last CRLF), or -1 when incomplete. */
function chunkedEnd(buf: Buffer, from: number, keep: Buffer[] | null): number {
  let at = from;
  for (;;) {
    const lineEnd = buf.indexOf('\r\n', at, 'latin1');
    if (lineEnd < 0) return -1;
    const size = parseInt(buf.toString('latin1', at, lineEnd).split(';')[0] as string, 16);
    if (!Number.isFinite(size) || size < 0) throw new HttpParseError('bad chunk size');
    if (size === 0) {
      // Trailers (none expected) end with an empty line.
      const end = buf.indexOf(CRLFCRLF, lineEnd);
      return end < 0 ? -1 : end + 4;
    }
    const dataStart = lineEnd + 2;
    if (buf.length < dataStart + size + 2) return -1;
    keep?.push(buf.subarray(dataStart, dataStart + size));
    at = dataStart + size + 2;
  }
}

/** Parses one answer at a time from a connection's bytes. */
export class ResponseParser {
  #pending: Buffer | null = null;
  #head: Head | null = null;

  constructor(private readonly keepBody: boolean) {}

  reset(): void {
    this.#pending = null;
    this.#head = null;
  }

  /** Adds bytes; returns the answer once complete, else null. */
  push(chunk: Buffer): ParsedResponse | null {
    const buf = this.#pending === null ? chunk : Buffer.concat([this.#pending, chunk]);
    if (this.#head === null) {
      const end = buf.indexOf(CRLFCRLF);
      if (end < 0) {
        if (buf.length > 64 * 1024) throw new HttpParseError('answer head larger than 64 KiB');
        this.#pending = buf;
        return null;
      }
      this.#head = parseHead(buf, end);
    }
    const head = this.#head;
    let bodyEnd: number;
    let body: Buffer | null = null;
    if (head.chunked) {
      const parts: Buffer[] | null = this.keepBody ? [] : null;
      bodyEnd = chunkedEnd(buf, head.bodyStart, parts);
      if (bodyEnd >= 0 && parts !== null) body = Buffer.concat(parts);
    } else {
      const length = head.length ?? 0;
      bodyEnd = buf.length >= head.bodyStart + length ? head.bodyStart + length : -1;
      if (bodyEnd >= 0 && this.keepBody) body = buf.subarray(head.bodyStart, bodyEnd);
    }
    if (bodyEnd < 0) {
      this.#pending = buf;
      return null;
    }
    // No pipelining: nothing may follow an answer before the next request.
    if (bodyEnd < buf.length) throw new HttpParseError('bytes after a complete answer');
    this.#pending = null;
    this.#head = null;
    return { status: head.status, body, close: head.close };
  }
}

/** A complete HTTP/1.1 request with a keep-alive connection and a JSON body. */
export function requestBuffer(method: string, host: string, path: string, headers: Readonly<Record<string, string>>, body: string): Buffer {
  let head = `${method} ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: keep-alive\r\n`;
  for (const [k, v] of Object.entries(headers)) head += `${k}: ${v}\r\n`;
  if (body !== '' || method === 'POST' || method === 'PUT') head += `Content-Length: ${Buffer.byteLength(body)}\r\n`;
  return Buffer.from(`${head}\r\n${body}`, 'utf8');
}

/**
 * Builds the request bodies of a `template` source: the text is split once at its placeholders,
 * then each request joins the parts with its own values.
 */
export function compileTemplate(template: string): (worker: number, seq: number, random: () => number) => string {
  const parts = template.split(/(\{\{[WSR]\}\})/);
  return (worker, seq, random) => {
    let out = '';
    for (const p of parts) {
      if (p === '{{W}}') out += worker;
      else if (p === '{{S}}') out += seq;
      else if (p === '{{R}}') out += random();
      else out += p;
    }
    return out;
  };
}
