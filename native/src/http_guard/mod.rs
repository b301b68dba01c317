//! A request-framing guard in front of uWebSockets.js's HTTP parser.
//!
//! uWS 20.30 answers nothing to many requests a client can send: it waits for ever on a field
//! name with `_` or `.`, on obsolete line folding or on a control character, and closes without
//! a word on an unknown method or on Content-Length together with Transfer-Encoding. It cannot be
//! rebuilt here, so the guard sits between uSockets and uWS instead: it swaps the data and close
//! handlers of the HTTP socket context for its own, follows the request framing of every
//! connection (heads, Content-Length and chunked bodies, pipelining), and checks each complete
//! head before uWS sees it. A head to refuse is replaced by a synthetic request to a secret path,
//! which the HTTP front answers with the refusal's status and error body and then closes; uWS
//! keeps the answers in order that way. Heads held back too long are answered 408 by a timer.
//!
//! Everything runs on the thread of the uWS loop (Node's main thread): the state is thread-local
//! and never borrowed across a call into uWS, which may call back into JavaScript and into us.

// The N-API entry points are not compiled into the test binary, which leaves their helpers unused there.
#![cfg_attr(test, allow(dead_code))]

mod exports;
mod head;
mod stream;
mod usockets;

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;
use std::time::Instant;

use rustc_hash::FxHashMap;

use head::{Limits, Reject};
use stream::{Conn, Step};
use usockets::{Api, OnClose, OnData, Socket, Timer};

/// After a refusal the connection lingers, discarding what arrives, so that a client still
/// sending its body (most HTTP clients read the answer only once the body is out) gets the
/// answer rather than a reset; it closes once the client is silent this long, or after
/// LINGER_MAX_MS, or past LINGER_MAX_BYTES (at least; twice the largest body when more).
const LINGER_IDLE_MS: u64 = 300;
const LINGER_MAX_MS: u64 = 2000;
const LINGER_MAX_BYTES: u64 = 1 << 20;

/// Heads held back by all connections together: many connections each sending a long head
/// slowly would otherwise hold max_head bytes each until their deadline. Past it a new partial
/// head is answered 503.
const HELD_MAX_BYTES: usize = 64 << 20;

/// Period of the sweep (head deadlines, lingering), milliseconds: a tenth of a second of slack
/// on deadlines of at least that, a few microseconds per thousand connections per tick.
const SWEEP_MS: c_int = 100;

/// uSockets keeps this many writable bytes after every read (LIBUS_RECV_BUFFER_PADDING), and
/// uWS's parser writes a fence byte past the end of what it is given: bytes after a piece handed
/// on are saved and put back, and buffers of our own carry the same padding.
const PADDING: usize = 32;

/// What one listener (one uWS app, one socket context) was installed with.
struct Settings {
    lim: Limits,
    head_timeout_ms: u64,
    /// `GET <answer prefix>` of the synthetic requests.
    prefix: Vec<u8>,
}

impl Settings {
    fn linger_bytes(&self) -> u64 {
        LINGER_MAX_BYTES.max(self.lim.max_body.saturating_mul(2))
    }

    /// A held-back head past its deadline, or a refused connection done lingering.
    fn due(&self, c: &Conn, now: u64) -> bool {
        if c.waiting_head() {
            return c.since_ms != 0 && now.saturating_sub(c.since_ms) >= self.head_timeout_ms;
        }
        c.closing() && (now.saturating_sub(c.last_ms) >= LINGER_IDLE_MS || now.saturating_sub(c.since_ms) >= LINGER_MAX_MS)
    }

    /// The request the HTTP front answers with this refusal; the guard closes the connection.
    fn synthetic(&self, r: Reject) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.prefix.len() + 96);
        v.extend_from_slice(&self.prefix);
        v.extend_from_slice(format!("{}/{} HTTP/1.1\r\nhost: guard\r\n\r\n", r.status, r.reason).as_bytes());
        v
    }
}

struct Hooked {
    ctx: usize,
    data: OnData,
    close: OnClose,
    settings: Settings,
}

#[derive(Default, Clone, Copy)]
struct Stats {
    refused: u64,
    timed_out: u64,
    cut: u64,
    rewritten: u64,
}

