import { availableParallelism } from 'node:os';
import type { Config } from '../config/config.js';
import type { HashingBackend } from '../domain/hashing/port.js';
import { InlineHasher } from '../app/inline-hasher.js';
import type { RecordHasher } from '../app/ingest-service.js';
import { HashingService } from '../adapters/hashing/hashing-service.js';
import { HashPool } from '../adapters/hashing/hash-pool.js';
import { useNativeAddon } from '../adapters/hashing/native-backend.js';
import { loadHashingBackend, type BackendAttempt } from '../adapters/hashing/select-backend.js';
import type { Logger } from '../util/logger.js';
import type { Closers } from './closers.js';

export interface Hashing {
  readonly backend: HashingBackend;
  /** Backends tried before the chosen one, with why each failed (health and the start-up log). */
  readonly tried: readonly BackendAttempt[];
  /** What ingestion hashes with: inline, or through the worker pool. */
  readonly hasher: RecordHasher;
}

/** The chosen backend, with the configured native addon file (DRIS_NATIVE_ADDON) named first. */
export async function loadBackend(choice: Config['hashBackend'], nativeAddon: string | undefined): Promise<{ backend: HashingBackend; tried: readonly BackendAttempt[] }> {
  useNativeAddon(nativeAddon);
  return loadHashingBackend(choice);
}

/**
 * Hashing threads for DRIS_HASH_THREADS on `cpus` CPUs (what the process may run on, its
 * affinity), 0 for inline only. Small bodies always hash inline (a pool round trip costs more);
 * large ones in worker threads, so a 16 MiB bulk request does not hold the event loop while
 * another CPU could take it. On one CPU a worker takes the same CPU the loop would, and only adds
 * the hand-offs: inline there, a 1000-record bulk ingest of the api role costs about 12 % less CPU
 * per record and answers about 14 % more records per second (bench ingest, pinned; docs/hashing.md).
 * DRIS_HASH_THREADS=0 hashes inline only.
 */
export function hashThreadsFor(configured: number, cpus: number): number {
  return cpus <= 1 ? 0 : configured;
}

export async function openHashing(cfg: Config, closers: Closers, log: Logger): Promise<Hashing> {
  const { backend, tried } = await loadBackend(cfg.hashBackend, cfg.nativeAddon);
  for (const t of tried) log.info({ backend: t.name, err: t.error }, 'hash backend unavailable');
  log.info({ backend: backend.name, requested: cfg.hashBackend }, 'hash backend selected');
  const api = cfg.roles.includes('api');
  const cpus = availableParallelism();
  const threads = api ? hashThreadsFor(cfg.hashThreads, cpus) : 0;
  if (threads === 0) {
    if (api && cfg.hashThreads > 0) log.info({ cpus }, 'hashing inline: the process runs on one CPU');
    return { backend, tried, hasher: new InlineHasher(backend) };
  }
  const pool = new HashPool({ backend: backend.name, threads, maxQueue: cfg.hashMaxQueue, ...(cfg.nativeAddon === undefined ? {} : { nativeAddon: cfg.nativeAddon }) });
  closers.add(() => pool.close());
  const service = new HashingService({ backend, pool });
  return { backend, tried, hasher: { prepareBody: (body, shape) => service.prepareBodyNow(body, shape), recordHashes: (envelopes) => service.recordHashesNow(envelopes) } };
}
