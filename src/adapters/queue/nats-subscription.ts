import { AckPolicy, DeliverPolicy, JetStreamApiCodes, type ConsumerConfig, type ConsumerMessages, type JetStreamClient, type JetStreamManager, type JsMsg } from '@nats-io/jetstream';
import { nanos } from '@nats-io/transport-node';
import type { AcceptedRecord } from '../../domain/records/types.js';
import type { ConsumeOptions, Delivery, Subscription } from '../../domain/records/ports.js';
import { decodeMessage } from './record-codec.js';
import { encodeDeadLetter, encodeUndecodable } from './dead-letter.js';
import { publishDeadLetter } from './nats-dead-letter.js';
import { deadLetterOptions, type ResolvedOptions } from './nats-options.js';
import { isApiError, sleep, translate } from './nats-errors.js';
import { encodeSubjectToken } from './nats-subjects.js';

/** A consumer of the JetStream queue: a durable pull consumer, resubscribed when it ends on its own. */

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

export class NatsSubscription implements Subscription {
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
    this.log = opts.logger.child({ consumer: consumeOptions.consumer });
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
