//! Starting a job's process. This file declares the interface; the
//! compiled-in leaf implements it: `linux.rs` (a `vfork`-style clone of
//! our own, and the keeper of a job beside others), `unix.rs` (through
//! `std::process`: other Unixes, and Linux's fallback) or `windows.rs`.
//! The Unix process they return, and the keeper's reports about it, are
//! `process.rs`, which the Unix leaves share; the leaves never name one
//! another, and which spawn serves is decided here.

use std::io;
use std::path::Path;
use std::process::Command;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(unix)]
mod process;
#[cfg(all(test, target_os = "linux"))]
mod tests;
#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as imp;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as imp;
#[cfg(all(windows, test))]
pub(in crate::platform) use windows::prepare_job;

/// True when a job's spawn failed for a shortage that passes: the
/// system's or the user's process limit (`EAGAIN` on Unix, as a shell's
/// `fork: retry` sees it); on Windows, exhausted system resources, and the
/// internal error Wine's process creation gives now and then under load.
/// Such a spawn is tried again ([`crate::engine::runner::SPAWN_RETRIES`]); nothing
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
#[cfg(unix)]
pub use process::JobProcess;
#[cfg(unix)]
pub(in crate::platform) use process::Kept;
#[cfg(windows)]
pub use windows::JobProcess;

/// Starts a job's process ready for
/// [`Tree::adopt`](crate::platform::Tree::adopt): standard input from the
/// null device, standard output and error piped; on Unix in a process
/// group of its own, on Windows in a console process group and suspended,
/// so it joins its Job Object before it runs. Linux starts it with a
/// `vfork`-style clone of its own, with the listener's environment taken
/// once as C strings: `std::process::Command` copies the whole environment
/// into a map, then into new C strings, at every spawn that adds a
/// variable, and every job gets six (about 40 µs a job in a serial drain,
/// bench/README.md); and glibc's `posix_spawn` resets all 64 signals in
/// the child where five have handlers (about 27 µs more).
pub fn spawn_job(s: &JobSpawn<'_>) -> io::Result<JobProcess> {
    #[cfg(target_os = "linux")]
    if let Some(started) = linux::spawn(s) {
        return started;
    }
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
