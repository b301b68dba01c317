//! The frames of a queue message (src/adapters/queue/record-codec.ts): each record's metadata as
//! the JSON text JSON.stringify gives for it, and room for its payload. The metadata's values
//! arrive as one string of UTF-16 code units cut at their lengths, as envelope hashes do; writing
//! their JSON text here, escaped and encoded in one pass, replaces the text built in JavaScript
//! and measured (Buffer.byteLength) before being written, which was a fifth of the front's time
//! per bulk request.

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// The metadata's members in the order record-codec.ts's writer puts them, each with what comes
/// before its value.
const META_KEYS: [&[u8]; 17] = [
    b"{\"ingestId\":",
    b",\"clientId\":",
    b",\"keyId\":",
    b",\"hashScheme\":",
    b",\"tenantId\":",
    b",\"database\":",
    b",\"collection\":",
    b",\"recordId\":",
    b",\"recordVersion\":",
    b",\"operationType\":",
    b",\"sourceTimestamp\":",
    b",\"payloadHash\":",
    b",\"salt\":",
    b",\"recordHash\":",
    b",\"acceptedAt\":",
    b",\"idempotencyKey\":",
    b",\"correlationId\":",
];
/// Members that may be null (sourceTimestamp, idempotencyKey).
const NULLABLE: [usize; 2] = [10, 15];
/// Entries of `lengths` per record: its members' lengths, then its payload's bytes.
pub const WIDTH: usize = META_KEYS.len() + 1;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// Appends `units` as a JSON string literal, as JSON.stringify writes it: `"` and `\` escaped,
/// control characters as \b \t \n \f \r or \u00xx, an unpaired surrogate as \uxxxx, everything
/// else as UTF-8.
fn push_json_string(out: &mut Vec<u8>, units: &[u16]) {
    out.push(b'"');
    let mut i = 0;
    while i < units.len() {
        let u = units[i];
        i += 1;
        match u {
            0x22 => out.extend_from_slice(b"\\\""),
            0x5C => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            0..=0x1F => push_escaped(out, u),
            0x20..=0x7F => out.push(u as u8),
            0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (u >> 6) as u8, 0x80 | (u & 0x3F) as u8]),
            0xD800..=0xDBFF if units.get(i).is_some_and(|&low| (0xDC00..=0xDFFF).contains(&low)) => {
                let cp = 0x10000 + (((u as u32) - 0xD800) << 10) + (units[i] as u32 - 0xDC00);
                i += 1;
                out.extend_from_slice(&[0xF0 | (cp >> 18) as u8, 0x80 | ((cp >> 12) & 0x3F) as u8, 0x80 | ((cp >> 6) & 0x3F) as u8, 0x80 | (cp & 0x3F) as u8]);
            }
            0xD800..=0xDFFF => push_escaped(out, u),
            _ => out.extend_from_slice(&[0xE0 | (u >> 12) as u8, 0x80 | ((u >> 6) & 0x3F) as u8, 0x80 | (u & 0x3F) as u8]),
        }
    }
    out.push(b'"');
}

fn push_escaped(out: &mut Vec<u8>, u: u16) {
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((u >> shift) & 0xF) as usize]);
    }
}

