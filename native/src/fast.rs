//! One-pass canonicaliser for the common case: a body without any I-JSON violation.
//!
//! The full parser (json.rs) builds a tree and tracks the path of every value so that it can
//! report violations the way the TypeScript side does; for a well-formed body that bookkeeping
//! costs more than the canonicalisation itself. This pass writes RFC 8785 text as it reads and
//! gives up (None) at the first thing it does not handle: a syntax error, any violation, a member
//! name with an escape. The caller then runs the full parser, so every answer with an error, and
//! every rare shape, still comes from one implementation. A success here is byte-identical to the
//! full path: the Rust tests and the cross-backend property test hold it to that.
//!
//! Outside the payloads nothing is written: the envelope members are only checked, and the byte
//! spans of the payload objects are kept so the envelope text (the body with each payload object
//! replaced by `{}`) can be copied out without a second parse.

use crate::jcs::cmp_utf16;
use crate::json::{load8, scan_number, simple_escape, special8, write_json_string, MAX_DEPTH};
use std::borrow::Cow;

use crate::{push_hex, sha, Prepared};

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

struct Bail;

type R<T> = Result<T, Bail>;

/// Where a value sits, as far as the answer cares.
#[derive(Clone, Copy, PartialEq)]
enum Role {
    Other,
    /// The body itself.
    Root,
    /// The root's `records` (0) or `items` (1) member, in a bulk body.
    List(u8),
    /// An element of the root's `records` (0) or `items` (1) array.
    Element(u8),
    /// The recordPayload of the single body (2) or of the current element of records/items (0/1).
    Payload(u8),
}

struct Member {
    key_start: usize,
    key_end: usize,
    start: usize,
    end: usize,
    /// The name's first 8 bytes, big-endian, zero-padded (a raw name holds no NUL byte).
    prefix: u64,
    /// Whether those bytes include one at or above 0xEE, where byte order and UTF-16 order differ.
    exotic: bool,
}

impl Member {
    fn new(out: &[u8], key_start: usize, key_end: usize, start: usize, end: usize) -> Member {
        let len = key_end - key_start;
        // Eight bytes from the name on are nearly always there (the name is followed by `":` and
        // the value): one load, and the bytes past a short name masked off.
        let prefix = match out.get(key_start..key_start + 8) {
            Some(head) => {
                let w = u64::from_be_bytes(head.try_into().unwrap_or_default());
                if len >= 8 { w } else { w & !(u64::MAX.checked_shr(8 * len as u32).unwrap_or(0)) }
            }
            None => out[key_start..key_end].iter().enumerate().fold(0u64, |v, (i, &c)| v | (c as u64) << (56 - 8 * i)),
        };
        let exotic = prefix & 0x8080_8080_8080_8080 != 0 && prefix.to_be_bytes().iter().any(|&c| c >= 0xEE);
        Member { key_start, key_end, start, end, prefix, exotic }
    }
}

/// RFC 8785 order of two member names: the prefixes decide unless they tie or may mislead.
#[inline(always)]
fn cmp_members(out: &[u8], a: &Member, b: &Member) -> std::cmp::Ordering {
    if a.prefix != b.prefix && !a.exotic && !b.exotic {
        return a.prefix.cmp(&b.prefix);
    }
    cmp_utf16(&out[a.key_start..a.key_end], &out[b.key_start..b.key_end])
}

/// Payloads captured for one list (single body, `records` or `items`).
#[derive(Default)]
struct Capture {
    /// Whether the list exists: the member was present with an array (bulk) value.
    present: bool,
    lengths: Vec<i32>,
    text: Vec<u8>,
    /// Body offsets of each payload object captured, in order.
    spans: Vec<(usize, usize)>,
}

struct Fast<'a> {
    b: &'a [u8],
    pos: usize,
    bulk: bool,
    num: ryu_js::Buffer,
    members: Vec<Member>,
    sorted: Vec<u8>,
    /// Where a payload's own object is written before it lands, sorted, in its capture.
    stage: Vec<u8>,
    order: Vec<usize>,
    /// Name prefixes with member indices, for sorting.
    keys: Vec<(u64, u32)>,
    captures: [Capture; 3],
    /// Member names (body offsets) of the objects being checked outside the payloads.
    names: Vec<(usize, usize)>,
}

