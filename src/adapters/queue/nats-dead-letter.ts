import { headers, nanos } from '@nats-io/transport-node';
import { JetStreamApiCodes, JetStreamApiError, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager, type StreamConfig } from '@nats-io/jetstream';
import { DrisError } from '../../errors/dris-error.js';

/**
 * The dead letters of the NATS queue: a JetStream stream of their own (default `DRIS_DEAD_LETTER`,
 * subjects `<prefix>.<consumer>`), file storage, kept until an operator removes them. A dead
 * letter is published with a message id made of the main stream, the message's sequence and the
 * consumer, so one set aside twice (its term lost, the message delivered and given up on again)
 * is stored once. Headers say what it is; the body is in the format of dead-letter.ts.
 */

export interface DeadLetterStreamOptions {
  readonly stream: string;
  readonly subjectPrefix: string;
  /** The stream the messages come from. */
  readonly mainStream: string;
  /** The main stream's subjects: the dead letters' must not overlap them. */
  readonly mainSubjectPrefix: string;
  readonly replicas: number;
  /** Window of the message-id deduplication; default 24 h. */
  readonly duplicateWindowMs?: number;
}

export function validateDeadLetterOptions(o: DeadLetterStreamOptions): void {
  if (!/^[A-Za-z0-9_-]+$/.test(o.stream)) throw new DrisError('config_invalid', 'NATS dead-letter stream name must match [A-Za-z0-9_-]+');
  if (o.stream === o.mainStream) throw new DrisError('config_invalid', 'the NATS dead-letter stream must not be the records stream');
  if (!/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/.test(o.subjectPrefix)) throw new DrisError('config_invalid', 'NATS dead-letter subject prefix must be dot-separated tokens of [A-Za-z0-9_-]');
  const overlaps = (a: string, b: string): boolean => a === b || a.startsWith(`${b}.`) || b.startsWith(`${a}.`);
  if (overlaps(o.subjectPrefix, o.mainSubjectPrefix)) throw new DrisError('config_invalid', 'the NATS dead-letter subjects must not overlap the records subjects');
}

/** Creates the dead-letter stream when missing; an existing one is left as the operator set it. */
export async function ensureDeadLetterStream(jsm: JetStreamManager, o: DeadLetterStreamOptions): Promise<void> {
  try {
    await jsm.streams.info(o.stream);
    return;
  } catch (err) {
    if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound)) throw err;
  }
  const config: Partial<StreamConfig> & { name: string } = {
    name: o.stream,
    subjects: [`${o.subjectPrefix}.>`],
    storage: StorageType.File,
    retention: RetentionPolicy.Limits,
    num_replicas: o.replicas,
    duplicate_window: nanos(o.duplicateWindowMs ?? 24 * 60 * 60 * 1000),
  };
  try {
    await jsm.streams.add(config);
  } catch (err) {
    // Another instance may have created it in between.
    await jsm.streams.info(o.stream).catch(() => {
      throw err;
    });
  }
}

/** Publishes one dead letter and waits for its acknowledgement. */
export async function publishDeadLetter(
  js: JetStreamClient,
  o: DeadLetterStreamOptions,
  letter: { readonly consumer: string; readonly subjectToken: string; readonly seq: number; readonly deliveryCount: number; readonly reason: string; readonly body: Uint8Array },
  timeoutMs: number,
): Promise<void> {
  const h = headers();
  h.set('Dris-Consumer', letter.consumer);
  h.set('Dris-Stream', o.mainStream);
  h.set('Dris-Stream-Seq', String(letter.seq));
  h.set('Dris-Delivery-Count', String(letter.deliveryCount));
  h.set('Dris-Reason', letter.reason);
  await js.publish(`${o.subjectPrefix}.${letter.subjectToken}`, letter.body, { msgID: `${o.mainStream}:${letter.seq}:${letter.consumer}`, headers: h, timeout: timeoutMs });
}
