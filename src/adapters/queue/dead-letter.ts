import type { AcceptedRecord } from '../../domain/records/types.js';
import { decodeMessage, encodeRecords } from './record-codec.js';

/**
 * A dead letter: a queue message (or the records of one) a consumer could never process, set
 * aside so that it stops blocking the others and an operator can look at it. Both queues store it
 * in one format: a line of JSON (what, why, from where) and then the message's bytes, the records
 * set aside in the queue's own message format, or, for a message that never decoded, its bytes
 * as they were.
 */

export interface DeadLetterInfo {
  /** The consumer that gave up on the message. */
  readonly consumer: string;
  /** Position of the message in the main stream. */
  readonly seq: number;
  readonly deliveryCount: number;
  /** Why it was set aside (an error code, never a payload). */
  readonly reason: string;
  readonly atMs: number;
  /** ingestIds of the records set aside; empty when the message did not decode. */
  readonly ingestIds: readonly string[];
  /** Whether the bytes after the first line are the message as received (it did not decode). */
  readonly undecodable: boolean;
}

/** The dead letter of `records` of a message. */
export function encodeDeadLetter(info: Omit<DeadLetterInfo, 'ingestIds' | 'undecodable'>, records: readonly AcceptedRecord[]): Buffer {
  const full: DeadLetterInfo = { ...info, ingestIds: records.map((r) => r.ingestId), undecodable: false };
  const body = encodeRecords(records.map(({ payload, ...rest }) => ({ ...rest, payloadBytes: Buffer.from(payload, 'utf8') })));
  return Buffer.concat([Buffer.from(`${JSON.stringify(full)}\n`, 'utf8'), body]);
}

/** The dead letter of a message that did not decode: its bytes as they were. */
export function encodeUndecodable(info: Omit<DeadLetterInfo, 'ingestIds' | 'undecodable'>, bytes: Uint8Array): Buffer {
  const full: DeadLetterInfo = { ...info, ingestIds: [], undecodable: true };
  return Buffer.concat([Buffer.from(`${JSON.stringify(full)}\n`, 'utf8'), bytes]);
}

/** A dead letter read back: its description and, unless it never decoded, its records. */
export function decodeDeadLetter(bytes: Uint8Array): { readonly info: DeadLetterInfo; readonly records: AcceptedRecord[] | null; readonly body: Buffer } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const newline = buf.indexOf(0x0a);
  if (newline < 0) throw new Error('not a dead letter');
  const info = JSON.parse(buf.subarray(0, newline).toString('utf8')) as DeadLetterInfo;
  const body = buf.subarray(newline + 1);
  return { info, records: info.undecodable ? null : decodeMessage(body), body };
}
