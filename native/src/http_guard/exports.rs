//! The N-API surface of the guard: installing it on a listen socket, and its counters.

use std::ffi::c_void;
use std::time::Instant;

use napi::bindgen_prelude::*;
use napi_derive::napi;
use rustc_hash::FxHashMap;

use super::head::Limits;
use super::usockets::{Api, Socket};
use super::{guarded_close, guarded_data, sweep, Guard, Hooked, Settings, Stats, GUARD, SWEEP_MS};

type V8Method = unsafe extern "C" fn(*const c_void) -> usize;

/// The pointer inside a V8 External made by uWS with the V8 API. napi_get_value_external cannot
/// read it: Node wraps the externals it makes itself and unwraps whatever it is given. The
/// public V8 API exported by the node binary can (a napi_value is a `Local<Value>`, whose address
/// is what V8's methods take as `this`).
unsafe fn external_value(value: *const c_void) -> Option<*mut c_void> {
    let is_external = libc::dlsym(libc::RTLD_DEFAULT, c"_ZNK2v85Value10IsExternalEv".as_ptr());
    let get = libc::dlsym(libc::RTLD_DEFAULT, c"_ZNK2v88External5ValueEv".as_ptr());
    if is_external.is_null() || get.is_null() || value.is_null() {
        return None;
    }
    let is_external: V8Method = std::mem::transmute::<*mut c_void, V8Method>(is_external);
    let get: V8Method = std::mem::transmute::<*mut c_void, V8Method>(get);
    if is_external(value) & 0xff == 0 {
        return None;
    }
    let p = get(value) as *mut c_void;
    (!p.is_null()).then_some(p)
}

#[napi(object)]
pub struct HttpGuardOptions {
    /// Request line, fields and the empty line, bytes; above it 431.
    pub max_head_bytes: u32,
    /// Field lines; above it 431 (uWS 20.30 parses at most 48).
    pub max_header_fields: u32,
    /// A head not complete after this long is answered 408, milliseconds.
    pub head_timeout_ms: u32,
    /// Largest body of any route: a larger Content-Length is answered 413 here.
    pub max_body_bytes: f64,
    /// Path prefix of the synthetic requests (secret, random, one per server of the front).
    pub answer_prefix: String,
}

#[napi(object)]
pub struct HttpGuardStats {
    pub connections: u32,
    /// Bytes of request heads held back until complete.
    pub held_bytes: f64,
    pub refused: f64,
    pub timed_out: f64,
    pub cut: f64,
    pub rewritten: f64,
}

/// Installs the guard on the HTTP context of a uWS listen socket (`app.listen`'s token), which
/// must be bound to `port` (a check that the pointer read is the socket meant).
#[napi]
pub fn http_guard_install(listen_socket: Unknown, port: u32, uws_module: String, options: HttpGuardOptions) -> Result<()> {
    // SAFETY: a napi_value is a V8 handle of this call's scope.
    let raw = unsafe { external_value(listen_socket.raw() as *const c_void) }.ok_or_else(|| Error::from_reason("not a uWS listen socket"))?;
    if options.max_body_bytes < 0.0 || options.max_header_fields == 0 || options.max_head_bytes < 64 || !options.answer_prefix.starts_with('/') {
        return Err(Error::from_reason("invalid guard options"));
    }
    // SAFETY: the path names the module Node loaded; resolve only looks symbols up.
    let api = unsafe { Api::resolve(&uws_module) }.map_err(Error::from_reason)?;
    let listen = raw as *mut Socket;
    // SAFETY: a listen socket starts with its socket struct (struct us_listen_socket_t).
    let (bound, ctx) = unsafe { ((api.socket_local_port)(0, listen), (api.socket_context)(0, listen)) };
    if bound < 0 || bound as u32 != port {
        return Err(Error::from_reason("the listen socket is not bound to the expected port"));
    }
    GUARD.with(|cell| {
        let mut slot = cell.borrow_mut();
        let g = slot.get_or_insert_with(|| Guard {
            api,
            hooked: Vec::new(),
            conns: FxHashMap::default(),
            held: 0,
            timer: false,
            epoch: Instant::now(),
            stats: Stats::default(),
            steps: Vec::new(),
        });
        let settings = Settings {
            lim: Limits { max_head: options.max_head_bytes as usize, max_fields: options.max_header_fields as usize, max_body: options.max_body_bytes as u64 },
            head_timeout_ms: u64::from(options.head_timeout_ms.max(1)),
            prefix: format!("GET {}", options.answer_prefix).into_bytes(),
        };
        // SAFETY: ctx is the live context of the listen socket; nothing else runs meanwhile.
        let (data, close) = unsafe { g.api.hook(ctx, guarded_data, guarded_close) }.map_err(Error::from_reason)?;
        if std::ptr::eq(data as *const (), guarded_data as *const ()) {
            // The app listens on a second port: same context, same handlers; new settings.
            if let Some(h) = g.hooked.iter_mut().find(|h| h.ctx == ctx as usize) {
                h.settings = settings;
            }
        } else {
            // A context freed and allocated again at the same address is a new one.
            g.hooked.retain(|h| h.ctx != ctx as usize);
            g.hooked.push(Hooked { ctx: ctx as usize, data, close, settings });
        }
        if !g.timer {
            // SAFETY: the loop of a live context; fallthrough = 1 keeps the timer from holding
            // the process open.
            unsafe {
                let t = (g.api.create_timer)((g.api.context_loop)(0, ctx), 1, 0);
                (g.api.timer_set)(t, sweep, SWEEP_MS, SWEEP_MS);
            }
            g.timer = true;
        }
        Ok(())
    })
}

#[napi]
pub fn http_guard_stats() -> Option<HttpGuardStats> {
    GUARD.with(|cell| {
        cell.borrow().as_ref().map(|g| HttpGuardStats {
            connections: g.conns.len() as u32,
            held_bytes: g.held as f64,
            refused: g.stats.refused as f64,
            timed_out: g.stats.timed_out as f64,
            cut: g.stats.cut as f64,
            rewritten: g.stats.rewritten as f64,
        })
    })
}

