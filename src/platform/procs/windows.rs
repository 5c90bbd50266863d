//! Windows process trees: a Job Object per job so its whole process tree
//! stops together, and the listener itself in a kill-on-close job so its
//! death takes its jobs with it.
//!
//! Process control, in Unix terms:
//! - process group → the job is spawned suspended with
//!   `CREATE_NEW_PROCESS_GROUP`, put in a Job Object of its own (no
//!   breakaway allowed), then resumed, so nothing it starts can slip out;
//! - SIGTERM → `CTRL_BREAK_EVENT` to the job's console process group, when
//!   the listener has a console the job shares; otherwise there is no
//!   graceful stop and the forced one follows after the grace;
//! - SIGKILL → `TerminateJobObject`, which ends every process of the tree;
//! - `waitid(WNOWAIT)` → waiting on a process handle, which never reaps: the
//!   pid stays reserved while any handle to the process is open;
//! - subreaper → the listener's own job with
//!   `JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE`; each job's Job Object nests
//!   inside it (Windows 8 and later) and is kill-on-close too.
//!
//! The ids the rest of the crate sees (`i32`) are process ids.

use std::io;
use std::os::windows::io::AsRawHandle;
use std::sync::{Mutex, OnceLock};

use windows_sys::Win32::Foundation::{
    ERROR_ACCESS_DENIED, ERROR_MORE_DATA, FILETIME, HANDLE, WAIT_OBJECT_0, WAIT_TIMEOUT,
};
use windows_sys::Win32::System::Console::{
    CTRL_BREAK_EVENT, GenerateConsoleCtrlEvent, GetConsoleProcessList,
};
use windows_sys::Win32::System::Diagnostics::ToolHelp::{
    CreateToolhelp32Snapshot, TH32CS_SNAPTHREAD, THREADENTRY32, Thread32First, Thread32Next,
};
use windows_sys::Win32::System::JobObjects::{
    AssignProcessToJobObject, CreateJobObjectW, JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE,
    JOBOBJECT_BASIC_PROCESS_ID_LIST, JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
    JobObjectBasicProcessIdList, JobObjectExtendedLimitInformation, QueryInformationJobObject,
    SetInformationJobObject, TerminateJobObject,
};
use windows_sys::Win32::System::Threading::{
    GetCurrentProcess, GetProcessTimes, INFINITE, OpenProcess, OpenThread,
    PROCESS_QUERY_LIMITED_INFORMATION, PROCESS_SYNCHRONIZE, PROCESS_TERMINATE, ResumeThread,
    THREAD_SUSPEND_RESUME, TerminateProcess, WaitForSingleObject,
};

use super::Signal;
use crate::platform::win32::Handle;

/// The exit code a forced stop leaves, as `taskkill /F` does.
const KILLED_EXIT_CODE: u32 = 1;

/// its entry before closing the handle.
/// The Job Objects of running jobs by leader pid, for [`kill_tree_now`]
/// (which only has the id). Raw handle values: the owning [`Tree`] removes
/// its entry before closing the handle.
static LIVE: Mutex<Vec<(i32, usize)>> = Mutex::new(Vec::new());

/// The process tree of one job: its main process and everything started
/// under it, all held in one Job Object that allows no breakaway.
#[derive(Debug)]
pub struct Tree {
    leader: i32,
    /// The leader's process handle (SYNCHRONIZE): waits on it never reap,
    /// and while it is open the pid cannot be reused.
    process: Handle,
    job: Handle,
}

