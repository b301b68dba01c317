import type { EvidenceIndex, RecordsPrefetch } from '../domain/verification/ports.js';
import type { Logger } from '../util/logger.js';
import type { VerificationReads } from './verification-reads.js';

/**
 * Verification warmed up when the service starts. A stored-mode verification reads, besides its
 * record, what belongs to the record's batch: the batch's row, the upper levels of its tree, the
 * chain's anchor of its root and its manifest. Each is read once per batch and kept, so a warm
 * service pays for the record alone; but over an index of many batches, verifications drawn
 * across it met a batch not yet read in most of the first minutes after a start (ten million
 * records, 10 000 batches: 250-370 verifications/s with a 15-s warm-up, 1 048/s after 150 s),
 * each paying three more statements, a chain call and a manifest.
 *
 * Read ahead in bulk, newest batches first: first what would cost the index (rows, tree tops)
 * and the chain (anchors), a page at a time, since the embedded engine runs one statement at a
 * time and every miss there waits in its line; then the manifests, which cost this process's
 * own time only, a few at a time (VerificationReads.warmManifests).
 *
 * Beside those, from the start, the records' own storage is brought into memory (the page cache
 * of an embedded index): over ten million records most look-ups otherwise waited for the disk.
 * That costs the disk, not the engine's one line, so it runs alongside.
 */

export interface WarmUpOptions {
  /** Most batches read ahead, those of highest sequence first; 0 none. */
  readonly batches: number;
  /** Most bytes of the records' storage brought into memory; 0 (the default) none. */
  readonly prefetchBytes?: number;
  /** Stops the warm-up between two reads (the service is closing). */
  readonly signal?: AbortSignal;
}

export interface WarmUpResult {
  readonly batches: number;
  /** Bytes of the records' storage brought into memory. */
  readonly prefetchedBytes: number;
  readonly ms: number;
}

/** Batches per page: one read of their tree tops, one JSON-RPC exchange per hundred anchors. */
const PAGE = 250;

export async function warmVerification(evidence: EvidenceIndex, reads: VerificationReads, log: Logger, options: WarmUpOptions): Promise<WarmUpResult> {
  const started = performance.now();
  const prefetchBytes = Math.max(0, options.prefetchBytes ?? 0);
  if (options.batches <= 0 && prefetchBytes === 0) return { batches: 0, prefetchedBytes: 0, ms: 0 };
  // Never rejects: a failure costs only what it would have brought in.
  const prefetching = prefetchBytes === 0 ? Promise.resolve(null) : prefetchRecords(evidence, log, prefetchBytes, options.signal);
  let warmed = 0;
  let batchesMs = 0;
  let prefetched: RecordsPrefetch | null = null;
  try {
    const batches = options.batches <= 0 ? [] : await evidence.anchoredBatches(options.batches);
    for (let i = 0; i < batches.length && options.signal?.aborted !== true; i += PAGE) {
      const page = batches.slice(i, i + PAGE);
      await Promise.all([evidence.warmBatches(page.map((b) => b.batchId)), reads.warmBatches(page)]);
      warmed += page.length;
    }
    batchesMs = Math.round(performance.now() - started);
    await reads.warmManifests(batches.slice(0, warmed), options.signal);
  } finally {
    prefetched = await prefetching;
  }
  const result = { batches: warmed, prefetchedBytes: prefetched?.bytes ?? 0, ms: Math.round(performance.now() - started) };
  log.info({ ...result, batchesMs }, 'verification warmed up');
  return result;
}

async function prefetchRecords(evidence: EvidenceIndex, log: Logger, maxBytes: number, signal: AbortSignal | undefined): Promise<RecordsPrefetch | null> {
  const started = performance.now();
  try {
    const r = await evidence.prefetchRecords(maxBytes, signal);
    log.info({ bytes: r.bytes, tableBytes: r.tableBytes, ms: Math.round(performance.now() - started) }, 'records read ahead into memory');
    return r;
  } catch (err) {
    log.warn({ err }, 'reading the records ahead into memory failed');
    return null;
  }
}
