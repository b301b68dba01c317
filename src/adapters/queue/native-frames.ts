import type { OutgoingRecord } from '../../domain/records/types.js';
import { optionalNativeFunction, type NativeAddon } from '../hashing/native-addon.js';
import { META_MEMBERS, NULLABLE_META_MEMBERS } from './frame-meta.js';

/**
 * Frames written by the native addon (native/src/frames.rs): the records' metadata values cross
 * as one string of UTF-16 code units plus their lengths (concatenation is cheap in V8), and the
 * JSON text, its escapes and its UTF-8 are written in native code straight into the message. The
 * payloads are copied in here, at the offsets the addon leaves for them.
 */

export type WriteFrames = NonNullable<NativeAddon['writeFramesUtf16']>;

/** Entries of `lengths` per record: each member's length, then the payload's bytes. */
const WIDTH = META_MEMBERS.length + 1;
const NULLABLE = META_MEMBERS.map((m) => NULLABLE_META_MEMBERS.has(m));
/**
 * Bytes a frame takes beside its values' text and its payload, at most: its two length fields,
 * the braces, each member's name with its quotes, colon, comma and its value's quotes, and the
 * two bytes `null` takes beyond a value's quotes, for each nullable member.
 */
const FRAME_FIXED_BYTES = 8 + 2 + META_MEMBERS.reduce((sum, m) => sum + m.length + 6, 0) + 2 * NULLABLE_META_MEMBERS.size;
/** UTF-8 bytes one code unit of a value may take in JSON text: a control character is `\u00xx`. */
const MAX_BYTES_PER_UNIT = 6;

/** The addon's frame writer, when an addon with one loads here. */
export function nativeFrameWriter(): WriteFrames | undefined {
  return optionalNativeFunction('writeFramesUtf16');
}

let units = Buffer.allocUnsafeSlow(64 * 1024);
let lengths = new Int32Array(WIDTH * 64);
let payloadAt = new Uint32Array(64);

/** Where the frames go: a buffer with room for `bound` bytes from `offset` on. */
export type FrameRoom = (bound: number) => { readonly out: Buffer; readonly offset: number };

/**
 * Writes the frames of `records` where `room` says; returns the buffer and where they end, or
 * null when the caller must write them (a value not of its member's type, or the addon declined).
 */
export function writeNativeFrames(records: readonly OutgoingRecord[], write: WriteFrames, room: FrameRoom): { out: Buffer; end: number } | null {
  const n = records.length;
  if (lengths.length < WIDTH * n) lengths = new Int32Array(WIDTH * n);
  if (payloadAt.length < n) payloadAt = new Uint32Array(n);
  let text = '';
  let payloads = 0;
  for (let i = 0, k = 0; i < n; i++, k += WIDTH) {
    const r = records[i] as OutgoingRecord;
    for (let j = 0; j < META_MEMBERS.length; j++) {
      const value: unknown = r[META_MEMBERS[j] as (typeof META_MEMBERS)[number]];
      if (typeof value === 'string') {
        text += value;
        lengths[k + j] = value.length;
      } else if (value === null && NULLABLE[j] === true) {
        lengths[k + j] = -1;
      } else {
        return null;
      }
    }
    lengths[k + WIDTH - 1] = r.payloadBytes.byteLength;
    payloads += r.payloadBytes.byteLength;
  }
  const { out, offset } = room(n * FRAME_FIXED_BYTES + MAX_BYTES_PER_UNIT * text.length + payloads);
  if (units.length < 2 * text.length) units = Buffer.allocUnsafeSlow(4 * text.length);
  units.write(text, 0, 'utf16le');
  const end = write(new Uint16Array(units.buffer, units.byteOffset, text.length), lengths.subarray(0, WIDTH * n), out, offset, payloadAt.subarray(0, n));
  if (end < 0) return null;
  for (let i = 0; i < n; i++) out.set((records[i] as OutgoingRecord).payloadBytes, payloadAt[i] as number);
  return { out, end };
}
