//! What the Windows leaves of every concern share: an owned kernel handle
//! and wide strings.

use std::ffi::OsStr;
use std::io;
use std::os::windows::ffi::OsStrExt;

use windows_sys::Win32::Foundation::{
    CloseHandle, DUPLICATE_SAME_ACCESS, DuplicateHandle, HANDLE, INVALID_HANDLE_VALUE,
};
use windows_sys::Win32::System::Threading::GetCurrentProcess;

/// An owned kernel handle, closed on drop.
#[derive(Debug)]
pub(in crate::platform) struct Handle(pub(in crate::platform) HANDLE);

// SAFETY: a kernel handle is a process-wide value, usable from any thread.
unsafe impl Send for Handle {}
// SAFETY: as above; `Handle` has no interior mutability.
unsafe impl Sync for Handle {}

impl Handle {
    /// Takes ownership of `h`, or the last OS error when it is invalid.
    pub(in crate::platform) fn new(h: HANDLE) -> io::Result<Handle> {
        if h.is_null() || h == INVALID_HANDLE_VALUE {
            Err(io::Error::last_os_error())
        } else {
            Ok(Handle(h))
        }
    }

    /// A second handle to the same object, with the same access.
    pub(in crate::platform) fn try_clone(&self) -> io::Result<Handle> {
        let mut out: HANDLE = std::ptr::null_mut();
        // SAFETY: both process handles are our own pseudo handle; `out`
        // receives a new handle we then own.
        let ok = unsafe {
            DuplicateHandle(
                GetCurrentProcess(),
                self.0,
                GetCurrentProcess(),
                &mut out,
                0,
                0,
                DUPLICATE_SAME_ACCESS,
            )
        };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Handle::new(out)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: we own the handle and close it once.
        unsafe { CloseHandle(self.0) };
    }
}

/// `s` as a NUL-terminated UTF-16 string, refusing an embedded NUL.
pub(in crate::platform) fn wide(s: &OsStr) -> io::Result<Vec<u16>> {
    let mut w: Vec<u16> = s.encode_wide().collect();
    if w.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    w.push(0);
    Ok(w)
}
