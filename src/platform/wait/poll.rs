//! Unix waiting: one `poll(2)` over a job's output pipes, its exit and
//! the bell, shared by Linux (a pidfd for the exit), macOS (a kqueue) and
//! other Unixes (a look for the exit every 20 ms).

use std::fs::File;
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
use crate::platform::procs::running::await_zombie;
use crate::platform::procs::running::has_exited;
use crate::platform::spawn::Kept;
use crate::platform::{JobProcess, Tree};

/// Wakes a runner waiting in [`JobIo::next`] when a control message is
/// sent: a non-blocking pipe whose read end the runner polls.
#[derive(Clone, Debug)]
pub struct Bell {
    ends: std::sync::Arc<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)>,
}

impl Bell {
    /// A new bell.
    pub fn new() -> io::Result<Bell> {
        Ok(Bell {
            ends: std::sync::Arc::new(bell_pipe()?),
        })
    }

    /// Rings: never blocks (a full pipe is rung enough).
    pub fn ring(&self) {
        use std::os::fd::AsRawFd;
        // SAFETY: writes one byte from a valid buffer to our pipe.
        let _ = unsafe { libc::write(self.ends.1.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }

    fn drain(&self) {
        use std::os::fd::AsRawFd;
        let mut buf = [0u8; 256];
        // SAFETY: reads into a valid buffer from our non-blocking pipe.
        while unsafe { libc::read(self.ends.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0
        {
        }
    }
}

/// A close-on-exec, non-blocking pipe for the bell.
#[cfg(not(target_os = "macos"))]
fn bell_pipe() -> io::Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd)> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors on success.
    let rc = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    Ok(unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        )
    })
}

#[cfg(target_os = "macos")]
use super::macos::pipe_cloexec_nonblock as bell_pipe;

/// A running job's output pipes and exit, and the bell, waited on together
/// by one `poll(2)` in the runner's own thread: no thread per job, and no
/// hand-over between threads on the way from an exit to the next spawn.
/// The exit is seen through a pidfd on Linux and a kqueue watching for
/// `NOTE_EXIT` on macOS; elsewhere (or on a Linux kernel without pidfds) by
/// a look every 20 ms.
///
/// Beside a pidfd made by the spawn, the pipes' write ends are held here
/// until the exit is seen: an exiting process closes its descriptors a
/// moment before its exit is reported, so a job's end would otherwise wake
/// the runner twice (the pipes' hang-up, then the pidfd). Held, the pidfd
/// wakes it once, and the hang-ups are there at the next look.
pub struct JobIo {
    out: Option<File>,
    err: Option<File>,
    exit_fd: Option<std::os::fd::OwnedFd>,
    writers: Vec<std::os::fd::OwnedFd>,
    leader: i32,
    /// Under a keeper: the main process's end comes on its status pipe.
    kept: Option<Arc<Kept>>,
    exited: bool,
    /// The tree's flag, set here when the exit is seen.
    leader_gone: Arc<AtomicBool>,
    bell: Bell,
}

impl JobIo {
    /// Takes over `child`'s output pipes.
    pub fn new(child: &mut JobProcess, tree: &Tree, bell: &Bell) -> JobIo {
        JobIo {
            out: child.stdout.take(),
            err: child.stderr.take(),
            exit_fd: match &tree.kept {
                Some(_) => None,
                None => child.exit_fd.take().or_else(|| exit_fd(tree.leader)),
            },
            writers: std::mem::take(&mut child.writers),
            leader: tree.leader,
            kept: tree.kept.clone(),
            exited: false,
            leader_gone: Arc::clone(&tree.exited),
            bell: bell.clone(),
        }
    }

    /// True while an output pipe is open.
    pub fn streams_open(&self) -> bool {
        self.out.is_some() || self.err.is_some()
    }

