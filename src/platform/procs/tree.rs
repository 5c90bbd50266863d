//! Unix process trees, shared by Linux, macOS and other Unixes. Nothing a
//! job started may escape its stop: every process is signalled by its pid,
//! never by a group a job could have moved into. Linux finds them through
//! the child subreaper and `/proc` (`linux.rs`); macOS through `libproc`
//! (`macos.rs`), without a subreaper; other Unixes, with no process table
//! to walk, signal the job's main process and the group it was started in.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[cfg(target_os = "linux")]
use super::linux::{descendants, marked, own_children};
use super::running::{Live, has_exited, leaders_beside, live, own_pid, thread_id};
use super::{Proc, Signal};
use crate::platform::JobProcess;
use crate::platform::spawn::Kept;

#[cfg(target_os = "linux")]
pub(super) use super::linux::{proc_row, process_table};
#[cfg(target_os = "macos")]
pub(super) use super::macos::{proc_row, process_table};

/// No process table to read (neither Linux nor macOS).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(super) fn process_table() -> Vec<Proc> {
    Vec::new()
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
    pub(in crate::platform) leader: i32,
    mark: Option<String>,
    /// Under a keeper (then `leader` is the keeper): its main process.
    pub(in crate::platform) kept: Option<Arc<Kept>>,
    /// Set once the leader is known to have exited (it stays so until it
    /// is reaped), by the tree or by the job's [`JobIo`](crate::platform::wait::JobIo): not asked again.
    pub(in crate::platform) exited: Arc<AtomicBool>,
}

impl Tree {
    /// Takes charge of a job process [`spawn_job`](crate::platform::spawn_job) just
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
pub(super) fn tree_in_table(table: &[Proc], root: i32, pgid: i32) -> Vec<i32> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
