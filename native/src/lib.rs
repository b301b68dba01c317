//! dris-native: the hashing engine of dris as a Node-API addon.
//!
//! Batch-oriented: one call parses, checks and hashes a whole request body, or builds a whole
//! tree, so the cost of crossing into native code is paid once per request or batch. Every
//! function has a synchronous form (for worker threads) and most an AsyncTask form that runs on
//! the libuv pool, off the event loop.

use std::borrow::Cow;
use std::cell::RefCell;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use sha2::{Digest, Sha256};

mod fast;
mod frames;
mod hex_leaves;
mod inclusion;
mod fs_sync;
mod http_guard;
mod jcs;
mod json;
mod merkle;
mod prefetch;
mod sha;

// Parsing allocates many short-lived vectors; glibc malloc spent as long on them as the parser did.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const HEX: &[u8; 16] = b"0123456789abcdef";

pub(crate) fn push_hex(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(HEX[(b >> 4) as usize]);
        out.push(HEX[(b & 0xF) as usize]);
    }
}

fn ascii_string(v: Vec<u8>) -> String {
    // Only ever called with hex digits or escaped JSON text.
    String::from_utf8(v).unwrap_or_default()
}

/// prepareBody's answer. The one-pass canonicaliser lends its buffers (thread-local scratch); the
/// full parser's answer owns them.
pub struct Prepared<'a> {
    pub(crate) syntax_error: bool,
    pub(crate) error_count: u32,
    pub(crate) errors_json: Vec<u8>,
    pub(crate) canonical: Cow<'a, [u8]>,
    pub(crate) lengths: Cow<'a, [i32]>,
    /// payloadHash of each present payload, 64 lowercase hex digits each.
    pub(crate) hashes: Cow<'a, [u8]>,
    /// Body offsets of the payload objects to replace by `{}` in the envelope text; None when the
    /// answer carries no envelope text (the caller then derives the envelope from the value).
    pub(crate) payload_spans: Option<Cow<'a, [(usize, usize)]>>,
}

const HEADER_LEN: usize = 20;
const FLAG_SYNTAX_ERROR: u32 = 1;
const FLAG_ENVELOPE_TEXT: u32 = 2;

impl Prepared<'_> {
    fn envelope_len(&self, body: &[u8]) -> Option<usize> {
        let spans = self.payload_spans.as_ref()?;
        Some(spans.iter().fold(body.len(), |n, &(s, e)| n - (e - s) + 2))
    }

    fn encoded_len(&self, body: &[u8]) -> usize {
        HEADER_LEN + 4 * self.lengths.len() + self.errors_json.len() + self.hashes.len() + self.canonical.len() + self.envelope_len(body).unwrap_or(0)
    }

    /// One buffer, because every extra property of a returned object costs more than the copy:
    ///
    /// ```text
    /// u32 flags (bit 0: syntax error, bit 1: envelope text present) | u32 violation count
    /// u32 errors JSON length | u32 n | u32 envelope text length
    /// i32 length[n] (canonical bytes of payload i, -1 when absent) | errors JSON (UTF-8)
    /// payloadHash per present payload (64 hex digits) | canonical texts back to back
    /// envelope text
    /// ```
    ///
    /// The envelope text is the body with every payload object replaced by `{}`. `out` must hold
    /// encoded_len bytes.
    fn encode_into(&self, body: &[u8], out: &mut [u8]) {
        let envelope_len = self.envelope_len(body);
        let flags = (self.syntax_error as u32 * FLAG_SYNTAX_ERROR) | (envelope_len.is_some() as u32 * FLAG_ENVELOPE_TEXT);
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&flags.to_le_bytes());
        put(&self.error_count.to_le_bytes());
        put(&(self.errors_json.len() as u32).to_le_bytes());
        put(&(self.lengths.len() as u32).to_le_bytes());
        put(&(envelope_len.unwrap_or(0) as u32).to_le_bytes());
        for l in self.lengths.iter() {
            put(&l.to_le_bytes());
        }
        put(&self.errors_json);
        put(&self.hashes);
        put(&self.canonical);
        if let Some(spans) = &self.payload_spans {
            let mut from = 0;
            for &(s, e) in spans.iter() {
                put(&body[from..s]);
                put(b"{}");
                from = e;
            }
            put(&body[from..]);
        }
    }

    fn encode(&self, body: &[u8]) -> Vec<u8> {
        let mut out = vec![0u8; self.encoded_len(body)];
        self.encode_into(body, &mut out);
        out
    }
}

fn errors_json(errors: &[json::Violation]) -> Vec<u8> {
    if errors.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(errors.len() * 64);
    out.push(b'[');
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"path\":");
        json::write_json_string(&mut out, e.path.as_bytes());
        out.extend_from_slice(b",\"code\":");
        json::write_json_string(&mut out, e.code.as_bytes());
        out.extend_from_slice(b",\"message\":");
        json::write_json_string(&mut out, e.message.as_bytes());
        out.push(b'}');
    }
    out.push(b']');
    out
}

fn within(p: &str, prefix: &str) -> bool {
    p == prefix || (p.starts_with(prefix) && matches!(p.as_bytes()[prefix.len()], b'.' | b'['))
}

