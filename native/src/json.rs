//! Strict I-JSON (RFC 7493) parser over raw UTF-8 bytes.
//!
//! It mirrors the reference parser of the TypeScript side (src/domain/hashing/ijson.ts) rule for
//! rule: the same violation codes, the same order, and the same path strings, so a client sees one
//! answer whichever backend served it. serde_json cannot be used: it keeps only one of two
//! duplicate names and forgets how a number was written, and both matter here.
//!
//! Strings are kept as WTF-8 bytes: UTF-8 where well formed, with unpaired surrogates encoded as
//! 3-byte sequences, and a high surrogate followed by a low one always merged into one 4-byte
//! sequence. Two strings are then equal exactly when their UTF-16 forms are, which is what
//! duplicate detection and path rendering need.

use std::borrow::Cow;
use std::collections::HashSet;

pub const MAX_DEPTH: usize = 64;
pub const MAX_REPORTED: usize = 100;

pub const MSG_SYNTAX: &str = "malformed JSON";
pub const MSG_DUPLICATE: &str = "duplicate member name";
pub const MSG_UNSAFE: &str = "integer beyond +-(2^53-1)";
pub const MSG_LONE: &str = "unpaired UTF-16 surrogate";
pub const MSG_DEPTH: &str = "nesting deeper than 64 levels";
pub const MSG_RANGE: &str = "number out of the binary64 range";

const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

pub enum Value<'a> {
    Null,
    Bool(bool),
    Num(f64),
    Str(Cow<'a, [u8]>),
    Arr(Vec<Value<'a>>),
    Obj(Vec<(Cow<'a, [u8]>, Value<'a>)>),
}

impl<'a> Value<'a> {
    /// The last member of that name (JSON.parse keeps the last of duplicates).
    pub fn member(&self, name: &[u8]) -> Option<&Value<'a>> {
        match self {
            Value::Obj(members) => members.iter().rev().find(|(k, _)| k.as_ref() == name).map(|(_, v)| v),
            _ => None,
        }
    }
}

pub struct Violation {
    pub path: String,
    pub code: &'static str,
    pub message: &'static str,
}

pub struct Parsed<'a> {
    pub value: Option<Value<'a>>,
    pub errors: Vec<Violation>,
    pub error_count: usize,
    pub violation_paths: Vec<String>,
    pub syntax_error: bool,
}

enum Seg<'a> {
    Key(Cow<'a, [u8]>),
    Index(usize),
}

struct Frame<'a> {
    is_obj: bool,
    seg_len: usize,
    arr: Vec<Value<'a>>,
    obj: Vec<(Cow<'a, [u8]>, Value<'a>)>,
    /// Names seen so far, once the object is large enough for a linear scan to cost more.
    names: Option<HashSet<Cow<'a, [u8]>>>,
}

struct SyntaxFailure(String);

pub fn parse(b: &[u8]) -> Parsed<'_> {
    let mut p = Parser { b, pos: 0, segs: Vec::new(), errors: Vec::new(), paths: Vec::new(), count: 0 };
    match p.document() {
        Ok(v) => Parsed { value: Some(v), errors: p.errors, error_count: p.count, violation_paths: p.paths, syntax_error: false },
        Err(SyntaxFailure(path)) => {
            p.violation(path, "invalid_json", MSG_SYNTAX, true);
            Parsed { value: None, errors: p.errors, error_count: p.count, violation_paths: p.paths, syntax_error: true }
        }
    }
}

struct Parser<'a> {
    b: &'a [u8],
    pos: usize,
    segs: Vec<Seg<'a>>,
    errors: Vec<Violation>,
    paths: Vec<String>,
    count: usize,
}

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// Whether any of the 8 bytes is '"', '\\', below 0x20 or, with `high`, at or above 0x80.
#[inline(always)]
pub(crate) fn special8(w: u64, high: bool) -> bool {
    let q = w ^ (LO * b'"' as u64);
    let bs = w ^ (LO * b'\\' as u64);
    let zero_q = q.wrapping_sub(LO) & !q & HI;
    let zero_bs = bs.wrapping_sub(LO) & !bs & HI;
    let ctrl = w.wrapping_sub(LO * 0x20) & !w & HI;
    (zero_q | zero_bs | ctrl | if high { w & HI } else { 0 }) != 0
}

