//! A Unix job's process, whichever spawn started it (Linux's clone or
//! `std::process`), and what a keeper reports about the main process it
//! started: shared by the Linux and the other Unix leaves of this folder.

use std::fs::File;
use std::io;
use std::sync::Arc;

use crate::platform::procs::running::{has_exited, live, peek_exit};
use crate::platform::wait::poll::exit_fd;
use crate::platform::{Signal, signal_pids};

/// A job's process, reaped by [`JobProcess::wait`] alone (until then its
/// pid, which is also its group's id, cannot be reused).
#[derive(Debug)]
pub struct JobProcess {
    pid: i32,
    /// Its standard output's read end, until taken.
    pub stdout: Option<File>,
    /// Its standard error's read end, until taken.
    pub stderr: Option<File>,
    /// A pidfd made by the spawn itself (Linux 5.2+), until taken.
    pub exit_fd: Option<std::os::fd::OwnedFd>,
    /// The write ends of its output pipes, kept beside its pidfd until
    /// its exit is seen (see [`JobIo`](crate::platform::wait::JobIo), which takes them): a reader of the
    /// pipes without a `JobIo` drops them first, or never sees their end.
    pub(in crate::platform) writers: Vec<std::os::fd::OwnedFd>,
    /// Under a keeper (Linux, jobs beside others): the process started is
    /// the keeper, and this the job's main process below it.
    pub(in crate::platform) kept: Option<Arc<Kept>>,
    status: Option<std::process::ExitStatus>,
}

/// A job's main process started under a keeper, a child subreaper of
/// ours that is its parent (`linux.rs`): what the keeper reports on
/// its status pipe, read as it comes (its start, then its end).
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Kept {
    /// The status pipe's read end, non-blocking.
    pub(in crate::platform) report: std::os::fd::OwnedFd,
    heard: std::sync::Mutex<Heard>,
}

/// What a keeper has reported so far.
#[derive(Debug, Default)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
struct Heard {
    /// The main process's pid, once started.
    main: Option<i32>,
    /// Its start's error number, when it could not be started.
    failed: Option<i32>,
    /// The error numbers of the tries that failed for a shortage, each
    /// tried again; passed on once.
    retries: Vec<i32>,
    retries_told: usize,
    /// The main process's wait status once reported; `Some(None)` when the
    /// keeper ended without reporting it (it was killed, or its start
    /// failed).
    ended: Option<Option<i32>>,
}

#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
impl Kept {
    /// A keeper just forked, its status pipe's read end non-blocking.
    pub(super) fn new(report: std::os::fd::OwnedFd) -> Kept {
        Kept {
            report,
            heard: std::sync::Mutex::new(Heard::default()),
        }
    }

    fn heard(&self) -> std::sync::MutexGuard<'_, Heard> {
        self.heard.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads every report waiting, without waiting; notes a keeper gone
    /// without a word as ended.
    #[cfg(target_os = "linux")]
    fn read_waiting(&self, heard: &mut Heard) {
        use std::os::fd::AsRawFd;
        while heard.ended.is_none() {
            match read_report(&self.report) {
                Some((KEPT_STARTED, main)) => heard.main = Some(main),
                Some((KEPT_RETRY, errno)) => heard.retries.push(errno),
                Some((KEPT_FAILED, errno)) => {
                    heard.failed = Some(errno);
                    heard.ended = Some(None);
                }
                Some((KEPT_EXITED, raw)) => heard.ended = Some(Some(raw)),
                Some(_) => {}
                // Nothing to read: the keeper has not said yet, or is gone.
                None if !pipe_has_writer(self.report.as_raw_fd()) => heard.ended = Some(None),
                None => return,
            }
        }
    }

    #[cfg(not(target_os = "linux"))]
    fn read_waiting(&self, _heard: &mut Heard) {}

    /// Waits for the keeper's word on the main process's start: its pid,
    /// or the error its start met (each try that failed for a shortage
    /// told to `retrying` first).
    pub(super) fn started(&self, retrying: &mut dyn FnMut(&io::Error, usize)) -> io::Result<i32> {
        use std::os::fd::AsRawFd;
        loop {
            let mut heard = self.heard();
            self.read_waiting(&mut heard);
            while heard.retries_told < heard.retries.len() {
                heard.retries_told += 1;
                let e = io::Error::from_raw_os_error(heard.retries[heard.retries_told - 1]);
                retrying(&e, heard.retries_told);
            }
            if let Some(main) = heard.main {
                return Ok(main);
            }
            if heard.ended.is_some() {
                return Err(io::Error::from_raw_os_error(
                    heard.failed.unwrap_or(libc::EIO),
                ));
            }
            drop(heard);
            let mut p = libc::pollfd {
                fd: self.report.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; a signal only cuts the wait short.
            unsafe { libc::poll(&mut p, 1, -1) };
        }
    }

    /// The main process's pid, once its start was reported.
    pub(in crate::platform) fn main(&self) -> Option<i32> {
        let mut heard = self.heard();
        self.read_waiting(&mut heard);
        heard.main
    }

    /// True once the main process's end was reported (or can no longer
    /// be); reads what the keeper wrote, without waiting.
    pub(in crate::platform) fn exited(&self) -> bool {
        let mut heard = self.heard();
        self.read_waiting(&mut heard);
        heard.ended.is_some()
    }

    /// The main process's raw wait status, when the keeper reported it.
    fn status(&self) -> Option<i32> {
        self.heard().ended.flatten()
    }
}

/// True while the pipe whose read end is `fd` has a writer: a `poll` for
/// reading says POLLHUP once none is left.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn pipe_has_writer(fd: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no wait.
    unsafe { libc::poll(&mut p, 1, 0) };
    p.revents & libc::POLLHUP == 0
}