#[inline]
fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\n' || c == b'\r' || c == b'\t'
}

/// Buffers kept from one body to the next on a thread: allocating them afresh for every body,
/// and touching the new pages, cost 5-7% of a 1 KiB record's whole preparation and hashing.
#[derive(Default)]
pub struct Scratch {
    members: Vec<Member>,
    sorted: Vec<u8>,
    stage: Vec<u8>,
    order: Vec<usize>,
    keys: Vec<(u64, u32)>,
    names: Vec<(usize, usize)>,
    captures: [Capture; 3],
    hashes: Vec<u8>,
}

/// A scratch buffer grown past this is given back rather than kept for the next body.
const KEEP_BYTES: usize = 8 << 20;

fn reuse<T>(v: &mut Vec<T>) -> Vec<T> {
    let mut v = std::mem::take(v);
    if v.capacity() * std::mem::size_of::<T>() > KEEP_BYTES {
        v = Vec::new();
    }
    v.clear();
    v
}

/// RFC 8785 form of `body`'s payloads, or None when the full parser must decide. The answer
/// borrows its buffers from `scratch`.
pub fn prepare<'s>(body: &[u8], bulk: bool, scratch: &'s mut Scratch) -> Option<Prepared<'s>> {
    let mut f = Fast {
        b: body,
        pos: 0,
        bulk,
        num: ryu_js::Buffer::new(),
        members: reuse(&mut scratch.members),
        sorted: reuse(&mut scratch.sorted),
        stage: reuse(&mut scratch.stage),
        order: reuse(&mut scratch.order),
        keys: reuse(&mut scratch.keys),
        captures: std::mem::take(&mut scratch.captures).map(|mut c| Capture {
            present: false,
            lengths: reuse(&mut c.lengths),
            text: reuse(&mut c.text),
            spans: reuse(&mut c.spans),
        }),
        names: reuse(&mut scratch.names),
    };
    f.ws();
    let done = f.check(0, Role::Root).is_ok() && {
        f.ws();
        f.pos == body.len()
    };
    scratch.members = f.members;
    scratch.sorted = f.sorted;
    scratch.stage = f.stage;
    scratch.order = f.order;
    scratch.keys = f.keys;
    scratch.names = f.names;
    scratch.captures = f.captures;
    if !done {
        return None;
    }
    let [records, items, single] = &mut scratch.captures;
    let chosen = if !bulk {
        if !single.present {
            single.lengths.push(-1);
        }
        single
    } else if records.present {
        records
    } else if items.present {
        items
    } else {
        // Never present, so empty.
        records
    };
    let mut hashes = reuse(&mut scratch.hashes);
    let mut texts = chosen.lengths.iter().filter(|&&l| l >= 0).scan(0usize, |at, &l| {
        let start = *at;
        *at += l as usize;
        Some(&chosen.text[start..*at])
    });
    // Two payloads at a time: see sha.rs.
    while let Some(a) = texts.next() {
        match texts.next() {
            Some(b) => {
                let (da, db) = sha::finish_pair((sha::IV, 0, a), (sha::IV, 0, b));
                push_hex(&mut hashes, &da);
                push_hex(&mut hashes, &db);
            }
            None => push_hex(&mut hashes, &sha::finish(sha::IV, 0, a)),
        }
    }
    scratch.hashes = hashes;
    Some(Prepared {
        syntax_error: false,
        error_count: 0,
        errors_json: Vec::new(),
        canonical: Cow::Borrowed(&chosen.text),
        lengths: Cow::Borrowed(&chosen.lengths),
        hashes: Cow::Borrowed(&scratch.hashes),
        payload_spans: (!chosen.spans.is_empty()).then_some(Cow::Borrowed(&chosen.spans)),
    })
}