impl Tree {
    /// Takes charge of a just-spawned, still suspended job process (see
    /// [`spawn_job`](super::spawn_job)): creates its Job Object, assigns it, resumes it.
    /// Each job has a Job Object of its own, so jobs running beside each
    /// other need no `mark` to be told apart.
    pub fn adopt(child: &std::process::Child, mark: Option<String>) -> io::Result<Tree> {
        let _ = mark;
        let leader = i32::try_from(child.id()).map_err(|_| io::Error::other("pid out of range"))?;
        let job = new_job()?;
        // SAFETY: both handles are valid; std's child handle has all access.
        if unsafe { AssignProcessToJobObject(job.0, child.as_raw_handle()) } == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the pid is our unreaped child, so it names that process.
        let process = Handle::new(unsafe {
            OpenProcess(
                PROCESS_SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION,
                0,
                child.id(),
            )
        })?;
        resume_threads(child.id())?;
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((leader, job.0 as usize));
        Ok(Tree {
            leader,
            process,
            job,
        })
    }

    /// The id recorded in the journal: the leader's pid.
    pub fn id(&self) -> i32 {
        self.leader
    }

    /// A blocking wait for the leader's exit that does not reap it, to run
    /// on a thread of its own.
    pub fn exit_waiter(&self) -> impl FnOnce() + Send + 'static {
        let handle = self.process.try_clone();
        move || {
            if let Ok(h) = handle {
                // SAFETY: a process handle with SYNCHRONIZE, owned here.
                unsafe { WaitForSingleObject(h.0, INFINITE) };
            }
        }
    }

    /// True once the leader has exited.
    pub fn leader_exited(&self) -> bool {
        // SAFETY: a process handle with SYNCHRONIZE.
        unsafe { WaitForSingleObject(self.process.0, 0) == WAIT_OBJECT_0 }
    }

    /// Signals the whole tree: Term is CTRL_BREAK to the job's console
    /// process group (see `has_console`); Kill ends every process in the
    /// Job Object.
    pub fn signal(&self, sig: Signal) {
        match sig {
            Signal::Term => {
                // Without a console there is no graceful stop to send; a
                // failed send is the same. The runner's forced stop follows
                // after the grace either way, and reports it.
                if has_console() {
                    // SAFETY: the leader's pid is its process group id.
                    unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, self.leader as u32) };
                }
            }
            Signal::Kill => {
                // SAFETY: a valid Job Object handle.
                unsafe { TerminateJobObject(self.job.0, KILLED_EXIT_CODE) };
            }
        }
    }

    /// Live processes of the tree other than the leader.
    pub fn others(&self) -> Vec<i32> {
        job_pids(&self.job)
            .into_iter()
            .filter(|&p| p != self.leader)
            .collect()
    }

    /// Called after the leader was reaped: closing the kill-on-close Job
    /// Object ends anything still in it.
    pub fn release(self) {}
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Forget the handle before it closes, so `kill_tree_now` never uses
        // a stale one.
        LIVE.lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|&(id, _)| id != self.leader);
    }
}

/// Kills the tree recorded under `id` at once (a second Ctrl-C).
pub(super) fn kill_tree_now(id: i32) {
    let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    for &(_, job) in live.iter().filter(|&&(leader, _)| leader == id) {
        // SAFETY: the handle stays open while its entry is listed, and the
        // list is locked.
        unsafe { TerminateJobObject(job as HANDLE, KILLED_EXIT_CODE) };
    }
}

/// Name of a signal number, for result details. Windows processes end with
/// an exit code, never a signal, so this is only a fallback.
pub(super) fn signal_name(sig: i32) -> String {
    format!("signal {sig}")
}

/// The signal that ended a process: never one on Windows.
pub(super) fn exit_signal(_status: &std::process::ExitStatus) -> Option<i32> {
    None
}

/// Stops single processes: Kill terminates each; Term does nothing, as a
/// process that leads no console group of ours has no graceful stop (the
/// caller's Kill follows).
pub(super) fn signal_pids(pids: &[i32], sig: Signal) {
    if sig != Signal::Kill {
        return;
    }
    for &pid in pids.iter().filter(|&&p| p > 0) {
        // SAFETY: OpenProcess either fails or gives a handle we own.
        if let Ok(h) = Handle::new(unsafe { OpenProcess(PROCESS_TERMINATE, 0, pid as u32) }) {
            // SAFETY: a process handle with PROCESS_TERMINATE.
            unsafe { TerminateProcess(h.0, KILLED_EXIT_CODE) };
        }
    }
}

