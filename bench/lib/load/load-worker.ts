import net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import { encodeHistogram, newHistogram, recordUs } from '../histogram.js';
import { compileTemplate, HttpParseError, requestBuffer, ResponseParser } from './http-parse.js';
import type { AcceptedRequest, Counts, LoadSpec, WorkerMessage } from './types.js';

/**
 * One load generator thread: keep-alive HTTP/1.1 connections over node:net, one request at a time
 * per connection. Open loop: request i of this worker is due at offset + i / rate; a due request
 * takes an idle connection, or a new one (up to this worker's share of maxConnections), or waits
 * in a queue, and its latency counts from when it was due, so a slow server is charged for the
 * requests it held back. Closed loop: each connection sends its next request on the previous
 * answer. Every second of the measured window is reported to the main thread as it ends.
 */

interface Pending {
  readonly seq: number;
  readonly intendedMs: number;
  sentMs: number;
}

interface Conn {
  readonly socket: net.Socket;
  readonly parser: ResponseParser;
  connected: boolean;
  req: Pending | null;
}

const { spec, index } = workerData as { spec: LoadSpec; index: number };
const port = parentPort;
if (port === null) throw new Error('load-worker runs in a worker thread');
const post = (m: WorkerMessage): void => port.postMessage(m);

const open = spec.mode.kind === 'open';
const keepBody = (spec.check.bodyIncludes?.length ?? 0) > 0;
const perWorker = (n: number): number => Math.floor(n / spec.workers) + (index < n % spec.workers ? 1 : 0);
const maxConns = Math.max(1, perWorker(spec.maxConnections));
const warmEnd = spec.warmupSec * 1000;
const runEnd = warmEnd + spec.durationSec * 1000;
let t0 = 0;
const now = (): number => performance.timeOrigin + performance.now() - t0;

const build = ((): ((seq: number) => Buffer) => {
  const src = spec.source;
  const host = `${spec.host}:${spec.port}`;
  if (src.kind === 'fixed') {
    const bufs = src.bodies.map((b) => requestBuffer(src.method, host, src.path, src.headers, b));
    return (seq) => bufs[seq % bufs.length] as Buffer;
  }
  const body = compileTemplate(src.template);
  const below = src.randomBelow ?? 1;
  const random = (): number => Math.floor(Math.random() * below);
  return (seq) => requestBuffer(src.method, host, src.path, src.headers, body(index, seq, random));
})();

const newCounts = (): Counts => ({ ok: 0, statuses: {}, errors: {} });
const total = newCounts();
const latency = newHistogram();
const service = newHistogram();
const sendLag = newHistogram();
let sec = newCounts();
const secLatency = newHistogram();
let curSec = 0;
let accepted: AcceptedRequest[] = [];
let sent = 0;
let opened = 0;
let busy = 0;
let peakBusy = 0;
const conns = new Set<Conn>();
const idle: Conn[] = [];
const queue: Pending[] = [];
let queueHead = 0;
let scheduling = true;
let started = false;
let seq = 0;

const inWindow = (ms: number): boolean => ms >= warmEnd && ms < runEnd;
const startOf = (r: Pending): number => (open ? r.intendedMs : r.sentMs);

function bump(map: Record<string, number>, key: string): void {
  map[key] = (map[key] ?? 0) + 1;
}

function error(kind: string, r: Pending): void {
  if (!inWindow(startOf(r))) return;
  bump(total.errors, kind);
  bump(sec.errors, kind);
}

function flushSecond(upTo: number): void {
  while (curSec < upTo) {
    if (curSec >= 0) {
      const report = { second: curSec, counts: sec, latency: encodeHistogram(secLatency) };
      post(accepted.length > 0 ? { type: 'second', report, accepted } : { type: 'second', report });
      accepted = [];
    }
    sec = newCounts();
    secLatency.reset();
    curSec++;
  }
}

