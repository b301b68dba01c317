//! The uSockets C API of the loaded uWebSockets.js module, resolved from that module itself
//! (dlopen with RTLD_NOLOAD: the very copy Node loaded, never a second one).

use std::ffi::{c_char, c_int, c_uint, c_void, CString};

#[repr(C)]
pub struct Socket {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Context {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Loop {
    _opaque: [u8; 0],
}
#[repr(C)]
pub struct Timer {
    _opaque: [u8; 0],
}

pub type OnData = unsafe extern "C" fn(*mut Socket, *mut c_char, c_int) -> *mut Socket;
pub type OnClose = unsafe extern "C" fn(*mut Socket, c_int, *mut c_void) -> *mut Socket;
pub type TimerCb = unsafe extern "C" fn(*mut Timer);

/// The functions used, all with ssl = 0 (this service speaks plain HTTP behind its proxy).
pub struct Api {
    pub socket_context: unsafe extern "C" fn(c_int, *mut Socket) -> *mut Context,
    pub context_on_data: unsafe extern "C" fn(c_int, *mut Context, OnData),
    pub context_on_close: unsafe extern "C" fn(c_int, *mut Context, OnClose),
    pub context_loop: unsafe extern "C" fn(c_int, *mut Context) -> *mut Loop,
    pub socket_close: unsafe extern "C" fn(c_int, *mut Socket, c_int, *mut c_void) -> *mut Socket,
    pub socket_is_closed: unsafe extern "C" fn(c_int, *mut Socket) -> c_int,
    pub socket_local_port: unsafe extern "C" fn(c_int, *mut Socket) -> c_int,
    pub create_timer: unsafe extern "C" fn(*mut Loop, c_int, c_uint) -> *mut Timer,
    pub timer_set: unsafe extern "C" fn(*mut Timer, TimerCb, c_int, c_int),
}

unsafe fn sym<T: Copy>(handle: *mut c_void, name: &str) -> Result<T, String> {
    let c = CString::new(name).map_err(|e| e.to_string())?;
    let p = libc::dlsym(handle, c.as_ptr());
    if p.is_null() {
        return Err(format!("{name} is not exported by the uWebSockets.js module"));
    }
    // SAFETY: T is a function pointer type of the same size as a data pointer.
    Ok(std::mem::transmute_copy::<*mut c_void, T>(&p))
}

impl Api {
    /// # Safety
    /// `module` must be the path Node loaded the uWebSockets.js binary from.
    pub unsafe fn resolve(module: &str) -> Result<Api, String> {
        let path = CString::new(module).map_err(|e| e.to_string())?;
        let handle = libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD);
        if handle.is_null() {
            return Err(format!("{module} is not loaded in this process"));
        }
        Ok(Api {
            socket_context: sym(handle, "us_socket_context")?,
            context_on_data: sym(handle, "us_socket_context_on_data")?,
            context_on_close: sym(handle, "us_socket_context_on_close")?,
            context_loop: sym(handle, "us_socket_context_loop")?,
            socket_close: sym(handle, "us_socket_close")?,
            socket_is_closed: sym(handle, "us_socket_is_closed")?,
            socket_local_port: sym(handle, "us_socket_local_port")?,
            create_timer: sym(handle, "us_create_timer")?,
            timer_set: sym(handle, "us_timer_set")?,
        })
    }
}

/// Words of `struct us_socket_context_t` searched for a handler slot: its handlers lie within the
/// first twenty, and the context is always followed by uWS's larger HttpContextData.
const CONTEXT_WORDS: usize = 32;

unsafe extern "C" fn sentinel_data(s: *mut Socket, _d: *mut c_char, _l: c_int) -> *mut Socket {
    s
}
unsafe extern "C" fn sentinel_close(s: *mut Socket, _c: c_int, _r: *mut c_void) -> *mut Socket {
    s
}

fn snapshot(ctx: *mut Context) -> [usize; CONTEXT_WORDS] {
    let mut words = [0usize; CONTEXT_WORDS];
    // SAFETY: the context and the extension after it are longer than CONTEXT_WORDS words.
    unsafe { std::ptr::copy_nonoverlapping(ctx as *const usize, words.as_mut_ptr(), CONTEXT_WORDS) };
    words
}

/// The slot a setter writes: the one word that changes to the sentinel. uSockets offers setters
/// only, so the current handler is read from the struct this way, without assuming its layout.
fn slot_of(before: &[usize; CONTEXT_WORDS], after: &[usize; CONTEXT_WORDS], sentinel: usize) -> Result<usize, String> {
    let changed: Vec<usize> = (0..CONTEXT_WORDS).filter(|&i| before[i] != after[i]).collect();
    match changed.as_slice() {
        [i] if after[*i] == sentinel && before[*i] != 0 => Ok(*i),
        _ => Err("the socket context does not have the expected handler slots".into()),
    }
}

impl Api {
    /// Swaps the context's data and close handlers for ours; returns the ones it had.
    ///
    /// # Safety
    /// `ctx` must be a live non-TLS uSockets context, and no event may run meanwhile.
    pub unsafe fn hook(&self, ctx: *mut Context, data: OnData, close: OnClose) -> Result<(OnData, OnClose), String> {
        let before = snapshot(ctx);
        (self.context_on_data)(0, ctx, sentinel_data);
        let mid = snapshot(ctx);
        let data_slot = slot_of(&before, &mid, sentinel_data as *const () as usize);
        (self.context_on_close)(0, ctx, sentinel_close);
        let after = snapshot(ctx);
        let close_slot = slot_of(&mid, &after, sentinel_close as *const () as usize);
        let (data_slot, close_slot) = match (data_slot, close_slot) {
            (Ok(d), Ok(c)) => (d, c),
            (d, c) => {
                // Put back what was there before failing.
                let words = ctx as *mut usize;
                for i in 0..CONTEXT_WORDS {
                    if mid[i] != before[i] || after[i] != mid[i] {
                        *words.add(i) = before[i];
                    }
                }
                return Err(d.err().or(c.err()).unwrap_or_default());
            }
        };
        let old_data: OnData = std::mem::transmute::<usize, OnData>(before[data_slot]);
        let old_close: OnClose = std::mem::transmute::<usize, OnClose>(before[close_slot]);
        (self.context_on_data)(0, ctx, data);
        (self.context_on_close)(0, ctx, close);
        Ok((old_data, old_close))
    }
}
