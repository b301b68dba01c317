import path from 'node:path';
import type { Config } from '../config/config.js';
import type { DrisError } from '../errors/dris-error.js';
import { ProcessLock } from '../adapters/process-lock.js';
import { StorageGuard } from '../adapters/storage/storage-guard.js';
import { onStorageFault } from '../adapters/storage/storage-faults.js';
import type { Logger } from '../util/logger.js';
import type { Closers } from './closers.js';

/**
 * Embedded engines keep state in the data directory: only one process may own it (a lock), and
 * its free space gates ingestion (the storage guard). A log that fails for good marks the service
 * failed (`markFailed`). Null when every engine is external.
 */
export async function guardDataDir(cfg: Config, closers: Closers, markFailed: (err: DrisError) => void, root: Logger): Promise<StorageGuard | null> {
  const embedded = cfg.nats === undefined || cfg.redis === undefined || cfg.clickhouse === undefined;
  if (embedded) {
    const lock = ProcessLock.acquire(path.join(cfg.dataDir, 'dris.lock'));
    closers.add(() => lock.release());
  }
  const guard = embedded ? await StorageGuard.start({ dir: cfg.dataDir, minFreeBytes: cfg.minFreeBytes, logger: root.child({ component: 'storage' }) }) : null;
  if (guard !== null) closers.add(() => guard.close());
  const unsubscribe = onStorageFault((fault) => {
    if (fault.kind === 'full') {
      guard?.noteFull();
      return;
    }
    guard?.noteFatal(fault.error);
    markFailed(fault.error);
  });
  closers.add(() => {
    unsubscribe();
  });
  return guard;
}
