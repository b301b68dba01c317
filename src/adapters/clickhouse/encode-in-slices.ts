import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * Rows encoded for an insert a slice at a time, with a turn of the event loop between slices.
 * In the all-roles process the indexer and the pipeline share the loop with the HTTP front: a
 * write of ten thousand rows encoded in one go held every request waiting behind it for tens of
 * milliseconds (the tail of the ingest latency). The bytes are the same as in one go.
 */
export async function encodeInSlices<T>(items: readonly T[], size: number, encode: (slice: readonly T[]) => Buffer): Promise<Buffer> {
  if (items.length <= size) return encode(items);
  const parts: Buffer[] = [];
  for (let i = 0; i < items.length; i += size) {
    if (i > 0) await nextTurn();
    parts.push(encode(items.slice(i, i + size)));
  }
  return Buffer.concat(parts);
}

/** Rows per slice: about a millisecond or two of encoding each. */
export const ENCODE_SLICE_ROWS = 256;
