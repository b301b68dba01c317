import { DrisError, type DrisErrorCode } from '../../errors/dris-error.js';

/**
 * Storage faults met by the durable files of the data directory, reported to whoever runs the
 * process. A `full` fault (ENOSPC, EDQUOT) is recovered from by the writer and only degrades the
 * service; a `fatal` one (a failed flush, a failed cut-back) means a log's page cache can no longer
 * be trusted: the service must stop accepting and restart to recover from disk.
 *
 * A process-wide sink rather than a callback threaded through every adapter: the segment log sits
 * under the queue, the admission store and the index journal, which the composition root opens
 * through several layers.
 */

export type StorageFaultKind = 'full' | 'fatal';

export interface StorageFault {
  readonly kind: StorageFaultKind;
  readonly error: DrisError;
}

type Listener = (fault: StorageFault) => void;

const listeners = new Set<Listener>();

export function onStorageFault(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export function reportStorageFault(fault: StorageFault): void {
  for (const l of [...listeners]) l(fault);
}

/** Seconds a client is asked to wait: space takes a while to free, a restart a few seconds. */
export const RETRY_AFTER_FULL_S = 5;
export const RETRY_AFTER_FAILED_S = 5;
export const RETRY_AFTER_WRITE_S = 1;

/** A 503 of the storage layer, with the Retry-After header and `retryAfter` in the body. */
export function storageError(code: Extract<DrisErrorCode, 'storage_full' | 'storage_failed' | 'dependency_unavailable' | 'overloaded'>, message: string, retryAfterS: number, cause?: unknown): DrisError {
  return new DrisError(code, message, {
    ...(cause === undefined ? {} : { cause }),
    extra: { retryAfter: retryAfterS },
    headers: { 'Retry-After': String(retryAfterS) },
  });
}

/** The errors a write meets when the file system, or the user's quota, has no room left. */
export function isNoSpace(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOSPC' || code === 'EDQUOT';
}