impl<'a> Fast<'a> {
    #[inline]
    fn ws(&mut self) {
        while self.pos < self.b.len() && is_ws(self.b[self.pos]) {
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> R<u8> {
        self.b.get(self.pos).copied().ok_or(Bail)
    }

    /// Checks the value at the cursor without writing it: the body outside the payloads.
    fn check(&mut self, depth: usize, role: Role) -> R<()> {
        match self.peek()? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return Err(Bail);
                }
                let Role::Payload(k) = role else {
                    return self.check_object(depth + 1, role);
                };
                let start = self.pos;
                let mut text = std::mem::take(&mut self.captures[k as usize].text);
                if text.is_empty() {
                    // Payloads are most of a body: growing by doubling would copy them repeatedly.
                    text.reserve(self.b.len() - start);
                }
                let from = text.len();
                let done = self.payload_object(&mut text, depth + 1);
                let c = &mut self.captures[k as usize];
                if let Some(last) = c.lengths.last_mut() {
                    *last = (text.len() - from) as i32;
                }
                c.text = text;
                c.spans.push((start, self.pos));
                done
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return Err(Bail);
                }
                self.check_array(depth + 1, role)
            }
            b'"' => {
                if self.plain_string()?.is_none() {
                    self.escaped_string()?;
                }
                Ok(())
            }
            b't' => self.skip_literal(b"true"),
            b'f' => self.skip_literal(b"false"),
            b'n' => self.skip_literal(b"null"),
            _ => self.check_number(),
        }
    }

    fn skip_literal(&mut self, word: &[u8]) -> R<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// A number's I-JSON checks without its canonical spelling.
    fn check_number(&mut self) -> R<()> {
        let start = self.pos;
        let end = scan_number(self.b, start).ok_or(Bail)?;
        self.pos = end;
        let text = &self.b[start..end];
        let integer = !text.iter().any(|&c| c == b'.' || c == b'e' || c == b'E');
        let digits = if text[0] == b'-' { &text[1..] } else { text };
        if integer && digits.len() <= 15 {
            return Ok(());
        }
        let v: f64 = std::str::from_utf8(text).map_err(|_| Bail)?.parse().map_err(|_| Bail)?;
        if (integer && v.abs() > MAX_SAFE) || !v.is_finite() {
            return Err(Bail);
        }
        Ok(())
    }

    fn check_array(&mut self, depth: usize, role: Role) -> R<()> {
        self.pos += 1;
        let list = match role {
            Role::List(k) => {
                self.captures[k as usize].present = true;
                Some(k)
            }
            _ => None,
        };
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let child = match list {
                Some(k) => {
                    self.captures[k as usize].lengths.push(-1);
                    Role::Element(k)
                }
                None => Role::Other,
            };
            self.check(depth, child)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b']' => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }

    fn check_object(&mut self, depth: usize, role: Role) -> R<()> {
        self.pos += 1;
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        let base = self.names.len();
        loop {
            if self.peek()? != b'"' {
                return Err(Bail);
            }
            let (ks, ke) = self.plain_string()?.ok_or(Bail)?;
            self.ws();
            if self.peek()? != b':' {
                return Err(Bail);
            }
            self.pos += 1;
            self.ws();
            let child = self.member_role(role, ks, ke);
            self.check(depth, child)?;
            self.names.push((ks, ke));
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    break;
                }
                _ => return Err(Bail),
            }
        }
        let repeated = has_repeated_name(self.b, &self.names[base..]);
        self.names.truncate(base);
        if repeated {
            return Err(Bail);
        }
        Ok(())
    }

    /// Writes the RFC 8785 form of the value at the cursor: everything inside a payload.
    fn value(&mut self, out: &mut Vec<u8>, depth: usize) -> R<()> {
        match self.peek()? {
            b'{' => {
                if depth >= MAX_DEPTH {
                    return Err(Bail);
                }
                self.object(out, depth + 1)?;
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return Err(Bail);
                }
                self.array(out, depth + 1)?;
            }
            b'"' => self.string_value(out)?,
            b't' => self.literal(out, b"true")?,
            b'f' => self.literal(out, b"false")?,
            b'n' => self.literal(out, b"null")?,
            _ => self.number(out)?,
        }
        Ok(())
    }

    fn literal(&mut self, out: &mut Vec<u8>, word: &[u8]) -> R<()> {
        if self.b[self.pos..].starts_with(word) {
            self.pos += word.len();
            out.extend_from_slice(word);
            Ok(())
        } else {
            Err(Bail)
        }
    }

    fn number(&mut self, out: &mut Vec<u8>) -> R<()> {
        let start = self.pos;
        let end = scan_number(self.b, start).ok_or(Bail)?;
        self.pos = end;
        let text = &self.b[start..end];
        let integer = !text.iter().any(|&c| c == b'.' || c == b'e' || c == b'E');
        let digits = if text[0] == b'-' { &text[1..] } else { text };
        if integer && digits.len() <= 15 {
            // Below 10^15, so exact and safe: its shortest spelling is the literal itself.
            if digits == b"0" {
                out.push(b'0');
            } else {
                out.extend_from_slice(text);
            }
            return Ok(());
        }
        if !integer && is_shortest_decimal(text) {
            out.extend_from_slice(text);
            return Ok(());
        }
        // The grammar was checked, so this is ASCII and a valid float literal.
        let v: f64 = std::str::from_utf8(text).map_err(|_| Bail)?.parse().map_err(|_| Bail)?;
        if integer {
            if v.abs() > MAX_SAFE {
                return Err(Bail);
            }
        } else if !v.is_finite() {
            return Err(Bail);
        }
        if v == 0.0 {
            out.push(b'0');
        } else {
            out.extend_from_slice(self.num.format_finite(v).as_bytes());
        }
        Ok(())
    }

    /// A string without escapes, after its opening quote: its bytes (checked UTF-8, no encoded
    /// surrogate), or None when it holds an escape (the position is then unchanged).
    fn plain_string(&mut self) -> R<Option<(usize, usize)>> {
        let b = self.b;
        let start = self.pos + 1;
        let mut i = start;
        let mut ascii = true;
        loop {
            let (at, high) = find_special(b, i);
            ascii &= !high;
            i = at;
            let c = *b.get(i).ok_or(Bail)?;
            if c == b'"' {
                break;
            }
            if c == b'\\' {
                return Ok(None);
            }
            if c < 0x20 {
                return Err(Bail);
            }
            i += 1;
        }
        // std's validation rejects encoded surrogates, which the full parser reports.
        if !ascii && std::str::from_utf8(&b[start..i]).is_err() {
            return Err(Bail);
        }
        self.pos = i + 1;
        Ok(Some((start, i)))
    }

    fn string_value(&mut self, out: &mut Vec<u8>) -> R<()> {
        if let Some((s, e)) = self.plain_string()? {
            // Nothing in it needs escaping: the JSON text, quotes included, is already canonical.
            push_span(out, self.b, s - 1, e + 1);
            return Ok(());
        }
        let decoded = self.escaped_string()?;
        write_json_string(out, &decoded);
        Ok(())
    }

    /// Decodes a string with escapes, after its opening quote, into UTF-8. Any unpaired surrogate
    /// gives up: the full parser reports it.
    fn escaped_string(&mut self) -> R<Vec<u8>> {
        let b = self.b;
        let n = b.len();
        let start = self.pos + 1;
        let mut i = start;
        let mut run = start;
        let mut buf = Vec::with_capacity(64);
        loop {
            while i + 8 <= n && !special8(load8(b, i), false) {
                i += 8;
            }
            let c = *b.get(i).ok_or(Bail)?;
            if c == b'"' {
                buf.extend_from_slice(&b[run..i]);
                break;
            }
            if c < 0x20 {
                return Err(Bail);
            }
            if c != b'\\' {
                i += 1;
                continue;
            }
            buf.extend_from_slice(&b[run..i]);
            let e = *b.get(i + 1).ok_or(Bail)?;
            if e == b'u' {
                let u = hex4(b, i + 2)?;
                i += 6;
                let cp = if (0xD800..=0xDBFF).contains(&u) {
                    if !(b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u')) {
                        return Err(Bail);
                    }
                    let l = hex4(b, i + 2)?;
                    if !(0xDC00..=0xDFFF).contains(&l) {
                        return Err(Bail);
                    }
                    i += 6;
                    0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00)
                } else if (0xDC00..=0xDFFF).contains(&u) {
                    return Err(Bail);
                } else {
                    u
                };
                let ch = char::from_u32(cp).ok_or(Bail)?;
                let mut tmp = [0u8; 4];
                buf.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
            } else {
                buf.push(simple_escape(e).ok_or(Bail)?);
                i += 2;
            }
            run = i;
        }
        if std::str::from_utf8(&buf).is_err() {
            return Err(Bail);
        }
        self.pos = i + 1;
        Ok(buf)
    }

    fn array(&mut self, out: &mut Vec<u8>, depth: usize) -> R<()> {
        self.pos += 1;
        out.push(b'[');
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            out.push(b']');
            return Ok(());
        }
        loop {
            self.value(out, depth)?;
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                    out.push(b',');
                }
                b']' => {
                    self.pos += 1;
                    out.push(b']');
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }

    fn object(&mut self, out: &mut Vec<u8>, depth: usize) -> R<()> {
        let open = out.len();
        let base = self.members.len();
        let result = self.object_members(out, depth).and_then(|()| self.finish_object(out, open, base, None));
        self.members.truncate(base);
        result
    }

    /// A payload's own object. Its members are written apart and land in `text` once, already in
    /// order: sorting in place would copy the whole payload out and back.
    fn payload_object(&mut self, text: &mut Vec<u8>, depth: usize) -> R<()> {
        let mut stage = std::mem::take(&mut self.stage);
        stage.clear();
        let base = self.members.len();
        let result = self.object_members(&mut stage, depth).and_then(|()| self.finish_object(&mut stage, 0, base, Some(text)));
        self.members.truncate(base);
        self.stage = stage;
        result
    }

    /// Writes `{` and the members of the object at the cursor as they come, recording each one.
    fn object_members(&mut self, out: &mut Vec<u8>, depth: usize) -> R<()> {
        self.pos += 1;
        out.push(b'{');
        self.ws();
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        let base = self.members.len();
        loop {
            if self.members.len() > base {
                out.push(b',');
            }
            if self.peek()? != b'"' {
                return Err(Bail);
            }
            let key_start = out.len() + 1;
            let (ks, ke) = self.plain_string()?.ok_or(Bail)?;
            let member_start = out.len();
            push_span(out, self.b, ks - 1, ke + 1);
            let key_end = out.len() - 1;
            self.ws();
            if self.peek()? != b':' {
                return Err(Bail);
            }
            self.pos += 1;
            self.ws();
            out.push(b':');
            self.value(out, depth)?;
            self.members.push(Member::new(out, key_start, key_end, member_start, out.len()));
            self.ws();
            match self.peek()? {
                b',' => {
                    self.pos += 1;
                    self.ws();
                }
                b'}' => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }
}

impl<'a> Fast<'a> {
    /// The role of the member named b[ks..ke] of an object in role `parent`.
    fn member_role(&mut self, parent: Role, ks: usize, ke: usize) -> Role {
        let key = &self.b[ks..ke];
        match parent {
            Role::Root if !self.bulk && key == b"recordPayload" => {
                let c = &mut self.captures[2];
                c.present = true;
                c.lengths.push(-1);
                Role::Payload(2)
            }
            Role::Root if self.bulk && key == b"records" => Role::List(0),
            Role::Root if self.bulk && key == b"items" => Role::List(1),
            Role::Element(k) if key == b"recordPayload" => Role::Payload(k),
            _ => Role::Other,
        }
    }

    /// Closes the object opened at `open` with its members in RFC 8785 order, in `out`, or moved
    /// to the end of `dest` when there is one; a repeated name gives up.
    fn finish_object(&mut self, out: &mut Vec<u8>, open: usize, base: usize, dest: Option<&mut Vec<u8>>) -> R<()> {
        let members = &self.members[base..];
        let mut in_order = true;
        for w in members.windows(2) {
            match cmp_members(out, &w[0], &w[1]) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Err(Bail),
                std::cmp::Ordering::Greater => {
                    in_order = false;
                    break;
                }
            }
        }
        if in_order {
            out.push(b'}');
            if let Some(dest) = dest {
                dest.extend_from_slice(&out[open..]);
            }
            return Ok(());
        }
        self.order.clear();
        if members.iter().all(|m| !m.exotic) {
            // Distinct prefixes decide the order alone: sort them as plain integers.
            self.keys.clear();
            self.keys.extend(members.iter().enumerate().map(|(i, m)| (m.prefix, i as u32)));
            self.keys.sort_unstable();
            if self.keys.windows(2).all(|w| w[0].0 != w[1].0) {
                self.order.extend(self.keys.iter().map(|&(_, i)| i as usize));
            }
        }
        if self.order.is_empty() {
            self.order.extend(0..members.len());
            self.order.sort_unstable_by(|&a, &b| cmp_members(out, &members[a], &members[b]));
            for w in self.order.windows(2) {
                if cmp_members(out, &members[w[0]], &members[w[1]]) == std::cmp::Ordering::Equal {
                    return Err(Bail);
                }
            }
        }
        match dest {
            Some(dest) => write_in_order(dest, out, members, &self.order),
            None => {
                self.sorted.clear();
                write_in_order(&mut self.sorted, out, members, &self.order);
                out.truncate(open);
                out.extend_from_slice(&self.sorted);
            }
        }
        Ok(())
    }
}

