//! Everything that differs between operating systems, declared here once:
//! file moves that never replace, key-file permissions, process trees and
//! their stops, and finding a dead listener's orphans.
//!
//! This file is the whole interface. Each function below says what it does,
//! its errors and how the platforms differ, and hands the call to the one
//! implementation compiled in: `unix.rs` or `windows.rs`, which implement
//! every function under the same name and signature (a function missing on
//! one side fails that platform's build here, not at a distant caller).
//! `unix.rs` serves Linux and macOS alike and calls `macos.rs` for what
//! Linux does with pidfds and `/proc`, and `spawn_linux.rs` for the
//! job spawn Linux makes without `std::process`.
//! The types are listed explicitly below with the methods each platform
//! provides; Windows waits on a job with helper threads (`threaded.rs`)
//! where Unix polls.
//!
//! All the crate's `unsafe` lives in this module's implementations, each
//! block with its `SAFETY:` reason.

use std::fs::File;
use std::io;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};

use crate::error::Result;

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "linux")]
mod spawn_linux;

#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;

#[cfg(windows)]
mod threaded;

#[cfg(unix)]
mod dir_unix;
#[cfg(windows)]
mod dir_windows;

// An open folder, for operations on its entries by name. Every platform
// provides `DirHandle::open_trusted(&Path)` (a folder the user named; links
// on the way are followed), `open_child(name, shown)` (refusing a link, an
// error `is_link_error` recognises, or anything but a folder,
// `NotADirectory`), `create_dir`, `entry` (lstat), `open_read` (never
// following a link, never blocking on a FIFO), `create_new` (exclusive,
// never through a link), `rename_no_replace` and `rename_replace` (to a
// name in this or another handle's folder), `remove_file`, `names`,
// `sync`, `sync_names(&[&OsStr])` and `modified`. Unix: descriptors and the
// `*at` calls (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` on
// Linux where the kernel has it, `O_NOFOLLOW | O_DIRECTORY` otherwise,
// `renameat2(RENAME_NOREPLACE)`, `unlinkat`). Windows: a handle held
// without delete sharing pins the folder in place while path operations
// name its entries.
#[cfg(unix)]
pub use dir_unix::DirHandle;
#[cfg(windows)]
pub use dir_windows::DirHandle;

/// What a folder entry is, as `lstat` tells it (a link is never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file.
    File,
    /// A folder.
    Dir,
    /// A symbolic link (on Windows also a junction).
    Link,
    /// A FIFO, socket or device.
    Other,
}

/// One folder entry's kind, size and modification time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// What it is.
    pub kind: EntryKind,
    /// Its size in bytes.
    pub len: u64,
    /// When it last changed, where the system says.
    pub modified: Option<std::time::SystemTime>,
}

// The process tree of one running job. Every platform provides
// `Tree::adopt(&JobProcess, mark) -> io::Result<Tree>` (take charge of a job
// started by `spawn_job`; `mark`, the job's id entry in its
// environment, is given when other jobs run beside it, so that its stops
// never touch their processes), `id()` (the id the journal records), `leader_exited()`,
// `signal(Signal)` (the whole tree), `others()` (its live processes but the
// leader) and `release(self)` (after the leader was reaped). Unix: the
// leader and its descendants, each signalled by its pid, never by a process
// group (a job can move into another job's); on Linux found through the
// subreaper and `/proc`, beside other jobs below the job's keeper (see
// `JobSpawn::keeper`), which is then the leader the journal records; on macOS those found through `libproc` while their
// parents back to the listener live (no subreaper: an orphan goes to
// launchd). Windows: a Job Object that allows no breakaway.
pub use imp::Tree;

// `Bell::new()` and `ring()` wake a runner waiting in `JobIo::next`;
// `JobIo::new(&mut JobProcess, &Tree, &Bell)`, `streams_open()` and
// `next(until, buf) -> IoEvent` wait for a job's output, its exit, the bell
// or a deadline. Unix: one `poll(2)` in the runner's thread (a pipe for the
// bell, a pidfd for the exit on Linux, a kqueue with `NOTE_EXIT` on macOS).
// Windows: helper threads feeding one channel.
#[cfg(windows)]
pub use threaded::{Bell, JobIo};
#[cfg(unix)]
pub use unix::{Bell, JobIo};