struct Guard {
    api: Api,
    hooked: Vec<Hooked>,
    conns: FxHashMap<usize, Conn>,
    /// Bytes of heads held back, all connections together (at most HELD_MAX_BYTES).
    held: usize,
    timer: bool,
    epoch: Instant,
    stats: Stats,
    steps: Vec<Step>,
}

thread_local! {
    static GUARD: RefCell<Option<Guard>> = const { RefCell::new(None) };
}

/// What a read turned into, carried out after the guard's state is released.
enum Plan {
    Pass(OnData),
    Run { orig: OnData, work: Option<Vec<u8>>, steps: Vec<Step>, is_closed: IsClosed, close: CloseFn },
    Drop,
}

type IsClosed = unsafe extern "C" fn(c_int, *mut Socket) -> c_int;
type CloseFn = unsafe extern "C" fn(c_int, *mut Socket, c_int, *mut c_void) -> *mut Socket;

impl Guard {
    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64 + 1
    }

    fn hooked_for(&self, s: *mut Socket) -> Option<&Hooked> {
        // SAFETY: s is a live socket handed to us by uSockets.
        let ctx = unsafe { (self.api.socket_context)(0, s) } as usize;
        self.hooked.iter().find(|h| h.ctx == ctx)
    }

    fn plan(&mut self, s: *mut Socket, data: *mut c_char, len: usize) -> Plan {
        let now = self.now_ms();
        // SAFETY: s is a live socket handed to us by uSockets.
        let ctx = unsafe { (self.api.socket_context)(0, s) } as usize;
        let Some(hooked) = self.hooked.iter().find(|h| h.ctx == ctx) else { return Plan::Drop };
        let (orig, set) = (hooked.data, &hooked.settings);
        let mut steps = std::mem::take(&mut self.steps);
        steps.clear();
        let conn = self.conns.entry(s as usize).or_default();
        let held_before = conn.partial.len();
        // SAFETY: uSockets hands a writable read buffer of `len` bytes plus its padding.
        let recv = unsafe { std::slice::from_raw_parts_mut(data as *mut u8, len) };
        let work = if conn.partial.is_empty() {
            conn.feed(recv, 0, &set.lim, now, &mut steps);
            None
        } else {
            let held = std::mem::take(&mut conn.partial);
            let mut work = Vec::with_capacity(held.len() + len + PADDING);
            work.extend_from_slice(&held);
            work.extend_from_slice(recv);
            conn.feed(&mut work, held.len(), &set.lim, now, &mut steps);
            work.resize(work.len() + PADDING, 0);
            Some(work)
        };
        if work.is_none() && steps.len() == 1 && steps[0] == Step::Forward(0, len) {
            self.steps = steps;
            return Plan::Pass(orig);
        }
        let held_after = conn.partial.len();
        self.held = self.held - held_before + held_after;
        if held_after > held_before && self.held > HELD_MAX_BYTES {
            self.held -= held_after;
            conn.time_out(now);
            steps.push(Step::Refuse(Reject { status: 503, reason: "heads_held" }));
        }
        if conn.closing() && conn.discarded > set.linger_bytes() && !steps.contains(&Step::Close) {
            steps.push(Step::Close);
        }
        for step in &mut steps {
            match step {
                Step::Refuse(r) => {
                    self.stats.refused += 1;
                    *step = Step::Insert(set.synthetic(*r));
                }
                Step::Insert(_) => self.stats.rewritten += 1,
                Step::Close => self.stats.cut += 1,
                Step::Forward(..) => {}
            }
        }
        Plan::Run { orig, work, steps, is_closed: self.api.socket_is_closed, close: self.api.socket_close }
    }
}

/// Hands `len` bytes at `p` to uWS, keeping the bytes after them as they were.
unsafe fn hand_on(orig: OnData, s: *mut Socket, p: *mut u8, len: usize) -> *mut Socket {
    let mut saved = [MaybeUninit::<u8>::uninit(); PADDING];
    std::ptr::copy_nonoverlapping(p.add(len), saved.as_mut_ptr() as *mut u8, PADDING);
    let out = orig(s, p as *mut c_char, len as c_int);
    std::ptr::copy_nonoverlapping(saved.as_ptr() as *const u8, p.add(len), PADDING);
    out
}

