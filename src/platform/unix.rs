//! Unix: `renameat2(RENAME_NOREPLACE)` (`renameatx_np(RENAME_EXCL)` on
//! macOS, or a hard link) for moves, mode bits for the key, process groups
//! and signals for jobs, and on Linux a child subreaper plus `/proc` so
//! nothing a job started can escape its stop: every process is signalled by
//! its pid, never by a group a job could have moved into. macOS finds the
//! same things through `kqueue` and `libproc` (`macos.rs`), without a
//! subreaper; other Unixes, with no process table to walk, signal the job's
//! main process and the group it was started in, and look for its exit
//! every 20 ms.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::Signal;
use crate::error::{Error, Result};

fn cstr(p: &Path) -> io::Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

/// Refuses a key file readable or writable by group or others.
pub(super) fn check_key_permissions(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path)
        .map_err(|e| Error::config(format!("cannot read key file {}: {e}", path.display())))?;
    let mode = meta.permissions().mode();
    if mode & 0o077 != 0 {
        return Err(Error::config(format!(
            "key file {} is readable by others (mode {:03o})",
            path.display(),
            mode & 0o777
        ))
        .hint(format!("run `chmod 600 {}`", path.display())));
    }
    Ok(())
}

/// Creates a new file only its owner can read.
pub(super) fn create_private(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists.
pub(super) fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them
        // relative to the working directory like rename(2).
        let rc = unsafe {
            libc::renameat2(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_NOREPLACE,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // Filesystems without RENAME_NOREPLACE (some network mounts) answer
        // EINVAL; fall back to the hard-link route below.
        if !matches!(err.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOSYS)) {
            return Err(err);
        }
    }
    #[cfg(target_os = "macos")]
    {
        let (f, t) = (cstr(from)?, cstr(to)?);
        // SAFETY: both are valid NUL-terminated paths; AT_FDCWD resolves them
        // relative to the working directory like rename(2).
        let rc = unsafe {
            libc::renameatx_np(
                libc::AT_FDCWD,
                f.as_ptr(),
                libc::AT_FDCWD,
                t.as_ptr(),
                libc::RENAME_EXCL,
            )
        };
        if rc == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        // File systems without RENAME_EXCL answer ENOTSUP (or EINVAL).
        if !matches!(
            err.raw_os_error(),
            Some(libc::EINVAL) | Some(libc::ENOTSUP) | Some(libc::ENOSYS)
        ) {
            return Err(err);
        }
    }
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// Failures worth retrying: a handle held by a scanner or sync client.
pub(super) fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES)
            | Some(libc::EPERM)
            | Some(libc::EBUSY)
            | Some(libc::EAGAIN)
            | Some(libc::ETXTBSY)
    )
}

/// Flushes a directory's entries to disk; best effort.
pub(super) fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// The open flag of [`super::never_block_on_open`].
pub(super) const NONBLOCK: i32 = libc::O_NONBLOCK;

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

/// Creates a new file for writing, failing if anything (a link included)
/// already has the name.
pub(super) fn create_new_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Opens for reading without following a final symlink and without
/// blocking on a FIFO.
pub(super) fn open_no_follow(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// True when an open failed because the path was a symlink.
pub(super) fn is_link_error(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
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

/// See [`super::spawn_may_pass`].
pub(super) fn spawn_may_pass(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::EAGAIN)
}

/// Puts the job's process in a new process group of its own.
pub(super) fn prepare_job(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
}

/// See [`super::spawn_job`]. Linux falls back to `std::process` only for
/// a listener started with a standard descriptor closed.
pub(super) fn spawn_job(s: &super::JobSpawn<'_>) -> io::Result<JobProcess> {
    #[cfg(target_os = "linux")]
    if let Some(started) = super::spawn_linux::spawn(s) {
        return started;
    }
    super::std_command(s).spawn().map(JobProcess::from_std)
}

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
    /// its exit is seen (see [`JobIo`], which takes them): a reader of the
    /// pipes without a `JobIo` drops them first, or never sees their end.
    pub(super) writers: Vec<std::os::fd::OwnedFd>,
    /// Under a keeper (Linux, jobs beside others): the process started is
    /// the keeper, and this the job's main process below it.
    pub(super) kept: Option<Arc<Kept>>,
    status: Option<std::process::ExitStatus>,
}