impl JobProcess {
    /// A process just started with its output piped to `stdout`/`stderr`.
    pub(super) fn new(pid: i32, stdout: Option<File>, stderr: Option<File>) -> JobProcess {
        JobProcess {
            pid,
            stdout,
            stderr,
            exit_fd: None,
            writers: Vec::new(),
            kept: None,
            status: None,
        }
    }

    /// Takes over a process `std::process` started (std never reaps a
    /// child it is not asked to wait for).
    pub(super) fn from_std(mut child: std::process::Child) -> JobProcess {
        use std::os::fd::OwnedFd;
        let file = |fd: OwnedFd| File::from(fd);
        let (out, err) = (child.stdout.take(), child.stderr.take());
        JobProcess::new(
            child.id() as i32,
            out.map(|o| file(o.into())),
            err.map(|e| file(e.into())),
        )
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.pid as u32
    }

    /// SIGKILL, unless it was reaped already (under a keeper, the main
    /// process first).
    pub fn kill(&mut self) -> io::Result<()> {
        if self.status.is_none() {
            if let Some(kept) = &self.kept
                && !kept.exited()
            {
                // Its start is reported within moments of the fork.
                if let Ok(main) = kept.started(&mut |_, _| {}) {
                    signal_pids(&[main], Signal::Kill);
                }
            }
            // SAFETY: kill takes a pid and a signal number; our child is
            // unreaped, so the pid is still its own.
            if unsafe { libc::kill(self.pid, libc::SIGKILL) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }

    /// Waits for it to exit and reaps it; its status again after that.
    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        use std::os::unix::process::ExitStatusExt;
        if let Some(status) = self.status {
            return Ok(status);
        }
        let mut raw = 0;
        if self.kept.is_some() {
            // A keeper ends once nothing of the job is left below it: a
            // moment after the stop of what the main process left. One
            // that does not is killed (what it kept goes to us).
            if !has_exited(self.pid)
                && let Some(fd) = exit_fd(self.pid)
            {
                use std::os::fd::AsRawFd;
                let mut p = libc::pollfd {
                    fd: fd.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
                let mut left = until - std::time::Instant::now();
                // SAFETY: one valid pollfd; its pidfd is readable once the
                // keeper exits. A signal only cuts the wait short.
                while unsafe { libc::poll(&mut p, 1, left.as_millis() as i32) } < 0 {
                    left = until.saturating_duration_since(std::time::Instant::now());
                }
            }
            if !has_exited(self.pid) {
                signal_pids(&[self.pid], Signal::Kill);
            }
        }
        // An exited leader leaves the list of running jobs as it is reaped,
        // under the list's lock (see `LIVE`); one still running (only
        // when its stop failed) is waited for first.
        while let Err(e) = peek_exit(self.pid, 0) {
            if e.kind() != io::ErrorKind::Interrupted {
                break;
            }
        }
        {
            let mut running = live();
            loop {
                // SAFETY: waitpid on our own child, into a valid int.
                if unsafe { libc::waitpid(self.pid, &mut raw, 0) } == self.pid {
                    break;
                }
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
            running.retain(|l| l.leader != self.pid);
        }
        // Under a keeper, the status is the main process's as reported;
        // the keeper's own only when it was killed before it could say.
        if let Some(main) = self.kept.as_ref().and_then(|k| {
            // What it said before it ended, if nobody read it yet.
            k.exited();
            k.status()
        }) {
            raw = main;
        }
        let status = std::process::ExitStatus::from_raw(raw);
        self.status = Some(status);
        Ok(status)
    }
}

/// What a keeper tells the listener through its status pipe, each a pair
/// of native ints, tag then value: the main process started (its pid), it
/// could not be started (the error number), it ended (its wait status), a
/// try failed for a shortage and is made again after its pause (the error
/// number).
#[cfg(target_os = "linux")]
pub(super) const KEPT_STARTED: std::ffi::c_int = 1;
#[cfg(target_os = "linux")]
pub(super) const KEPT_FAILED: std::ffi::c_int = 2;
#[cfg(target_os = "linux")]
pub(super) const KEPT_EXITED: std::ffi::c_int = 3;
#[cfg(target_os = "linux")]
pub(super) const KEPT_RETRY: std::ffi::c_int = 4;

/// One report of a keeper (tag, value), read whole; None at the end of
/// the pipe (the keeper is gone) or on a failure.
#[cfg(target_os = "linux")]
pub(super) fn read_report(
    status: &std::os::fd::OwnedFd,
) -> Option<(std::ffi::c_int, std::ffi::c_int)> {
    use std::os::fd::AsRawFd;
    let mut pair = [0 as std::ffi::c_int; 2];
    loop {
        // SAFETY: reads at most the pair's size into it. A report is
        // smaller than PIPE_BUF, so it is written and read whole.
        let n = unsafe {
            libc::read(
                status.as_raw_fd(),
                pair.as_mut_ptr().cast(),
                std::mem::size_of_val(&pair),
            )
        };
        if n == std::mem::size_of_val(&pair) as isize {
            return Some((pair[0], pair[1]));
        }
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
            continue;
        }
        return None;
    }
}