unsafe fn run(s: *mut Socket, data: *mut c_char, orig: OnData, mut work: Option<Vec<u8>>, steps: &mut [Step], is_closed: IsClosed, close: CloseFn) -> *mut Socket {
    let base = match work.as_mut() {
        Some(w) => w.as_mut_ptr(),
        None => data as *mut u8,
    };
    let mut cur = s;
    for step in steps.iter_mut() {
        cur = match step {
            Step::Forward(a, b) => hand_on(orig, cur, base.add(*a), *b - *a),
            Step::Insert(bytes) => {
                let n = bytes.len();
                bytes.resize(n + PADDING, 0);
                hand_on(orig, cur, bytes.as_mut_ptr(), n)
            }
            Step::Close => return close(0, cur, 0, std::ptr::null_mut()),
            Step::Refuse(_) => cur,
        };
        if is_closed(0, cur) != 0 {
            break;
        }
    }
    cur
}

unsafe extern "C" fn guarded_data(s: *mut Socket, data: *mut c_char, len: c_int) -> *mut Socket {
    let plan = GUARD.with(|cell| match cell.borrow_mut().as_mut() {
        Some(g) => g.plan(s, data, len.max(0) as usize),
        None => Plan::Drop,
    });
    match plan {
        Plan::Pass(orig) => orig(s, data, len),
        Plan::Run { orig, work, mut steps, is_closed, close } => {
            let out = run(s, data, orig, work, &mut steps, is_closed, close);
            steps.clear();
            GUARD.with(|cell| {
                if let Some(g) = cell.borrow_mut().as_mut() {
                    if g.steps.capacity() < steps.capacity() {
                        g.steps = steps;
                    }
                }
            });
            out
        }
        Plan::Drop => s,
    }
}

unsafe extern "C" fn guarded_close(s: *mut Socket, code: c_int, reason: *mut c_void) -> *mut Socket {
    let orig = GUARD.with(|cell| {
        let mut g = cell.borrow_mut();
        let g = g.as_mut()?;
        if let Some(c) = g.conns.remove(&(s as usize)) {
            g.held -= c.partial.len();
        }
        g.hooked_for(s).map(|h| h.close)
    });
    match orig {
        Some(close) => close(s, code, reason),
        None => s,
    }
}

enum Due {
    Answer(OnData, Vec<u8>),
    Close(CloseFn),
}

/// Answers 408 to heads held back past the head deadline, and closes refused connections once
/// they are done lingering.
unsafe extern "C" fn sweep(_t: *mut Timer) {
    let candidates: Vec<usize> = GUARD.with(|cell| {
        let g = cell.borrow();
        let Some(g) = g.as_ref() else { return Vec::new() };
        let now = g.now_ms();
        g.conns
            .iter()
            .filter(|(&s, c)| g.hooked_for(s as *mut Socket).is_some_and(|h| h.settings.due(c, now)))
            .map(|(&s, _)| s)
            .collect()
    });
    for s in candidates {
        let due = GUARD.with(|cell| {
            let mut g = cell.borrow_mut();
            let g = g.as_mut()?;
            let now = g.now_ms();
            let hooked = g.hooked.iter().find(|h| h.ctx == (g.api.socket_context)(0, s as *mut Socket) as usize)?;
            let (orig, req) = (hooked.data, hooked.settings.synthetic(Reject { status: 408, reason: "head_timeout" }));
            let conn = g.conns.get_mut(&s)?;
            if conn.waiting_head() {
                g.held -= conn.partial.len();
                conn.time_out(now);
                g.stats.timed_out += 1;
                Some(Due::Answer(orig, req))
            } else {
                g.conns.remove(&s);
                Some(Due::Close(g.api.socket_close))
            }
        });
        match due {
            Some(Due::Answer(orig, mut req)) => {
                let n = req.len();
                req.resize(n + PADDING, 0);
                hand_on(orig, s as *mut Socket, req.as_mut_ptr(), n);
            }
            Some(Due::Close(close)) => {
                close(0, s as *mut Socket, 0, std::ptr::null_mut());
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests;