/// A job's main process started under a keeper, a child subreaper of
/// ours that is its parent (`spawn_linux.rs`): what the keeper reports on
/// its status pipe, read as it comes (its start, then its end).
#[derive(Debug)]
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
pub struct Kept {
    /// The status pipe's read end, non-blocking.
    report: std::os::fd::OwnedFd,
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
        use super::spawn_linux::{KEPT_EXITED, KEPT_FAILED, KEPT_RETRY, KEPT_STARTED, read_report};
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
    fn main(&self) -> Option<i32> {
        let mut heard = self.heard();
        self.read_waiting(&mut heard);
        heard.main
    }

    /// True once the main process's end was reported (or can no longer
    /// be); reads what the keeper wrote, without waiting.
    fn exited(&self) -> bool {
        let mut heard = self.heard();
        self.read_waiting(&mut heard);
        heard.ended.is_some()
    }

    /// The main process's raw wait status, when the keeper reported it.
    fn status(&self) -> Option<i32> {
        self.heard().ended.flatten()
    }
}

/// See [`super::await_start`].
pub(super) fn await_start(
    child: &JobProcess,
    retrying: &mut dyn FnMut(&io::Error, usize),
) -> io::Result<()> {
    match &child.kept {
        Some(kept) => kept.started(retrying).map(drop),
        None => Ok(()),
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
    fn from_std(mut child: std::process::Child) -> JobProcess {
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

/// The process tree of one job: its main process (leader of its own process
/// group, which it may leave: the group is never signalled, each process is,
/// by its pid) and everything started under it, including processes that left the
/// group with `setsid` (found through the subreaper and `/proc` on Linux; on
/// macOS through `libproc` while their line of parents back to the
/// listener lives, as there is no subreaper to keep an orphan below us).
///
/// A job alone in the listener owns every process below it. A job with
/// others running beside it (listener slots) owns only its own leader's
/// descendants and the orphans the listener adopted that carry its `mark`
/// (its job id entry in the environment) or its group; its release reaps
/// nothing, as the other jobs' leaders must stay unreaped for their owners
/// ([`reap_orphans_beside`](super::reap_orphans_beside) does it instead).
#[derive(Debug)]
pub struct Tree {
    leader: i32,
    mark: Option<String>,
    /// Under a keeper (then `leader` is the keeper): its main process.
    kept: Option<Arc<Kept>>,
    /// Set once the leader is known to have exited (it stays so until it
    /// is reaped), by the tree or by the job's [`JobIo`]: not asked again.
    exited: Arc<AtomicBool>,
}

/// A running job's tree, as every walk and stop needs it from any thread.
#[derive(Debug)]
struct Live {
    leader: i32,
    /// The thread that spawned it (whose `children` list holds it).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    spawner: i32,
    /// Its mark, when it runs beside others (see [`Tree`]).
    mark: Option<String>,
    /// True when the leader is a keeper (see [`Kept`]).
    keeper: bool,
}

/// The jobs running now: a walk for one job passes the others' leaders
/// by, orphans are reaped without reaping one of them, and a second
/// Ctrl-C finds each tree from the signal handler's thread. A leader
/// leaves the list, under its lock, as its owner reaps it: a pid listed
/// here is still that leader's, so signalling it can never reach a
/// process that took the pid over.
static LIVE: std::sync::Mutex<Vec<Live>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The leaders (or keepers) of the jobs running beside others (slots).
fn leaders_beside() -> Vec<i32> {
    live()
        .iter()
        .filter(|l| l.mark.is_some() || l.keeper)
        .map(|l| l.leader)
        .collect()
}

/// This process's id, asked once: a job's end looks for its processes
/// with it, and each ask is a system call. (The listener never forks a
/// child that goes on running its code.)
fn own_pid() -> i32 {
    static PID: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *PID.get_or_init(|| std::process::id() as i32)
}

/// The calling thread's id (its pid where threads have none of their own),
/// asked once per thread.
fn thread_id() -> i32 {
    #[cfg(target_os = "linux")]
    {
        thread_local! {
            // SAFETY: gettid has no arguments.
            static TID: i32 = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        }
        TID.with(|t| *t)
    }
    #[cfg(not(target_os = "linux"))]
    return own_pid();
}

impl Tree {
    /// Takes charge of a job process [`spawn_job`](super::spawn_job) just
    /// started, in the thread that started it.
    pub fn adopt(child: &JobProcess, mark: Option<String>) -> io::Result<Tree> {
        let leader = i32::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        live().push(Live {
            leader,
            spawner: thread_id(),
            mark: mark.clone(),
            keeper: child.kept.is_some(),
        });
        Ok(Tree {
            leader,
            mark,
            kept: child.kept.clone(),
            exited: Arc::default(),
        })
    }

    /// The id recorded in the journal: the leader's pid (= its group id).
    pub fn id(&self) -> i32 {
        self.leader
    }

    /// True once the leader has exited (it stays unreaped until its owner
    /// waits for it, keeping the group id reserved).
    pub fn leader_exited(&self) -> bool {
        let exited = || match &self.kept {
            Some(kept) => kept.exited(),
            None => has_exited(self.leader),
        };
        if !self.exited.load(Ordering::Relaxed) && exited() {
            self.exited.store(true, Ordering::Relaxed);
        }
        self.exited.load(Ordering::Relaxed)
    }

    /// Signals the whole tree by what the listener knows for certain: the
    /// leader by its pid (our unreaped child: the pid is still its own),
    /// then every other process the walk finds. Never a process group: a
    /// job can move into any group of its session, another job's included,
    /// and leave its own empty. A forced stop walks again until it finds
    /// no process it has not killed, so a child forked during a walk is
    /// killed too.
    pub fn signal(&self, sig: Signal) {
        if self.kept.is_some() {
            // Everything below the keeper, the main process first; never
            // the keeper, which must outlive what it keeps.
            signal_kept(self.leader, sig);
            return;
        }
        signal_pids(&[self.leader], sig);
        #[cfg(not(any(target_os = "linux", target_os = "macos")))]
        // No process table to walk: the group it was started in is all
        // there is to reach its descendants by.
        // SAFETY: kill(2) with a negative pid signals a process group.
        unsafe {
            libc::kill(-self.leader, sig.number());
        }
        let exited = self.leader_exited();
        signal_walked(sig, || {
            tree_processes(self.leader, self.mark.as_deref(), exited)
        });
    }

    /// Live processes of the tree other than the leader.
    pub fn others(&self) -> Vec<i32> {
        if let Some(kept) = &self.kept {
            let mut below = kept_processes(self.leader);
            let main = kept.main();
            below.retain(|&p| Some(p) != main);
            return below;
        }
        tree_processes(self.leader, self.mark.as_deref(), self.leader_exited())
    }

    /// Called after the leader was reaped: collects adopted orphans (a job
    /// alone; beside others it only leaves the list, see the type's doc).
    pub fn release(self) {
        if self.mark.is_none() {
            reap_orphans();
        }
    }
}

/// Every live process below `keeper`, in the order of the walk (parents
/// before their children): all of its job's, as every orphan of the job
/// lands with the keeper.
fn kept_processes(keeper: i32) -> Vec<i32> {
    #[cfg(target_os = "linux")]
    if let Some(below) = descendants(keeper, None) {
        return below
            .into_iter()
            .filter(|&p| p > 1 && proc_row(p).is_some())
            .collect();
    }
    tree_in_table(&process_table(), keeper, 0)
}

/// Signals every process below `keeper`; a forced stop walks again until
/// it finds none it has not killed.
fn signal_kept(keeper: i32, sig: Signal) {
    signal_walked(sig, || kept_processes(keeper));
}

/// Signals every process `walk` finds; a forced stop walks again (up to
/// [`FORCED_WALKS`] times) until it finds none it has not killed, so a
/// child forked during a walk is killed too.
fn signal_walked(sig: Signal, walk: impl Fn() -> Vec<i32>) {
    let mut sent = Vec::new();
    for _ in 0..FORCED_WALKS {
        let fresh: Vec<i32> = walk().into_iter().filter(|p| !sent.contains(p)).collect();
        if fresh.is_empty() {
            break;
        }
        signal_pids(&fresh, sig);
        sent.extend(fresh);
        if sig == Signal::Term {
            break;
        }
    }
}

/// How many walks a forced stop makes at most, each killing what the last
/// did not find (a tree that forks faster than it is killed).
const FORCED_WALKS: usize = 16;

/// The live processes of the tree led by `leader` (with `mark` when it
/// runs beside others), the leader left out; `exited` when the leader
/// has exited (its part of the walk is skipped: its children were handed
/// to us, the subreaper).
fn tree_processes(leader: i32, mark: Option<&str>, exited: bool) -> Vec<i32> {
    let found = match mark {
        None => job_processes(own_pid(), leader, exited),
        Some(mark) => shared_job_processes(leader, mark, exited),
    };
    found.into_iter().filter(|&p| p != leader).collect()
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Off the list once its owner is done with it (reaped, or its
        // runner failed: then anyone may reap the leader).
        forget(self.leader);
    }
}

/// Takes `leader` off the list of running jobs.
fn forget(leader: i32) {
    live().retain(|l| l.leader != leader);
}

/// Reaps exited children that are not the leader of a job running beside
/// others (its owner reaps it): the orphans jobs left, adopted as
/// subreaper. With no such job running, every exited child.
pub(super) fn reap_orphans_beside() {
    let leaders = leaders_beside();
    if leaders.is_empty() {
        reap_orphans();
    } else {
        #[cfg(target_os = "linux")]
        for child in own_children().unwrap_or_default() {
            if !leaders.contains(&child) {
                let mut status = 0;
                // SAFETY: waitpid on one child with WNOHANG never blocks.
                unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
            }
        }
    }
}

/// Kills the tree recorded under `id` at once (a second Ctrl-C): its
/// leader by pid while it is listed (unreaped), then what a walk finds.
pub(super) fn kill_tree_now(id: i32) {
    let mark = {
        let running = live();
        let Some(entry) = running.iter().find(|l| l.leader == id) else {
            return;
        };
        if entry.keeper {
            // What it keeps first, then the keeper itself (while it is
            // listed, it is unreaped: the pid is its own).
            signal_kept(id, Signal::Kill);
            signal_pids(&[id], Signal::Kill);
            return;
        }
        signal_pids(&[id], Signal::Kill);
        entry.mark.clone()
    };
    signal_pids(
        &tree_processes(id, mark.as_deref(), has_exited(id)),
        Signal::Kill,
    );
}

impl Signal {
    fn number(self) -> i32 {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        }
    }
}

/// Name of a signal number, for result details.
pub(super) fn signal_name(sig: i32) -> String {
    match sig {
        libc::SIGHUP => "SIGHUP".into(),
        libc::SIGINT => "SIGINT".into(),
        libc::SIGQUIT => "SIGQUIT".into(),
        libc::SIGABRT => "SIGABRT".into(),
        libc::SIGKILL => "SIGKILL".into(),
        libc::SIGSEGV => "SIGSEGV".into(),
        libc::SIGPIPE => "SIGPIPE".into(),
        libc::SIGTERM => "SIGTERM".into(),
        libc::SIGBUS => "SIGBUS".into(),
        libc::SIGFPE => "SIGFPE".into(),
        libc::SIGILL => "SIGILL".into(),
        n => format!("signal {n}"),
    }
}

/// The signal that ended a process, if one did.
pub(super) fn exit_signal(status: &std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

/// Sends `sig` to single processes (escaped descendants), never pid ≤ 1.
pub(super) fn signal_pids(pids: &[i32], sig: Signal) {
    for &pid in pids.iter().filter(|&&p| p > 1) {
        // SAFETY: plain kill(2) on a pid we found as our descendant.
        unsafe {
            if sig == Signal::Term {
                libc::kill(pid, libc::SIGCONT);
            }
            libc::kill(pid, sig.number());
        }
    }
}

/// Waits until our child `pid`, whose pidfd just reported its exit, can
/// be waited for (it is not reaped). The pidfd can report the exit a moment
/// before the kernel shows the zombie to `waitid`; a tree walk in that
/// moment would find the leader still alive and walk its `/proc` entries
/// (a third of a serial drain's jobs did). Once the zombie shows, every
/// child it had is re-parented to us, as for any exited leader.
#[cfg(target_os = "linux")]
fn await_zombie(pid: i32) {
    // It blocks only until the exit the pidfd reported is complete.
    while let Err(e) = peek_exit(pid, 0) {
        if e.kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// True when our child `pid` has exited (it is not reaped).
fn has_exited(pid: i32) -> bool {
    peek_exit(pid, libc::WNOHANG).is_ok_and(|exited| exited)
}

/// `waitid` on our child `pid` for its exit, leaving it unreaped
/// (`WNOWAIT`), with `flags` added: true when it has exited.
fn peek_exit(pid: i32, flags: libc::c_int) -> io::Result<bool> {
    // SAFETY: waitid on one child, into a zeroed siginfo_t it fills.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOWAIT | flags,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: si_pid is set by waitid when a child changed state (and
    // stays 0 under WNOHANG when none has).
    Ok(unsafe { info.si_pid() } != 0)
}

/// Makes this process the reaper of orphaned descendants (Linux), so a job's
/// processes that `setsid` away and lose their parent stay ours to find.
pub(super) fn become_subreaper() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes one integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    }
}

/// Reaps any exited children without blocking (orphans adopted as subreaper).
/// Call only when no job child is waiting to be reaped by its owner.
fn reap_orphans() {
    loop {
        let mut status = 0;
        // SAFETY: waitpid with WNOHANG never blocks.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return;
        }
    }
}

/// One row of the process table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Proc {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    pub(super) pgrp: i32,
}

/// Reads a small `/proc` file.
#[cfg(target_os = "linux")]
fn read_proc(path: &str) -> Option<String> {
    read_from_start(&std::fs::File::open(path).ok()?)
}

/// Reads an open `/proc` file whole from its start (again, for one held
/// open): `pread` needs no size probe, which `/proc` cannot answer, and the
/// buffer is on the stack, as a heap one of a page makes the allocator
/// tidy its free lists first, which costs more than the read.
#[cfg(target_os = "linux")]
fn read_from_start(f: &std::fs::File) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mut buf = [0u8; 512];
    let mut whole = Vec::new();
    loop {
        let k = f.read_at(&mut buf, whole.len() as u64).ok()?;
        whole.extend_from_slice(&buf[..k]);
        // A `/proc` file fills a read up to its end: a read that comes back
        // short has reached it (a second would only say so).
        if k < buf.len() {
            break;
        }
    }
    String::from_utf8(whole).ok()
}

