//! Process trees and their stops, signals, the listener as keeper of what
//! its jobs start, and finding a dead listener's orphans.
//!
//! This file declares the interface. Windows implements it in
//! `windows.rs` (Job Objects). Unix implements it in `tree.rs` (trees and
//! signals) and `orphans.rs` (crash recovery), which Linux, macOS and other
//! Unixes share; they ask the compiled-in leaf for the process table:
//! `linux.rs` (`/proc`) or `macos.rs` (`libproc`). `running.rs` is the
//! registry of running jobs and the exit checks the spawn and the wait use
//! too. The leaves never name one another.

use std::process::{Child, ExitStatus};

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(unix)]
mod orphans;
#[cfg(any(target_os = "macos", test))]
mod procargs;
#[cfg(unix)]
pub(in crate::platform) mod running;
#[cfg(unix)]
pub(in crate::platform) mod tree;
#[cfg(unix)]
use tree as imp;
#[cfg(windows)]
mod windows;
#[cfg(unix)]
use orphans as recovery;
#[cfg(windows)]
use windows as imp;
#[cfg(windows)]
use windows as recovery;

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
    tree::reap_orphans_beside();
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
    recovery::orphans(o)
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

/// What a dead listener's journal says about the job it ran, for
/// [`orphans()`] to find what is left of it.
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

/// One row of the process table (Unix), as the leaves read it.
#[cfg(unix)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::platform) struct Proc {
    pub(in crate::platform) pid: i32,
    pub(in crate::platform) ppid: i32,
    pub(in crate::platform) pgrp: i32,
}