/// Indices i whose `<prefix>[i].recordPayload` holds a violation (as in prepare-body.ts).
fn affected(paths: &[String], prefix: &str) -> std::collections::HashSet<usize> {
    let mut out = std::collections::HashSet::new();
    let head = format!("{prefix}[");
    const TAIL: &str = "].recordPayload";
    for p in paths {
        let Some(rest) = p.strip_prefix(head.as_str()) else { continue };
        let Some(close) = rest.find(']') else { continue };
        if !rest[close..].starts_with(TAIL) {
            continue;
        }
        let after = &rest[close + TAIL.len()..];
        if !(after.is_empty() || after.starts_with('.') || after.starts_with('[')) {
            continue;
        }
        let digits = &rest[..close];
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            if let Ok(i) = digits.parse::<usize>() {
                out.insert(i);
            }
        }
    }
    out
}

thread_local! {
    static SCRATCH: RefCell<fast::Scratch> = RefCell::default();
}

/// Calls `f` with prepareBody's answer for `body`.
fn with_prepared<R>(body: &[u8], bulk: bool, f: impl FnOnce(&Prepared<'_>) -> R) -> R {
    SCRATCH.with_borrow_mut(|scratch| match fast::prepare(body, bulk, scratch) {
        Some(p) => f(&p),
        None => f(&prepare_full(body, bulk)),
    })
}

/// The full parser's answer: what every body with a violation, or an unusual shape, gets.
fn prepare_full(body: &[u8], bulk: bool) -> Prepared<'static> {
    let parsed = json::parse(body);
    let mut canonical = Vec::new();
    let mut lengths = Vec::new();
    let mut hashes = Vec::new();
    let mut emit = |element: Option<&json::Value<'_>>| {
        let payload = match element {
            Some(el @ json::Value::Obj(_)) => match el.member(b"recordPayload") {
                Some(p @ json::Value::Obj(_)) => Some(p),
                _ => None,
            },
            _ => None,
        };
        let start = canonical.len();
        match payload.map(|p| jcs::canonicalize(p, &mut canonical)) {
            Some(Ok(())) => {
                let text = &canonical[start..];
                lengths.push(text.len() as i32);
                push_hex(&mut hashes, &Sha256::digest(text));
            }
            _ => {
                canonical.truncate(start);
                lengths.push(-1);
            }
        }
    };
    if let Some(value) = &parsed.value {
        if !bulk {
            let bad = parsed.violation_paths.iter().any(|p| within(p, "recordPayload"));
            emit(if bad { None } else { Some(value) });
        } else {
            let (prefix, list): (&str, &[json::Value<'_>]) = match (value, value.member(b"records"), value.member(b"items")) {
                (json::Value::Obj(_), Some(json::Value::Arr(items)), _) => ("records", items),
                (json::Value::Obj(_), _, Some(json::Value::Arr(items))) => ("items", items),
                _ => ("", &[]),
            };
            let bad = if parsed.violation_paths.is_empty() { Default::default() } else { affected(&parsed.violation_paths, prefix) };
            for (i, el) in list.iter().enumerate() {
                emit(if bad.contains(&i) { None } else { Some(el) });
            }
        }
    }
    Prepared {
        syntax_error: parsed.syntax_error,
        error_count: parsed.error_count as u32,
        errors_json: errors_json(&parsed.errors),
        canonical: Cow::Owned(canonical),
        lengths: Cow::Owned(lengths),
        hashes: Cow::Owned(hashes),
        payload_spans: None,
    }
}

/// Parses a request body, checks the I-JSON rules and hashes its payloads (`bulk`: one payload
/// per element of `records`, else of `items`). The answer is encoded as Prepared::encode_into says.
#[napi]
pub fn prepare_body(body: &[u8], bulk: bool) -> Buffer {
    Buffer::from(with_prepared(body, bulk, |p| p.encode(body)))
}

/// prepareBody writing its answer into `out` from byte `offset` on (a reused buffer: returning a
/// fresh Buffer costs more than all the hashing of a small body). Returns the answer's length, or
/// minus the length needed when it does not fit (nothing is written then).
#[napi]
pub fn prepare_body_at(body: &[u8], bulk: bool, mut out: Uint8ArraySlice, offset: u32) -> i64 {
    // Safety: the view is only written during this synchronous call, while JS cannot run.
    let out = unsafe { out.as_mut() };
    with_prepared(body, bulk, |prepared| {
        let len = prepared.encoded_len(body);
        let offset = offset as usize;
        if offset > out.len() || len > out.len() - offset {
            return -(len as i64);
        }
        prepared.encode_into(body, &mut out[offset..offset + len]);
        len as i64
    })
}

pub struct PrepareTask {
    body: Uint8Array,
    bulk: bool,
}

impl Task for PrepareTask {
    type Output = Vec<u8>;
    type JsValue = Buffer;
    fn compute(&mut self) -> Result<Vec<u8>> {
        Ok(with_prepared(&self.body, self.bulk, |p| p.encode(&self.body)))
    }
    fn resolve(&mut self, _env: Env, output: Vec<u8>) -> Result<Buffer> {
        Ok(Buffer::from(output))
    }
}

#[napi]
pub fn prepare_body_async(body: Uint8Array, bulk: bool) -> AsyncTask<PrepareTask> {
    AsyncTask::new(PrepareTask { body, bulk })
}

fn hashes_of_lines(text: &[u8]) -> Vec<u8> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::with_capacity((text.len() / 256 + 1) * 64);
    for line in text.split(|&c| c == b'\n') {
        push_hex(&mut out, &Sha256::digest(line));
    }
    out
}