/// Appends b[s..e]. Most spans are short names and values, for which a call to memcpy costs more
/// than the copy: those go as one fixed 32-byte move, of which only the span is kept.
#[inline(always)]
fn push_span(out: &mut Vec<u8>, b: &[u8], s: usize, e: usize) {
    const WIDE: usize = 32;
    let len = e - s;
    if len > WIDE || b.len() - s < WIDE {
        out.extend_from_slice(&b[s..e]);
        return;
    }
    out.reserve(WIDE);
    // Safety: `b` holds WIDE bytes from `s` on, and the reserve leaves room for WIDE more in `out`,
    // of which only the `len` written from the span are counted.
    unsafe {
        std::ptr::copy_nonoverlapping(b.as_ptr().add(s), out.as_mut_ptr().add(out.len()), WIDE);
        out.set_len(out.len() + len);
    }
}

/// Writes the object whose members lie in `out` with the members in `order`.
fn write_in_order(dest: &mut Vec<u8>, out: &[u8], members: &[Member], order: &[usize]) {
    dest.push(b'{');
    for (i, &m) in order.iter().enumerate() {
        if i > 0 {
            dest.push(b',');
        }
        let m = &members[m];
        dest.extend_from_slice(&out[m.start..m.end]);
    }
    dest.push(b'}');
}