    /// Waits until output arrives, the main process exits, the bell rings or
    /// `until` passes.
    pub fn next(&mut self, until: std::time::Instant, buf: &mut [u8]) -> super::IoEvent {
        use super::{IoEvent, Stream};
        use std::io::Read;
        use std::os::fd::AsRawFd;
        loop {
            if let Some(kept) = &self.kept {
                if !self.exited && kept.exited() {
                    return self.exit_seen();
                }
            } else {
                let look = self.exit_fd.is_none() || EXIT_BACKSTOP.is_some();
                if !self.exited && look && has_exited(self.leader) {
                    return self.exit_seen();
                }
            }
            let exit_watch = match &self.kept {
                Some(kept) => Some(kept.report.as_raw_fd()),
                None => self.exit_fd.as_ref().map(|p| p.as_raw_fd()),
            };
            let none = -1;
            let fd = |o: Option<i32>| libc::pollfd {
                fd: o.unwrap_or(none),
                events: libc::POLLIN,
                revents: 0,
            };
            let mut fds = [
                fd(self.out.as_ref().map(|p| p.as_raw_fd())),
                fd(self.err.as_ref().map(|p| p.as_raw_fd())),
                fd(exit_watch.filter(|_| !self.exited)),
                fd(Some(self.bell.ends.0.as_raw_fd())),
            ];
            let now = std::time::Instant::now();
            if now >= until {
                return IoEvent::Timeout;
            }
            let mut wait = until - now;
            if !self.exited && exit_watch.is_none() {
                wait = wait.min(std::time::Duration::from_millis(20));
            } else if let Some(every) = EXIT_BACKSTOP.filter(|_| !self.exited) {
                wait = wait.min(every);
            }
            // Round up, so a wake-up is never early and spinning.
            let ms = wait.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            // SAFETY: fds is a valid array of pollfd; negative fds are ignored.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
            if rc <= 0 {
                // A timeout or EINTR: look at the clock again. Any other
                // failure would repeat: wait the slice out instead.
                if rc < 0 && io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                    std::thread::sleep(wait.min(std::time::Duration::from_millis(20)));
                }
                continue;
            }
            let ready = |i: usize| fds[i].revents != 0;
            if ready(0) {
                match self.out.as_mut().map(|p| p.read(buf)) {
                    Some(Ok(n)) if n > 0 => return IoEvent::Output(Stream::Out, n),
                    _ => self.out = None,
                }
            }
            if ready(1) {
                match self.err.as_mut().map(|p| p.read(buf)) {
                    Some(Ok(n)) if n > 0 => return IoEvent::Output(Stream::Err, n),
                    _ => self.err = None,
                }
            }
            if self.exited && (ready(0) || ready(1)) && !self.streams_open() {
                return IoEvent::Closed;
            }
            if ready(2) {
                // Under a keeper, the report is read at the loop's top.
                if self.kept.is_none() {
                    #[cfg(target_os = "linux")]
                    await_zombie(self.leader);
                    return self.exit_seen();
                }
                continue;
            }
            if ready(3) {
                self.bell.drain();
                return IoEvent::Bell;
            }
        }
    }

    /// The exit seen: noted here and in the job's tree.
    fn exit_seen(&mut self) -> super::IoEvent {
        self.exited = true;
        self.writers.clear();
        self.leader_gone.store(true, Ordering::Relaxed);
        super::IoEvent::Exited
    }
}

/// How often [`JobIo::next`] also looks for the exit itself while a
/// descriptor watches for it: never on Linux, where the pidfd is exact; each
/// second on macOS, so that a kernel whose `poll` did not report the kqueue
/// would delay an exit by at most that, never hang the job.
#[cfg(target_os = "macos")]
const EXIT_BACKSTOP: Option<std::time::Duration> = Some(std::time::Duration::from_secs(1));
#[cfg(not(target_os = "macos"))]
const EXIT_BACKSTOP: Option<std::time::Duration> = None;

/// A descriptor that becomes readable when our child `pid` exits, or None
/// (then [`JobIo`] looks every 20 ms): a pidfd on Linux 5.3+; on macOS a
/// kqueue with `NOTE_EXIT`, given up if the child had already exited when it
/// was set up (an exit before the watch may never be reported).
#[cfg(target_os = "macos")]
pub(in crate::platform) fn exit_fd(pid: i32) -> Option<std::os::fd::OwnedFd> {
    let watch = super::macos::exit_watch(pid)?;
    (!has_exited(pid)).then_some(watch)
}

/// A pidfd for our child `pid` (Linux 5.3+), or None.
#[cfg(not(target_os = "macos"))]
pub(in crate::platform) fn exit_fd(pid: i32) -> Option<std::os::fd::OwnedFd> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::FromRawFd;
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        if fd >= 0 {
            // SAFETY: the descriptor is new and ours alone.
            return Some(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) });
        }
    }
    let _ = pid;
    None
}