/// Member names of the dris-v1 envelope in RFC 8785 order, each with what precedes its value.
const ENVELOPE_KEYS: [&[u8]; 10] = [
    b"{\"collection\":",
    b",\"database\":",
    b",\"hashScheme\":",
    b",\"operationType\":",
    b",\"payloadHash\":",
    b",\"recordId\":",
    b",\"recordVersion\":",
    b",\"salt\":",
    b",\"sourceTimestamp\":",
    b",\"tenantId\":",
];
/// The only envelope member that may be null.
const NULLABLE_FIELD: usize = 8;

/// Appends the UTF-8 form of UTF-16 code units; None at an unpaired surrogate.
fn push_utf16(out: &mut Vec<u8>, units: &[u16]) -> Option<()> {
    let mut i = 0;
    while i < units.len() {
        let u = units[i] as u32;
        i += 1;
        let cp = match u {
            0..=0x7F => {
                out.push(u as u8);
                continue;
            }
            0xD800..=0xDBFF => {
                let low = *units.get(i)? as u32;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return None;
                }
                i += 1;
                0x10000 + ((u - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return None,
            _ => u,
        };
        let mut tmp = [0u8; 4];
        out.extend_from_slice(char::from_u32(cp)?.encode_utf8(&mut tmp).as_bytes());
    }
    Some(())
}

/// recordHash of each envelope of a batch, written to `out` as 64 lowercase hex digits each. The envelopes'
/// values, in ENVELOPE_KEYS order, are the UTF-16 code units of `units` cut at `lengths` (ten per
/// envelope; -1 is null, which only sourceTimestamp may be). None when a value has no canonical
/// form here (an unpaired surrogate, a misplaced null) or the lengths do not fit: the caller then
/// takes the checked path, which names the field.
fn envelope_hashes(units: &[u16], lengths: &[i32], out: &mut [u8]) -> Option<()> {
    let n = lengths.len() / ENVELOPE_KEYS.len();
    if !lengths.len().is_multiple_of(ENVELOPE_KEYS.len()) || out.len() < 64 * n {
        return None;
    }
    let mut canonical = [Vec::with_capacity(512), Vec::with_capacity(512)];
    let mut value = Vec::with_capacity(128);
    let mut first_block = FirstBlock { block: [0; 64], state: None };
    let mut at = 0usize;
    // Two envelopes at a time: see sha.rs.
    for (rows, hashes) in lengths.chunks(2 * ENVELOPE_KEYS.len()).zip(out.chunks_mut(128)) {
        for (row, text) in rows.chunks_exact(ENVELOPE_KEYS.len()).zip(canonical.iter_mut()) {
            envelope_canonical(units, &mut at, row, text, &mut value)?;
        }
        if rows.len() == ENVELOPE_KEYS.len() {
            let (state, done, rest) = first_block.skip(&canonical[0]);
            write_hex(&mut hashes[..64], &sha::finish(state, done, rest));
        } else {
            let a = first_block.skip(&canonical[0]);
            let b = first_block.skip(&canonical[1]);
            let (da, db) = sha::finish_pair(a, b);
            write_hex(&mut hashes[..64], &da);
            write_hex(&mut hashes[64..128], &db);
        }
    }
    (at == units.len()).then_some(())
}

/// The first 64 canonical bytes of consecutive envelopes (names and the first values) usually
/// agree: that block is compressed once and its state reused.
struct FirstBlock {
    block: [u8; 64],
    state: Option<sha::State>,
}

impl FirstBlock {
    /// Where hashing `text` starts: a state, the bytes it covers, and the bytes left.
    fn skip<'t>(&mut self, text: &'t [u8]) -> (sha::State, u64, &'t [u8]) {
        let Some((head, rest)) = text.split_first_chunk::<64>() else {
            return (sha::IV, 0, text);
        };
        match self.state {
            Some(state) if self.block == *head => (state, 64, rest),
            _ => {
                let mut state = sha::IV;
                sha::absorb(&mut state, head);
                self.block = *head;
                self.state = Some(state);
                (state, 64, rest)
            }
        }
    }
}

/// Appends the canonical text of the envelope whose value lengths are `row`, taking its values
/// from `units` at `at` (moved past them).
fn envelope_canonical(units: &[u16], at: &mut usize, row: &[i32], text: &mut Vec<u8>, value: &mut Vec<u8>) -> Option<()> {
    text.clear();
    for (f, (&len, key)) in row.iter().zip(ENVELOPE_KEYS).enumerate() {
        text.extend_from_slice(key);
        if len < 0 {
            if f != NULLABLE_FIELD || len != -1 {
                return None;
            }
            text.extend_from_slice(b"null");
            continue;
        }
        let end = at.checked_add(len as usize)?;
        let v = units.get(*at..end)?;
        *at = end;
        // Most values are printable ASCII without quotes or backslashes, written as they are.
        if v.iter().fold(true, |plain, &u| plain & (0x20..0x7F).contains(&u) & (u != b'"' as u16) & (u != b'\\' as u16)) {
            text.push(b'"');
            text.extend(v.iter().map(|&u| u as u8));
            text.push(b'"');
        } else {
            value.clear();
            push_utf16(value, v)?;
            json::write_json_string(text, value);
        }
    }
    text.push(b'}');
    Some(())
}

fn write_hex(out: &mut [u8], bytes: &[u8]) {
    for (pair, b) in out.chunks_exact_mut(2).zip(bytes) {
        pair[0] = HEX[(b >> 4) as usize];
        pair[1] = HEX[(b & 0xF) as usize];
    }
}

/// recordHash of a batch of envelopes given as their values' UTF-16 code units and lengths (see
/// envelope_hashes); the hashes go to `out` as hex digits. False when the batch needs the checked
/// path.
#[napi]
pub fn envelope_hashes_utf16(units: Uint16ArraySlice, lengths: Int32ArraySlice, mut out: Uint8ArraySlice) -> bool {
    // Safety: the view is only written during this synchronous call, while JS cannot run.
    let out = unsafe { out.as_mut() };
    envelope_hashes(&units, &lengths, out).is_some()
}

/// SHA-256 of each '\n'-separated line (canonical JSON never holds a raw newline), as 64 hex
/// digits per line, back to back.
#[napi]
pub fn sha256_lines(text: String) -> String {
    ascii_string(hashes_of_lines(text.as_bytes()))
}

#[napi]
pub fn sha256_hex(data: Uint8Array) -> String {
    let mut out = Vec::with_capacity(64);
    push_hex(&mut out, &Sha256::digest(&*data));
    ascii_string(out)
}

#[napi]
pub fn sha256(data: Uint8Array) -> Buffer {
    Buffer::from(Sha256::digest(&*data).to_vec())
}

/// SHA-256 of `data` written into `out` at `offset`, without a buffer of its own: a Merkle proof
/// check hashes a node per level, and a fresh buffer per hash cost more than the hash. False when
/// `out` has no 32 bytes there.
#[napi]
pub fn sha256_into(data: Uint8ArraySlice, mut out: Uint8ArraySlice, offset: u32) -> bool {
    let digest = Sha256::digest(&*data);
    // Safety: the view is only written during this synchronous call, while JS cannot run.
    let out = unsafe { out.as_mut() };
    let at = offset as usize;
    match out.get_mut(at..at + 32) {
        Some(dst) => {
            dst.copy_from_slice(&digest);
            true
        }
        None => false,
    }
}

/// Canonical form of the JSON text of a JavaScript value (JSON.stringify output); a violation
/// is an error whose reason is "<code> <path>" of the first one.
#[napi]
pub fn canonicalize_json(text: Uint8Array) -> Result<String> {
    let parsed = json::parse(&text);
    // The text comes from a binary64 value, so an integer literal beyond 2^53 is just that
    // value's shortest spelling: only the other rules apply here.
    if let Some(e) = parsed.errors.iter().find(|e| e.code != "unsafe_integer") {
        return Err(Error::new(Status::InvalidArg, format!("{} {}", e.code, e.path)));
    }
    let Some(value) = parsed.value else {
        return Err(Error::new(Status::InvalidArg, "invalid_json ".to_string()));
    };
    let mut out = Vec::with_capacity(text.len());
    match jcs::canonicalize(&value, &mut out) {
        Ok(()) => Ok(String::from_utf8(out).unwrap_or_default()),
        Err(jcs::CanonError::LoneSurrogate) => Err(Error::new(Status::InvalidArg, "lone_surrogate ".to_string())),
        Err(jcs::CanonError::NonFinite) => Err(Error::new(Status::InvalidArg, "invalid_number ".to_string())),
    }
}

fn check_offsets(data: &[u8], offsets: &[u32]) -> Result<()> {
    if offsets.is_empty() {
        return Err(Error::new(Status::InvalidArg, "offsets must hold n + 1 entries".to_string()));
    }
    let mut prev = 0u32;
    for &o in offsets {
        if o < prev || o as usize > data.len() {
            return Err(Error::new(Status::InvalidArg, "offsets must be ascending and within the data".to_string()));
        }
        prev = o;
    }
    Ok(())
}

fn leaf_hashes_of(data: &[u8], offsets: Option<&[u32]>) -> Result<(Vec<u8>, usize)> {
    match offsets {
        Some(o) => {
            check_offsets(data, o)?;
            Ok((merkle::leaf_hashes(data, o), o.len() - 1))
        }
        None => {
            if !data.len().is_multiple_of(merkle::HASH_LEN) {
                return Err(Error::new(Status::InvalidArg, "leaves must be 32 bytes each".to_string()));
            }
            let n = data.len() / merkle::HASH_LEN;
            let mut out = vec![0u8; n * merkle::HASH_LEN];
            for i in 0..n {
                merkle::leaf_hash(&data[i * 32..(i + 1) * 32], &mut out[i * 32..(i + 1) * 32]);
            }
            Ok((out, n))
        }
    }
}

/// RFC 9162 root. Leaves are `data` split at `offsets` (n + 1 entries), or 32 bytes each when
/// `offsets` is absent.
#[napi]
pub fn merkle_root(data: Uint8Array, offsets: Option<Uint32Array>) -> Result<Buffer> {
    let (mut hashes, n) = leaf_hashes_of(&data, offsets.as_deref())?;
    Ok(Buffer::from(merkle::root_in_place(&mut hashes, n).to_vec()))
}

#[napi(object)]
pub struct AllProofsNative {
    pub root: Buffer,
    /// Audit paths back to back, 32 bytes per hash.
    pub hashes: Buffer,
    /// n + 1 entries: path i spans hashes [offsets[i], offsets[i+1]) in units of 32 bytes.
    pub offsets: Uint32Array,
}

pub struct AllProofs {
    root: [u8; 32],
    hashes: Vec<u8>,
    offsets: Vec<u32>,
}

fn all_proofs(data: &[u8], offsets: Option<&[u32]>) -> Result<AllProofs> {
    let (hashes, n) = leaf_hashes_of(data, offsets)?;
    let tree = merkle::Tree::from_leaf_hashes(hashes, n);
    let mut offs = Vec::with_capacity(n + 1);
    let mut total = 0u32;
    for i in 0..n {
        offs.push(total);
        total += tree.proof_len(i) as u32;
    }
    offs.push(total);
    let mut out = Vec::with_capacity(total as usize * merkle::HASH_LEN);
    for i in 0..n {
        tree.proof_into(i, &mut out);
    }
    Ok(AllProofs { root: tree.root(), hashes: out, offsets: offs })
}

impl AllProofs {
    fn into_js(self) -> AllProofsNative {
        AllProofsNative { root: Buffer::from(self.root.to_vec()), hashes: Buffer::from(self.hashes), offsets: Uint32Array::new(self.offsets) }
    }
}

/// Root and every audit path of a tree in one call.
#[napi]
pub fn merkle_all_proofs(data: Uint8Array, offsets: Option<Uint32Array>) -> Result<AllProofsNative> {
    Ok(all_proofs(&data, offsets.as_deref())?.into_js())
}

pub struct AllProofsTask {
    data: Uint8Array,
    offsets: Option<Uint32Array>,
}

impl Task for AllProofsTask {
    type Output = AllProofs;
    type JsValue = AllProofsNative;
    fn compute(&mut self) -> Result<AllProofs> {
        all_proofs(&self.data, self.offsets.as_deref())
    }
    fn resolve(&mut self, _env: Env, output: AllProofs) -> Result<AllProofsNative> {
        Ok(output.into_js())
    }
}

#[napi]
pub fn merkle_all_proofs_async(data: Uint8Array, offsets: Option<Uint32Array>) -> AsyncTask<AllProofsTask> {
    AsyncTask::new(AllProofsTask { data, offsets })
}

/// Audit path of one leaf, 32 bytes per hash.
#[napi]
pub fn merkle_inclusion_proof(data: Uint8Array, offsets: Option<Uint32Array>, index: u32) -> Result<Buffer> {
    let (hashes, n) = leaf_hashes_of(&data, offsets.as_deref())?;
    if index as usize >= n {
        return Err(Error::new(Status::InvalidArg, format!("leaf index {index} outside 0..{n}")));
    }
    let tree = merkle::Tree::from_leaf_hashes(hashes, n);
    let mut out = Vec::new();
    tree.proof_into(index as usize, &mut out);
    Ok(Buffer::from(out))
}

/// Whether the native SHA-256 uses the CPU's SHA extensions.
#[napi]
pub fn sha_extensions() -> bool {
    #[cfg(any(target_arch = "x86", target_arch = "x86_64"))]
    {
        std::arch::is_x86_feature_detected!("sha") && std::arch::is_x86_feature_detected!("sse4.1")
    }
    #[cfg(target_arch = "aarch64")]
    {
        std::arch::is_aarch64_feature_detected!("sha2")
    }
    #[cfg(not(any(target_arch = "x86", target_arch = "x86_64", target_arch = "aarch64")))]
    {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The answer without its envelope text, which only the one-pass canonicaliser writes.
    fn hashed(p: Prepared<'_>) -> Vec<u8> {
        Prepared { payload_spans: None, ..p }.encode(b"")
    }

    /// The one-pass canonicaliser's answer, on a scratch of its own.
    fn fast_prepare(body: &[u8], bulk: bool) -> Option<Vec<u8>> {
        fast::prepare(body, bulk, &mut fast::Scratch::default()).map(hashed)
    }

    fn envelope_text(p: &Prepared<'_>, body: &[u8]) -> Option<String> {
        let spans = p.payload_spans.as_ref()?;
        let mut out = Vec::new();
        let mut from = 0;
        for &(s, e) in spans.iter() {
            out.extend_from_slice(&body[from..s]);
            out.extend_from_slice(b"{}");
            from = e;
        }
        out.extend_from_slice(&body[from..]);
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn canonical_sample() {
        let body = br#"{"recordPayload":{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"b":-0,"a":"\u20ac"}}"#;
        let text = with_prepared(body, false, |p| p.canonical.to_vec());
        assert_eq!(std::str::from_utf8(&text).unwrap(), r#"{"a":"€","b":0,"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}"#);
    }

    #[test]
    fn paths() {
        let p = json::parse(br#"{"a b":[1,{"x":1,"x":2}],"k":9007199254740993,"\ud800":1}"#);
        let got: Vec<(String, &str)> = p.errors.iter().map(|e| (e.path.clone(), e.code)).collect();
        assert_eq!(
            got,
            vec![("[\"a b\"][1].x".to_string(), "duplicate_key"), ("k".to_string(), "unsafe_integer"), ("[\"\\ud800\"]".to_string(), "lone_surrogate")]
        );
    }

    /// The one-pass canonicaliser agrees with the full parser wherever it answers, and leaves
    /// every body with a violation to it.
    #[test]
    fn fast_matches_full() {
        let singles: &[&str] = &[
            r#"{"recordPayload":{"b":1,"a":[1,2,{"z":null,"y":true}],"c":"x\ny\u00e9\ud83d\ude00\/"}}"#,
            r#"{"recordPayload":{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001,-0,0,-0.0,1e21,1e-7,123456789012345,1234567890123456,9007199254740991,-9007199254740991,5e-324]}}"#,
            "{\"recordPayload\":{\"\u{e9}\":1,\"e\":2,\"\u{1F600}\":3,\"\u{FB33}\":4,\"10\":5,\"9\":6,\"\":7,\"a\u{7f}\":8}}",
            r#"{"recordPayload":[1,2]}"#,
            r#"{"recordPayload":{"abcdefghY":1,"abcdefghX":2,"b":{"abcdefghij2":0,"abcdefghij1":1,"a":2},"a":3}}"#,
            r#"{"recordPayload":{"zz":1,"z":2,"":3,"y":{"k":[{"b":1,"a":2}]}}}"#,
            r#"{"recordPayload":"x"}"#,
            r#"{"other":1}"#,
            r#"[1,2,3]"#,
            r#" { "recordPayload" : { "a" : [ ] , "b" : { } } } "#,
            r#"{"recordPayload":{"s":"tab\there","q":"\"","bs":"\\","ctl":"\u0001\u001f\u007f\u2028"}}"#,
        ];
        let invalid: &[&str] = &[
            r#"{"recordPayload":{"a":1,"a":2}}"#,
            r#"{"recordPayload":{"b":1,"a":2,"b":3}}"#,
            r#"{"recordPayload":{"abcdefghij":1,"b":0,"abcdefghij":2}}"#,
            r#"{"recordPayload":{"x":{"abcdefghij":1,"b":0,"abcdefghij":2}}}"#,
            r#"{"recordPayload":{"x":{"b":1,"a":2,"b":3}}}"#,
            r#"{"x":1,"x":2,"recordPayload":{}}"#,
            r#"{"recordPayload":{"n":9007199254740992}}"#,
            r#"{"recordPayload":{"n":1e400}}"#,
            r#"{"recordPayload":{"s":"\ud800"}}"#,
            r#"{"recordPayload":{"s":"\udc00x"}}"#,
            r#"{"recordPayload":{"\ud800":1}}"#,
            r#"{"recordPayload":{"a":1,}}"#,
            r#"{"recordPayload":{"a":01}}"#,
            r#"{"recordPayload":{"a":tru}}"#,
            r#"{"recordPayload":{"a":1}} x"#,
            r#"{"recordPayload":{"a":"unterminated}}"#,
        ];
        for body in singles {
            let full = prepare_full(body.as_bytes(), false);
            assert_eq!(full.error_count, 0, "{body}");
            let fast = fast_prepare(body.as_bytes(), false).unwrap_or_else(|| panic!("fast gave up on {body}"));
            assert_eq!(fast, hashed(full), "{body}");
        }
        for body in invalid {
            assert!(fast_prepare(body.as_bytes(), false).is_none(), "{body}");
            let full = prepare_full(body.as_bytes(), false);
            assert!(full.error_count > 0 || full.syntax_error, "{body}");
        }
        // Invalid UTF-8 and an encoded surrogate, raw in a string.
        for raw in [&b"{\"recordPayload\":{\"s\":\"\xff\"}}"[..], &b"{\"recordPayload\":{\"s\":\"\xed\xa0\x80\"}}"[..]] {
            assert!(fast_prepare(raw, false).is_none());
        }
        let deep_ok = format!(r#"{{"recordPayload":{}1{}}}"#, "[".repeat(63), "]".repeat(63));
        assert_eq!(fast_prepare(deep_ok.as_bytes(), false), Some(hashed(prepare_full(deep_ok.as_bytes(), false))));
        let deep_bad = format!(r#"{{"recordPayload":{}1{}}}"#, "[".repeat(64), "]".repeat(64));
        assert!(fast_prepare(deep_bad.as_bytes(), false).is_none());
        assert!(prepare_full(deep_bad.as_bytes(), false).error_count > 0);
        let bulks: &[&str] = &[
            r#"{"records":[{"recordPayload":{"b":1,"a":2}},{"recordPayload":3},5,{"x":{"recordPayload":{}}},{"recordPayload":{}}]}"#,
            r#"{"items":[{"recordPayload":{"z":1}}],"records":7}"#,
            r#"{"items":[{"recordPayload":{"z":1}}],"records":[]}"#,
            r#"{"nothing":[{"recordPayload":{"z":1}}]}"#,
            r#"[{"recordPayload":{"z":1}}]"#,
        ];
        for body in bulks {
            let full = prepare_full(body.as_bytes(), true);
            let fast = fast_prepare(body.as_bytes(), true).unwrap_or_else(|| panic!("fast gave up on {body}"));
            assert_eq!(fast, hashed(full), "{body}");
        }
    }

    /// Bodies prepared one after another on the thread's scratch, including ones it gives up on
    /// halfway, get the answers a fresh scratch gives.
    #[test]
    fn scratch_reuse() {
        let bodies: &[(&str, bool)] = &[
            (r#"{"records":[{"recordPayload":{"b":1,"a":"x"}},{"recordPayload":{"c":[1,2]}}],"items":[{"recordPayload":{}}]}"#, true),
            (r#"{"records":[{"recordPayload":{"b":1}},{"recordPayload":{"a":1,"a":2}}]}"#, true),
            (r#"{"recordPayload":{"z":"long text long text long text long text","y":{"b":1,"a":0}}}"#, false),
            (r#"{"items":[{"recordPayload":{"q":1}}]}"#, true),
            (r#"{"recordPayload":{"n":1e400}}"#, false),
            (r#"{"other":1}"#, false),
            (r#"{"records":[{"recordPayload":{"k":1}}]}"#, true),
        ];
        for _ in 0..2 {
            for &(body, bulk) in bodies {
                let b = body.as_bytes();
                let reused = with_prepared(b, bulk, |p| p.encode(b));
                let fresh = match fast::prepare(b, bulk, &mut fast::Scratch::default()) {
                    Some(p) => p.encode(b),
                    None => prepare_full(b, bulk).encode(b),
                };
                assert_eq!(reused, fresh, "{body}");
            }
        }
    }

    /// The envelope text is the body with each payload object of the chosen list replaced by {}.
    #[test]
    fn envelope_text_replaces_payload_objects() {
        let cases: &[(&str, bool, Option<&str>)] = &[
            (r#"{"tenantId":"t","recordPayload":{"b":1,"a":[{}]},"x":[1]}"#, false, Some(r#"{"tenantId":"t","recordPayload":{},"x":[1]}"#)),
            (r#" { "recordPayload" : { "a" : 1 } } "#, false, Some(r#" { "recordPayload" : {} } "#)),
            (r#"{"recordPayload":{}}"#, false, Some(r#"{"recordPayload":{}}"#)),
            (r#"{"recordPayload":[1,2]}"#, false, None),
            (r#"{"recordPayload":"x","y":{"recordPayload":{"a":1}}}"#, false, None),
            (r#"{"other":1}"#, false, None),
            (r#"[{"recordPayload":{"a":1}}]"#, false, None),
            (
                r#"{"records":[{"recordPayload":{"a":1},"id":"1"},{"recordPayload":3},5,{"x":{"recordPayload":{}}},{"recordPayload":{"z":[{"recordPayload":{}}]}}],"items":[{"recordPayload":{"k":1}}]}"#,
                true,
                Some(r#"{"records":[{"recordPayload":{},"id":"1"},{"recordPayload":3},5,{"x":{"recordPayload":{}}},{"recordPayload":{}}],"items":[{"recordPayload":{"k":1}}]}"#),
            ),
            (r#"{"items":[{"recordPayload":{"z":1}}],"records":7}"#, true, Some(r#"{"items":[{"recordPayload":{}}],"records":7}"#)),
            (r#"{"items":[{"recordPayload":{"z":1}}],"records":[]}"#, true, None),
            (r#"{"recordPayload":{"z":1}}"#, true, None),
        ];
        for &(body, bulk, want) in cases {
            let mut scratch = fast::Scratch::default();
            let p = fast::prepare(body.as_bytes(), bulk, &mut scratch).unwrap_or_else(|| panic!("fast gave up on {body}"));
            assert_eq!(envelope_text(&p, body.as_bytes()).as_deref(), want, "{body}");
            let encoded = p.encode(body.as_bytes());
            assert_eq!(encoded.len(), p.encoded_len(body.as_bytes()));
            let text_len = u32::from_le_bytes(encoded[16..20].try_into().unwrap()) as usize;
            assert_eq!(&encoded[encoded.len() - text_len..], want.unwrap_or("").as_bytes(), "{body}");
        }
        assert!(prepare_full(br#"{"recordPayload":{"a":1,"a":2}}"#, false).payload_spans.is_none());
    }

    #[test]
    fn utf16_order() {
        assert_eq!(jcs::cmp_utf16("\u{1F600}".as_bytes(), "\u{FB33}".as_bytes()), std::cmp::Ordering::Less);
        assert_eq!(jcs::cmp_utf16(b"10", b"9"), std::cmp::Ordering::Less);
    }
}

#[cfg(test)]
mod timing {
    #[test]
    #[ignore]
    fn prepare_speed() {
        if let Ok(file) = std::env::var("DRIS_TIMING_BULK") {
            let body = std::fs::read(file).unwrap();
            let n = 500;
            let best = (0..10)
                .map(|_| {
                    let t = std::time::Instant::now();
                    for _ in 0..n { std::hint::black_box(super::with_prepared(std::hint::black_box(&body), true, |p| p.lengths.len())); }
                    t.elapsed() / n
                })
                .min()
                .unwrap();
            eprintln!("bulk prepare {:?}/op, best of 10 ({} bytes)", best, body.len());
            if std::env::var("DRIS_TIMING_FULL").is_ok() {
                let t = std::time::Instant::now();
                for _ in 0..n { std::hint::black_box(super::prepare_full(std::hint::black_box(&body), true)); }
                eprintln!("bulk prepare_full {:?}/op ({} bytes)", t.elapsed() / n, body.len());
            }
            return;
        }
        let note = "lorem ipsum dolor sit amet ".repeat(28);
        let body = format!(r#"{{"tenantId":"acme","recordId":"c-1","recordPayload":{{"customerId":1,"name":"Customer Ä","email":"c@example.com","active":true,"balance":1234.5,"tags":["gold","emea"],"address":{{"street":"Main","city":"Zürich","geo":[47.3,8.5]}},"note":"{note}"}}}}"#);
        let b = body.as_bytes();
        let n = 200_000;
        let t = std::time::Instant::now();
        for _ in 0..n { std::hint::black_box(super::json::parse(std::hint::black_box(b))); }
        eprintln!("parse {:?}/op", t.elapsed() / n);
        let t = std::time::Instant::now();
        for _ in 0..n { std::hint::black_box(super::prepare_full(std::hint::black_box(b), false)); }
        eprintln!("prepare_full {:?}/op ({} bytes)", t.elapsed() / n, b.len());
        let t = std::time::Instant::now();
        for _ in 0..n { std::hint::black_box(super::with_prepared(std::hint::black_box(b), false, |p| p.lengths.len())); }
        eprintln!("prepare {:?}/op ({} bytes)", t.elapsed() / n, b.len());
        let t = std::time::Instant::now();
        for _ in 0..n { std::hint::black_box(<sha2::Sha256 as sha2::Digest>::digest(std::hint::black_box(b))); }
        eprintln!("sha {:?}/op", t.elapsed() / n);
    }
}


#[cfg(test)]
mod envelope_tests {
    use super::*;

    fn hex_of(s: &str) -> String {
        let mut out = Vec::new();
        push_hex(&mut out, &Sha256::digest(s.as_bytes()));
        String::from_utf8(out).unwrap()
    }

    /// Values as the addon receives them: code units and ten lengths per envelope, -1 for null.
    fn batch(rows: &[[Option<&str>; 10]]) -> (Vec<u16>, Vec<i32>) {
        let mut units = Vec::new();
        let mut lengths = Vec::new();
        for row in rows {
            for v in row {
                match v {
                    Some(s) => {
                        let u: Vec<u16> = s.encode_utf16().collect();
                        lengths.push(u.len() as i32);
                        units.extend(u);
                    }
                    None => lengths.push(-1),
                }
            }
        }
        (units, lengths)
    }

    fn hashes(units: &[u16], lengths: &[i32]) -> Option<String> {
        let mut out = vec![0u8; 64 * (lengths.len() / 10)];
        envelope_hashes(units, lengths, &mut out)?;
        Some(String::from_utf8(out).unwrap())
    }

    #[test]
    fn envelope_batches() {
        let long = "c".repeat(70);
        let rows = [
            [Some("c"), Some("d"), Some("dris-v1"), Some("upsert"), Some("ph"), Some("r\"1\u{2028}\u{1F600}\n\u{1}\u{7f}é"), Some("1"), Some("s"), None, Some("t")],
            [Some("c"), Some("d"), Some("dris-v1"), Some("delete"), Some("ph"), Some("r"), Some("2"), Some("s"), Some("2024-01-01T00:00:00Z"), Some("t")],
            [Some(long.as_str()), Some("d"), Some("dris-v1"), Some("upsert"), Some("a"), Some("r"), Some("1"), Some("s"), None, Some("t")],
            [Some(long.as_str()), Some("d"), Some("dris-v1"), Some("upsert"), Some("b"), Some("r"), Some("1"), Some("s"), None, Some("t")],
            [Some(""), Some(""), Some(""), Some(""), Some(""), Some(""), Some(""), Some(""), Some(""), Some("")],
        ];
        let want = [
            "{\"collection\":\"c\",\"database\":\"d\",\"hashScheme\":\"dris-v1\",\"operationType\":\"upsert\",\"payloadHash\":\"ph\",\"recordId\":\"r\\\"1\u{2028}\u{1F600}\\n\\u0001\u{7f}é\",\"recordVersion\":\"1\",\"salt\":\"s\",\"sourceTimestamp\":null,\"tenantId\":\"t\"}".to_string(),
            r#"{"collection":"c","database":"d","hashScheme":"dris-v1","operationType":"delete","payloadHash":"ph","recordId":"r","recordVersion":"2","salt":"s","sourceTimestamp":"2024-01-01T00:00:00Z","tenantId":"t"}"#.to_string(),
            format!(r#"{{"collection":"{long}","database":"d","hashScheme":"dris-v1","operationType":"upsert","payloadHash":"a","recordId":"r","recordVersion":"1","salt":"s","sourceTimestamp":null,"tenantId":"t"}}"#),
            format!(r#"{{"collection":"{long}","database":"d","hashScheme":"dris-v1","operationType":"upsert","payloadHash":"b","recordId":"r","recordVersion":"1","salt":"s","sourceTimestamp":null,"tenantId":"t"}}"#),
            r#"{"collection":"","database":"","hashScheme":"","operationType":"","payloadHash":"","recordId":"","recordVersion":"","salt":"","sourceTimestamp":"","tenantId":""}"#.to_string(),
        ];
        let (units, lengths) = batch(&rows);
        assert_eq!(hashes(&units, &lengths).unwrap(), want.iter().map(|w| hex_of(w)).collect::<String>());
        assert_eq!(hashes(&[], &[]).unwrap(), "");

        let ok = [Some("c"), Some("d"), Some("dris-v1"), Some("upsert"), Some("ph"), Some("r"), Some("1"), Some("s"), None, Some("t")];
        let (units, lengths) = batch(&[ok]);
        // Unpaired surrogates: a high one alone, at the end, or a low one.
        for bad in [&[0xD800u16, 0x61][..], &[0x61, 0xD83D][..], &[0xDC00][..]] {
            let mut u = units.clone();
            u.extend_from_slice(bad);
            let mut l = lengths.clone();
            l[9] += bad.len() as i32;
            assert!(hashes(&u, &l).is_none(), "{bad:?}");
        }
        let mut null_elsewhere = lengths.clone();
        null_elsewhere[0] = -1;
        assert!(hashes(&units[1..], &null_elsewhere).is_none());
        assert!(hashes(&units, &lengths[..9]).is_none());
        assert!(hashes(&units[1..], &lengths).is_none());
        assert!(hashes(&[units.clone(), vec![0x61]].concat(), &lengths).is_none());
        let mut out = [0u8; 63];
        assert!(envelope_hashes(&units, &lengths, &mut out).is_none());
    }
}
