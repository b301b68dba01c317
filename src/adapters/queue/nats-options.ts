import { DrisError } from '../../errors/dris-error.js';
import { componentLogger, type Logger } from '../../util/logger.js';
import { validateDeadLetterOptions, type DeadLetterStreamOptions } from './nats-dead-letter.js';

/** Options of the JetStream queue, their defaults, and their validation. */

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
  /** Default: a child of the default root (library use). */
  readonly logger?: Logger;
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
export type ResolvedOptions = Mutable<Omit<Required<NatsQueueOptions>, 'user' | 'pass' | 'token' | 'credsFile'> & Pick<NatsQueueOptions, 'user' | 'pass' | 'token' | 'credsFile'>>;

export function resolveOptions(options: NatsQueueOptions): ResolvedOptions {
  const o = { ...NATS_QUEUE_DEFAULTS, logger: options.logger ?? componentLogger('nats-queue') } as ResolvedOptions;
  for (const [key, value] of Object.entries(options)) if (value !== undefined && key !== 'logger') (o as Record<string, unknown>)[key] = value;
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

export function deadLetterOptions(o: ResolvedOptions): DeadLetterStreamOptions {
  return { stream: o.deadLetterStream, subjectPrefix: o.deadLetterSubjectPrefix, mainStream: o.stream, mainSubjectPrefix: o.subjectPrefix, replicas: o.replicas, duplicateWindowMs: o.duplicateWindowMs };
}