function complete(c: Conn, status: number, body: Buffer | null): void {
  const r = c.req as Pending;
  const done = now();
  flushSecond(Math.floor((done - warmEnd) / 1000));
  const measured = inWindow(startOf(r));
  let ok = spec.check.statuses.includes(status);
  if (ok && keepBody && body !== null) {
    const text = body.toString('utf8');
    ok = (spec.check.bodyIncludes ?? []).every((s) => text.includes(s));
    if (!ok) error('check', r);
  }
  if (measured) {
    bump(total.statuses, String(status));
    bump(sec.statuses, String(status));
    if (ok) {
      const us = (done - startOf(r)) * 1000;
      recordUs(latency, us);
      recordUs(secLatency, us);
      recordUs(service, (done - r.sentMs) * 1000);
      total.ok++;
      sec.ok++;
    }
  }
  if (ok && spec.trackAccepted === true) accepted.push([index, r.seq, startOf(r), done]);
}

function release(c: Conn): void {
  c.req = null;
  busy--;
  const next = takeQueued();
  if (next !== undefined) send(c, next);
  else if (!open && scheduling && now() < runEnd) send(c, { seq: seq++, intendedMs: now(), sentMs: 0 });
  else idle.push(c);
  maybeFinish();
}

function send(c: Conn, r: Pending): void {
  c.req = r;
  busy++;
  if (busy > peakBusy) peakBusy = busy;
  if (!c.connected) return;
  r.sentMs = now();
  if (open && inWindow(r.intendedMs)) recordUs(sendLag, (r.sentMs - r.intendedMs) * 1000);
  sent++;
  c.socket.write(build(r.seq));
}

/** `onSettled` is told once whether the connection was made. */
function connect(first: Pending | null, onSettled?: (connected: boolean) => void): Conn {
  const socket = net.connect({ host: spec.host, port: spec.port });
  socket.setNoDelay(true);
  const c: Conn = { socket, parser: new ResponseParser(keepBody), connected: false, req: null };
  conns.add(c);
  opened++;
  if (first !== null) send(c, first);
  socket.on('connect', () => {
    c.connected = true;
    const r = c.req;
    if (r !== null) {
      c.req = null;
      busy--;
      send(c, r);
    } else idle.push(c);
    onSettled?.(true);
  });
  socket.on('data', (chunk: Buffer) => {
    if (c.req === null) return;
    let res;
    try {
      res = c.parser.push(chunk);
    } catch (err) {
      error(err instanceof HttpParseError ? 'parse' : 'io', c.req);
      socket.destroy();
      return;
    }
    if (res === null) return;
    complete(c, res.status, res.body);
    if (res.close) {
      drop(c, null);
      socket.destroy();
      return;
    }
    release(c);
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    if (!c.connected) onSettled?.(false);
    drop(c, c.connected ? 'io' : 'connect');
  });
  return c;
}

/** A connection that closed: its request, if any, failed with `kind`. */
function drop(c: Conn, kind: string | null): void {
  if (!conns.delete(c)) return;
  const i = idle.indexOf(c);
  if (i >= 0) idle.splice(i, 1);
  if (c.req !== null) {
    if (kind !== null) error(kind, c.req);
    c.req = null;
    busy--;
  }
  // A closed loop keeps its connection count: the replacement sends the next request.
  if (!open && scheduling && now() < runEnd && kind !== 'connect') connect({ seq: seq++, intendedMs: now(), sentMs: 0 });
  else if (open && queue.length > queueHead && conns.size < maxConns) {
    const next = takeQueued();
    if (next !== undefined) connect(next);
  }
  maybeFinish();
}

function takeQueued(): Pending | undefined {
  if (queueHead >= queue.length) return undefined;
  const r = queue[queueHead++];
  if (queueHead > 1024 && queueHead * 2 > queue.length) {
    queue.splice(0, queueHead);
    queueHead = 0;
  }
  return r;
}