/// The listener's own Job Object, kept open for the life of the process.
static LISTENER_JOB: OnceLock<Option<Handle>> = OnceLock::new();

/// Puts this process (the listener) in a kill-on-close Job Object: when it
/// dies, however it dies, the system closes the last handle and ends every
/// job it started. Best effort, as on Unix: on failure the listener runs
/// without that guarantee. Each job's own Job Object nests inside this one.
pub(super) fn become_subreaper() {
    LISTENER_JOB.get_or_init(|| {
        let job = new_job().ok()?;
        // SAFETY: a valid Job Object and our own pseudo process handle.
        let ok = unsafe { AssignProcessToJobObject(job.0, GetCurrentProcess()) };
        (ok != 0).then_some(job)
    });
}

/// After a crash, the live processes of the job that was running. On
/// Windows there are normally none: a job's processes all sit in its
/// kill-on-close Job Object, whose only handle the listener held, so the
/// system ended them when the listener died. What is left to check is the
/// recorded leader itself, and only if it is the same process (started when
/// the job did), never a stranger that reused the pid.
pub(super) fn orphans(o: &super::Orphaned<'_>) -> Vec<i32> {
    if o.group > 0 && is_alive(o.group) && started_near(o.group, o.started) {
        vec![o.group]
    } else {
        Vec::new()
    }
}

/// True when process `pid` was created within a few seconds of `when`.
fn started_near(pid: i32, when: std::time::SystemTime) -> bool {
    // SAFETY: OpenProcess either fails or gives a handle we own.
    let Ok(h) =
        Handle::new(unsafe { OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32) })
    else {
        return false;
    };
    let zero = FILETIME::default();
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: a process handle with PROCESS_QUERY_LIMITED_INFORMATION.
    if unsafe { GetProcessTimes(h.0, &mut created, &mut exited, &mut kernel, &mut user) } == 0 {
        return false;
    }
    // FILETIME counts 100 ns since 1601-01-01, 11 644 473 600 s before 1970.
    let ticks = (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime);
    let Some(unix_ticks) = ticks.checked_sub(11_644_473_600 * 10_000_000) else {
        return false;
    };
    let start = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(unix_ticks * 100);
    let gap = start
        .duration_since(when)
        .or_else(|_| when.duration_since(start));
    gap.is_ok_and(|g| g <= std::time::Duration::from_secs(5))
}

/// True while process `pid` exists and has not exited.
pub(super) fn is_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: OpenProcess either fails or gives a handle we own.
    let h = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid as u32) };
    match Handle::new(h) {
        // SAFETY: a process handle with SYNCHRONIZE.
        Ok(h) => unsafe { WaitForSingleObject(h.0, 0) == WAIT_TIMEOUT },
        // It exists, but is not ours to open.
        Err(e) => e.raw_os_error() == Some(ERROR_ACCESS_DENIED as i32),
    }
}

/// Stops a child process (the demo's listener). Windows has no polite
/// signal for a console process outside a group of its own, so this is
/// `TerminateProcess`, as Task Scheduler's "End" does; the listener's
/// kill-on-close job takes its running job with it, and its next start
/// records that job as interrupted.
pub(super) fn terminate(child: &mut std::process::Child) {
    let _ = child.kill();
}

