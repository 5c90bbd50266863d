//! macOS's part of the wait: a job's exit seen through `EVFILT_PROC` /
//! `NOTE_EXIT` on a kqueue, whose descriptor `poll(2)` reports readable
//! once the event is pending, so it takes the pidfd's place in the
//! runner's one `poll`; and the bell's pipe, made close-on-exec and
//! non-blocking by hand (macOS has no `pipe2`).

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

/// A kqueue that becomes readable when process `pid` exits, or None when it
/// cannot be set up (the process already gone, or no kqueue), where the
/// caller looks for the exit itself.
pub(super) fn exit_watch(pid: i32) -> Option<OwnedFd> {
    // SAFETY: kqueue takes no arguments and returns a new descriptor.
    let kq = unsafe { libc::kqueue() };
    if kq < 0 {
        return None;
    }
    // SAFETY: the descriptor is new and ours alone.
    let kq = unsafe { OwnedFd::from_raw_fd(kq) };
    set_cloexec(std::os::fd::AsRawFd::as_raw_fd(&kq));
    // SAFETY: kevent is plain data; zero is a valid value for every field.
    let mut change: libc::kevent = unsafe { std::mem::zeroed() };
    change.ident = pid as libc::uintptr_t;
    change.filter = libc::EVFILT_PROC;
    change.flags = libc::EV_ADD | libc::EV_ONESHOT;
    change.fflags = libc::NOTE_EXIT;
    // SAFETY: one valid change in, no event list out, no timeout needed as
    // nothing is waited for.
    let rc = unsafe {
        libc::kevent(
            std::os::fd::AsRawFd::as_raw_fd(&kq),
            &change,
            1,
            std::ptr::null_mut(),
            0,
            std::ptr::null(),
        )
    };
    (rc == 0).then_some(kq)
}

/// Marks `fd` close-on-exec, so a job never inherits it.
fn set_cloexec(fd: i32) {
    // SAFETY: fcntl on a descriptor we own, with integer arguments.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFD);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
        }
    }
}

/// A pipe whose two ends are close-on-exec and non-blocking (macOS has no
/// `pipe2`, so the flags follow in their own calls: the bell is made when
/// the listener starts, before any job is spawned that could inherit the
/// ends in between).
pub(super) fn pipe_cloexec_nonblock() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe fills both descriptors on success.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    let ends = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in fds {
        set_cloexec(fd);
        // SAFETY: fcntl on a descriptor we own, with integer arguments.
        let ok = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
        };
        if !ok {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(ends)
}
