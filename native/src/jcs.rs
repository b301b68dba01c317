//! RFC 8785 canonical form of a parsed value.

use std::cmp::Ordering;

use crate::json::{has_surrogate, write_json_string, Value};

pub enum CanonError {
    LoneSurrogate,
    NonFinite,
}

pub fn canonicalize(v: &Value<'_>, out: &mut Vec<u8>) -> Result<(), CanonError> {
    let mut num = ryu_js::Buffer::new();
    write_value(v, out, &mut num)
}

fn write_value(v: &Value<'_>, out: &mut Vec<u8>, num: &mut ryu_js::Buffer) -> Result<(), CanonError> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Num(n) => {
            if !n.is_finite() {
                return Err(CanonError::NonFinite);
            }
            if *n == 0.0 {
                // Both zeros print as "0" (ECMAScript Number::toString).
                out.push(b'0');
            } else {
                out.extend_from_slice(num.format_finite(*n).as_bytes());
            }
        }
        Value::Str(s) => {
            if s.contains(&0xED) && has_surrogate(s) {
                return Err(CanonError::LoneSurrogate);
            }
            write_json_string(out, s);
        }
        Value::Arr(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_value(item, out, num)?;
            }
            out.push(b']');
        }
        Value::Obj(members) => {
            out.push(b'{');
            let mut order: Vec<usize> = (0..members.len()).collect();
            if members.len() > 1 {
                order.sort_unstable_by(|&a, &b| cmp_utf16(&members[a].0, &members[b].0));
            }
            for (i, &m) in order.iter().enumerate() {
                let (k, v) = &members[m];
                if k.contains(&0xED) && has_surrogate(k) {
                    return Err(CanonError::LoneSurrogate);
                }
                if i > 0 {
                    out.push(b',');
                }
                write_json_string(out, k);
                out.push(b':');
                write_value(v, out, num)?;
            }
            out.push(b'}');
        }
    }
    Ok(())
}

/// Orders UTF-8 strings by their UTF-16 code units. Byte order is code point order, which agrees
/// with UTF-16 order except between supplementary characters (surrogates D800-DBFF in UTF-16)
/// and U+E000..U+FFFF (lead bytes EE, EF): there the order flips.
pub fn cmp_utf16(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n && a[i..i + 8] == b[i..i + 8] {
        i += 8;
    }
    while i < n && a[i] == b[i] {
        i += 1;
    }
    if i == n {
        return a.len().cmp(&b.len());
    }
    let (x, y) = (a[i], b[i]);
    if x >= 0xF0 && (y == 0xEE || y == 0xEF) {
        return Ordering::Less;
    }
    if y >= 0xF0 && (x == 0xEE || x == 0xEF) {
        return Ordering::Greater;
    }
    x.cmp(&y)
}
