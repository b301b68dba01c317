import { createHash } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { DrisError } from '../../errors/dris-error.js';
import type { OutgoingRecord } from '../../domain/records/types.js';
import type { ConsumeOptions, Delivery, PublishOptions, PublishResult, RecordQueue, Subscription } from '../../domain/records/ports.js';
import { MESSAGE_FORMAT_BYTES as FORMAT_BYTES, decodeLabelled, encodeFrame, encodeMessage, type MessageLabel } from './record-codec.js';
import { ensureDeadLetterStream } from './nats-dead-letter.js';
import { deadLetterOptions, resolveOptions, type NatsQueueOptions, type ResolvedOptions } from './nats-options.js';
import { recordSubject } from './nats-subjects.js';
import { isRetryablePublishError, sleep, translate } from './nats-errors.js';
import { ensureStream, openConnection } from './nats-stream.js';
import { NatsSubscription } from './nats-subscription.js';

export { NATS_QUEUE_DEFAULTS, type NatsQueueOptions } from './nats-options.js';
export { decodeSubjectToken, encodeSubjectToken, recordSubject } from './nats-subjects.js';

// Subject, headers and JSON framing; keeps a full message under the server's max_payload.
const MESSAGE_OVERHEAD_BYTES = 4096;
// Room left in a message of its own for its id and note (idempotency bookkeeping).
const LABEL_ALLOWANCE_BYTES = 64 * 1024;

function idOfIngestIds(ingestIds: readonly string[]): string {
  const hash = createHash('sha256');
  for (const id of ingestIds) hash.update(id).update('\n');
  return hash.digest('base64url');
}

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
    const nc = await openConnection(opts);
    try {
      const jsm = await jetstreamManager(nc, { timeout: opts.apiTimeoutMs });
      await ensureStream(jsm, opts);
      await ensureDeadLetterStream(jsm, deadLetterOptions(opts));
      const js = jetstream(nc, { timeout: opts.apiTimeoutMs });
      opts.logger.info({ stream: opts.stream }, 'connected to NATS JetStream');
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
          this.opts.logger.warn({ err: failure.cause, attempts: attempt }, 'publish to NATS failed');
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
          this.opts.logger.warn({ err: failure.cause, attempts: attempt, records: entries.length }, 'publish to NATS failed');
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

  /** Messages the durable consumer has not been delivered yet, plus those delivered and not acked. */
  async consumerLag(consumer: string): Promise<number> {
    try {
      const info = await this.jsm.consumers.info(this.opts.stream, consumer);
      return info.num_pending + info.num_ack_pending;
    } catch (err) {
      throw translate(err, 'consumer info');
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
        this.opts.logger.warn({ err }, 'NATS drain failed; closing');
        await this.nc.close().catch(() => undefined);
      }
    }
  }

  private watchStatus(): void {
    void (async () => {
      for await (const s of this.nc.status()) {
        if (s.type === 'disconnect') this.opts.logger.warn({ server: s.server }, 'NATS disconnected');
        else if (s.type === 'reconnect') this.opts.logger.info({ server: s.server }, 'NATS reconnected');
        else if (s.type === 'error') this.opts.logger.warn({ err: s.error }, 'NATS connection error');
      }
    })().catch((err: unknown) => this.opts.logger.debug({ err }, 'NATS status stream ended'));
  }
}
