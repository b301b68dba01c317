//! Reading files ahead into the page cache: posix_fadvise(POSIX_FADV_WILLNEED), one step of
//! PREFETCH_STEP bytes at a time. Linux reads ahead no more than its readahead window per call
//! (8 MiB of a 4.6 GiB file for one call over the whole of it), so a range is asked for in steps.
//! The kernel reads into the page cache itself: nothing is copied into this process, which a
//! read-through (about 1.3 s of system time per GiB here) would do.

use std::ffi::CString;

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// Bytes asked for per posix_fadvise call: the readahead window of a large device, or more.
const PREFETCH_STEP: i64 = 8 << 20;

pub struct PrefetchFileTask {
    path: String,
    offset: i64,
    length: i64,
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

impl Task for PrefetchFileTask {
    type Output = i32;
    type JsValue = i32;
    fn compute(&mut self) -> Result<i32> {
        if self.offset < 0 || self.length < 0 {
            return Ok(libc::EINVAL);
        }
        let Ok(c) = CString::new(self.path.as_bytes()) else {
            return Ok(libc::EINVAL);
        };
        // SAFETY: `c` is a valid NUL-terminated string; the descriptor is closed on every path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Ok(last_errno());
        }
        let end = self.offset.saturating_add(self.length);
        let mut at = self.offset;
        let mut errno = 0;
        while at < end {
            let step = PREFETCH_STEP.min(end - at);
            // SAFETY: `fd` is an open descriptor owned here; posix_fadvise returns its error number.
            errno = unsafe { libc::posix_fadvise(fd, at as libc::off_t, step as libc::off_t, libc::POSIX_FADV_WILLNEED) };
            if errno != 0 {
                break;
            }
            at += step;
        }
        // SAFETY: as above; closed once.
        unsafe { libc::close(fd) };
        Ok(errno)
    }
    fn resolve(&mut self, _env: Env, errno: i32) -> Result<i32> {
        Ok(errno)
    }
}

/// Asks the kernel to read `length` bytes of `path` from `offset` into the page cache, on the
/// thread pool. Resolves, once every step was asked for (the reads themselves may still run), to
/// 0 or the error number of the call that failed (ENOENT: the file is gone), which the caller
/// turns into an error of its own with that code.
#[napi]
pub fn prefetch_file(path: String, offset: i64, length: i64) -> AsyncTask<PrefetchFileTask> {
    AsyncTask::new(PrefetchFileTask { path, offset, length })
}
