//! Unix: `gethostname`, a thread's nice value (Linux), glibc's `mallopt`.

/// Lowers the calling thread's scheduling priority (nice 10 on Linux, where
/// nice is per thread): bookkeeping that may wait must not take a core from
/// the job the listener just started.
pub(super) fn lower_thread_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid has no arguments; setpriority on our own thread id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// See [`super::tune_allocator`].
pub(super) fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes a malloc tunable; M_MXFAST 0 is valid.
    unsafe {
        libc::mallopt(libc::M_MXFAST, 0);
    }
}

/// This machine's host name, if it has one.
pub(super) fn hostname() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its whole length.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8(buf[..end].to_vec()).ok()
}
