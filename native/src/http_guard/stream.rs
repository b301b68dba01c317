//! The request framing of one connection, followed byte for byte: where each head starts and
//! ends, how long each body is (Content-Length or chunked), so that every head is checked before
//! uWS sees it, whatever the pipelining and however the bytes are cut into reads.

use super::head::{self, Framing, Limits, Reject};

/// What to do with the bytes of one read, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Hand `buf[from..to]` to uWS.
    Forward(usize, usize),
    /// Hand these bytes to uWS instead of a received head.
    Insert(Vec<u8>),
    /// Hand uWS the synthetic request that makes the HTTP front answer this refusal (and close).
    Refuse(Reject),
    /// Close the connection: a body broke its framing while uWS was reading it.
    Close,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    Size { digits: u8, value: u64 },
    /// A chunk extension (`;name=value`): legal, unused here, and unparseable by uWS, so skipped.
    Ext { value: u64, len: u32 },
    SizeLf { value: u64 },
    Data(u64),
    DataCr,
    DataLf,
    LineStart { trailer: u32 },
    /// A trailer field: skipped as well (uWS 20.30 desynchronises on trailers).
    Trailer { trailer: u32 },
    TrailerLf { trailer: u32 },
    EndLf,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Head,
    Length(u64),
    Chunked(Chunk),
    /// Refused or cut: nothing more is handed on, what arrives is discarded until the close.
    Closing,
}

/// The state of one connection.
#[derive(Debug)]
pub struct Conn {
    phase: Phase,
    /// Bytes of a head not complete yet, held back from uWS.
    pub partial: Vec<u8>,
    /// When the held-back head started, or when the connection started closing (ms); 0 if neither.
    pub since_ms: u64,
    /// While closing: when bytes last arrived (ms), and how many were discarded.
    pub last_ms: u64,
    pub discarded: u64,
}

impl Default for Conn {
    fn default() -> Self {
        Conn { phase: Phase::Head, partial: Vec::new(), since_ms: 0, last_ms: 0, discarded: 0 }
    }
}

const MAX_EXTENSION: u32 = 1024;

fn hex(b: u8) -> Option<u64> {
    (b as char).to_digit(16).map(u64::from)
}

fn emit(steps: &mut Vec<Step>, from: usize, to: usize) {
    if to <= from {
        return;
    }
    if let Some(Step::Forward(_, end)) = steps.last_mut() {
        if *end == from {
            *end = to;
            return;
        }
    }
    steps.push(Step::Forward(from, to));
}

impl Conn {
    /// True while a head is held back (the head deadline runs).
    pub fn waiting_head(&self) -> bool {
        self.phase == Phase::Head && !self.partial.is_empty()
    }

    pub fn closing(&self) -> bool {
        self.phase == Phase::Closing
    }

    /// Refused (the head deadline passing included): the connection answers and closes.
    pub fn time_out(&mut self, now_ms: u64) {
        self.phase = Phase::Closing;
        self.partial = Vec::new();
        self.since_ms = now_ms;
        self.last_ms = now_ms;
    }

    fn refuse(&mut self, steps: &mut Vec<Step>, r: Reject, now_ms: u64) {
        steps.push(Step::Refuse(r));
        self.time_out(now_ms);
    }

    /// Plans one read. `buf` starts with the held-back head, if any (the caller prepends it and
    /// passes its length as `held`); the caller then clears `partial`, and this refills it.
    pub fn feed(&mut self, buf: &mut [u8], held: usize, lim: &Limits, now_ms: u64, steps: &mut Vec<Step>) {
        let len = buf.len();
        let mut pos = 0;
        let mut from = 0;
        while pos < len {
            match self.phase {
                Phase::Closing => {
                    emit(steps, from, pos);
                    self.discarded += (len - pos) as u64;
                    self.last_ms = now_ms;
                    return;
                }
                Phase::Length(n) => {
                    let take = n.min((len - pos) as u64);
                    pos += take as usize;
                    self.phase = if take == n { Phase::Head } else { Phase::Length(n - take) };
                }
                Phase::Chunked(c) => match chunk(c, buf, &mut pos, &mut from, steps, lim) {
                    Ok(Some(next)) => self.phase = Phase::Chunked(next),
                    Ok(None) => self.phase = Phase::Head,
                    Err(()) => {
                        emit(steps, from, pos);
                        steps.push(Step::Close);
                        self.time_out(now_ms);
                        return;
                    }
                },
                Phase::Head => {
                    // RFC 9112 2.2: empty lines before a request line are ignored.
                    if buf[pos] == b'\r' && buf.get(pos + 1) == Some(&b'\n') {
                        emit(steps, from, pos);
                        pos += 2;
                        from = pos;
                        continue;
                    }
                    let scan = if pos == 0 { held.saturating_sub(3) } else { pos };
                    let Some(end) = head::find_end(buf, pos, scan) else {
                        emit(steps, from, pos);
                        if len - pos > lim.max_head {
                            self.refuse(steps, Reject { status: 431, reason: "head_too_large" }, now_ms);
                            return;
                        }
                        self.partial.extend_from_slice(&buf[pos..]);
                        if self.since_ms == 0 {
                            self.since_ms = now_ms.max(1);
                        }
                        return;
                    };
                    if end - pos > lim.max_head {
                        emit(steps, from, pos);
                        self.refuse(steps, Reject { status: 431, reason: "head_too_large" }, now_ms);
                        return;
                    }
                    match head::check(&mut buf[pos..end], lim) {
                        Err(r) => {
                            emit(steps, from, pos);
                            self.refuse(steps, r, now_ms);
                            self.discarded += (len - end) as u64;
                            return;
                        }
                        Ok(ok) => {
                            if let Some(h) = ok.replacement {
                                emit(steps, from, pos);
                                steps.push(Step::Insert(h));
                                from = end;
                            }
                            self.since_ms = 0;
                            self.phase = match ok.framing {
                                Framing::Length(0) => Phase::Head,
                                Framing::Length(n) => Phase::Length(n),
                                Framing::Chunked => Phase::Chunked(Chunk::Size { digits: 0, value: 0 }),
                            };
                            pos = end;
                        }
                    }
                }
            }
        }
        emit(steps, from, pos);
    }
}