/// The children of our own thread `task` (its `/proc/<pid>/task/<tid>/children`).
/// The main thread's file, and the calling thread's, are held open and read
/// again from their start: opening a `/proc` file costs several times the
/// read, and a job's end looks once. Another thread's is opened each time
/// (its id may be a new thread's by the next look).
#[cfg(target_os = "linux")]
fn task_children(task: i32) -> Option<String> {
    static MAIN: std::sync::OnceLock<Option<std::fs::File>> = std::sync::OnceLock::new();
    thread_local! {
        static OWN: std::cell::OnceCell<Option<std::fs::File>> = const { std::cell::OnceCell::new() };
    }
    let me = own_pid();
    let path = || format!("/proc/{me}/task/{task}/children");
    if task == me {
        let held = MAIN.get_or_init(|| std::fs::File::open(path()).ok());
        return held
            .as_ref()
            .map_or_else(|| read_proc(&path()), read_from_start);
    }
    if task == thread_id() {
        return OWN.with(|own| {
            let held = own.get_or_init(|| std::fs::File::open(path()).ok());
            held.as_ref()
                .map_or_else(|| read_proc(&path()), read_from_start)
        });
    }
    read_proc(&path())
}

/// One `/proc/<pid>/stat` row, or None for a zombie or a vanished process.
#[cfg(target_os = "linux")]
fn proc_row(pid: i32) -> Option<Proc> {
    let stat = read_proc(&format!("/proc/{pid}/stat"))?;
    // The command name may hold spaces and parentheses: fields start after
    // the last ')'.
    let rest = &stat[stat.rfind(')')? + 2..];
    let mut f = rest.split(' ');
    let state = f.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = f.next()?.parse().ok()?;
    let pgrp = f.next()?.parse().ok()?;
    Some(Proc { pid, ppid, pgrp })
}

