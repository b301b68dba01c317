//! syncfs(2) for the embedded index's journal: the engine's files are flushed by file system,
//! since the engine does not name them. Node has no syncfs; spawning `sync -f` instead forks the
//! whole service, which blocks its event loop for tens of milliseconds at a gigabyte resident.

use std::ffi::CString;

use napi::bindgen_prelude::*;
use napi_derive::napi;

pub struct SyncFileSystemTask {
    path: String,
}

fn os_error(what: &str, path: &str) -> Error {
    let e = std::io::Error::last_os_error();
    Error::new(Status::GenericFailure, format!("{what} {path}: {e}"))
}

impl Task for SyncFileSystemTask {
    type Output = ();
    type JsValue = ();
    fn compute(&mut self) -> Result<()> {
        let c = CString::new(self.path.as_bytes()).map_err(|_| Error::new(Status::InvalidArg, "a path with a NUL byte".to_string()))?;
        // SAFETY: `c` is a valid NUL-terminated string; the descriptor is closed on every path.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("open", &self.path));
        }
        // SAFETY: `fd` is an open descriptor owned here.
        let synced = unsafe { libc::syncfs(fd) };
        let failure = if synced == 0 { None } else { Some(os_error("syncfs", &self.path)) };
        // SAFETY: as above; closed once.
        unsafe { libc::close(fd) };
        failure.map_or(Ok(()), Err)
    }
    fn resolve(&mut self, _env: Env, _output: ()) -> Result<()> {
        Ok(())
    }
}

/// Flushes the file system holding `path` (syncfs(2)) on the thread pool.
#[napi]
pub fn sync_file_system(path: String) -> AsyncTask<SyncFileSystemTask> {
    AsyncTask::new(SyncFileSystemTask { path })
}
