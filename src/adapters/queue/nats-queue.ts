import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import {
  AuthorizationError,
  ClosedConnectionError,
  connect,
  credsAuthenticator,
  DrainingConnectionError,
  nanos,
  PermissionViolationError,
  TimeoutError,
  UserAuthenticationExpiredError,
  type NatsConnection,
  type NodeConnectionOptions,
} from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  jetstream,
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type ConsumerConfig,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
  type StreamInfo,
} from '@nats-io/jetstream';
import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';
import { componentLogger } from '../../util/logger.js';
import type { AcceptedRecord, OutgoingRecord } from '../../domain/records/types.js';
import { MESSAGE_FORMAT_BYTES as FORMAT_BYTES, decodeLabelled, decodeMessage, encodeFrame, encodeMessage, type MessageLabel } from './record-codec.js';
import { encodeDeadLetter, encodeUndecodable } from './dead-letter.js';
import { ensureDeadLetterStream, publishDeadLetter, validateDeadLetterOptions, type DeadLetterStreamOptions } from './nats-dead-letter.js';
import type { ConsumeOptions, Delivery, PublishOptions, PublishResult, RecordQueue, Subscription } from '../../domain/records/ports.js';

const log = componentLogger('nats-queue');

export interface NatsQueueOptions {
  /** One URL or several separated by commas, e.g. `nats://127.0.0.1:4222`. */
  readonly servers: string;
  readonly user?: string;
  readonly pass?: string;
  readonly token?: string;
  /** Path of a NATS `.creds` file (JWT + nkey seed). */
  readonly credsFile?: string;
  /** Default `DRIS_RECORDS`. */
  readonly stream?: string;
  /** Default `dris.records`; subjects are `<prefix>.<tenant>.<client>`. */
  readonly subjectPrefix?: string;
  /** Stream replicas; 3 on a cluster, 1 on a single server (default). */
  readonly replicas?: number;
  /** Window in which a repeated Nats-Msg-Id is dropped; default 24 h. */
  readonly duplicateWindowMs?: number;
  /** Messages older than this leave the stream whether consumed or not; default 7 days. */
  readonly maxAgeMs?: number;
  /** Stream size cap in bytes; -1 (default) leaves it to the server's store limits. */
  readonly maxBytes?: number;
  /** Most records in one message; default 500. */
  readonly coalesceMaxRecords?: number;
  /** Most body bytes in one message; capped by the server's max_payload. Default 4 MiB. */
  readonly coalesceMaxBytes?: number;
  /** Wait for companions before a partial message is sent; 0 (default) = end of the current event-loop turn. */
  readonly coalesceMaxDelayMs?: number;
  /** Partial messages in flight at once; beyond it records keep coalescing until an ack. Default 2. */
  readonly maxInFlightMessages?: number;
  /** publish() calls in progress beyond which publish fails with `overloaded`; default 10 000. */
  readonly maxPendingPublishes?: number;
  /** Serialized record bytes in progress beyond which publish fails with `overloaded`; default 256 MiB. */
  readonly maxPendingBytes?: number;
  /** Wait for one PubAck, milliseconds; default 5000. */
  readonly publishTimeoutMs?: number;
  /** Tries per message, the same Nats-Msg-Id each time; default 3. */
  readonly publishAttempts?: number;
  /** JetStream API request timeout, milliseconds; default 5000. */
  readonly apiTimeoutMs?: number;
  /** First connection timeout, milliseconds; default 5000. */
  readonly connectTimeoutMs?: number;
  /** Delay of a redelivery after a handler failed, milliseconds; default 1000. */
  readonly redeliveryDelayMs?: number;
  /** Connection name shown by the server's monitoring; default `dris`. */
  readonly connectionName?: string;
  /** Stream of the messages a consumer gave up on (nats-dead-letter.ts); default `DRIS_DEAD_LETTER`. */
  readonly deadLetterStream?: string;
  /** Its subjects are `<prefix>.<consumer>`; default `dris.deadletter`. */
  readonly deadLetterSubjectPrefix?: string;
}

export const NATS_QUEUE_DEFAULTS = {
  stream: 'DRIS_RECORDS',
  subjectPrefix: 'dris.records',
  replicas: 1,
  duplicateWindowMs: 24 * 60 * 60 * 1000,
  maxAgeMs: 7 * 24 * 60 * 60 * 1000,
  maxBytes: -1,
  coalesceMaxRecords: 500,
  coalesceMaxBytes: 4 * 1024 * 1024,
  coalesceMaxDelayMs: 0,
  maxInFlightMessages: 2,
  maxPendingPublishes: 10_000,
  maxPendingBytes: 256 * 1024 * 1024,
  publishTimeoutMs: 5000,
  publishAttempts: 3,
  apiTimeoutMs: 5000,
  connectTimeoutMs: 5000,
  redeliveryDelayMs: 1000,
  connectionName: 'dris',
  deadLetterStream: 'DRIS_DEAD_LETTER',
  deadLetterSubjectPrefix: 'dris.deadletter',
} as const;