/// Whether a number literal with a fraction (grammar already checked) is its own ECMAScript
/// spelling, so it needs neither parsing nor printing: no exponent, no trailing zero in the
/// fraction, at most 15 significant digits and not below 1e-6 (where ECMAScript turns to exponent
/// form). Decimals of at most 15 significant digits name distinct binary64 values (DBL_DIG), so
/// no shorter decimal names this one's value, and Number::toString writes exactly these digits.
fn is_shortest_decimal(text: &[u8]) -> bool {
    let t = text.strip_prefix(b"-").unwrap_or(text);
    let Some(dot) = t.iter().position(|&c| c == b'.') else { return false };
    let (int, frac) = (&t[..dot], &t[dot + 1..]);
    if !frac.iter().all(u8::is_ascii_digit) || frac.last() == Some(&b'0') {
        return false;
    }
    if int == b"0" {
        let zeros = frac.iter().take_while(|&&c| c == b'0').count();
        zeros <= 5 && frac.len() - zeros <= 15
    } else {
        int.len() + frac.len() <= 15
    }
}

/// Whether two of the member names (body offsets of names without escapes, so equal bytes mean
/// equal strings) are the same.
fn has_repeated_name(b: &[u8], names: &[(usize, usize)]) -> bool {
    let name = |&(s, e): &(usize, usize)| &b[s..e];
    if names.len() <= 16 {
        return names.iter().enumerate().any(|(i, x)| names[..i].iter().any(|y| name(x) == name(y)));
    }
    let mut sorted: Vec<&[u8]> = names.iter().map(name).collect();
    sorted.sort_unstable();
    sorted.windows(2).any(|w| w[0] == w[1])
}

