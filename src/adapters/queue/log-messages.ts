import { DrisError } from '../../errors/dris-error.js';
import type { PublishResult } from '../../domain/records/ports.js';
import type { Logger } from '../../util/logger.js';
import type { SegmentLog } from '../storage/segment-log.js';
import { decodeLabelled, messageLabel, type MessageLabel } from './record-codec.js';

/** Reads of the embedded queue's messages in its segment log, beside the consumers' reads. */

/** Every message the log holds, oldest first, read up to the durable end at the time of the call. */
export async function* logEntries(log: SegmentLog): AsyncGenerator<{ seq: number; payload: Buffer }> {
  const last = log.lastSeq;
  let from = log.firstSeq;
  while (from <= last) {
    const batch = await log.read(from, 4096);
    if (batch.length === 0) break;
    for (const e of batch) {
      if (e.seq > last) return;
      from = e.seq + 1;
      yield e;
    }
  }
}

/** A message's label; null for unlabelled messages and (logged) for a label that cannot be read. */
export function labelOf(payload: Buffer, seq: number, log: Logger): MessageLabel | null {
  try {
    return messageLabel(payload);
  } catch (err) {
    log.error({ seq, err }, 'queue message with an unreadable label: its id is not deduplicated');
    return null;
  }
}

/** The message stored under `msgId` at `seq`, as a duplicate's answer; null when the log no longer holds it. */
export async function storedUnder(log: SegmentLog, msgId: string, seq: number): Promise<PublishResult | null> {
  if (seq < log.firstSeq) return null;
  let entries;
  try {
    entries = await log.read(seq, 1);
  } catch (err) {
    throw new DrisError('dependency_unavailable', 'queue read failed', { cause: err });
  }
  const e = entries[0];
  if (e?.seq !== seq) return null;
  const { label, records } = decodeLabelled(e.payload);
  if (label?.id !== msgId) return null;
  return { duplicate: true, records, note: label.note };
}
