//! Checks one complete HTTP/1.x request head (request line, fields, the empty line) against
//! RFC 9112 before uWebSockets.js parses it. uWS 20.30 gives no answer at all to many heads (it
//! waits for more data, or closes): every head it would mishandle is either refused here with a
//! status and a reason, or rewritten into a form it parses the same way a conforming server would.

/// Limits of a head; the same for every route.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Request line plus fields plus the empty line, bytes.
    pub max_head: usize,
    /// Field lines, the added ones included (uWS 20.30 parses at most 48).
    pub max_fields: usize,
    /// Largest body any route accepts: a larger Content-Length (or chunk) is never accepted.
    pub max_body: u64,
}

/// How the body of an accepted request is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    Length(u64),
    Chunked,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Accepted {
    pub framing: Framing,
    /// A head to hand on instead of the received one (absolute-form target, HTTP/1.0).
    pub replacement: Option<Vec<u8>>,
}

/// A refusal: the status to answer and a reason slug the HTTP front turns into the error body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reject {
    pub status: u16,
    pub reason: &'static str,
}

const fn reject(status: u16, reason: &'static str) -> Reject {
    Reject { status, reason }
}

/// The methods uWS 20.30 dispatches; it closes the connection without an answer on any other.
const KNOWN_METHODS: [&[u8]; 9] = [b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"PATCH", b"OPTIONS", b"CONNECT", b"TRACE"];

const TCHAR: u8 = 1;
/// A field-name byte uWS 20.30 parses; for any other tchar it waits for more data forever.
const UWS_NAME: u8 = 2;
/// field-vchar, SP and HTAB (RFC 9110 5.5): no other control character, DEL included.
const VALUE: u8 = 4;

/// Byte classes, one table look-up per byte of a head.
const CLASSES: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let alnum = c.is_ascii_alphanumeric();
        let mut class = 0;
        if alnum || matches!(c, b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+' | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~') {
            class |= TCHAR;
        }
        if alnum || c == b'-' {
            class |= UWS_NAME;
        }
        if c == b'\t' || (c >= 0x20 && c != 0x7f) {
            class |= VALUE;
        }
        t[b] = class;
        b += 1;
    }
    t
};

/// RFC 9110 tchar.
pub fn is_tchar(b: u8) -> bool {
    CLASSES[b as usize] & TCHAR != 0
}

fn trim_ows(v: &[u8]) -> &[u8] {
    let start = v.iter().position(|&b| b != b' ' && b != b'\t').unwrap_or(v.len());
    let end = v.iter().rposition(|&b| b != b' ' && b != b'\t').map_or(start, |i| i + 1);
    &v[start..end]
}

/// Where the head that starts at `from` ends (just past its empty line), searching from `scan`;
/// a head whose lines end in bare LF ends at its first empty line as well (and is refused later).
pub fn find_end(buf: &[u8], from: usize, scan: usize) -> Option<usize> {
    let mut at = scan.max(from);
    while let Some(i) = memchr::memchr(b'\n', &buf[at..]) {
        let lf = at + i;
        match buf.get(lf + 1) {
            Some(b'\n') => return Some(lf + 2),
            Some(b'\r') => match buf.get(lf + 2) {
                Some(b'\n') => return Some(lf + 3),
                Some(_) => {}
                None => return None,
            },
            Some(_) => {}
            None => return None,
        }
        at = lf + 1;
    }
    None
}

struct RequestLine {
    method_end: usize,
    target: (usize, usize),
    http10: bool,
    /// Index of the line's LF.
    end: usize,
}