/// Index of the first '"', '\\' or control byte at or after `i` (b.len() if none), and whether a
/// byte at or above 0x80 may precede it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn find_special(b: &[u8], mut i: usize) -> (usize, bool) {
    use std::arch::x86_64::*;
    let n = b.len();
    let mut high = 0i32;
    // Safety: SSE2 is part of x86_64, and every load reads 16 bytes inside `b`.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let below_space = _mm_set1_epi8(0x1F);
        while i + 16 <= n {
            let x = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
            // Unsigned x <= 0x1F exactly when min(x, 0x1F) == x.
            let ctl = _mm_cmpeq_epi8(_mm_min_epu8(x, below_space), x);
            let hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)), ctl);
            let m = _mm_movemask_epi8(hit);
            high |= _mm_movemask_epi8(x);
            if m != 0 {
                return (i + m.trailing_zeros() as usize, high != 0);
            }
            i += 16;
        }
    }
    scan_tail(b, i, high != 0)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn find_special(b: &[u8], mut i: usize) -> (usize, bool) {
    let n = b.len();
    let mut any_high = false;
    while i + 8 <= n && !special8(load8(b, i), false) {
        any_high |= load8(b, i) & 0x8080_8080_8080_8080 != 0;
        i += 8;
    }
    scan_tail(b, i, any_high)
}