#[cfg(target_os = "linux")]
fn process_table() -> Vec<Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(proc_row)
        .collect()
}

#[cfg(target_os = "macos")]
use super::macos::{proc_row, process_table};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
fn process_table() -> Vec<Proc> {
    Vec::new()
}

/// Every descendant of `root` (zombies included), walked through
/// `/proc/<pid>/task/<tid>/children`: cost grows with the job's tree, not
/// with the machine's process count. None where the kernel lacks that file.
#[cfg(target_os = "linux")]
fn descendants(root: i32, skip: Option<i32>) -> Option<Vec<i32>> {
    if !children_supported() {
        return None;
    }
    let me = own_pid();
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        let tasks: Vec<String> = if parent == me {
            own_tasks().into_iter().filter_map(task_children).collect()
        } else {
            // A process or thread that ends meanwhile simply has no children.
            let Ok(dir) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
                continue;
            };
            dir.flatten()
                .filter_map(|t| t.path().join("children").to_str().and_then(read_proc))
                .collect()
        };
        for list in tasks {
            for child in list
                .split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok())
            {
                if Some(child) != skip && !found.contains(&child) {
                    found.push(child);
                    frontier.push(child);
                }
            }
        }
    }
    Some(found)
}

/// Every child of this process, whichever thread started or adopted it
/// (zombies included); None where the kernel lacks the `children` file.
#[cfg(target_os = "linux")]
fn own_children() -> Option<Vec<i32>> {
    if !children_supported() {
        return None;
    }
    let tasks = own_tasks();
    let mut found = Vec::new();
    for task in tasks {
        // A thread that ends meanwhile simply has no children.
        let Some(list) = task_children(task) else {
            continue;
        };
        found.extend(
            list.split_whitespace()
                .filter_map(|c| c.parse::<i32>().ok()),
        );
    }
    Some(found)
}