/// The stops the runner sends a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// Graceful stop: SIGTERM (after SIGCONT) on Unix; on Windows
    /// `CTRL_BREAK_EVENT` to the job's console group when it shares the
    /// listener's console, otherwise nothing (the forced stop follows).
    Term,
    /// Forced stop: SIGKILL on Unix; `TerminateJobObject` (or
    /// `TerminateProcess`) on Windows.
    Kill,
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

/// Refuses a key file others could read or change, with a `CONFIG` error
/// naming the file (and, on Unix, the `chmod 600` hint); also `CONFIG` when
/// the file cannot be read. Unix: any group or other mode bit. Windows: a
/// DACL granting read or write to anyone but the owner, the current user,
/// SYSTEM and Administrators (deny entries are not weighed).
pub fn check_key_permissions(path: &Path) -> Result<()> {
    imp::check_key_permissions(path)
}

/// Creates a new file only its owner can open (mode 600 on Unix; a
/// protected owner-and-SYSTEM DACL set at creation on Windows). Fails with
/// `AlreadyExists` when the name is taken.
pub fn create_private(path: &Path) -> io::Result<File> {
    imp::create_private(path)
}

/// Moves `from` to `to`, failing with `AlreadyExists` when `to` exists, so
/// a name already taken is an answer, never overwritten. Unix:
/// `renameat2(RENAME_NOREPLACE)` on Linux, `renameatx_np(RENAME_EXCL)` on
/// macOS, else (or where the file system refuses it) a hard link then
/// unlink. Windows: `MoveFileExW` without
/// replace.
pub fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    imp::rename_no_replace(from, to)
}

/// True for failures worth retrying later: a handle held for a while by a
/// scanner or sync client (Unix: `EACCES`, `EPERM`, `EBUSY`, `EAGAIN`,
/// `ETXTBSY`; Windows: sharing and lock violations, access denied).
pub fn is_transient(e: &io::Error) -> bool {
    imp::is_transient(e)
}

/// Flushes a directory's entries to disk, best effort (errors are
/// ignored). A no-op on Windows, where NTFS journals a rename before it
/// returns.
pub fn sync_dir(dir: &Path) {
    imp::sync_dir(dir)
}

/// Creates a new file for writing, failing (`AlreadyExists`) if anything,
/// a symbolic link included, already has the name: a planted link is never
/// followed (`O_NOFOLLOW` on Unix, `FILE_FLAG_OPEN_REPARSE_POINT` on
/// Windows).
pub fn create_new_no_follow(path: &Path) -> io::Result<File> {
    imp::create_new_no_follow(path)
}

/// Opens a file for reading without following a final symbolic link (an
/// error [`is_link_error`] recognises). Unix also never blocks on a FIFO;
/// Windows refuses links and junctions but opens cloud placeholders
/// normally, so the sync engine can supply their content.
pub fn open_no_follow(path: &Path) -> io::Result<File> {
    imp::open_no_follow(path)
}

/// True when [`open_no_follow`] failed because the path was a link
/// (`ELOOP` on Unix, `ERROR_STOPPED_ON_SYMLINK` on Windows).
pub fn is_link_error(e: &io::Error) -> bool {
    imp::is_link_error(e)
}

/// This machine's host name, if it has one (`gethostname` on Unix; the DNS
/// host label, or `COMPUTERNAME`, on Windows).
pub fn hostname() -> Option<String> {
    imp::hostname()
}

// ---------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------

/// Lowers the calling thread's scheduling priority, best effort:
/// bookkeeping that may wait must not take a core from the job just
/// started. Nice 10 for the thread on Linux (a no-op on other Unixes);
/// below-normal priority on Windows.
pub fn lower_thread_priority() {
    imp::lower_thread_priority()
}

/// Makes an open with `options` return at once on a FIFO with no writer
/// (`O_NONBLOCK` on Unix; Windows has no such wait). Reads of a regular
/// file ignore it.
pub fn never_block_on_open(options: &mut std::fs::OpenOptions) {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(options, imp::NONBLOCK);
    #[cfg(not(unix))]
    let _ = options;
}

/// Tunes the memory allocator for a long-running listener, best effort.
/// With glibc: no "fast bins". Their chunks are merged back by a sweep
/// before any request of a kilobyte or more, which a job's end and start
/// make several of; without them, small blocks are reused from the
/// per-thread cache and the ordinary bins alone. Elsewhere a no-op.
pub fn tune_allocator() {
    imp::tune_allocator()
}