fn request_line(head: &mut [u8]) -> Result<RequestLine, Reject> {
    let lf = memchr::memchr(b'\n', head).ok_or(reject(400, "request_line"))?;
    if lf == 0 || head[lf - 1] != b'\r' {
        return Err(reject(400, "bare_lf"));
    }
    let line = &head[..lf - 1];
    let method_end = line.iter().position(|&b| b == b' ').ok_or(reject(400, "request_line"))?;
    if method_end == 0 || !line[..method_end].iter().all(|&b| is_tchar(b)) {
        return Err(reject(400, "request_line"));
    }
    let t0 = method_end + 1;
    let t1 = t0 + line[t0..].iter().position(|&b| b == b' ').ok_or(reject(400, "request_line"))?;
    if t1 == t0 || !line[t0..t1].iter().all(|&b| b > 0x20 && b != 0x7f) {
        return Err(reject(400, "request_line"));
    }
    let version = &line[t1 + 1..];
    if version.len() != 8 || &version[..5] != b"HTTP/" || version[6] != b'.' || !version[5].is_ascii_digit() || !version[7].is_ascii_digit() {
        return Err(reject(400, "request_line"));
    }
    if version[5] != b'1' {
        return Err(reject(505, "version"));
    }
    let http10 = version[7] == b'0';
    if version[7] > b'1' {
        // RFC 9110 2.5: a later minor version is answered as the highest one implemented.
        head[t1 + 8] = b'1';
    }
    if !KNOWN_METHODS.contains(&&head[..method_end]) {
        return Err(reject(501, "method"));
    }
    Ok(RequestLine { method_end, target: (t0, t1), http10, end: lf })
}

/// The origin-form of an absolute-form target (`http://host/p?q` -> `/p?q`).
fn origin_form(target: &[u8]) -> Option<Vec<u8>> {
    let scheme_len = if target.len() >= 7 && target[..7].eq_ignore_ascii_case(b"http://") {
        7
    } else if target.len() >= 8 && target[..8].eq_ignore_ascii_case(b"https://") {
        8
    } else {
        return None;
    };
    let rest = &target[scheme_len..];
    let path_at = rest.iter().position(|&b| b == b'/' || b == b'?' || b == b'#').unwrap_or(rest.len());
    let mut out = Vec::with_capacity(rest.len() - path_at + 1);
    if rest.get(path_at) != Some(&b'/') {
        out.push(b'/');
    }
    out.extend_from_slice(&rest[path_at..]);
    Some(out)
}

#[derive(Default)]
struct Fields {
    count: usize,
    hosts: usize,
    length: Option<u64>,
    te_seen: bool,
    codings: usize,
    chunked: usize,
    last_chunked: bool,
    /// Name ranges of Connection fields (an HTTP/1.0 head gets one of its own).
    connection_names: Vec<(usize, usize)>,
}

fn content_length(value: &[u8]) -> Result<u64, Reject> {
    if value.is_empty() || !value.iter().all(u8::is_ascii_digit) {
        return Err(reject(400, "content_length"));
    }
    Ok(value.iter().fold(0u64, |n, &d| n.saturating_mul(10).saturating_add(u64::from(d - b'0'))))
}

fn field(head: &mut [u8], s: usize, e: usize, f: &mut Fields, lim: &Limits) -> Result<(), Reject> {
    let first = head[s];
    if first == b' ' || first == b'\t' {
        return Err(reject(400, "obs_fold"));
    }
    // One pass: the name up to the colon (tchar, and whether uWS parses it), then the value.
    let mut colon = s;
    let mut uws_name = true;
    while colon < e && head[colon] != b':' {
        let class = CLASSES[head[colon] as usize];
        if class & TCHAR == 0 {
            return Err(reject(400, "header_name"));
        }
        uws_name &= class & UWS_NAME != 0;
        colon += 1;
    }
    if colon == s || colon == e {
        return Err(reject(400, "header_name"));
    }
    if !head[colon + 1..e].iter().all(|&b| CLASSES[b as usize] & VALUE != 0) {
        return Err(reject(400, "header_value"));
    }
    f.count += 1;
    if f.count > lim.max_fields {
        return Err(reject(431, "too_many_fields"));
    }
    let value = trim_ows(&head[colon + 1..e]);
    let name = &head[s..colon];
    if name.eq_ignore_ascii_case(b"host") {
        f.hosts += 1;
    } else if name.eq_ignore_ascii_case(b"content-length") {
        let n = content_length(value)?;
        if f.length.is_some_and(|m| m != n) {
            return Err(reject(400, "content_length_conflict"));
        }
        f.length = Some(n);
    } else if name.eq_ignore_ascii_case(b"transfer-encoding") {
        f.te_seen = true;
        for coding in value.split(|&b| b == b',').map(trim_ows).filter(|c| !c.is_empty()) {
            let chunked = coding.eq_ignore_ascii_case(b"chunked");
            f.codings += 1;
            f.chunked += usize::from(chunked);
            f.last_chunked = chunked;
        }
    } else if name.eq_ignore_ascii_case(b"connection") {
        f.connection_names.push((s, colon));
    } else if !uws_name {
        // A legal name uWS cannot parse (`a_b`, `x.y`): this service reads none of them, so the
        // field is kept under a name of dashes, which no header this service reads is.
        head[s..colon].fill(b'-');
    }
    Ok(())
}