#[inline(always)]
pub(crate) fn load8(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

#[inline]
fn is_ws(c: u8) -> bool {
    c == b' ' || c == b'\n' || c == b'\r' || c == b'\t'
}

#[inline]
fn hex_val(c: u8) -> i32 {
    match c {
        b'0'..=b'9' => (c - b'0') as i32,
        b'a'..=b'f' => (c - b'a' + 10) as i32,
        b'A'..=b'F' => (c - b'A' + 10) as i32,
        _ => -1,
    }
}

impl<'a> Parser<'a> {
    fn violation(&mut self, path: String, code: &'static str, message: &'static str, always: bool) {
        self.count += 1;
        if self.errors.len() < MAX_REPORTED || always {
            self.errors.push(Violation { path: path.clone(), code, message });
        }
        self.paths.push(path);
    }

    #[inline]
    fn ws(&mut self) {
        let b = self.b;
        let mut i = self.pos;
        while i < b.len() && is_ws(b[i]) {
            i += 1;
        }
        self.pos = i;
    }

    fn path(&self, len: usize) -> String {
        render_path(&self.segs[..len])
    }

    fn here(&self) -> String {
        self.path(self.segs.len())
    }

    fn document(&mut self) -> Result<Value<'a>, SyntaxFailure> {
        let b = self.b;
        self.ws();
        let mut frames: Vec<Frame<'a>> = Vec::new();
        let mut value: Value<'a>;
        'value: loop {
            if self.pos >= b.len() {
                return Err(SyntaxFailure(self.here()));
            }
            let c = b[self.pos];
            match c {
                b'{' | b'[' => {
                    if frames.len() + 1 == MAX_DEPTH + 1 {
                        let p = self.here();
                        self.violation(p, "depth_exceeded", MSG_DEPTH, false);
                    }
                    self.pos += 1;
                    self.ws();
                    if c == b'{' {
                        if self.pos < b.len() && b[self.pos] == b'}' {
                            self.pos += 1;
                            value = Value::Obj(Vec::new());
                        } else {
                            frames.push(Frame { is_obj: true, seg_len: self.segs.len(), arr: Vec::new(), obj: Vec::new(), names: None });
                            let f = frames.last_mut().unwrap();
                            self.member_name(f)?;
                            continue 'value;
                        }
                    } else if self.pos < b.len() && b[self.pos] == b']' {
                        self.pos += 1;
                        value = Value::Arr(Vec::new());
                    } else {
                        frames.push(Frame { is_obj: false, seg_len: self.segs.len(), arr: Vec::new(), obj: Vec::new(), names: None });
                        self.segs.push(Seg::Index(0));
                        continue 'value;
                    }
                }
                b'"' => {
                    self.pos += 1;
                    let seg_len = self.segs.len();
                    let (s, lone) = self.string(seg_len)?;
                    if lone {
                        let p = self.here();
                        self.violation(p, "lone_surrogate", MSG_LONE, false);
                    }
                    value = Value::Str(s);
                }
                b'-' | b'0'..=b'9' => value = Value::Num(self.number()?),
                b't' if self.literal(b"true") => value = Value::Bool(true),
                b'f' if self.literal(b"false") => value = Value::Bool(false),
                b'n' if self.literal(b"null") => value = Value::Null,
                _ => return Err(SyntaxFailure(self.here())),
            }
            // A value is complete: store it and find what comes next.
            loop {
                self.ws();
                let Some(f) = frames.last_mut() else {
                    if self.pos != b.len() {
                        return Err(SyntaxFailure(String::new()));
                    }
                    return Ok(value);
                };
                if f.is_obj {
                    let key = match self.segs.pop() {
                        Some(Seg::Key(k)) => k,
                        _ => unreachable!("an object member always has its name segment"),
                    };
                    if let Some(names) = f.names.as_mut() {
                        names.insert(key.clone());
                    }
                    f.obj.push((key, value));
                } else {
                    f.arr.push(value);
                }
                if self.pos >= b.len() {
                    return Err(SyntaxFailure(self.path(f.seg_len)));
                }
                let d = b[self.pos];
                if d == b',' {
                    self.pos += 1;
                    self.ws();
                    if f.is_obj {
                        self.member_name(f)?;
                    } else {
                        let next = f.arr.len();
                        if let Some(last) = self.segs.last_mut() {
                            *last = Seg::Index(next);
                        }
                    }
                    continue 'value;
                }
                if d == (if f.is_obj { b'}' } else { b']' }) {
                    self.pos += 1;
                    let f = frames.pop().unwrap();
                    self.segs.truncate(f.seg_len);
                    value = if f.is_obj { Value::Obj(f.obj) } else { Value::Arr(f.arr) };
                    continue;
                }
                return Err(SyntaxFailure(self.path(f.seg_len)));
            }
        }
    }

    /// Reads `"name" :`, pushes the member's segment and reports problems of the name.
    fn member_name(&mut self, f: &mut Frame<'a>) -> Result<(), SyntaxFailure> {
        let b = self.b;
        if self.pos >= b.len() || b[self.pos] != b'"' {
            return Err(SyntaxFailure(self.path(f.seg_len)));
        }
        self.pos += 1;
        let (key, lone) = self.string(f.seg_len)?;
        self.segs.push(Seg::Key(key.clone()));
        if lone {
            let p = self.here();
            self.violation(p, "lone_surrogate", MSG_LONE, false);
        }
        self.ws();
        if self.pos >= b.len() || b[self.pos] != b':' {
            return Err(SyntaxFailure(self.path(f.seg_len)));
        }
        self.pos += 1;
        self.ws();
        let dup = if let Some(names) = f.names.as_ref() {
            names.contains(key.as_ref())
        } else {
            let d = f.obj.iter().any(|(k, _)| k.as_ref() == key.as_ref());
            if f.obj.len() >= 16 {
                f.names = Some(f.obj.iter().map(|(k, _)| k.clone()).collect());
            }
            d
        };
        if dup {
            let p = self.here();
            self.violation(p, "duplicate_key", MSG_DUPLICATE, false);
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> bool {
        if self.b.len() - self.pos >= word.len() && &self.b[self.pos..self.pos + word.len()] == word {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    fn number(&mut self) -> Result<f64, SyntaxFailure> {
        let b = self.b;
        let start = self.pos;
        let Some(end) = scan_number(b, start) else {
            return Err(SyntaxFailure(self.here()));
        };
        self.pos = end;
        let text = &b[start..end];
        let integer = !text.iter().any(|&c| c == b'.' || c == b'e' || c == b'E');
        // The grammar was checked above, so this is ASCII and a valid float literal.
        let v: f64 = std::str::from_utf8(text).ok().and_then(|s| s.parse().ok()).unwrap_or(f64::NAN);
        if integer {
            if v.is_nan() || v.abs() > MAX_SAFE {
                let p = self.here();
                self.violation(p, "unsafe_integer", MSG_UNSAFE, false);
            }
        } else if !v.is_finite() {
            let p = self.here();
            self.violation(p, "invalid_number", MSG_RANGE, false);
        }
        Ok(v)
    }

    fn hex4(&self, i: usize, err_len: usize) -> Result<u32, SyntaxFailure> {
        let b = self.b;
        if i + 4 > b.len() {
            return Err(SyntaxFailure(self.path(err_len)));
        }
        let (h0, h1, h2, h3) = (hex_val(b[i]), hex_val(b[i + 1]), hex_val(b[i + 2]), hex_val(b[i + 3]));
        if (h0 | h1 | h2 | h3) < 0 {
            return Err(SyntaxFailure(self.path(err_len)));
        }
        Ok(((h0 << 12) | (h1 << 8) | (h2 << 4) | h3) as u32)
    }

    /// Reads a string body after its opening quote. A syntax error is reported at the path made
    /// of the first `err_len` segments. Returns the WTF-8 content and whether it has an unpaired
    /// surrogate.
    fn string(&mut self, err_len: usize) -> Result<(Cow<'a, [u8]>, bool), SyntaxFailure> {
        let b = self.b;
        let n = b.len();
        let start = self.pos;
        let mut i = start;
        let mut run = start;
        let mut owned: Option<Vec<u8>> = None;
        let mut lone = false;
        loop {
            // Plain ASCII runs go eight bytes at a time.
            while i + 8 <= n && !special8(load8(b, i), true) {
                i += 8;
            }
            if i >= n {
                return Err(SyntaxFailure(self.path(err_len)));
            }
            let c = b[i];
            if c == b'"' {
                self.pos = i + 1;
                let s = match owned {
                    None => Cow::Borrowed(&b[start..i]),
                    Some(mut v) => {
                        v.extend_from_slice(&b[run..i]);
                        Cow::Owned(v)
                    }
                };
                return Ok((s, lone));
            }
            if c < 0x20 {
                return Err(SyntaxFailure(self.path(err_len)));
            }
            if c < 0x80 {
                if c != b'\\' {
                    i += 1;
                    continue;
                }
                let buf = owned.get_or_insert_with(|| Vec::with_capacity(i - start + 16));
                buf.extend_from_slice(&b[run..i]);
                let e = if i + 1 < n { b[i + 1] } else { 0 };
                if e == b'u' {
                    let u = self.hex4(i + 2, err_len)?;
                    i += 6;
                    if (0xD800..=0xDBFF).contains(&u) && i + 1 < n && b[i] == b'\\' && b[i + 1] == b'u' {
                        let l = self.hex4(i + 2, err_len)?;
                        if (0xDC00..=0xDFFF).contains(&l) {
                            let cp = 0x10000 + ((u - 0xD800) << 10) + (l - 0xDC00);
                            push_code_point(buf, cp);
                            i += 6;
                            run = i;
                            continue;
                        }
                    }
                    if (0xD800..=0xDFFF).contains(&u) {
                        lone = true;
                    }
                    push_unit(buf, u);
                } else {
                    let Some(u) = simple_escape(e) else {
                        return Err(SyntaxFailure(self.path(err_len)));
                    };
                    buf.push(u);
                    i += 2;
                }
                run = i;
                continue;
            }
            match utf8_sequence_length(b, i) {
                0 => return Err(SyntaxFailure(self.path(err_len))),
                -1 => {
                    // An encoded surrogate: kept as its code unit so pairs merge as in UTF-16.
                    lone = true;
                    let buf = owned.get_or_insert_with(|| Vec::with_capacity(i - start + 16));
                    buf.extend_from_slice(&b[run..i]);
                    let u = ((b[i] as u32 & 0x0F) << 12) | ((b[i + 1] as u32 & 0x3F) << 6) | (b[i + 2] as u32 & 0x3F);
                    push_unit(buf, u);
                    i += 3;
                    run = i;
                }
                len => i += len as usize,
            }
        }
    }
}

/// The character a two-character escape `\e` stands for (every escape but `\u`).
pub(crate) fn simple_escape(e: u8) -> Option<u8> {
    Some(match e {
        b'"' => b'"',
        b'\\' => b'\\',
        b'/' => b'/',
        b'b' => 0x08,
        b'f' => 0x0c,
        b'n' => b'\n',
        b'r' => b'\r',
        b't' => b'\t',
        _ => return None,
    })
}

/// Index after a number that follows the JSON grammar, or None.
pub(crate) fn scan_number(b: &[u8], start: usize) -> Option<usize> {
    let n = b.len();
    let mut i = start;
    if i < n && b[i] == b'-' {
        i += 1;
    }
    if i >= n {
        return None;
    }
    if b[i] == b'0' {
        i += 1;
    } else if (b'1'..=b'9').contains(&b[i]) {
        i += 1;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
    } else {
        return None;
    }
    if i < n && b[i] == b'.' {
        i += 1;
        let f = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == f {
            return None;
        }
    }
    if i < n && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < n && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let e = i;
        while i < n && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == e {
            return None;
        }
    }
    Some(i)
}

/// Length of the well-formed UTF-8 sequence at i; -1 for an encoded surrogate; 0 if invalid.
fn utf8_sequence_length(b: &[u8], i: usize) -> i32 {
    let at = |k: usize| -> u8 { if k < b.len() { b[k] } else { 0 } };
    let c = b[i];
    let c1 = at(i + 1);
    let cont1 = (c1 & 0xC0) == 0x80;
    if (0xC2..=0xDF).contains(&c) {
        return if cont1 { 2 } else { 0 };
    }
    let c2 = at(i + 2);
    let cont2 = (c2 & 0xC0) == 0x80;
    if (0xE0..=0xEF).contains(&c) {
        if !cont1 || !cont2 {
            return 0;
        }
        if c == 0xE0 && c1 < 0xA0 {
            return 0;
        }
        if c == 0xED && c1 >= 0xA0 {
            return -1;
        }
        return 3;
    }
    if (0xF0..=0xF4).contains(&c) {
        let c3 = at(i + 3);
        if !cont1 || !cont2 || (c3 & 0xC0) != 0x80 {
            return 0;
        }
        if c == 0xF0 && c1 < 0x90 {
            return 0;
        }
        if c == 0xF4 && c1 > 0x8F {
            return 0;
        }
        return 4;
    }
    0
}

fn push_code_point(buf: &mut Vec<u8>, cp: u32) {
    if cp < 0x80 {
        buf.push(cp as u8);
    } else if cp < 0x800 {
        buf.push(0xC0 | (cp >> 6) as u8);
        buf.push(0x80 | (cp & 0x3F) as u8);
    } else if cp < 0x10000 {
        buf.push(0xE0 | (cp >> 12) as u8);
        buf.push(0x80 | ((cp >> 6) & 0x3F) as u8);
        buf.push(0x80 | (cp & 0x3F) as u8);
    } else {
        buf.push(0xF0 | (cp >> 18) as u8);
        buf.push(0x80 | ((cp >> 12) & 0x3F) as u8);
        buf.push(0x80 | ((cp >> 6) & 0x3F) as u8);
        buf.push(0x80 | (cp & 0x3F) as u8);
    }
}

/// Appends one UTF-16 code unit; a low surrogate right after a high one becomes one code point.
fn push_unit(buf: &mut Vec<u8>, u: u32) {
    let len = buf.len();
    if (0xDC00..=0xDFFF).contains(&u) && len >= 3 && buf[len - 3] == 0xED && (0xA0..=0xAF).contains(&buf[len - 2]) {
        let h = 0xD000 | ((buf[len - 2] as u32 & 0x3F) << 6) | (buf[len - 1] as u32 & 0x3F);
        buf.truncate(len - 3);
        push_code_point(buf, 0x10000 + ((h - 0xD800) << 10) + (u - 0xDC00));
        return;
    }
    push_code_point(buf, u);
}

fn is_identifier(k: &[u8]) -> bool {
    match k.first() {
        Some(&c) if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {}
        _ => return false,
    }
    k.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$')
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// JSON string escaping as JSON.stringify does it (and RFC 8785 for well-formed text): `"`, `\`
/// and control characters only, short forms where they exist, unpaired surrogates as \udxxx.
pub fn write_json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let mut run = 0;
    let mut i = 0;
    let n = s.len();
    loop {
        while i + 8 <= n && !special8(load8(s, i), false) && !has_ed8(load8(s, i)) {
            i += 8;
        }
        if i >= n {
            break;
        }
        let c = s[i];
        if c >= 0x20 && c != b'"' && c != b'\\' && c != 0xED {
            i += 1;
            continue;
        }
        if c == 0xED {
            if i + 2 < n && s[i + 1] >= 0xA0 {
                out.extend_from_slice(&s[run..i]);
                let u = ((c as u32 & 0x0F) << 12) | ((s[i + 1] as u32 & 0x3F) << 6) | (s[i + 2] as u32 & 0x3F);
                out.extend_from_slice(b"\\u");
                for shift in [12, 8, 4, 0] {
                    out.push(HEX[((u >> shift) & 0xF) as usize]);
                }
                i += 3;
                run = i;
            } else {
                i += 1;
            }
            continue;
        }
        out.extend_from_slice(&s[run..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0C => out.extend_from_slice(b"\\f"),
            0x0D => out.extend_from_slice(b"\\r"),
            _ => {
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 0xF) as usize]);
            }
        }
        i += 1;
        run = i;
    }
    out.extend_from_slice(&s[run..]);
    out.push(b'"');
}

/// Whether any of the 8 bytes is 0xED (the lead byte of an encoded surrogate, among others).
#[inline(always)]
fn has_ed8(w: u64) -> bool {
    let x = w ^ (LO * 0xED);
    (x.wrapping_sub(LO) & !x & HI) != 0
}

/// Whether WTF-8 text holds an unpaired surrogate.
pub fn has_surrogate(s: &[u8]) -> bool {
    s.windows(2).any(|w| w[0] == 0xED && w[1] >= 0xA0)
}

fn render_path(segs: &[Seg<'_>]) -> String {
    let mut out: Vec<u8> = Vec::new();
    for s in segs {
        match s {
            Seg::Index(i) => {
                out.push(b'[');
                out.extend_from_slice(i.to_string().as_bytes());
                out.push(b']');
            }
            Seg::Key(k) => {
                if is_identifier(k) {
                    if !out.is_empty() {
                        out.push(b'.');
                    }
                    out.extend_from_slice(k);
                } else {
                    out.push(b'[');
                    write_json_string(&mut out, k);
                    out.push(b']');
                }
            }
        }
    }
    // Escaping turned every unpaired surrogate into ASCII, so this is valid UTF-8.
    String::from_utf8(out).unwrap_or_default()
}
