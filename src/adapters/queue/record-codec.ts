import type { AcceptedRecord, OutgoingRecord } from '../../domain/records/types.js';
import { nativeFrameWriter, writeNativeFrames, type WriteFrames } from './native-frames.js';

/**
 * The bytes of a queue message: the records published together, each as its metadata (JSON) and
 * its canonical payload (UTF-8, as hashed), stored as they are. The payload is JSON text already;
 * nesting it as a JSON string would escape every quote in it, and encoding that was the largest
 * single cost of a publish.
 *
 *   message := 0x01 frame*
 *            | 0x02 u16le idLength, id (UTF-8), u32le noteLength, note (UTF-8), frame*
 *   frame   := u32le metaLength, meta (UTF-8 JSON of the record without its payload),
 *              u32le payloadLength, payload (UTF-8)
 *
 * The second form is a message published under an id of the publisher's choosing with a note
 * (idempotency bookkeeping): the queue deduplicates by the id and gives the note back with the
 * records to a publish that duplicates it. Consumers read its records as those of the first form.
 *
 * Messages written before this format are a JSON array of whole records; they start with `[` and
 * are still read, so a queue holding them drains after an upgrade.
 */

const FORMAT_FRAMES = 0x01;
const FORMAT_NOTED = 0x02;
/** The bytes a message adds for its format, beside its frames. */
export const MESSAGE_FORMAT_BYTES = 1;
const LEGACY_JSON = 0x5b; // '['

/** One record's frame; messages concatenate frames behind the format byte (`encodeMessage`). */
export function encodeFrame(r: OutgoingRecord): Buffer {
  return encodeFrameWith(r, nativeFrameWriter());
}

/** `encodeFrame` with this native frame writer, or none: the frame is written here then. */
export function encodeFrameWith(r: OutgoingRecord, write: WriteFrames | undefined): Buffer {
  const native = write === undefined ? null : writeNativeFrames([r], write, (bound) => ({ out: roomFor(bound), offset: 0 }));
  if (native !== null) return keep(native.out, native.end);
  const meta = metaJson(r);
  const out = roomFor(frameBound(meta, r));
  return keep(out, writeFrame(out, 0, meta, r));
}

/** The id and note of a message of the second form. */
export interface MessageLabel {
  readonly id: string;
  readonly note: string;
}

/** Bytes a label adds to a message beside the format byte. */
export function labelBytes(label: MessageLabel | undefined): number {
  return label === undefined ? 0 : 6 + Buffer.byteLength(label.id, 'utf8') + Buffer.byteLength(label.note, 'utf8');
}

function writeLabel(out: Buffer, label: MessageLabel | undefined): number {
  if (label === undefined) {
    out[0] = FORMAT_FRAMES;
    return MESSAGE_FORMAT_BYTES;
  }
  out[0] = FORMAT_NOTED;
  const idLength = out.write(label.id, 3, 'utf8');
  out.writeUInt16LE(idLength, 1);
  const noteLength = out.write(label.note, 7 + idLength, 'utf8');
  out.writeUInt32LE(noteLength, 3 + idLength);
  return 7 + idLength + noteLength;
}

/** A message of frames made by `encodeFrame`, in publication order, with a label when given. */
export function encodeMessage(frames: readonly Buffer[], label?: MessageLabel): Buffer {
  if (label !== undefined && Buffer.byteLength(label.id, 'utf8') > 0xffff) throw new Error('message id too long');
  let total = MESSAGE_FORMAT_BYTES + labelBytes(label);
  for (const f of frames) total += f.length;
  const out = Buffer.allocUnsafe(total);
  let at = writeLabel(out, label);
  for (const f of frames) {
    f.copy(out, at);
    at += f.length;
  }
  return out;
}

/**
 * The message of these records, written in one buffer (what `encodeMessage(records.map(encodeFrame), label)`
 * gives). `write`: the native frame writer, by default the addon's when it has one; without it,
 * or for a value not of its member's type, the frames are written here.
 */
export function encodeRecords(records: readonly OutgoingRecord[], label?: MessageLabel, write: WriteFrames | undefined = nativeFrameWriter()): Buffer {
  if (label !== undefined && Buffer.byteLength(label.id, 'utf8') > 0xffff) throw new Error('message id too long');
  const head = MESSAGE_FORMAT_BYTES + labelBytes(label);
  const native =
    write === undefined
      ? null
      : writeNativeFrames(records, write, (bound) => {
          const out = roomFor(head + bound);
          return { out, offset: writeLabel(out, label) };
        });
  if (native !== null) return keep(native.out, native.end);
  const metas = records.map(metaJson);
  let bound = head;
  for (let i = 0; i < records.length; i++) bound += frameBound(metas[i] as string, records[i] as OutgoingRecord);
  const out = roomFor(bound);
  let at = writeLabel(out, label);
  for (let i = 0; i < records.length; i++) at = writeFrame(out, at, metas[i] as string, records[i] as OutgoingRecord);
  return keep(out, at);
}

/**
 * Where messages are written: the metadata's UTF-8 length is known only once written, and
 * measuring it first (Buffer.byteLength) cost more than writing it, so room is made for the worst
 * case and the message kept at its exact length.
 *
 * - A small message (a single record's) is written in place in a slab shared by the messages
 *   after it and kept as a view of it: no copy, and one allocation per slab rather than one per
 *   message (Node's own pool, for Buffer.allocUnsafe, is 8 KiB: a new one every few records,
 *   which showed in the single-record profile). A slab is freed once none of its messages is held.
 * - A large one is written into a reused scratch buffer and copied out into a buffer of its own,
 *   so that a slab never keeps a bulk message's memory alive.
 */
