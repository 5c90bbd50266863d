//! The running jobs of this Unix process, and their exits looked at
//! without reaping: shared by the process trees, the spawn and the wait.

use std::io;

/// A running job's tree, as every walk and stop needs it from any thread.
#[derive(Debug)]
pub(in crate::platform) struct Live {
    pub(in crate::platform) leader: i32,
    /// The thread that spawned it (whose `children` list holds it).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(in crate::platform) spawner: i32,
    /// Its mark, when it runs beside others (see [`Tree`](super::Tree)).
    pub(in crate::platform) mark: Option<String>,
    /// True when the leader is a keeper (see [`Kept`](crate::platform::spawn::Kept)).
    pub(in crate::platform) keeper: bool,
}

/// The jobs running now: a walk for one job passes the others' leaders
/// by, orphans are reaped without reaping one of them, and a second
/// Ctrl-C finds each tree from the signal handler's thread. A leader
/// leaves the list, under its lock, as its owner reaps it: a pid listed
/// here is still that leader's, so signalling it can never reach a
/// process that took the pid over.
static LIVE: std::sync::Mutex<Vec<Live>> = std::sync::Mutex::new(Vec::new());

pub(in crate::platform) fn live() -> std::sync::MutexGuard<'static, Vec<Live>> {
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// The leaders (or keepers) of the jobs running beside others (slots).
pub(in crate::platform) fn leaders_beside() -> Vec<i32> {
    live()
        .iter()
        .filter(|l| l.mark.is_some() || l.keeper)
        .map(|l| l.leader)
        .collect()
}

/// This process's id, asked once: a job's end looks for its processes
/// with it, and each ask is a system call. (The listener never forks a
/// child that goes on running its code.)
pub(in crate::platform) fn own_pid() -> i32 {
    static PID: std::sync::OnceLock<i32> = std::sync::OnceLock::new();
    *PID.get_or_init(|| std::process::id() as i32)
}

/// The calling thread's id (its pid where threads have none of their own),
/// asked once per thread.
pub(in crate::platform) fn thread_id() -> i32 {
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

/// Waits until our child `pid`, whose pidfd just reported its exit, can
/// be waited for (it is not reaped). The pidfd can report the exit a moment
/// before the kernel shows the zombie to `waitid`; a tree walk in that
/// moment would find the leader still alive and walk its `/proc` entries
/// (a third of a serial drain's jobs did). Once the zombie shows, every
/// child it had is re-parented to us, as for any exited leader.
#[cfg(target_os = "linux")]
pub(in crate::platform) fn await_zombie(pid: i32) {
    // It blocks only until the exit the pidfd reported is complete.
    while let Err(e) = peek_exit(pid, 0) {
        if e.kind() != io::ErrorKind::Interrupted {
            return;
        }
    }
}

/// True when our child `pid` has exited (it is not reaped).
pub(in crate::platform) fn has_exited(pid: i32) -> bool {
    peek_exit(pid, libc::WNOHANG).is_ok_and(|exited| exited)
}

/// `waitid` on our child `pid` for its exit, leaving it unreaped
/// (`WNOWAIT`), with `flags` added: true when it has exited.
pub(in crate::platform) fn peek_exit(pid: i32, flags: libc::c_int) -> io::Result<bool> {
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