/// The threads of ours that may have children: the main one (a subreaper
/// adopts orphans into its first live thread, the main one), the calling
/// one, and those that spawned the running jobs; no other thread of ours
/// starts processes.
#[cfg(target_os = "linux")]
fn own_tasks() -> Vec<i32> {
    let mut tasks = vec![own_pid()];
    let spawners = live().iter().map(|l| l.spawner).collect::<Vec<_>>();
    for t in std::iter::once(thread_id()).chain(spawners) {
        if !tasks.contains(&t) {
            tasks.push(t);
        }
    }
    tasks
}

/// True where the kernel has `/proc/<pid>/task/<tid>/children`.
#[cfg(target_os = "linux")]
fn children_supported() -> bool {
    static SUPPORTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SUPPORTED.get_or_init(|| {
        let me = std::process::id();
        std::path::Path::new(&format!("/proc/{me}/task/{me}/children")).exists()
    })
}

/// True when live process `pid`, an orphan we adopted, is one of the job's
/// with `mark` (`NAME=id`) and group `pgid`: not another job's leader, and
/// carrying the mark in its environment, or, carrying no job's mark at all,
/// in the group. One that carries another job's mark is that job's.
#[cfg(target_os = "linux")]
fn marked(pid: i32, pgid: i32, mark: &str) -> bool {
    if live().iter().any(|l| l.leader == pid) {
        return false;
    }
    let Some(row) = proc_row(pid) else {
        return false;
    };
    let name = &mark.as_bytes()[..mark.find('=').map_or(mark.len(), |i| i + 1)];
    let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    match env.split(|&b| b == 0).find(|kv| kv.starts_with(name)) {
        Some(kv) => kv == mark.as_bytes(),
        None => row.pgrp == pgid,
    }
}

