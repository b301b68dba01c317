import { readFile } from 'node:fs/promises';
import { connect, credsAuthenticator, nanos, type NatsConnection, type NodeConnectionOptions } from '@nats-io/transport-node';
import { DiscardPolicy, JetStreamApiCodes, RetentionPolicy, StorageType, type JetStreamManager, type StreamConfig, type StreamInfo } from '@nats-io/jetstream';
import { DrisError } from '../../errors/dris-error.js';
import { isApiError, translate } from './nats-errors.js';
import type { ResolvedOptions } from './nats-options.js';

export async function ensureStream(jsm: JetStreamManager, opts: ResolvedOptions): Promise<void> {
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
      opts.logger.info({ stream: opts.stream }, 'created stream');
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
    opts.logger.info({ stream: opts.stream }, 'updated stream settings');
  }
}

/** The connection, riding out server restarts and failovers once up. */
export async function openConnection(opts: ResolvedOptions): Promise<NatsConnection> {
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
  return nc;
}
