//! Windows: the DNS host label, a thread's priority, and an allocator
//! left as it is.

use windows_sys::Win32::System::SystemInformation::{ComputerNameDnsHostname, GetComputerNameExW};

/// Lowers the calling thread's scheduling priority: bookkeeping that may
/// wait must not take a core from the job the listener just started.
pub(super) fn lower_thread_priority() {
    use windows_sys::Win32::System::Threading::{
        GetCurrentThread, SetThreadPriority, THREAD_PRIORITY_BELOW_NORMAL,
    };
    // SAFETY: the pseudo-handle of the calling thread is always valid.
    unsafe { SetThreadPriority(GetCurrentThread(), THREAD_PRIORITY_BELOW_NORMAL) };
}

pub(super) fn hostname() -> Option<String> {
    let mut buf = [0u16; 256];
    let mut len = buf.len() as u32;
    // SAFETY: the buffer is valid for `len` characters.
    let ok = unsafe { GetComputerNameExW(ComputerNameDnsHostname, buf.as_mut_ptr(), &mut len) };
    if ok != 0 && len > 0 {
        return String::from_utf16(&buf[..len as usize]).ok();
    }
    std::env::var("COMPUTERNAME").ok().filter(|n| !n.is_empty())
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// See [`super::tune_allocator`]: nothing to tune.
pub(super) fn tune_allocator() {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_machine_has_a_name() {
        assert!(hostname().is_some_and(|h| !h.is_empty()));
    }
}