/// The live processes of one job among several running at once (see
/// [`Tree`]): below its leader (unless it exited: its children were then
/// handed to us), and the orphans we adopted that carry `mark` or are in its
/// group, with their descendants. Without `/proc/.../children` (and on
/// other Unixes) the process table is walked from the leader.
fn shared_job_processes(pgid: i32, mark: &str, leader_exited: bool) -> Vec<i32> {
    let _ = (mark, leader_exited);
    #[cfg(target_os = "linux")]
    if let Some(children) = own_children() {
        let mut roots: Vec<i32> = children
            .into_iter()
            .filter(|&c| c != pgid && marked(c, pgid, mark))
            .collect();
        if !leader_exited {
            roots.push(pgid);
        }
        let mut found = Vec::new();
        for root in roots {
            if !found.contains(&root) {
                found.push(root);
            }
            for p in descendants(root, None).unwrap_or_default() {
                if !found.contains(&p) {
                    found.push(p);
                }
            }
        }
        found.retain(|&p| p > 1 && proc_row(p).is_some());
        return found;
    }
    tree_in_table(&process_table(), pgid, pgid)
}

/// Live processes below `root` in the process tree, plus live members of
/// process group `pgid`, excluding `root` itself. As the listener is a child
/// subreaper, every process a job starts stays below it, so the walk from
/// `root` finds them all; without `/proc/.../children` (and on macOS, from
/// `libproc`) the whole process table is scanned instead. Empty where there
/// is no process table. The leader's pid is `pgid`; once it has exited, its
/// entry is not walked.
fn job_processes(root: i32, pgid: i32, leader_exited: bool) -> Vec<i32> {
    let _ = leader_exited;
    #[cfg(target_os = "linux")]
    if let Some(desc) = descendants(root, leader_exited.then_some(pgid)) {
        return desc
            .into_iter()
            .filter(|&p| p != root && p > 1 && proc_row(p).is_some())
            .collect();
    }
    tree_in_table(&process_table(), root, pgid)
}