const SLAB_BYTES = 256 * 1024;
const IN_SLAB_BYTES = 16 * 1024;
const SCRATCH_KEPT_BYTES = 8 * 1024 * 1024;
let slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
let slabAt = 0;
let scratch = Buffer.allocUnsafeSlow(256 * 1024);

/** Room for a message of at most `bytes` bytes, to be written from 0 and kept with `keep`. */
function roomFor(bytes: number): Buffer {
  if (bytes <= IN_SLAB_BYTES) {
    if (slabAt + bytes > SLAB_BYTES) {
      slab = Buffer.allocUnsafeSlow(SLAB_BYTES);
      slabAt = 0;
    }
    return slab.subarray(slabAt, slabAt + bytes);
  }
  if (bytes <= scratch.length) return scratch;
  // A larger message than any kept scratch holds gets a buffer of its own, not kept.
  if (bytes > SCRATCH_KEPT_BYTES) return Buffer.allocUnsafeSlow(bytes);
  scratch = Buffer.allocUnsafeSlow(Math.min(SCRATCH_KEPT_BYTES, Math.max(bytes, 2 * scratch.length)));
  return scratch;
}

/** The message written in `from` (room `roomFor` made), kept at its `length`: a view of the slab, or a copy of its own. */
function keep(from: Buffer, length: number): Buffer {
  if (from.buffer === slab.buffer) {
    // Eight-byte steps keep the next message's start aligned.
    slabAt += (length + 7) & ~7;
    return from.subarray(0, length);
  }
  const out = Buffer.allocUnsafeSlow(length);
  from.copy(out, 0, 0, length);
  return out;
}

/**
 * The record without its payload, as JSON.stringify writes it: the codec's own writer of frames,
 * for a process whose native addon has none and for values of another type than declared.
 */
function metaJson(r: OutgoingRecord): string {
  // Members named rather than a rest spread of the record: that would copy the payload bytes
  // along, and they must not be serialised here. The order is META_MEMBERS'.
  return JSON.stringify({
    ingestId: r.ingestId,
    clientId: r.clientId,
    keyId: r.keyId,
    hashScheme: r.hashScheme,
    tenantId: r.tenantId,
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

/** Bytes a frame may take at most: a UTF-16 code unit is at most 3 bytes of UTF-8. */
function frameBound(meta: string, r: OutgoingRecord): number {
  return 8 + 3 * meta.length + r.payloadBytes.byteLength;
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


/** The label of a message of the second form, null for other messages; reads nothing else. */
export function messageLabel(bytes: Uint8Array): MessageLabel | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf[0] !== FORMAT_NOTED) return null;
  return readLabel(buf).label;
}

function readLabel(buf: Buffer): { label: MessageLabel; end: number } {
  if (buf.length < 7) throw new Error('truncated queue message');
  const idLength = buf.readUInt16LE(1);
  if (3 + idLength + 4 > buf.length) throw new Error('truncated queue message');
  const noteLength = buf.readUInt32LE(3 + idLength);
  const end = 7 + idLength + noteLength;
  if (end > buf.length) throw new Error('truncated queue message');
  return { label: { id: buf.toString('utf8', 3, 3 + idLength), note: buf.toString('utf8', 7 + idLength, end) }, end };
}

/** The records of a message; throws on bytes that are not one (a foreign or damaged message). */
export function decodeMessage(bytes: Uint8Array): AcceptedRecord[] {
  return decodeLabelled(bytes).records;
}

/** The records of a message and its label (null for a message of the first form). */
export function decodeLabelled(bytes: Uint8Array): { label: MessageLabel | null; records: AcceptedRecord[] } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length === 0) throw new Error('empty queue message');
  if (buf[0] === LEGACY_JSON) return { label: null, records: decodeLegacy(buf) };
  let at = 1;
  let label: MessageLabel | null = null;
  if (buf[0] === FORMAT_NOTED) {
    const read = readLabel(buf);
    label = read.label;
    at = read.end;
  } else if (buf[0] !== FORMAT_FRAMES) {
    throw new Error(`unknown queue message format ${buf[0] ?? -1}`);
  }
  return { label, records: decodeFrames(buf, at) };
}

function decodeFrames(buf: Buffer, from: number): AcceptedRecord[] {
  const out: AcceptedRecord[] = [];
  let at = from;
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
    out.push(withLazyPayload(meta as AcceptedRecord, buf.subarray(metaEnd + 4, payloadEnd)));
    at = payloadEnd;
  }
  return out;
}

/**
 * The indexer stores the payload bytes as they are and the accumulator never reads them: decoding
 * every payload to a string, in every consumer, was most of a delivery's cost. The bytes go on the
 * record (hidden from enumeration) and `payload` is an enumerable getter that decodes them on each
 * read, so spreads, JSON texts and comparisons of the record see the payload as before. The same
 * property descriptors on every record keep them of one hidden class.
 */
/** Reused for every record (its value set for the call), so a decode allocates no descriptor. */
const PAYLOAD_BYTES: PropertyDescriptor = { enumerable: false, writable: false, configurable: true, value: undefined };
const LAZY_PAYLOAD: PropertyDescriptor = {
  enumerable: true,
  configurable: true,
  get(this: AcceptedRecord): string {
    const b = this.payloadBytes as Uint8Array;
    return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('utf8');
  },
};

function withLazyPayload(meta: AcceptedRecord, bytes: Buffer): AcceptedRecord {
  PAYLOAD_BYTES.value = bytes;
  Object.defineProperty(meta, 'payloadBytes', PAYLOAD_BYTES);
  PAYLOAD_BYTES.value = undefined;
  Object.defineProperty(meta, 'payload', LAZY_PAYLOAD);
  return meta;
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