/// Writes the frames of the records whose member lengths and payload sizes are `lengths` (WIDTH
/// per record; -1 is null, allowed for the nullable members only) into `out` from `offset`: for
/// each, u32le meta length, the meta, u32le payload length, and the payload's room, whose offset
/// goes to `payload_at`. Returns where the last frame ends; None when the input does not fit
/// (lengths, a misplaced null, `out` too small), and the caller writes the frames itself.
pub fn write_frames(units: &[u16], lengths: &[i32], out: &mut [u8], offset: usize, payload_at: &mut [u32]) -> Option<usize> {
    if !lengths.len().is_multiple_of(WIDTH) || payload_at.len() < lengths.len() / WIDTH {
        return None;
    }
    let mut meta = Vec::with_capacity(1024);
    let mut at = offset;
    let mut unit = 0usize;
    for (row, slot) in lengths.chunks_exact(WIDTH).zip(payload_at.iter_mut()) {
        meta.clear();
        for (f, (&len, key)) in row.iter().zip(META_KEYS).enumerate() {
            meta.extend_from_slice(key);
            if len < 0 {
                if len != -1 || !NULLABLE.contains(&f) {
                    return None;
                }
                meta.extend_from_slice(b"null");
                continue;
            }
            let end = unit.checked_add(len as usize)?;
            let v = units.get(unit..end)?;
            unit = end;
            // Most values are printable ASCII without quotes or backslashes, written as they are.
            if v.iter().fold(true, |plain, &u| plain & (0x20..0x7F).contains(&u) & (u != b'"' as u16) & (u != b'\\' as u16)) {
                meta.push(b'"');
                meta.extend(v.iter().map(|&u| u as u8));
                meta.push(b'"');
            } else {
                push_json_string(&mut meta, v);
            }
        }
        meta.push(b'}');
        let payload_len = usize::try_from(row[WIDTH - 1]).ok()?;
        let meta_len = u32::try_from(meta.len()).ok()?;
        let payload_start = at.checked_add(8 + meta.len())?;
        let frame_end = payload_start.checked_add(payload_len)?;
        if frame_end > out.len() {
            return None;
        }
        out[at..at + 4].copy_from_slice(&meta_len.to_le_bytes());
        out[at + 4..at + 4 + meta.len()].copy_from_slice(&meta);
        out[payload_start - 4..payload_start].copy_from_slice(&(payload_len as u32).to_le_bytes());
        *slot = u32::try_from(payload_start).ok()?;
        at = frame_end;
    }
    (unit == units.len()).then_some(at)
}

/// write_frames for JavaScript: the end offset, or -1 when the caller must write the frames.
#[napi]
pub fn write_frames_utf16(units: Uint16ArraySlice, lengths: Int32ArraySlice, mut out: Uint8ArraySlice, offset: u32, mut payload_at: Uint32ArraySlice) -> i64 {
    // Safety: the views are only written during this synchronous call, while JS cannot run.
    let (out, payload_at) = unsafe { (out.as_mut(), payload_at.as_mut()) };
    write_frames(&units, &lengths, out, offset as usize, payload_at).map_or(-1, |end| end as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u16> {
        s.encode_utf16().collect()
    }

    #[test]
    fn escapes_as_json_stringify() {
        let cases: [(&[u16], &str); 6] = [
            (&utf16("plain"), "\"plain\""),
            (&utf16("a\"b\\c"), "\"a\\\"b\\\\c\""),
            (&utf16("\u{8}\t\n\u{c}\r\u{1}\u{1f}"), "\"\\b\\t\\n\\f\\r\\u0001\\u001f\""),
            (&utf16("é€😀\u{2028}\u{7f}"), "\"é€😀\u{2028}\u{7f}\""),
            (&[0xD800, 0x41], "\"\\ud800A\""),
            (&[0xDC00], "\"\\udc00\""),
        ];
        for (units, want) in cases {
            let mut out = Vec::new();
            push_json_string(&mut out, units);
            assert_eq!(String::from_utf8(out).unwrap(), want);
        }
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let mut out = vec![0u8; 4096];
        let mut at = [0u32; 1];
        let mut lengths = [1i32; WIDTH];
        let units = vec![b'x' as u16; META_KEYS.len()];
        assert!(write_frames(&units, &lengths, &mut out, 0, &mut at).is_some());
        lengths[0] = -1;
        assert!(write_frames(&units[1..], &lengths, &mut out, 0, &mut at).is_none(), "ingestId may not be null");
        lengths[0] = 1;
        lengths[10] = -1;
        assert!(write_frames(&units[1..], &lengths, &mut out, 0, &mut at).is_some(), "sourceTimestamp may be null");
        assert!(write_frames(&units, &lengths, &mut out, 0, &mut at).is_none(), "units left over");
        assert!(write_frames(&units[1..], &lengths, &mut out[..100], 0, &mut at).is_none(), "out too small");
        assert!(write_frames(&units[1..], &lengths[1..], &mut out, 0, &mut at).is_none(), "not a whole row");
    }
}
