import type { Reader } from './reader.js';
import { withOptional } from './reader.js';
import type { ClickHouseConfig, NatsConfig, RedisConfig } from './types.js';

/** The external engines: each unset URL selects the embedded adapter for its port. */
export interface EnginesConfig {
  readonly nats?: NatsConfig;
  readonly redis?: RedisConfig;
  readonly clickhouse?: ClickHouseConfig;
}

function readNats(r: Reader): NatsConfig | undefined {
  // Several servers of one cluster may be listed: the client starts with any that answers.
  const url = r.urls('NATS_URL', ['nats:', 'tls:', 'ws:', 'wss:']);
  if (url === undefined) return undefined;
  return withOptional(
    {
      url,
      stream: r.str('NATS_STREAM') ?? 'DRIS_RECORDS',
      replicas: r.int('NATS_REPLICAS', 1, 1, 5),
      deadLetterStream: r.str('NATS_DEAD_LETTER_STREAM') ?? 'DRIS_DEAD_LETTER',
      publishTimeoutMs: r.int('NATS_PUBLISH_TIMEOUT_MS', 5000, 100, 120_000),
    },
    { user: r.str('NATS_USER'), pass: r.str('NATS_PASSWORD'), token: r.str('NATS_TOKEN'), credsFile: r.str('NATS_CREDS_FILE') },
  );
}

export function readEngines(r: Reader): EnginesConfig {
  const nats = readNats(r);
  const redisUrl = r.url('REDIS_URL', ['redis:', 'rediss:']);
  const chUrl = r.url('CLICKHOUSE_URL', ['http:', 'https:']);
  const redis: RedisConfig | undefined = redisUrl === undefined ? undefined : withOptional({ url: redisUrl, keyPrefix: r.str('REDIS_KEY_PREFIX') ?? 'dris:' }, { password: r.str('REDIS_PASSWORD') });
  const clickhouse: ClickHouseConfig | undefined =
    chUrl === undefined ? undefined : withOptional({ url: chUrl, database: r.str('CLICKHOUSE_DATABASE') ?? 'dris' }, { username: r.str('CLICKHOUSE_USER'), password: r.str('CLICKHOUSE_PASSWORD') });
  return {
    ...(nats === undefined ? {} : { nats }),
    ...(redis === undefined ? {} : { redis }),
    ...(clickhouse === undefined ? {} : { clickhouse }),
  };
}
