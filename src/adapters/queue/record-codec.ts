import type { AcceptedRecord, OutgoingRecord } from '../../domain/records/types.js';

/**
 * The bytes of a queue message: the records published together, each as its metadata (JSON) and
 * its canonical payload (UTF-8, as hashed), stored as they are. The payload is JSON text already;
 * nesting it as a JSON string would escape every quote in it, and encoding that was the largest
 * single cost of a publish.
 *
 *   message := 0x01 frame*
 *   frame   := u32le metaLength, meta (UTF-8 JSON of the record without its payload),
 *              u32le payloadLength, payload (UTF-8)
 *
 * Messages written before this format are a JSON array of whole records; they start with `[` and
 * are still read, so a queue holding them drains after an upgrade.
 */

const FORMAT_FRAMES = 0x01;
/** The bytes a message adds for its format, beside its frames. */
export const MESSAGE_FORMAT_BYTES = 1;
const LEGACY_JSON = 0x5b; // '['

/** One record's frame; messages concatenate frames behind the format byte (`encodeMessage`). */
export function encodeFrame(r: OutgoingRecord): Buffer {
  const meta = metaJson(r);
  const frame = Buffer.allocUnsafe(frameLength(meta, r));
  writeFrame(frame, 0, meta, r);
  return frame;
}

/** A message of frames made by `encodeFrame`, in publication order. */
export function encodeMessage(frames: readonly Buffer[]): Buffer {
  let total = MESSAGE_FORMAT_BYTES;
  for (const f of frames) total += f.length;
  const out = Buffer.allocUnsafe(total);
  out[0] = FORMAT_FRAMES;
  let at = MESSAGE_FORMAT_BYTES;
  for (const f of frames) {
    f.copy(out, at);
    at += f.length;
  }
  return out;
}

/** The message of these records, written in one buffer (what `encodeMessage(records.map(encodeFrame))` gives). */
export function encodeRecords(records: readonly OutgoingRecord[]): Buffer {
  const metas = records.map(metaJson);
  let total = MESSAGE_FORMAT_BYTES;
  for (let i = 0; i < records.length; i++) total += frameLength(metas[i] as string, records[i] as OutgoingRecord);
  const out = Buffer.allocUnsafe(total);
  out[0] = FORMAT_FRAMES;
  let at = MESSAGE_FORMAT_BYTES;
  for (let i = 0; i < records.length; i++) at = writeFrame(out, at, metas[i] as string, records[i] as OutgoingRecord);
  return out;
}

function metaJson(r: OutgoingRecord): string {
  // Members named one by one: a rest spread would copy the object first, and the payload bytes
  // must not be serialised here.
  return JSON.stringify({
    ingestId: r.ingestId,
    hashScheme: r.hashScheme,
    tenantId: r.tenantId,
    clientId: r.clientId,
    keyId: r.keyId,
    database: r.database,
    collection: r.collection,
    recordId: r.recordId,
    recordVersion: r.recordVersion,
    operationType: r.operationType,
    sourceTimestamp: r.sourceTimestamp,
    payloadHash: r.payloadHash,
    salt: r.salt,
    recordHash: r.recordHash,
    acceptedAt: r.acceptedAt,
    idempotencyKey: r.idempotencyKey,
    correlationId: r.correlationId,
  });
}

function frameLength(meta: string, r: OutgoingRecord): number {
  return 8 + Buffer.byteLength(meta, 'utf8') + r.payloadBytes.byteLength;
}

/** Writes one frame at `at`; returns where the next one starts. */
function writeFrame(out: Buffer, at: number, meta: string, r: OutgoingRecord): number {
  const metaLength = out.write(meta, at + 4, 'utf8');
  out.writeUInt32LE(metaLength, at);
  let next = at + 4 + metaLength;
  const payload = r.payloadBytes;
  out.writeUInt32LE(payload.byteLength, next);
  out.set(payload, next + 4);
  next += 4 + payload.byteLength;
  return next;
}


/** The records of a message; throws on bytes that are not one (a foreign or damaged message). */
export function decodeMessage(bytes: Uint8Array): AcceptedRecord[] {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length === 0) throw new Error('empty queue message');
  if (buf[0] === LEGACY_JSON) return decodeLegacy(buf);
  if (buf[0] !== FORMAT_FRAMES) throw new Error(`unknown queue message format ${buf[0] ?? -1}`);
  const out: AcceptedRecord[] = [];
  let at = 1;
  while (at < buf.length) {
    if (at + 4 > buf.length) throw new Error('truncated queue message');
    const metaLength = buf.readUInt32LE(at);
    const metaEnd = at + 4 + metaLength;
    if (metaEnd + 4 > buf.length) throw new Error('truncated queue message');
    const payloadLength = buf.readUInt32LE(metaEnd);
    const payloadEnd = metaEnd + 4 + payloadLength;
    if (payloadEnd > buf.length) throw new Error('truncated queue message');
    const meta: unknown = JSON.parse(buf.toString('utf8', at + 4, metaEnd));
    if (!isRecordMeta(meta)) throw new Error('queue message frame without an ingestId');
    (meta as { payload?: string }).payload = buf.toString('utf8', metaEnd + 4, payloadEnd);
    out.push(meta as AcceptedRecord);
    at = payloadEnd;
  }
  return out;
}

function decodeLegacy(buf: Buffer): AcceptedRecord[] {
  const value: unknown = JSON.parse(buf.toString('utf8'));
  if (!Array.isArray(value)) throw new Error('queue message is not an array of records');
  for (const r of value) {
    if (!isRecordMeta(r) || typeof (r as { payload?: unknown }).payload !== 'string') throw new Error('queue message holds a record without an ingestId or payload');
  }
  return value as AcceptedRecord[];
}

function isRecordMeta(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && typeof (v as { ingestId?: unknown }).ingestId === 'string';
}