/// The table walk of [`job_processes`]: members of group `pgid` and
/// descendants of `root`, without `root` and pids ≤ 1.
fn tree_in_table(table: &[Proc], root: i32, pgid: i32) -> Vec<i32> {
    let mut found: Vec<i32> = table
        .iter()
        .filter(|p| p.pgrp == pgid && pgid > 1)
        .map(|p| p.pid)
        .collect();
    let mut frontier = vec![root];
    while let Some(parent) = frontier.pop() {
        for p in table.iter().filter(|p| p.ppid == parent) {
            if !found.contains(&p.pid) {
                found.push(p.pid);
            }
            frontier.push(p.pid);
        }
    }
    found.retain(|&p| p != root && p > 1);
    found
}

/// After a crash, the live processes of the job that was running: those
/// whose environment holds every entry of `o.env` (set by the listener,
/// inherited by descendants), and the members of its recorded process group
/// unless that group id was visibly reused by a process started later.
/// Environments come from `/proc/<pid>/environ` on Linux and
/// `sysctl(KERN_PROCARGS2)` on macOS; both give the environment a process
/// started with.
pub(super) fn orphans(o: &super::Orphaned<'_>) -> Vec<i32> {
    let wanted = o.env;
    let me = own_pid();
    let table = process_table();
    let holds_all = |env: &[u8]| {
        wanted
            .iter()
            .all(|w| env.split(|&b| b == 0).any(|kv| kv == w.as_bytes()))
    };
    #[cfg(target_os = "macos")]
    let mut reader = super::macos::EnvReader::new();
    let mut found: Vec<i32> = table
        .iter()
        .filter(|p| p.pid != me)
        .filter(|p| {
            #[cfg(target_os = "macos")]
            {
                reader.env(p.pid).is_some_and(holds_all)
            }
            #[cfg(not(target_os = "macos"))]
            {
                std::fs::read(format!("/proc/{}/environ", p.pid)).is_ok_and(|env| holds_all(&env))
            }
        })
        .map(|p| p.pid)
        .collect();
    let reused = table
        .iter()
        .any(|p| p.pid == o.group && !started_near(p.pid, o.started));
    if o.group > 1 && !reused {
        // Its group, and everything below its leader when that lives: a
        // job beside others ran under a keeper (the recorded pid), which
        // still holds every orphan of the job, whatever it did to its
        // environment and group.
        let below = if table.iter().any(|p| p.pid == o.group) {
            tree_in_table(&table, o.group, 0)
        } else {
            Vec::new()
        };
        let members = table.iter().filter(|p| p.pgrp == o.group).map(|p| p.pid);
        for p in members.chain(below) {
            if p != me && !found.contains(&p) {
                found.push(p);
            }
        }
    }
    if table.is_empty() && o.group > 1 {
        // No process table (neither Linux nor macOS): the recorded group is
        // all we know.
        found.push(o.group);
    }
    found
}

/// True when `pid` started within a few seconds of `when` (Linux and macOS;
/// elsewhere assumed true).
fn started_near(pid: i32, when: std::time::SystemTime) -> bool {
    #[cfg(target_os = "linux")]
    {
        let start = (|| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            // Field 22 of stat is the start time in clock ticks since boot;
            // `rest` begins at field 3.
            let ticks: u64 = rest.split(' ').nth(19)?.parse().ok()?;
            let btime: u64 = std::fs::read_to_string("/proc/stat")
                .ok()?
                .lines()
                .find_map(|l| l.strip_prefix("btime "))?
                .trim()
                .parse()
                .ok()?;
            // SAFETY: sysconf has no preconditions.
            let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
            Some(
                std::time::UNIX_EPOCH
                    + std::time::Duration::from_millis(btime * 1000 + ticks * 1000 / hz),
            )
        })();
        let Some(start) = start else { return false };
        let gap = start
            .duration_since(when)
            .or_else(|_| when.duration_since(start));
        gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
    }
    #[cfg(target_os = "macos")]
    {
        let Some(start) = super::macos::start_time(pid) else {
            return false;
        };
        let gap = start
            .duration_since(when)
            .or_else(|_| when.duration_since(start));
        gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = (pid, when);
        true
    }
}

/// The environment part of a `KERN_PROCARGS2` answer (macOS): the
/// `NAME=value` entries, each ended by a NUL. The answer is the argument
/// count (a native `int`), the executable's path, NUL padding, that many
/// arguments, the environment, an empty string, then the system's own
/// entries. None when it is cut short before the environment.
#[cfg(any(target_os = "macos", test))]
pub(super) fn procargs_env(buf: &[u8]) -> Option<&[u8]> {
    let argc = i32::from_ne_bytes(buf.get(..4)?.try_into().ok()?);
    let mut at = 4;
    // The executable's path, then the padding after it.
    at += buf[at..].iter().position(|&b| b == 0)?;
    at += buf[at..].iter().position(|&b| b != 0)?;
    for _ in 0..argc.max(0) {
        at += buf[at..].iter().position(|&b| b == 0)? + 1;
    }
    let start = at;
    while at < buf.len() && buf[at] != 0 {
        at += buf[at..].iter().position(|&b| b == 0)? + 1;
    }
    Some(&buf[start..at])
}

