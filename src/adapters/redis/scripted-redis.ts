import type { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface RedisScript {
  readonly name: string;
  /** Keys the script takes; absent when the caller passes the count as the first argument (a variable number). */
  readonly numberOfKeys?: number;
  readonly lua: string;
}

/**
 * Registers a client's Lua scripts, then connects and pings, so an unreachable Redis fails at
 * start rather than on first use. `translate` turns a connection error into the adapter's own.
 */
export async function connectScripted(redis: Redis, scripts: readonly RedisScript[], log: Logger, translate: (err: unknown) => Error): Promise<void> {
  // ioredis emits every failed (re)connect attempt; the commands that fail meanwhile carry it.
  redis.on('error', (err: unknown) => log.warn({ err }, 'Redis connection error'));
  for (const s of scripts) redis.defineCommand(s.name, s.numberOfKeys === undefined ? { lua: s.lua } : { numberOfKeys: s.numberOfKeys, lua: s.lua });
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    redis.disconnect();
    throw translate(err);
  }
}
