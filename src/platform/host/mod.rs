//! This machine and this process: its host name, a thread's priority, the
//! allocator's tuning. `unix.rs` or `windows.rs` implements each function
//! under the same name.

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

/// This machine's host name, if it has one (`gethostname` on Unix; the DNS
/// host label, or `COMPUTERNAME`, on Windows).
pub fn hostname() -> Option<String> {
    imp::hostname()
}

/// Lowers the calling thread's scheduling priority, best effort:
/// bookkeeping that may wait must not take a core from the job just
/// started. Nice 10 for the thread on Linux (a no-op on other Unixes);
/// below-normal priority on Windows.
pub fn lower_thread_priority() {
    imp::lower_thread_priority()
}

/// Tunes the memory allocator for a long-running listener, best effort.
/// With glibc: no "fast bins". Their chunks are merged back by a sweep
/// before any request of a kilobyte or more, which a job's end and start
/// make several of; without them, small blocks are reused from the
/// per-thread cache and the ordinary bins alone. Elsewhere a no-op.
pub fn tune_allocator() {
    imp::tune_allocator()
}