fn ext_byte(b: u8) -> bool {
    b == b'\t' || (0x20..0x7f).contains(&b) || b >= 0x80
}

/// Advances a chunked body over `buf[pos..]`: the next state, None at its end, Err when broken.
/// Skipped bytes (extensions, trailers) move `from` past them so they are never handed on.
fn chunk(mut c: Chunk, buf: &[u8], pos: &mut usize, from: &mut usize, steps: &mut Vec<Step>, lim: &Limits) -> Result<Option<Chunk>, ()> {
    while *pos < buf.len() {
        let b = buf[*pos];
        c = match c {
            Chunk::Size { digits, value } => {
                if let Some(d) = hex(b) {
                    let value = value * 16 + d;
                    // Also keeps every size within what uWS's parser holds without overflow.
                    if digits >= 16 || value > lim.max_body {
                        return Err(());
                    }
                    Chunk::Size { digits: digits + 1, value }
                } else if digits == 0 {
                    return Err(());
                } else if b == b'\r' {
                    Chunk::SizeLf { value }
                } else if b == b';' || b == b' ' || b == b'\t' {
                    emit(steps, *from, *pos);
                    *from = *pos + 1;
                    Chunk::Ext { value, len: 1 }
                } else {
                    return Err(());
                }
            }
            Chunk::Ext { value, len } => {
                if b == b'\r' {
                    Chunk::SizeLf { value }
                } else if ext_byte(b) && len < MAX_EXTENSION {
                    *from = *pos + 1;
                    Chunk::Ext { value, len: len + 1 }
                } else {
                    return Err(());
                }
            }
            Chunk::SizeLf { value } => match (b, value) {
                (b'\n', 0) => Chunk::LineStart { trailer: 0 },
                (b'\n', n) => Chunk::Data(n),
                _ => return Err(()),
            },
            Chunk::Data(n) => {
                let take = n.min((buf.len() - *pos) as u64);
                *pos += take as usize;
                c = if take == n { Chunk::DataCr } else { Chunk::Data(n - take) };
                continue;
            }
            Chunk::DataCr if b == b'\r' => Chunk::DataLf,
            Chunk::DataLf if b == b'\n' => Chunk::Size { digits: 0, value: 0 },
            Chunk::DataCr | Chunk::DataLf => return Err(()),
            Chunk::LineStart { trailer } => {
                if b == b'\r' {
                    Chunk::EndLf
                } else {
                    emit(steps, *from, *pos);
                    *from = *pos;
                    c = Chunk::Trailer { trailer };
                    continue;
                }
            }
            Chunk::Trailer { trailer } => {
                if (trailer as usize) >= lim.max_head {
                    return Err(());
                }
                *from = *pos + 1;
                match b {
                    b'\r' => Chunk::TrailerLf { trailer: trailer + 1 },
                    _ if ext_byte(b) => Chunk::Trailer { trailer: trailer + 1 },
                    _ => return Err(()),
                }
            }
            Chunk::TrailerLf { trailer } => {
                if b != b'\n' {
                    return Err(());
                }
                *from = *pos + 1;
                Chunk::LineStart { trailer: trailer + 1 }
            }
            Chunk::EndLf => {
                if b != b'\n' {
                    return Err(());
                }
                *pos += 1;
                return Ok(None);
            }
        };
        *pos += 1;
    }
    Ok(Some(c))
}
