import type { IdempotencyStore } from '../domain/limits/ports.js';
import type { RecordQueue } from '../domain/records/ports.js';
import { componentLogger, type Logger } from '../util/logger.js';
import { answerOf, parseNote, recordFingerprint } from './ingest-messages.js';

/**
 * Completes, at start-up, the idempotency keys of keyed records that the queue stored but whose
 * answer never reached the idempotency store (the process died between the two writes). Needed
 * where the queue's duplicate window ends with its retention (the embedded queue): while the
 * message is held, a retry is answered from it anyway, but once consumers are done with it and it
 * leaves the log, only the stored answer stops a late retry from storing the record again.
 * Bulk parts are left to the queue's window: their answer spans several messages.
 */
export async function recoverIdempotencyAnswers(
  queue: RecordQueue,
  store: IdempotencyStore,
  ttlMs: number,
  now: () => number = Date.now,
  log: Logger = componentLogger('idempotency'),
): Promise<number> {
  if (queue.notedMessages === undefined) return 0;
  let completed = 0;
  try {
    for await (const m of queue.notedMessages()) {
      const note = parseNote(m.note);
      const record = m.records[0];
      if (note === null || note.p !== undefined || record === undefined || m.records.length !== 1) continue;
      const left = Date.parse(record.acceptedAt) + ttlMs - now();
      if (!(left > 0)) continue;
      const entry = await store.get(note.k);
      if (entry?.state === 'done') continue;
      const stored = await store.complete(note.k, { state: 'done', fingerprint: recordFingerprint(record), status: 202, body: JSON.stringify(answerOf(record)) }, left);
      if (stored) completed += 1;
    }
  } catch (err) {
    // Not fatal: while the queue holds the messages, a retry is answered from them anyway.
    log.error({ err, completed }, 'idempotency answers could not all be recovered from the queue');
  }
  if (completed > 0) log.info({ completed }, 'idempotency answers recovered from the queue');
  return completed;
}