type Mutable<T> = { -readonly [K in keyof T]: T[K] };
type ResolvedOptions = Mutable<Omit<Required<NatsQueueOptions>, 'user' | 'pass' | 'token' | 'credsFile'> & Pick<NatsQueueOptions, 'user' | 'pass' | 'token' | 'credsFile'>>;

// Subject, headers and JSON framing; keeps a full message under the server's max_payload.
const MESSAGE_OVERHEAD_BYTES = 4096;
// Room left in a message of its own for its id and note (idempotency bookkeeping).
const LABEL_ALLOWANCE_BYTES = 64 * 1024;

/**
 * Subject tokens may not contain `.`, `*`, `>` or whitespace, and tenant ids may contain dots. Every
 * byte outside [A-Za-z0-9_-] becomes `~` plus two upper-case hex digits of its UTF-8 byte (so
 * `acme.eu` is `acme~2Eeu`); `~` itself is escaped the same way, which keeps the mapping
 * reversible, and the empty string is a lone `~`, which no encoding of a non-empty string yields.
 */
export function encodeSubjectToken(value: string): string {
  if (value.length === 0) return '~';
  let out = '';
  for (const byte of Buffer.from(value, 'utf8')) {
    const plain =
      (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x5f || byte === 0x2d;
    out += plain ? String.fromCharCode(byte) : `~${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeSubjectToken(token: string): string {
  if (token === '~') return '';
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    const ch = token.charCodeAt(i);
    if (ch === 0x7e) {
      const hex = token.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) throw new DrisError('internal_error', 'malformed subject token');
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(ch);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

export function recordSubject(prefix: string, tenantId: string, clientId: string): string {
  return `${prefix}.${encodeSubjectToken(tenantId)}.${encodeSubjectToken(clientId)}`;
}

function resolveOptions(options: NatsQueueOptions): ResolvedOptions {
  const o: ResolvedOptions = {
    servers: options.servers,
    stream: options.stream ?? NATS_QUEUE_DEFAULTS.stream,
    subjectPrefix: options.subjectPrefix ?? NATS_QUEUE_DEFAULTS.subjectPrefix,
    replicas: options.replicas ?? NATS_QUEUE_DEFAULTS.replicas,
    duplicateWindowMs: options.duplicateWindowMs ?? NATS_QUEUE_DEFAULTS.duplicateWindowMs,
    maxAgeMs: options.maxAgeMs ?? NATS_QUEUE_DEFAULTS.maxAgeMs,
    maxBytes: options.maxBytes ?? NATS_QUEUE_DEFAULTS.maxBytes,
    coalesceMaxRecords: options.coalesceMaxRecords ?? NATS_QUEUE_DEFAULTS.coalesceMaxRecords,
    coalesceMaxBytes: options.coalesceMaxBytes ?? NATS_QUEUE_DEFAULTS.coalesceMaxBytes,
    coalesceMaxDelayMs: options.coalesceMaxDelayMs ?? NATS_QUEUE_DEFAULTS.coalesceMaxDelayMs,
    maxInFlightMessages: options.maxInFlightMessages ?? NATS_QUEUE_DEFAULTS.maxInFlightMessages,
    maxPendingPublishes: options.maxPendingPublishes ?? NATS_QUEUE_DEFAULTS.maxPendingPublishes,
    maxPendingBytes: options.maxPendingBytes ?? NATS_QUEUE_DEFAULTS.maxPendingBytes,
    publishTimeoutMs: options.publishTimeoutMs ?? NATS_QUEUE_DEFAULTS.publishTimeoutMs,
    publishAttempts: options.publishAttempts ?? NATS_QUEUE_DEFAULTS.publishAttempts,
    apiTimeoutMs: options.apiTimeoutMs ?? NATS_QUEUE_DEFAULTS.apiTimeoutMs,
    connectTimeoutMs: options.connectTimeoutMs ?? NATS_QUEUE_DEFAULTS.connectTimeoutMs,
    redeliveryDelayMs: options.redeliveryDelayMs ?? NATS_QUEUE_DEFAULTS.redeliveryDelayMs,
    connectionName: options.connectionName ?? NATS_QUEUE_DEFAULTS.connectionName,
    deadLetterStream: options.deadLetterStream ?? NATS_QUEUE_DEFAULTS.deadLetterStream,
    deadLetterSubjectPrefix: options.deadLetterSubjectPrefix ?? NATS_QUEUE_DEFAULTS.deadLetterSubjectPrefix,
  };
  if (options.user !== undefined) o.user = options.user;
  if (options.pass !== undefined) o.pass = options.pass;
  if (options.token !== undefined) o.token = options.token;
  if (options.credsFile !== undefined) o.credsFile = options.credsFile;
  const positive: (keyof ResolvedOptions)[] = ['replicas', 'duplicateWindowMs', 'maxAgeMs', 'coalesceMaxRecords', 'coalesceMaxBytes', 'maxInFlightMessages', 'maxPendingPublishes', 'maxPendingBytes', 'publishTimeoutMs', 'publishAttempts', 'apiTimeoutMs', 'connectTimeoutMs'];
  for (const key of positive) {
    const v = o[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) throw new DrisError('config_invalid', `NATS queue option ${key} must be a positive integer`);
  }
  if (!Number.isInteger(o.coalesceMaxDelayMs) || o.coalesceMaxDelayMs < 0) throw new DrisError('config_invalid', 'NATS queue option coalesceMaxDelayMs must be >= 0');
  if (o.duplicateWindowMs > o.maxAgeMs) throw new DrisError('config_invalid', 'NATS queue duplicateWindowMs must not exceed maxAgeMs');
  if (!/^[A-Za-z0-9_-]+$/.test(o.stream)) throw new DrisError('config_invalid', 'NATS stream name must match [A-Za-z0-9_-]+');
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(o.subjectPrefix)) throw new DrisError('config_invalid', 'NATS subject prefix must be dot-separated tokens of [A-Za-z0-9_-]');
  validateDeadLetterOptions(deadLetterOptions(o));
  return o;
}

/** Errors of the connection itself rather than of one request; a retry does not help. */
function isTerminal(err: unknown): boolean {
  return err instanceof ClosedConnectionError || err instanceof DrainingConnectionError;
}

function hasCause(err: unknown, matches: (e: Error) => boolean): boolean {
  let e: unknown = err;
  for (let depth = 0; depth < 5 && e instanceof Error; depth++) {
    if (matches(e)) return true;
    e = e.cause;
  }
  return false;
}

function isRetryablePublishError(err: unknown): boolean {
  if (isTerminal(err)) return false;
  // An API error is the server's considered answer (limits, size); only its 503 means "not now".
  if (err instanceof JetStreamApiError) return err.status === 503;
  return true;
}

function translate(err: unknown, what: string): DrisError {
  if (err instanceof DrisError) return err;
  let code: DrisErrorCode = 'dependency_unavailable';
  if (hasCause(err, (e) => e instanceof TimeoutError)) code = 'timeout';
  else if (hasCause(err, (e) => e instanceof AuthorizationError || e instanceof UserAuthenticationExpiredError || e instanceof PermissionViolationError)) {
    code = 'config_invalid';
  }
  return new DrisError(code, `NATS ${what} failed`, { cause: err });
}

function idOfIngestIds(ingestIds: readonly string[]): string {
  const hash = createHash('sha256');
  for (const id of ingestIds) hash.update(id).update('\n');
  return hash.digest('base64url');
}

function isApiError(err: unknown, code: number): boolean {
  return err instanceof JetStreamApiError && err.code === code;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** One publish() call waiting for the acks of every message that carries one of its records. */
interface Waiter {
  remaining: number;
  settled: boolean;
  readonly resolve: () => void;
  readonly reject: (err: DrisError) => void;
}

interface Entry {
  readonly frame: Buffer;
  readonly bytes: number;
  readonly ingestId: string;
  readonly waiter: Waiter;
}

interface SubjectBuffer {
  readonly subject: string;
  entries: Entry[];
  bytes: number;
  timer: { readonly kind: 'timeout'; readonly handle: NodeJS.Timeout } | { readonly kind: 'immediate'; readonly handle: NodeJS.Immediate } | null;
}

export class NatsQueue implements RecordQueue {
  private readonly buffers = new Map<string, SubjectBuffer>();
  /** Buffers past their delay, waiting for a free message slot; oldest first. */
  private readonly ready = new Set<SubjectBuffer>();
  private inflightMessages = 0;
  private readonly inflight = new Set<Promise<void>>();
  private readonly subscriptions = new Set<NatsSubscription>();
  private readonly maxBodyBytes: number;
  readonly maxMessageBytes: number;
  private pendingPublishes = 0;
  private pendingBytes = 0;
  private closing = false;
  private closePromise: Promise<void> | null = null;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly opts: ResolvedOptions,
  ) {
    const serverMax = nc.info?.max_payload ?? 1024 * 1024;
    this.maxBodyBytes = Math.max(1024, Math.min(opts.coalesceMaxBytes, serverMax - MESSAGE_OVERHEAD_BYTES));
    this.maxMessageBytes = Math.max(Math.floor(this.maxBodyBytes / 2), this.maxBodyBytes - LABEL_ALLOWANCE_BYTES);
    this.watchStatus();
  }

  /** Connects, then creates the stream or brings its settings in line with the options. */
  static async connect(options: NatsQueueOptions): Promise<NatsQueue> {
    const opts = resolveOptions(options);
    const connectOptions: NodeConnectionOptions = {
      servers: opts.servers.split(',').map((s) => s.trim()).filter((s) => s.length > 0),
      name: opts.connectionName,
      timeout: opts.connectTimeoutMs,
      // Once up, ride out server restarts and failovers instead of failing every publish for good.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      waitOnFirstConnect: false,
    };
    if (opts.user !== undefined) connectOptions.user = opts.user;
    if (opts.pass !== undefined) connectOptions.pass = opts.pass;
    if (opts.token !== undefined) connectOptions.token = opts.token;
    if (opts.credsFile !== undefined) {
      let creds: Uint8Array;
      try {
        creds = await readFile(opts.credsFile);
      } catch (err) {
        throw new DrisError('config_invalid', 'NATS credentials file cannot be read', { cause: err });
      }
      connectOptions.authenticator = credsAuthenticator(creds);
    }

    let nc: NatsConnection;
    try {
      nc = await connect(connectOptions);
    } catch (err) {
      throw translate(err, 'connect');
    }
    try {
      const jsm = await jetstreamManager(nc, { timeout: opts.apiTimeoutMs });
      await ensureStream(jsm, opts);
      await ensureDeadLetterStream(jsm, deadLetterOptions(opts));
      const js = jetstream(nc, { timeout: opts.apiTimeoutMs });
      log.info({ stream: opts.stream }, 'connected to NATS JetStream');
      return new NatsQueue(nc, jsm, js, opts);
    } catch (err) {
      await nc.close().catch(() => undefined);
      throw translate(err, 'stream setup');
    }
  }

  get streamName(): string {
    return this.opts.stream;
  }

  publish(records: readonly OutgoingRecord[], options?: PublishOptions): Promise<PublishResult> {
    if (this.closing) return Promise.reject(new DrisError('dependency_unavailable', 'NATS queue is closed'));
    if (records.length === 0) return Promise.resolve({ duplicate: false });
    if (options !== undefined) return this.publishOwn(records, options);
    return this.publishCoalesced(records).then(() => ({ duplicate: false }));
  }

  private publishCoalesced(records: readonly OutgoingRecord[]): Promise<void> {
    if (this.pendingPublishes >= this.opts.maxPendingPublishes) {
      return Promise.reject(new DrisError('overloaded', 'too many queue publishes in progress'));
    }
    const serialized: { frame: Buffer; record: OutgoingRecord }[] = [];
    let total = 0;
    for (const record of records) {
      const frame = encodeFrame(record);
      if (frame.length + FORMAT_BYTES > this.maxBodyBytes) {
        return Promise.reject(new DrisError('payload_too_large', 'record exceeds the queue message size limit'));
      }
      serialized.push({ frame, record });
      total += frame.length;
    }
    if (this.pendingBytes + total > this.opts.maxPendingBytes) {
      return Promise.reject(new DrisError('overloaded', 'too many queued bytes in progress'));
    }

    this.pendingPublishes++;
    this.pendingBytes += total;
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        remaining: serialized.length,
        settled: false,
        resolve: () => {
          this.pendingPublishes--;
          resolve();
        },
        reject: (err) => {
          this.pendingPublishes--;
          reject(err);
        },
      };
      for (const s of serialized) {
        const subject = recordSubject(this.opts.subjectPrefix, s.record.tenantId, s.record.clientId);
        this.enqueue(subject, { frame: s.frame, bytes: s.frame.length, ingestId: s.record.ingestId, waiter });
      }
    });
  }

  /**
   * One message of its own under the caller's id (or one derived from the ingestIds), not
   * coalesced with others, so its id names exactly these records. A duplicate PubAck carries the
   * stream sequence of the message stored first, which is read back and returned.
   */
  private async publishOwn(records: readonly OutgoingRecord[], options: PublishOptions): Promise<PublishResult> {
    if (this.pendingPublishes >= this.opts.maxPendingPublishes) throw new DrisError('overloaded', 'too many queue publishes in progress');
    const frames = records.map(encodeFrame);
    const msgID = options.msgId ?? idOfIngestIds(records.map((r) => r.ingestId));
    const label: MessageLabel | undefined = options.msgId === undefined ? undefined : { id: options.msgId, note: options.note ?? '' };
    const body = encodeMessage(frames, label);
    if (body.length > this.maxBodyBytes) {
      throw new DrisError('payload_too_large', 'records exceed the queue message size limit');
    }
    if (this.pendingBytes + body.length > this.opts.maxPendingBytes) throw new DrisError('overloaded', 'too many queued bytes in progress');
    const subject = recordSubject(this.opts.subjectPrefix, (records[0] as OutgoingRecord).tenantId, (records[0] as OutgoingRecord).clientId);
    this.pendingPublishes++;
    this.pendingBytes += body.length;
    const task = this.sendOwn(subject, body, msgID, records[0]?.ingestId ?? '');
    const tracked = task.then(
      () => undefined,
      () => undefined,
    );
    this.inflight.add(tracked);
    try {
      return await task;
    } finally {
      this.inflight.delete(tracked);
      this.pendingPublishes--;
      this.pendingBytes -= body.length;
    }
  }

  private async sendOwn(subject: string, body: Buffer, msgID: string, firstIngestId: string): Promise<PublishResult> {
    for (let attempt = 1; ; attempt++) {
      let seq: number;
      try {
        const ack = await this.js.publish(subject, body, { msgID, timeout: this.opts.publishTimeoutMs });
        if (!ack.duplicate) return { duplicate: false };
        seq = ack.seq;
      } catch (err) {
        if (attempt >= this.opts.publishAttempts || !isRetryablePublishError(err)) {
          const failure = translate(err, 'publish');
          log.warn({ err: failure.cause, attempts: attempt }, 'publish to NATS failed');
          throw failure;
        }
        await sleep(Math.min(2000, 100 * 2 ** (attempt - 1)) + Math.floor(Math.random() * 50));
        continue;
      }
      let stored;
      try {
        stored = await this.jsm.streams.getMessage(this.opts.stream, { seq });
      } catch (err) {
        throw translate(err, 'read of a duplicate message');
      }
      if (stored === null) throw new DrisError('dependency_unavailable', 'the message a duplicate names is no longer in the stream');
      let decoded;
      try {
        decoded = decodeLabelled(stored.data);
      } catch (err) {
        throw new DrisError('internal_error', 'the message a duplicate names cannot be read', { cause: err });
      }
      // An earlier attempt of this very call was stored and its acknowledgement lost.
      if (decoded.records[0]?.ingestId === firstIngestId) return { duplicate: false };
      return { duplicate: true, records: decoded.records, note: decoded.label?.note ?? null };
    }
  }

  private enqueue(subject: string, entry: Entry): void {
    let buffer = this.buffers.get(subject);
    if (buffer !== undefined && buffer.bytes + entry.bytes + FORMAT_BYTES > this.maxBodyBytes) {
      this.sendBuffer(buffer);
      buffer = undefined;
    }
    if (buffer === undefined) {
      buffer = { subject, entries: [], bytes: 0, timer: null };
      this.buffers.set(subject, buffer);
    }
    buffer.entries.push(entry);
    buffer.bytes += entry.bytes;
    if (buffer.entries.length >= this.opts.coalesceMaxRecords) {
      this.sendBuffer(buffer);
    } else if (buffer.timer === null && !this.ready.has(buffer)) {
      const target = buffer;
      const fire = (): void => {
        target.timer = null;
        this.due(target);
      };
      buffer.timer =
        this.opts.coalesceMaxDelayMs === 0
          ? { kind: 'immediate', handle: setImmediate(fire) }
          : { kind: 'timeout', handle: setTimeout(fire, this.opts.coalesceMaxDelayMs) };
    }
  }

  /**
   * A partial buffer whose delay is over. The stream fsyncs message by message, so messages/s is
   * its real limit: with enough messages already in flight the buffer keeps filling and leaves when
   * an acknowledgement frees a slot. Light load thus pays one delay; heavy load gets large
   * messages on its own, without a longer delay for everybody.
   */
  private due(buffer: SubjectBuffer): void {
    if (this.inflightMessages < this.opts.maxInFlightMessages) this.sendBuffer(buffer);
    else this.ready.add(buffer);
  }

  private sendBuffer(buffer: SubjectBuffer): void {
    if (buffer.timer !== null) {
      if (buffer.timer.kind === 'timeout') clearTimeout(buffer.timer.handle);
      else clearImmediate(buffer.timer.handle);
      buffer.timer = null;
    }
    this.ready.delete(buffer);
    // Tenants come and go; an idle subject must not keep a buffer forever.
    if (this.buffers.get(buffer.subject) === buffer) this.buffers.delete(buffer.subject);
    const entries = buffer.entries;
    if (entries.length === 0) return;
    buffer.entries = [];
    buffer.bytes = 0;
    this.inflightMessages++;
    const task = this.send(buffer.subject, entries).finally(() => {
      this.inflight.delete(task);
      this.inflightMessages--;
      this.pump();
    });
    this.inflight.add(task);
  }

  private pump(): void {
    for (const buffer of this.ready) {
      if (this.inflightMessages >= this.opts.maxInFlightMessages) return;
      this.sendBuffer(buffer);
    }
  }

  /** Sends one message and settles its callers; never rejects. */
  private async send(subject: string, entries: readonly Entry[]): Promise<void> {
    const body = encodeMessage(entries.map((e) => e.frame));
    // Derived from the records' ingestIds: every retry of this message carries the same id and
    // the stream stores it once.
    const msgID = idOfIngestIds(entries.map((e) => e.ingestId));
    let failure: DrisError | null = null;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.js.publish(subject, body, { msgID, timeout: this.opts.publishTimeoutMs });
        break;
      } catch (err) {
        if (attempt >= this.opts.publishAttempts || !isRetryablePublishError(err)) {
          failure = translate(err, 'publish');
          log.warn({ err: failure.cause, attempts: attempt, records: entries.length }, 'publish to NATS failed');
          break;
        }
        await sleep(Math.min(2000, 100 * 2 ** (attempt - 1)) + Math.floor(Math.random() * 50));
      }
    }
    let bytes = 0;
    for (const e of entries) {
      bytes += e.bytes;
      const w = e.waiter;
      if (w.settled) continue;
      if (failure !== null) {
        w.settled = true;
        w.reject(failure);
      } else if (--w.remaining === 0) {
        w.settled = true;
        w.resolve();
      }
    }
    this.pendingBytes -= bytes;
  }

  consume(options: ConsumeOptions, handler: (deliveries: readonly Delivery[]) => Promise<void>): Subscription {
    if (this.closing) throw new DrisError('dependency_unavailable', 'NATS queue is closed');
    const sub = new NatsSubscription(this.jsm, this.js, this.opts, options, handler, () => this.subscriptions.delete(sub));
    this.subscriptions.add(sub);
    sub.start();
    return sub;
  }

  /** Messages in the dead-letter stream now. */
  async deadLetterCount(): Promise<number> {
    try {
      return (await this.jsm.streams.info(this.opts.deadLetterStream)).state.messages;
    } catch (err) {
      throw translate(err, 'dead-letter stream info');
    }
  }

  async check(): Promise<void> {
    if (this.closing || this.nc.isClosed()) throw new DrisError('dependency_unavailable', 'NATS queue is closed');
    try {
      await this.jsm.streams.info(this.opts.stream);
    } catch (err) {
      throw translate(err, 'stream info');
    }
  }

  close(): Promise<void> {
    this.closePromise ??= this.doClose();
    return this.closePromise;
  }

  private async doClose(): Promise<void> {
    this.closing = true;
    for (const buffer of [...this.buffers.values()]) this.sendBuffer(buffer);
    await Promise.all([...this.inflight]);
    await Promise.all([...this.subscriptions].map((s) => s.stop()));
    if (!this.nc.isClosed()) {
      try {
        await this.nc.drain();
      } catch (err) {
        log.warn({ err }, 'NATS drain failed; closing');
        await this.nc.close().catch(() => undefined);
      }
    }
  }

  private watchStatus(): void {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') log.warn({ server: s.server }, 'NATS disconnected');
        else if (s.type === 'reconnect') log.info({ server: s.server }, 'NATS reconnected');
        else if (s.type === 'error') log.warn({ err: s.error }, 'NATS connection error');
      }
    })().catch((err: unknown) => log.debug({ err }, 'NATS status stream ended'));
  }
}

async function ensureStream(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
  // Limits retention keeps each message for maxAge whatever the consumers do: every durable
  // consumer (indexer, accumulator, a rebuild) reads the whole stream independently, and a record
  // published before its consumers exist is not lost as it would be under interest retention.
  // Discard "new" makes a full stream refuse publishes (the caller answers 503) rather than evict
  // records no consumer has read yet; maxAge is the only way a record leaves unread, and it is
  // sized for recovering from a consumer outage, not for normal operation.
  const wanted = {
    subjects: [`${opts.subjectPrefix}.>`],
    max_age: nanos(opts.maxAgeMs),
    max_bytes: opts.maxBytes,
    duplicate_window: nanos(opts.duplicateWindowMs),
    num_replicas: opts.replicas,
    discard: DiscardPolicy.New,
  };
  let info: StreamInfo | null = null;
  try {
    info = await jsm.streams.info(opts.stream);
  } catch (err) {
    if (!isApiError(err, JetStreamApiCodes.StreamNotFound)) throw err;
  }
  if (info === null) {
    const config: Partial<StreamConfig> & { name: string } = {
      name: opts.stream,
      storage: StorageType.File,
      retention: RetentionPolicy.Limits,
      ...wanted,
    };
    try {
      await jsm.streams.add(config);
      log.info({ stream: opts.stream }, 'created stream');
      return;
    } catch (err) {
      // Another instance may have created it in between; fall through to compare and update.
      info = await jsm.streams.info(opts.stream).catch(() => {
        throw err;
      });
    }
  }
  const current = info.config;
  if (current.storage !== StorageType.File || current.retention !== RetentionPolicy.Limits) {
    throw new DrisError('config_invalid', `stream ${opts.stream} exists with ${current.storage} storage and ${current.retention} retention; dris needs file storage and limits retention`);
  }
  const differs =
    current.subjects.length !== 1 ||
    current.subjects[0] !== wanted.subjects[0] ||
    current.max_age !== wanted.max_age ||
    current.max_bytes !== wanted.max_bytes ||
    current.duplicate_window !== wanted.duplicate_window ||
    current.num_replicas !== wanted.num_replicas ||
    current.discard !== wanted.discard;
  if (differs) {
    await jsm.streams.update(opts.stream, wanted);
    log.info({ stream: opts.stream }, 'updated stream settings');
  }
}

class NatsDelivery implements Delivery {
  settled = false;

  constructor(
    private readonly msg: JsMsg,
    readonly records: readonly AcceptedRecord[],
    private readonly ackTimeoutMs: number,
    /** Publishes the dead letter of these records of the message; resolves once it is stored. */
    private readonly setAside: (msg: JsMsg, reason: string, what: SetAside) => Promise<void>,
  ) {}

  get seq(): number {
    return this.msg.info.streamSequence;
  }

  get deliveryCount(): number {
    return this.msg.info.deliveryCount;
  }

  async ack(): Promise<void> {
    this.settled = true;
    try {
      // Waits for the server to confirm the ack, so a resolved ack() means no redelivery.
      await this.msg.ackAck({ timeout: this.ackTimeoutMs });
    } catch (err) {
      throw translate(err, 'ack');
    }
  }

  nak(delayMs?: number): void {
    this.settled = true;
    this.msg.nak(delayMs);
  }

  async deadLetter(reason: string, records: readonly AcceptedRecord[] = this.records): Promise<void> {
    await this.setAside(this.msg, reason, { records });
    this.settled = true;
    // Not delivered to this consumer again; a term that is lost only repeats a dead letter the
    // stream deduplicates.
    this.msg.term(reason);
  }
}

function parseRecords(msg: JsMsg): AcceptedRecord[] | null {
  try {
    return decodeMessage(msg.data);
  } catch {
    return null;
  }
}

class NatsSubscription implements Subscription {
  private readonly buffer: JsMsg[] = [];
  private messages: ConsumerMessages | null = null;
  private wake: (() => void) | null = null;
  private stopping = false;
  private runTask: Promise<void> | null = null;
  private processTask: Promise<void> | null = null;
  private stopPromise: Promise<void> | null = null;
  private readonly log;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly js: JetStreamClient,
    private readonly opts: ResolvedOptions,
    private readonly consumeOptions: ConsumeOptions,
    private readonly handler: (deliveries: readonly Delivery[]) => Promise<void>,
    private readonly onStopped: () => void,
  ) {
    this.log = log.child({ consumer: consumeOptions.consumer });
  }

  start(): void {
    this.runTask = this.run();
    this.processTask = this.process();
  }

  stop(): Promise<void> {
    this.stopPromise ??= this.doStop();
    return this.stopPromise;
  }

  private async doStop(): Promise<void> {
    this.stopping = true;
    this.signal();
    const messages = this.messages;
    if (messages !== null) await messages.close().catch(() => undefined);
    await this.runTask;
    await this.processTask;
    // Handed out to nobody: give them back now rather than after ack_wait.
    for (const msg of this.buffer.splice(0)) msg.nak();
    this.onStopped();
  }

  private signal(): void {
    const wake = this.wake;
    this.wake = null;
    wake?.();
  }

  /** Keeps a pull subscription open until stopped, re-creating it if it ends on its own. */
  private async run(): Promise<void> {
    for (let failures = 0; !this.stopping; ) {
      try {
        await this.ensureConsumer();
        const consumer = await this.js.consumers.get(this.opts.stream, this.consumeOptions.consumer);
        if (this.stopping) return;
        const messages = await consumer.consume({
          max_messages: Math.max(1, Math.min(this.consumeOptions.maxInFlight, Math.max(this.consumeOptions.maxBatch * 2, 256))),
          callback: (msg) => {
            this.buffer.push(msg);
            this.signal();
          },
        });
        this.messages = messages;
        failures = 0;
        if (this.stopping) {
          await messages.close().catch(() => undefined);
          return;
        }
        this.watch(messages);
        const ended = await messages.closed();
        if (this.stopping) return;
        this.log.warn({ err: ended instanceof Error ? ended : undefined }, 'consumer stopped on its own; resubscribing');
      } catch (err) {
        failures++;
        this.log.warn({ err, failures }, 'cannot subscribe to NATS consumer; retrying');
        await sleep(Math.min(5000, 200 * 2 ** Math.min(failures, 5)));
      }
    }
  }

  private watch(messages: ConsumerMessages): void {
    void (async () => {
      for await (const s of messages.status()) {
        if (s.type === 'heartbeats_missed' || s.type === 'consumer_not_found' || s.type === 'stream_not_found' || s.type === 'consumer_deleted') {
          this.log.warn({ status: s.type }, 'NATS consumer status');
        }
      }
    })().catch((err: unknown) => this.log.debug({ err }, 'consumer status stream ended'));
  }

  private async ensureConsumer(): Promise<void> {
    const { consumer, ackWaitMs, maxInFlight } = this.consumeOptions;
    const wanted = {
      ack_wait: nanos(ackWaitMs),
      max_ack_pending: maxInFlight,
      filter_subject: `${this.opts.subjectPrefix}.>`,
    };
    let exists = false;
    try {
      const info = await this.jsm.consumers.info(this.opts.stream, consumer);
      exists = true;
      const c = info.config;
      if (c.ack_wait !== wanted.ack_wait || c.max_ack_pending !== wanted.max_ack_pending || c.filter_subject !== wanted.filter_subject) {
        await this.jsm.consumers.update(this.opts.stream, consumer, wanted);
      }
    } catch (err) {
      if (exists || !isApiError(err, JetStreamApiCodes.ConsumerNotFound)) throw err;
    }
    if (exists) return;
    const config: Partial<ConsumerConfig> = {
      durable_name: consumer,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      // Redelivered until acked: a record must never silently drop out of the pipeline.
      max_deliver: -1,
      ...wanted,
    };
    await this.jsm.consumers.add(this.opts.stream, config);
  }

  /** A dead letter of a message of this consumer, stored before the message is terminated. */
  private async setAside(msg: JsMsg, reason: string, what: SetAside): Promise<void> {
    const consumer = this.consumeOptions.consumer;
    const { streamSequence: seq, deliveryCount } = msg.info;
    const info = { consumer, seq, deliveryCount, reason, atMs: Date.now() };
    const body = 'raw' in what ? encodeUndecodable(info, what.raw) : encodeDeadLetter(info, what.records);
    try {
      await publishDeadLetter(this.js, deadLetterOptions(this.opts), { consumer, subjectToken: encodeSubjectToken(consumer), seq, deliveryCount, reason, body }, this.opts.publishTimeoutMs);
    } catch (err) {
      throw translate(err, 'dead-letter publish');
    }
    const ingestIds = 'raw' in what ? [] : what.records.slice(0, 10).map((r) => r.ingestId);
    this.log.error({ seq, deliveryCount, reason, ingestIds }, 'queue message set aside as a dead letter');
  }

  private async process(): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      if (this.buffer.length === 0) {
        await new Promise<void>((resolve) => {
          this.wake = resolve;
        });
        continue;
      }
      const batch = this.buffer.splice(0, this.consumeOptions.maxBatch);
      const deliveries: NatsDelivery[] = [];
      for (const msg of batch) {
        const records = parseRecords(msg);
        if (records === null) {
          // Unreadable forever: redelivering it would only block the consumer.
          try {
            await this.setAside(msg, 'undecodable', { raw: msg.data });
          } catch (err) {
            this.log.error({ seq: msg.info.streamSequence, err }, 'malformed queue message could not be set aside; redelivering');
            msg.nak(this.opts.redeliveryDelayMs);
            continue;
          }
          this.log.error({ seq: msg.info.streamSequence }, 'terminating malformed queue message');
          msg.term('malformed dris message');
          continue;
        }
        deliveries.push(new NatsDelivery(msg, records, this.opts.apiTimeoutMs, (m, reason, what) => this.setAside(m, reason, what)));
      }
      if (deliveries.length === 0) continue;
      try {
        await this.handler(deliveries);
      } catch (err) {
        const open = deliveries.filter((d) => !d.settled);
        this.log.warn({ err, messages: open.length }, 'queue handler failed; redelivering');
        for (const d of open) d.nak(this.opts.redeliveryDelayMs);
      }
    }
  }
}

/** What a dead letter holds: records of the message, or the bytes of one that did not decode. */
type SetAside = { readonly records: readonly AcceptedRecord[] } | { readonly raw: Uint8Array };

function deadLetterOptions(o: ResolvedOptions): DeadLetterStreamOptions {
  return { stream: o.deadLetterStream, subjectPrefix: o.deadLetterSubjectPrefix, mainStream: o.stream, mainSubjectPrefix: o.subjectPrefix, replicas: o.replicas, duplicateWindowMs: o.duplicateWindowMs };
}