fn framing(f: &Fields, http10: bool, lim: &Limits) -> Result<Framing, Reject> {
    if f.te_seen {
        if http10 {
            return Err(reject(400, "transfer_encoding_http10"));
        }
        if f.length.is_some() {
            return Err(reject(400, "framing_conflict"));
        }
        // Chunked must be the last coding and applied once (RFC 9112 6.3), else the length of
        // the body cannot be known; any coding before it is one this service does not decode.
        if f.chunked != 1 || !f.last_chunked {
            return Err(reject(400, "transfer_encoding"));
        }
        if f.codings > 1 {
            return Err(reject(501, "transfer_coding"));
        }
        return Ok(Framing::Chunked);
    }
    let n = f.length.unwrap_or(0);
    if n > lim.max_body {
        return Err(reject(413, "content_length"));
    }
    Ok(Framing::Length(n))
}

/// Checks `head` (a complete head, its empty line included) and applies the in-place rewrites.
pub fn check(head: &mut [u8], lim: &Limits) -> Result<Accepted, Reject> {
    let rl = request_line(head)?;
    let mut f = Fields::default();
    let mut s = rl.end + 1;
    loop {
        let lf = s + memchr::memchr(b'\n', &head[s..]).ok_or(reject(400, "header_value"))?;
        if lf == s || head[lf - 1] != b'\r' {
            return Err(reject(400, "bare_lf"));
        }
        let e = lf - 1;
        if e == s {
            if lf + 1 != head.len() {
                return Err(reject(400, "header_value"));
            }
            break;
        }
        // A CR inside a line fails the name or value classes below.
        field(head, s, e, &mut f, lim)?;
        s = lf + 1;
    }
    if f.hosts > 1 || (f.hosts == 0 && !rl.http10) {
        return Err(reject(400, "host"));
    }
    let framing = framing(&f, rl.http10, lim)?;
    let (t0, t1) = rl.target;
    let origin = if head[t0] == b'/' {
        None
    } else if let Some(o) = origin_form(&head[t0..t1]) {
        Some(o)
    } else if &head[..rl.method_end] == b"CONNECT" || (&head[t0..t1] == b"*" && &head[..rl.method_end] == b"OPTIONS") {
        // Tunnels and server-wide OPTIONS: this is an origin server with neither.
        return Err(reject(501, "target_form"));
    } else {
        return Err(reject(400, "request_line"));
    };
    let replacement = if origin.is_some() || rl.http10 { Some(replace(head, &rl, origin.as_deref(), &mut f, lim)?) } else { None };
    Ok(Accepted { framing, replacement })
}

/// The head uWS is given instead: origin-form target, HTTP/1.1, and for an HTTP/1.0 request a
/// Host (uWS refuses heads without one) and `connection: close` (its keep-alive is not kept: a
/// client of 1996 cannot be told that uWS's HTTP/1.1 answer leaves the connection open).
fn replace(head: &mut [u8], rl: &RequestLine, origin: Option<&[u8]>, f: &mut Fields, lim: &Limits) -> Result<Vec<u8>, Reject> {
    let (t0, t1) = rl.target;
    let mut out = Vec::with_capacity(head.len() + 40);
    out.extend_from_slice(&head[..t0]);
    out.extend_from_slice(origin.unwrap_or(&head[t0..t1]));
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut added = 0;
    if rl.http10 {
        for &(a, b) in &f.connection_names {
            head[a..b].fill(b'-');
        }
        added += 1;
    }
    if rl.http10 && f.hosts == 0 {
        added += 1;
    }
    if f.count + added > lim.max_fields {
        return Err(reject(431, "too_many_fields"));
    }
    out.extend_from_slice(&head[rl.end + 1..head.len() - 2]);
    if rl.http10 {
        out.extend_from_slice(b"connection: close\r\n");
    }
    if rl.http10 && f.hosts == 0 {
        out.extend_from_slice(b"host: \r\n");
    }
    out.extend_from_slice(b"\r\n");
    Ok(out)
}