/// True when a job's spawn failed for a shortage that passes: the
/// system's or the user's process limit (`EAGAIN` on Unix, as a shell's
/// `fork: retry` sees it); on Windows, exhausted system resources, and the
/// internal error Wine's process creation gives now and then under load.
/// Such a spawn is tried again ([`crate::runner::SPAWN_RETRIES`]); nothing
/// ran, so the job still runs at most once.
pub fn spawn_may_pass(e: &io::Error) -> bool {
    imp::spawn_may_pass(e)
}

/// What a job's process is started from.
pub struct JobSpawn<'a> {
    /// The program and its arguments (the program looked up in `PATH`
    /// when it has no `/`).
    pub argv: &'a [String],
    /// Where it starts; the listener's own working directory when None.
    pub cwd: Option<&'a Path>,
    /// Variables added to the listener's environment, replacing any of
    /// the same name.
    pub env: &'a [(String, String)],
    /// Under a keeper of its own (Linux; ignored elsewhere): a child
    /// subreaper that is the main process's parent, so every orphan of the
    /// job stays below it. For jobs beside others, whose orphans would
    /// otherwise mix at the listener.
    pub keeper: bool,
    /// The pauses before each new try of a start that failed for a
    /// shortage that passes ([`spawn_may_pass`]): a keeper makes them
    /// itself, reporting each ([`await_start`]).
    pub pauses: &'a [std::time::Duration],
}

// A job's started process: `id()`, `kill()`, `wait()` (which alone reaps
// it) and its `stdout`/`stderr` pipes, taken by `JobIo::new`. std's `Child`
// on Windows; on Unix a process of our own, as Linux does not start it
// through `std::process`.
pub use imp::JobProcess;

/// Starts a job's process ready for [`Tree::adopt`]: standard input from
/// the null device, standard output and error piped; on Unix in a process
/// group of its own, on Windows in a console process group and suspended,
/// so it joins its Job Object before it runs. Linux starts it with a
/// `vfork`-style clone of its own, with the listener's environment taken
/// once as C strings: `std::process::Command` copies the whole environment
/// into a map, then into new C strings, at every spawn that adds a
/// variable, and every job gets six (about 40 µs a job in a serial drain,
/// bench/README.md); and glibc's `posix_spawn` resets all 64 signals in
/// the child where five have handlers (about 27 µs more).
pub fn spawn_job(s: &JobSpawn<'_>) -> io::Result<JobProcess> {
    imp::spawn_job(s)
}

/// Waits until the job's main process has started, for a job started
/// under a keeper: the spawn returns once the keeper is forked, so the
/// thread that spawns never waits for the main process's exec; the job's
/// own thread waits here instead. The error is the one the main process's
/// start met, after the keeper's own tries (each said to `retrying`, with
/// its error and the number of tries made so far). At once otherwise.
pub fn await_start(
    child: &JobProcess,
    retrying: &mut dyn FnMut(&io::Error, usize),
) -> io::Result<()> {
    imp::await_start(child, retrying)
}

/// std's command for `s`, set up as [`spawn_job`] says.
fn std_command(s: &JobSpawn<'_>) -> Command {
    let mut cmd = Command::new(&s.argv[0]);
    cmd.args(&s.argv[1..])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    if let Some(cwd) = s.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in s.env {
        cmd.env(k, v);
    }
    imp::prepare_job(&mut cmd);
    cmd
}

/// Kills the tree recorded under `id` ([`Tree::id`]) at once, as a second
/// Ctrl-C must; unknown ids are ignored. Unix: SIGKILL to the leader, by
/// its pid while it is unreaped, and to each process a walk of its tree
/// finds. Windows: `TerminateJobObject` on the live job with that leader.
pub fn kill_tree_now(id: i32) {
    imp::kill_tree_now(id)
}

/// Reaps the exited orphans adopted as subreaper (Linux), never the leader
/// of a job running beside others ([`Tree::adopt`] with a mark), which its
/// owner still waits for: one job's end must not reap another's leader
/// and free its group id. Call it after a job beside others ended. A no-op
/// where orphans are not ours (Windows).
pub fn reap_orphans_beside() {
    #[cfg(unix)]
    unix::reap_orphans_beside();
}

/// The name of a signal number, for result details (`SIGTERM`, or
/// `signal N` for others; always the latter on Windows, which has none).
pub fn signal_name(sig: i32) -> String {
    imp::signal_name(sig)
}