/// True while process `pid` exists and is not a zombie.
pub(super) fn is_alive(pid: i32) -> bool {
    if pid <= 1 {
        return false;
    }
    #[cfg(any(target_os = "linux", target_os = "macos"))]
    {
        proc_row(pid).is_some()
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    // SAFETY: signal 0 only checks for existence.
    unsafe {
        libc::kill(pid, 0) == 0
    }
}

/// Asks a child process to stop, as a service manager would (SIGTERM).
pub(super) fn terminate(child: &mut std::process::Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        signal_pids(&[pid], Signal::Term);
    }
}

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
fn exit_fd(pid: i32) -> Option<std::os::fd::OwnedFd> {
    let watch = super::macos::exit_watch(pid)?;
    (!has_exited(pid)).then_some(watch)
}

/// A pidfd for our child `pid` (Linux 5.3+), or None.
#[cfg(not(target_os = "macos"))]
fn exit_fd(pid: i32) -> Option<std::os::fd::OwnedFd> {
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

/// Unix has no cloud-file residency marks.
pub fn residency(_path: &Path) -> super::Residency {
    super::Residency::Unknown
}

#[cfg(test)]
mod tests {
    use super::*;

    fn procargs(argc: i32, strings: &[&str]) -> Vec<u8> {
        let mut b = argc.to_ne_bytes().to_vec();
        for (i, s) in strings.iter().enumerate() {
            b.extend_from_slice(s.as_bytes());
            b.push(0);
            if i == 0 {
                // The padding after the executable's path.
                b.extend_from_slice(&[0, 0, 0]);
            }
        }
        b
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_held_children_file_read_again_shows_the_children_of_now() {
        let listed = |pid: u32| {
            task_children(thread_id())
                .expect("children file")
                .split_whitespace()
                .any(|c| c == pid.to_string())
        };
        let mut first = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        // The first look opens the file and holds it; the later ones read it again.
        assert!(listed(first.id()));
        let mut second = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(listed(first.id()) && listed(second.id()));
        first.kill().unwrap();
        first.wait().unwrap();
        assert!(!listed(first.id()) && listed(second.id()));
        second.kill().unwrap();
        second.wait().unwrap();
        assert!(!listed(second.id()));
    }

    #[test]
    fn procargs_env_is_the_entries_between_the_arguments_and_the_empty_string() {
        let b = procargs(
            2,
            &[
                "/bin/jobkit",
                "jobkit",
                "A=1",
                "FLEET_DISPATCH_JOB_ID=x",
                "HOME=/h",
                "",
                "executable_path=/bin/jobkit",
            ],
        );
        // An argument that looks like an entry is not one.
        assert_eq!(
            procargs_env(&b),
            Some(&b"FLEET_DISPATCH_JOB_ID=x\0HOME=/h\0"[..])
        );
    }

    #[test]
    fn procargs_env_without_an_ending_is_what_there_is() {
        let b = procargs(1, &["/bin/sh", "sh", "A=1"]);
        assert_eq!(procargs_env(&b), Some(&b"A=1\0"[..]));
        assert_eq!(procargs_env(&procargs(3, &["/bin/sh", "sh"])), None);
        assert_eq!(procargs_env(&[1, 0]), None);
    }

    #[test]
    fn the_table_walk_finds_the_group_and_the_descendants_but_not_the_root() {
        let p = |pid, ppid, pgrp| Proc { pid, ppid, pgrp };
        let table = [
            p(1, 0, 1),
            p(100, 1, 100),   // the listener
            p(200, 100, 200), // the job's leader
            p(201, 200, 200), // in its group
            p(300, 201, 300), // left the group (setsid), still below us
            p(301, 300, 300),
            p(400, 1, 200), // orphaned, still in the group
            p(500, 1, 500), // someone else's
        ];
        let mut found = tree_in_table(&table, 100, 200);
        found.sort();
        assert_eq!(found, [200, 201, 300, 301, 400]);
        assert!(tree_in_table(&table, 100, 1).iter().all(|&p| p > 1));
    }
}