/// A new, unnamed kill-on-close Job Object. Its handle is not inheritable,
/// so only this process holds it: when this process ends, the job ends.
fn new_job() -> io::Result<Handle> {
    // SAFETY: default security (not inheritable), no name.
    let job = Handle::new(unsafe { CreateJobObjectW(std::ptr::null(), std::ptr::null()) })?;
    let mut info = JOBOBJECT_EXTENDED_LIMIT_INFORMATION::default();
    info.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
    // SAFETY: `info` is valid for its size.
    let ok = unsafe {
        SetInformationJobObject(
            job.0,
            JobObjectExtendedLimitInformation,
            (&info as *const JOBOBJECT_EXTENDED_LIMIT_INFORMATION).cast(),
            size_of::<JOBOBJECT_EXTENDED_LIMIT_INFORMATION>() as u32,
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(job)
}

/// The pids of the live processes in a Job Object.
fn job_pids(job: &Handle) -> Vec<i32> {
    // The list is two u32 counts, then the pids as usizes.
    let header =
        std::mem::offset_of!(JOBOBJECT_BASIC_PROCESS_ID_LIST, ProcessIdList) / size_of::<usize>();
    let mut room = 64usize;
    loop {
        let mut buf = vec![0usize; header + room];
        let mut len = 0u32;
        // SAFETY: the buffer is valid for its byte length and aligned for
        // the list structure.
        let ok = unsafe {
            QueryInformationJobObject(
                job.0,
                JobObjectBasicProcessIdList,
                buf.as_mut_ptr().cast(),
                (buf.len() * size_of::<usize>()) as u32,
                &mut len,
            )
        };
        let err = io::Error::last_os_error();
        // SAFETY: the buffer starts with the list header.
        let list = unsafe { &*(buf.as_ptr() as *const JOBOBJECT_BASIC_PROCESS_ID_LIST) };
        let assigned = list.NumberOfAssignedProcesses as usize;
        if assigned > room && room < 1 << 16 {
            // A full buffer answers ERROR_MORE_DATA: make room, ask again.
            room = assigned + 16;
            continue;
        }
        if ok == 0 && err.raw_os_error() != Some(ERROR_MORE_DATA as i32) {
            return Vec::new();
        }
        let n = (list.NumberOfProcessIdsInList as usize).min(room);
        return buf[header..header + n].iter().map(|&p| p as i32).collect();
    }
}

/// Resumes every thread of a process started with `CREATE_SUSPENDED` (std
/// does not hand out its main thread's handle).
fn resume_threads(pid: u32) -> io::Result<()> {
    // SAFETY: a snapshot of all threads; the handle is ours.
    let snap = Handle::new(unsafe { CreateToolhelp32Snapshot(TH32CS_SNAPTHREAD, 0) })?;
    let mut entry = THREADENTRY32 {
        dwSize: size_of::<THREADENTRY32>() as u32,
        ..Default::default()
    };
    let mut resumed = 0;
    // SAFETY: `entry` is valid with dwSize set.
    let mut more = unsafe { Thread32First(snap.0, &mut entry) } != 0;
    while more {
        if entry.th32OwnerProcessID == pid {
            // SAFETY: OpenThread either fails or gives a handle we own.
            let t =
                Handle::new(unsafe { OpenThread(THREAD_SUSPEND_RESUME, 0, entry.th32ThreadID) })?;
            // SAFETY: a thread handle with THREAD_SUSPEND_RESUME.
            if unsafe { ResumeThread(t.0) } == u32::MAX {
                return Err(io::Error::last_os_error());
            }
            resumed += 1;
        }
        // SAFETY: as for Thread32First.
        more = unsafe { Thread32Next(snap.0, &mut entry) } != 0;
    }
    if resumed == 0 {
        return Err(io::Error::other("no thread of the new process to resume"));
    }
    Ok(())
}

/// True when this process is attached to a console, which the jobs it
/// starts then share: only then can CTRL_BREAK reach them. (Under Wine 8
/// GenerateConsoleCtrlEvent fails even then, so there the stop is always
/// the forced one after the grace.)
fn has_console() -> bool {
    let mut pids = [0u32; 4];
    // SAFETY: the buffer is valid for its length.
    unsafe { GetConsoleProcessList(pids.as_mut_ptr(), pids.len() as u32) != 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::process::Command;
    use std::time::{Duration, Instant};

    use windows_sys::Win32::System::JobObjects::IsProcessInJob;

    fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
        let until = Instant::now() + limit;
        while !cond() {
            if Instant::now() > until {
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    }

    /// `cmd` that starts two more processes: a tree of three.
    fn spawn_tree() -> (std::process::Child, Tree) {
        let mut cmd = Command::new("cmd");
        cmd.args([
            "/C",
            "start /B ping -n 30 127.0.0.1 >nul & ping -n 30 127.0.0.1 >nul",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        // Nothing of the test's own: a process that outlived its tree would
        // hold the test runner's output open.
        .stderr(std::process::Stdio::null());
        crate::platform::spawn::prepare_job(&mut cmd);
        let child = cmd.spawn().unwrap();
        let tree = Tree::adopt(&child, None).unwrap();
        (child, tree)
    }

    #[test]
    fn the_whole_job_object_stops_together() {
        // As in the listener: the job's Job Object nests in ours.
        become_subreaper();
        let listener_job = LISTENER_JOB.get().and_then(Option::as_ref);
        let listener_job = listener_job.expect("the test process joined a kill-on-close job");
        let (mut child, tree) = spawn_tree();
        for job in [listener_job, &tree.job] {
            let mut inside = 0;
            // SAFETY: valid process and Job Object handles.
            let ok = unsafe { IsProcessInJob(child.as_raw_handle(), job.0, &mut inside) };
            assert!(
                ok != 0 && inside != 0,
                "the job's process is in both, nested"
            );
        }
        // `start /B` may pass through a short-lived helper process first
        // (Wine's does): wait for a moment when the whole tree is up.
        let mut others = Vec::new();
        assert!(
            wait_until(Duration::from_secs(20), || {
                others = tree.others();
                others.len() >= 2 && others.iter().all(|&p| is_alive(p))
            }),
            "the tree never grew: {others:?}"
        );
        assert!(!tree.leader_exited());
        let started = Instant::now();
        tree.signal(Signal::Kill);
        tree.exit_waiter()();
        assert!(tree.leader_exited());
        assert!(wait_until(Duration::from_secs(5), || tree
            .others()
            .is_empty()));
        assert!(others.iter().all(|&p| !is_alive(p)), "{others:?} live on");
        assert!(started.elapsed() < Duration::from_secs(5));
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(KILLED_EXIT_CODE as i32));
        tree.release();
    }

    #[test]
    fn kill_tree_now_finds_the_tree_by_its_id() {
        let (mut child, tree) = spawn_tree();
        assert!(wait_until(Duration::from_secs(20), || !tree
            .others()
            .is_empty()));
        kill_tree_now(tree.id());
        tree.exit_waiter()();
        assert!(wait_until(Duration::from_secs(5), || tree
            .others()
            .is_empty()));
        child.wait().unwrap();
        let id = tree.id();
        drop(tree);
        let live = LIVE.lock().unwrap();
        assert!(live.iter().all(|&(l, _)| l != id), "forgotten when dropped");
    }

    #[test]
    fn releasing_a_tree_ends_what_is_left_in_it() {
        let (mut child, tree) = spawn_tree();
        assert!(wait_until(Duration::from_secs(20), || tree.others().len() >= 2));
        let others = tree.others();
        tree.release();
        assert!(wait_until(Duration::from_secs(5), || others
            .iter()
            .all(|&p| !is_alive(p))));
        child.wait().unwrap();
    }

    #[test]
    fn an_orphan_is_the_recorded_leader_only_if_it_started_with_the_job() {
        let mut child = Command::new("ping")
            .args(["-n", "30", "127.0.0.1"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let o = |started| super::super::Orphaned {
            env: &[],
            group: pid,
            started,
        };
        let now = std::time::SystemTime::now();
        assert_eq!(orphans(&o(now)), vec![pid]);
        // The pid now names a process that started long after the job: a
        // stranger, never to be stopped.
        assert!(orphans(&o(now - Duration::from_secs(3600))).is_empty());
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(orphans(&o(now)).is_empty());
        assert!(!is_alive(pid));
    }
}