/// find_special byte by byte, for what is left after the wide steps.
#[inline(always)]
fn scan_tail(b: &[u8], mut i: usize, mut any_high: bool) -> (usize, bool) {
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\\' || c < 0x20 {
            break;
        }
        any_high |= c >= 0x80;
        i += 1;
    }
    (i, any_high)
}

fn hex4(b: &[u8], i: usize) -> R<u32> {
    let s = b.get(i..i + 4).ok_or(Bail)?;
    let mut v = 0u32;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return Err(Bail),
        };
        v = (v << 4) | d as u32;
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::is_shortest_decimal;

    /// ECMAScript's spelling of a decimal literal, the long way.
    fn spelling(text: &str) -> String {
        let v: f64 = text.parse().unwrap();
        if v == 0.0 {
            return "0".to_string();
        }
        ryu_js::Buffer::new().format_finite(v).to_string()
    }

    #[test]
    fn shortest_decimals_agree_with_ryu() {
        let mut x = 0x2545_f491_u64;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let mut taken = 0;
        for _ in 0..400_000 {
            let digits: String = (0..1 + next(19)).map(|_| char::from(b'0' + next(10) as u8)).collect();
            let int_len = next(digits.len() as u64) as usize;
            let int = digits[..int_len].trim_start_matches('0');
            let int = if int.is_empty() { "0" } else { int };
            let zeros = "0".repeat(if int == "0" { next(9) as usize } else { 0 });
            let frac = format!("{zeros}{}", &digits[int_len..]);
            if frac.is_empty() {
                continue;
            }
            let sign = if next(2) == 0 { "-" } else { "" };
            let text = format!("{sign}{int}.{frac}");
            if is_shortest_decimal(text.as_bytes()) {
                taken += 1;
                assert_eq!(text, spelling(&text), "{text}");
            }
        }
        assert!(taken > 50_000, "{taken}");
        for (text, taken) in [
            ("0.000001", true),
            ("0.0000001", false),
            ("0.5", true),
            ("-0.0", false),
            ("1.50", false),
            ("1.5e3", false),
            ("12345678901234.5", true),
            ("123456789012345.6", false),
            ("0.123456789012345", true),
            ("0.1234567890123456", false),
            ("47.3769", true),
            ("1234.9285714285713", false),
        ] {
            assert_eq!(is_shortest_decimal(text.as_bytes()), taken, "{text}");
            if taken {
                assert_eq!(text, spelling(text));
            }
        }
    }
}