/// The signal that ended a process, if one did; always `None` on Windows,
/// where processes end with an exit code.
pub fn exit_signal(status: &ExitStatus) -> Option<i32> {
    imp::exit_signal(status)
}

/// Sends `sig` to single processes (a job's escaped descendants), never to
/// a pid ≤ 1. Windows: Kill terminates each; Term does nothing, as a process
/// that leads no console group of ours has no graceful stop.
pub fn signal_pids(pids: &[i32], sig: Signal) {
    imp::signal_pids(pids, sig)
}

/// Makes the listener the keeper of everything its jobs start, best effort:
/// on Linux the child subreaper, so processes that leave the job's group
/// stay below it; on Windows a kill-on-close Job Object around the listener,
/// so its death, however it dies, ends its jobs. A no-op on other Unixes
/// (macOS has no subreaper).
pub fn become_subreaper() {
    imp::become_subreaper()
}

/// After a crash, the live processes of the job a dead listener was
/// running, for recovery to stop. Linux and macOS: processes whose
/// environment holds every entry of `Orphaned::env` (`/proc/<pid>/environ`;
/// `sysctl(KERN_PROCARGS2)` on macOS), and, unless the recorded pid was
/// visibly reused, the recorded group and every process below that pid (a
/// job's keeper holds all of its orphans); other Unixes: the recorded group. Windows: normally none
/// (the kill-on-close job ended them), else the recorded leader if it is
/// the same process (started when the job did).
pub fn orphans(o: &Orphaned<'_>) -> Vec<i32> {
    imp::orphans(o)
}

/// True while process `pid` exists and has not exited (false for pids ≤ 1
/// on Unix, ≤ 0 on Windows).
pub fn is_alive(pid: i32) -> bool {
    imp::is_alive(pid)
}

/// Asks a child process to stop as a service manager would: SIGTERM on
/// Unix; `TerminateProcess` on Windows, which has no polite stop for a
/// console process outside a group of its own.
pub fn terminate(child: &mut Child) {
    imp::terminate(child)
}

/// Which output stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Out = 0,
    /// Standard error.
    Err,
}

/// What [`JobIo::next`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum IoEvent {
    /// This many bytes of a stream are at the start of the buffer.
    Output(Stream, usize),
    /// The job's main process exited (reported once; it is not reaped).
    Exited,
    /// The bell rang: a control message may be waiting.
    Bell,
    /// The last output stream closed after the main process exited.
    Closed,
    /// The deadline passed.
    Timeout,
}

/// What a dead listener's journal says about the job it ran, for
/// [`orphans`] to find what is left of it.
#[derive(Clone, Debug)]
pub struct Orphaned<'a> {
    /// `NAME=value` entries of the environment the listener gave the job
    /// and its descendants inherit: a process carrying all of them is the
    /// job's (where the platform can read another process's environment).
    pub env: &'a [String],
    /// The job's leader pid (its process group on Unix); 0 if never spawned.
    pub group: i32,
    /// When the job started.
    pub started: std::time::SystemTime,
}

// ---------------------------------------------------------------------------
// Cloud folders
// ---------------------------------------------------------------------------

/// What a cloud sync engine says about keeping a folder's files on this
/// device, for `doctor`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Residency {
    /// Marked "Always keep on this device": its files stay downloaded.
    Pinned,
    /// Marked online-only, or its content is fetched when opened: a
    /// listener started without a user session (Task Scheduler) may be
    /// unable to read it.
    OnlineOnly,
    /// No mark either way: a plain folder, or a cloud folder left to the
    /// engine's default.
    Unmarked,
    /// The platform has no such marks (every Unix).
    Unknown,
}

/// The residency of the folder at `path` (links followed: the root is a
/// folder the user named). Windows: from its attributes, read without
/// opening its content so nothing is downloaded: `FILE_ATTRIBUTE_PINNED`
/// is [`Residency::Pinned`]; `UNPINNED`, `RECALL_ON_OPEN` or
/// `RECALL_ON_DATA_ACCESS` is [`Residency::OnlineOnly`]. Unix: always
/// [`Residency::Unknown`]. The marks come from the Cloud Files API, which
/// Wine does not provide, so only a real Windows machine with OneDrive can
/// show the first two answers.
pub fn residency(path: &Path) -> Residency {
    imp::residency(path)
}