function dispatch(r: Pending): void {
  const c = idle.pop();
  if (c !== undefined) send(c, r);
  else if (conns.size < maxConns) connect(r);
  else queue.push(r);
}

// Open loop: this worker's share of the rate, its requests interleaved with the other workers'.
const intervalMs = open ? (1000 * spec.workers) / (spec.mode as { ratePerSec: number }).ratePerSec : 0;
const offsetMs = open ? (1000 * index) / (spec.mode as { ratePerSec: number }).ratePerSec : 0;

function pump(): void {
  const t = now();
  let next = offsetMs + seq * intervalMs;
  while (next <= t && next < runEnd) {
    dispatch({ seq: seq++, intendedMs: next, sentMs: 0 });
    next = offsetMs + seq * intervalMs;
  }
  if (next >= runEnd) {
    scheduling = false;
    maybeFinish();
    return;
  }
  // Timers tick at a millisecond at best: requests due within one tick leave together, up to
  // about a millisecond late, which the send-lag figure shows (polling instead would spend a core).
  setTimeout(pump, Math.max(1, Math.floor(next - now())));
}

let finished = false;
function maybeFinish(): void {
  if (finished || scheduling || busy > 0 || queue.length > queueHead) return;
  finished = true;
  clearInterval(watchdog);
  flushSecond(Math.floor((now() - warmEnd) / 1000) + 1);
  for (const c of conns) c.socket.destroy();
  post({
    type: 'done',
    counts: total,
    latency: encodeHistogram(latency),
    service: encodeHistogram(service),
    sendLag: encodeHistogram(sendLag),
    sent,
    connectionsOpened: opened,
    peakBusy,
    ...(accepted.length > 0 ? { accepted } : {}),
  });
}

/** Deadlines: answers overdue, requests queued past the timeout, the run's end, the seconds. */
const watchdog = setInterval(() => {
  if (!started) return;
  const t = now();
  flushSecond(Math.floor((t - warmEnd) / 1000));
  for (const c of conns) {
    if (c.req !== null && c.connected && t - c.req.sentMs > spec.timeoutMs) {
      error('timeout', c.req);
      c.req = null;
      busy--;
      c.socket.destroy();
    }
  }
  while (queueHead < queue.length && t - (queue[queueHead] as Pending).intendedMs > spec.timeoutMs) error('timeout', takeQueued() as Pending);
  if (!open && t >= runEnd) scheduling = false;
  // Past every deadline nothing more can come: whatever is still out failed.
  if (t > runEnd + spec.timeoutMs + 2000) {
    for (const c of conns) if (c.req !== null) drop(c, 'timeout');
    queueHead = queue.length;
    scheduling = false;
  }
  maybeFinish();
}, 100);

async function prepare(): Promise<void> {
  const n = open ? Math.min(maxConns, perWorker(spec.initialConnections)) : perWorker((spec.mode as { connections: number }).connections);
  const made = await Promise.all(Array.from({ length: n }, () => new Promise<boolean>((resolve) => connect(null, resolve))));
  if (n > 0 && !made.some((ok) => ok)) throw new Error(`cannot connect to ${spec.host}:${spec.port}`);
}

port.on('message', (m: { type: string; t0EpochMs?: number }) => {
  if (m.type !== 'start' || m.t0EpochMs === undefined) return;
  t0 = m.t0EpochMs;
  started = true;
  const begin = (): void => {
    if (open) {
      pump();
      return;
    }
    // Closed loop: every prepared connection sends at once.
    for (const c of idle.splice(0)) send(c, { seq: seq++, intendedMs: now(), sentMs: 0 });
  };
  setTimeout(begin, Math.max(0, t0 - (performance.timeOrigin + performance.now())));
});

prepare().then(
  () => post({ type: 'ready' }),
  (err: unknown) => post({ type: 'error', message: err instanceof Error ? err.message : String(err) }),
);
