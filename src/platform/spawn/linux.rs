//! Linux: a job's process started by a `vfork`-style `clone` of our own,
//! as `std::process` would start it (a new process group, an empty signal
//! mask, SIGPIPE back to its default, standard input from the null device,
//! output and error piped, the program searched for in the job's `PATH`;
//! its pidfd made by the clone itself, not by a `pidfd_open` after it),
//! with everything the child needs made before the clone: the listener's
//! environment as C strings once, and each place the program may be.
//!
//! Why not `posix_spawnp`: glibc's child resets every one of the 64
//! signals, two system calls each, because it cannot know which have
//! handlers. We know: the listener's handlers are all installed before its
//! first job (std's at start-up, the Ctrl-C one when it starts listening),
//! so the child resets those alone (6 system calls a job where glibc
//! makes 121). The child also runs on a stack in the spawning frame, as
//! musl's does, not on one mapped and unmapped at each spawn.
//!
//! A job beside others (listener slots) is started under a keeper
//! ([`keeper`]): a fork of the listener (a `clone` without `CLONE_VM`)
//! that makes itself a child subreaper and starts the job's main process
//! with the same vfork-style clone, in its own copy of the plan, then
//! reports on a pipe the main process's pid (or why it could not start)
//! and, later, its wait status. The serial drain never pays for it.

use std::ffi::{CString, c_char, c_int, c_void};
use std::fs::File;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::OnceLock;

use super::JobSpawn;
use super::process::{JobProcess, KEPT_EXITED, KEPT_FAILED, KEPT_RETRY, KEPT_STARTED, Kept};

/// Starts `s`, or None where `std::process` must: a listener started with
/// a standard descriptor closed (a pipe could land on 0–2, where `dup2`
/// onto itself would leave it closed at the exec), or no program at all.
pub(super) fn spawn(s: &JobSpawn<'_>) -> Option<io::Result<JobProcess>> {
    s.argv.first()?;
    let null = null_device()?;
    Some(spawn_with(s, null))
}

/// The null device, opened once (close-on-exec), for every job's standard
/// input; None when the listener's standard descriptors are not all open.
fn null_device() -> Option<&'static File> {
    static NULL: OnceLock<Option<File>> = OnceLock::new();
    NULL.get_or_init(|| {
        // SAFETY: F_GETFD only reads the descriptor's flags.
        let open = (0..=2).all(|fd| unsafe { libc::fcntl(fd, libc::F_GETFD) } != -1);
        open.then(|| File::open("/dev/null").ok()).flatten()
    })
    .as_ref()
}

/// The listener's environment as `NAME=value` strings, taken at the first
/// spawn: nothing changes it later (empty `FLEET_DISPATCH_*` variables are
/// dropped at start-up, before any thread).
fn inherited() -> &'static [CString] {
    static ENV: OnceLock<Vec<CString>> = OnceLock::new();
    ENV.get_or_init(|| {
        std::env::vars_os()
            .filter_map(|(k, v)| {
                let mut entry = k.as_bytes().to_vec();
                entry.push(b'=');
                entry.extend_from_slice(v.as_bytes());
                CString::new(entry).ok()
            })
            .collect()
    })
}

/// The signals the child sets back to their default before its exec:
/// those with a handler at the first spawn (the exec would reset them, but
/// until then a signal would run the listener's handler in the child,
/// which shares its memory), and SIGPIPE, which the listener ignores and
/// a job must not inherit ignored. Signals ignored otherwise stay ignored,
/// as with `std::process`.
fn to_default() -> &'static [c_int] {
    static SIGNALS: OnceLock<Vec<c_int>> = OnceLock::new();
    SIGNALS.get_or_init(|| {
        (1..=64)
            .filter(|&sig| {
                if sig == libc::SIGPIPE {
                    return true;
                }
                let mut now = MaybeUninit::<libc::sigaction>::zeroed();
                // SAFETY: a query only: no new action is given.
                let ok = unsafe { libc::sigaction(sig, std::ptr::null(), now.as_mut_ptr()) } == 0;
                // SAFETY: filled by the successful call (zeroed before).
                let handler = unsafe { now.assume_init() }.sa_sigaction;
                ok && handler != libc::SIG_DFL && handler != libc::SIG_IGN
            })
            .collect()
    })
}

/// True when environment entry `entry` is variable `name`.
fn is_named(entry: &CString, name: &str) -> bool {
    let entry = entry.as_bytes();
    entry.len() > name.len() && entry[name.len()] == b'=' && entry.starts_with(name.as_bytes())
}

fn c_string(text: impl Into<Vec<u8>>) -> io::Result<CString> {
    CString::new(text).map_err(|_| nul_error())
}

/// The error `std::process` gives for a NUL byte inside an argument,
/// variable or folder.
fn nul_error() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "nul byte found in provided data",
    )
}

/// C strings laid end to end in one buffer (an argv or the job's own
/// variables: one allocation, not one per entry).
#[derive(Default)]
struct CStrings {
    bytes: Vec<u8>,
    starts: Vec<usize>,
}

impl CStrings {
    /// Adds one string made of `parts`; a NUL byte in any is refused.
    fn push(&mut self, parts: &[&[u8]]) -> io::Result<()> {
        if parts.iter().any(|p| p.contains(&0)) {
            return Err(nul_error());
        }
        self.starts.push(self.bytes.len());
        for part in parts {
            self.bytes.extend_from_slice(part);
        }
        self.bytes.push(0);
        Ok(())
    }

    /// String `i` with its NUL.
    fn get(&self, i: usize) -> &[u8] {
        let end = self.starts.get(i + 1).copied().unwrap_or(self.bytes.len());
        &self.bytes[self.starts[i]..end]
    }

    /// A pointer to each string (valid while `self` is neither changed nor
    /// dropped).
    fn pointers(&self) -> impl Iterator<Item = *const c_char> + '_ {
        self.starts.iter().map(|&i| self.bytes[i..].as_ptr().cast())
    }
}

/// Each place `program` may be, NUL-terminated, in the order `execvp`
/// tries them: itself when it names a path, else each `PATH` entry (an
/// empty one meaning the working folder), `/bin:/usr/bin` without `PATH`.
fn places(name: &[u8], path: Option<&[u8]>) -> Vec<u8> {
    if name.len() == 1 || name.contains(&b'/') {
        return name.to_vec();
    }
    let path = path.unwrap_or(b"/bin:/usr/bin");
    let mut all = Vec::with_capacity(path.len() + 16 * name.len());
    for dir in path.split(|&b| b == b':') {
        if !dir.is_empty() {
            all.extend_from_slice(dir);
            all.push(b'/');
        }
        all.extend_from_slice(name);
    }
    all
}

/// A close-on-exec pipe: (read end, write end).
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills both descriptors on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors are new and ours alone.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Everything the child uses, made before the clone: it may make system
/// calls only (no allocation, no lock, no panic), since it shares the
/// listener's memory, other threads included, until its exec.
struct Plan<'a> {
    argv: *const *const c_char,
    envp: *const *const c_char,
    /// NUL-separated places to try, in order.
    places: &'a [u8],
    cwd: Option<*const c_char>,
    /// Standard input, output and error, in that order; each 3 or above.
    stdio: [RawFd; 3],
    signals: &'a [c_int],
    default: libc::sigaction,
    /// Set by the child when it fails: the error number, its exec not made.
    error: c_int,
    /// False under a keeper: the main process stays in the keeper's group.
    own_group: bool,
    /// With a keeper: its status pipe's write end, and the top of the
    /// stack the main process is cloned on from the keeper.
    keeper: Option<(RawFd, *mut c_void)>,
    /// A keeper's pauses before each new try of a start that failed with
    /// `EAGAIN`, in milliseconds.
    pauses: [u32; MAX_TRIES],
}

/// The most tries a keeper makes after the first.
const MAX_TRIES: usize = 4;

/// The child's stack (it needs a few hundred bytes), in the spawning frame:
/// the spawning thread is suspended until the child's exec or exit.
const CHILD_STACK: usize = 32 * 1024;

fn spawn_with(s: &JobSpawn<'_>, null: &File) -> io::Result<JobProcess> {
    let mut argv = CStrings::default();
    for a in s.argv {
        argv.push(&[a.as_bytes()])?;
    }
    let mut own = CStrings::default();
    for (k, v) in s.env {
        own.push(&[k.as_bytes(), b"=", v.as_bytes()])?;
    }
    let cwd = s
        .cwd
        .map(|c| c_string(c.as_os_str().as_bytes()))
        .transpose()?;
    let mut args: Vec<*const c_char> = Vec::with_capacity(s.argv.len() + 1);
    args.extend(argv.pointers());
    args.push(std::ptr::null());
    let kept = inherited()
        .iter()
        .filter(|e| !s.env.iter().any(|(k, _)| is_named(e, k)));
    let mut envp: Vec<*const c_char> = Vec::with_capacity(inherited().len() + s.env.len() + 1);
    envp.extend(kept.map(|e| e.as_ptr()));
    envp.extend(own.pointers());
    envp.push(std::ptr::null());
    // The search uses the job's own PATH when it sets one, as execvp in the
    // child would.
    let path = match s.env.iter().find(|(k, _)| k == "PATH") {
        Some((_, v)) => Some(v.as_bytes()),
        None => inherited()
            .iter()
            .find(|e| is_named(e, "PATH"))
            .map(|e| &e.as_bytes()[5..]),
    };
    let places = places(argv.get(0), path);

    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let status = if s.keeper { Some(pipe()?) } else { None };
    // SAFETY: an all-zero sigaction is SIG_DFL with no flags and an empty mask.
    let default: libc::sigaction = unsafe { MaybeUninit::zeroed().assume_init() };
    let mut plan = Plan {
        argv: args.as_ptr(),
        envp: envp.as_ptr(),
        places: &places,
        cwd: cwd.as_ref().map(|c| c.as_ptr()),
        stdio: [
            null.as_raw_fd(),
            out_write.as_raw_fd(),
            err_write.as_raw_fd(),
        ],
        signals: to_default(),
        default,
        error: 0,
        own_group: status.is_none(),
        keeper: None,
        pauses: [0; MAX_TRIES],
    };
    for (slot, pause) in plan.pauses.iter_mut().zip(s.pauses) {
        *slot = pause.as_millis().min(u32::MAX as u128) as u32;
    }
    let mut stack = MaybeUninit::<[u128; CHILD_STACK / 16]>::uninit();
    if let Some((_, write)) = &status {
        // The keeper runs on the stack's top half, in its own copy of our
        // memory; the main process on the lower half of that copy.
        // SAFETY: the middle of the stack buffer.
        let middle = unsafe { stack.as_mut_ptr().cast::<u8>().add(CHILD_STACK / 2) };
        plan.keeper = Some((write.as_raw_fd(), middle.cast()));
    }
    let (all, mut before): (u64, u64) = (!0, 0);
    // The child's pidfd, made by the clone itself (Linux 5.2+; an older
    // kernel ignores the flag and leaves -1, and the runner opens one).
    let mut pidfd: c_int = -1;
    // SAFETY: every signal is blocked around the clone, so none runs a
    // handler in the child before it resets them; the stack is ours and
    // unused until the child's exec or exit, which the clone waits for
    // (CLONE_VFORK); `plan` and all it points to outlive the child's use.
    let pid = unsafe {
        let top = stack.as_mut_ptr().cast::<u8>().add(CHILD_STACK);
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_BLOCK,
            &all,
            &mut before,
            8,
        );
        let pid = if plan.keeper.is_some() {
            // A fork, not a vfork: the keeper lives as long as the job.
            libc::clone(
                keeper,
                top.cast(),
                libc::SIGCHLD,
                std::ptr::addr_of_mut!(plan).cast(),
            )
        } else {
            libc::clone(
                child,
                top.cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                std::ptr::addr_of_mut!(plan).cast(),
                &mut pidfd as *mut c_int,
            )
        };
        let cloned = io::Error::last_os_error();
        let none: *mut u64 = std::ptr::null_mut();
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &before,
            none,
            8,
        );
        if pid < 0 {
            return Err(cloned);
        }
        pid
    };
    if let Some((read, write)) = status {
        drop(write);
        // The main process's start is the job thread's to wait for
        // (`await_start`): this one goes on at once.
        // SAFETY: F_SETFL on our own descriptor.
        unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) };
        let mut started = JobProcess::new(pid, Some(out_read.into()), Some(err_read.into()));
        started.kept = Some(std::sync::Arc::new(Kept::new(read)));
        return Ok(started);
    }
    // SAFETY: the child has exited or exec'd: `plan.error` is final.
    let error = unsafe { std::ptr::read_volatile(&plan.error) };
    let mut started = JobProcess::new(pid, Some(out_read.into()), Some(err_read.into()));
    if pidfd >= 0 {
        // SAFETY: the clone made this descriptor for us alone.
        started.exit_fd = Some(unsafe { OwnedFd::from_raw_fd(pidfd) });
        // Held until the exit is seen: one wake-up at its end (JobIo).
        started.writers = vec![out_write, err_write];
    }
    if error != 0 {
        // Reaped here: a process that never ran the job is not the job's.
        let _ = started.wait();
        return Err(io::Error::from_raw_os_error(error));
    }
    Ok(started)
}

/// The keeper of a job beside others: a child subreaper, so every orphan
/// of the job lands with it (not with the listener, where the jobs' orphans
/// mix), and the parent of the job's main process, which it starts as
/// the listener would. It reports on its status pipe, then reaps every
/// process left to it until none is left, and exits. It keeps no
/// descriptor of the listener's but that pipe (not its lock, its ledger,
/// nor the job's output pipes), and every signal it can block stays
/// blocked (they were all blocked around the clone): a stop of the job
/// never stops it before the job.
///
/// It runs in its own copy of the listener's memory, with one thread:
/// system calls only, as in [`child`].
extern "C" fn keeper(plan: *mut c_void) -> c_int {
    // SAFETY: our copy of the parent's `Plan`, ours alone.
    let plan = unsafe { &mut *plan.cast::<Plan<'_>>() };
    let Some((status, top)) = plan.keeper else {
        // SAFETY: ends this process alone.
        unsafe { libc::_exit(127) }
    };
    let report = |tag: c_int, value: c_int| {
        let pair = [tag, value];
        // SAFETY: writes the pair from a valid buffer to our pipe.
        unsafe { libc::write(status, pair.as_ptr().cast(), std::mem::size_of_val(&pair)) };
    };
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY (all below): system calls on the plan's values; the main
    // process runs on the lower half of our copy of the stack until its
    // exec or exit, which the clone waits for.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        libc::setpgid(0, 0);
        let mut tries = 0;
        let main = loop {
            plan.error = 0;
            let main = libc::clone(
                child,
                top,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (plan as *mut Plan<'_>).cast(),
            );
            let error = if main < 0 {
                errno()
            } else {
                std::ptr::read_volatile(&plan.error)
            };
            if error == 0 {
                break main;
            }
            if main >= 0 {
                let mut raw = 0;
                libc::waitpid(main, &mut raw, 0);
            }
            // A shortage that may pass (as `spawn_may_pass` says) is tried
            // again after its pause: nothing ran, so nothing runs twice.
            match plan.pauses.get(tries).filter(|&&ms| ms > 0) {
                Some(&ms) if error == libc::EAGAIN => {
                    report(KEPT_RETRY, error);
                    let pause = libc::timespec {
                        tv_sec: (ms / 1000) as libc::time_t,
                        tv_nsec: ((ms % 1000) * 1_000_000) as libc::c_long,
                    };
                    libc::nanosleep(&pause, std::ptr::null_mut());
                    tries += 1;
                }
                _ => {
                    report(KEPT_FAILED, error);
                    libc::_exit(0);
                }
            }
        };
        close_all_but(status);
        report(KEPT_STARTED, main);
        loop {
            let mut raw = 0;
            let pid = libc::waitpid(-1, &mut raw, libc::__WALL);
            if pid == main {
                report(KEPT_EXITED, raw);
            } else if pid < 0 && errno() != libc::EINTR {
                // No child left: nothing of the job is left to keep.
                libc::_exit(0);
            }
        }
    }
}

/// Closes every descriptor but `keep` (`close_range`, Linux 5.9+; one by
/// one up to the descriptor limit before that).
///
/// # Safety
///
/// Only in a process whose descriptors are its own: the keeper.
unsafe fn close_all_but(keep: RawFd) {
    let close_range = |first: u32, last: u32| {
        // SAFETY: closes descriptors of this process only.
        unsafe { libc::syscall(libc::SYS_close_range, first, last, 0) == 0 }
    };
    let keep = keep as u32;
    let below = keep == 0 || close_range(0, keep - 1);
    if below && close_range(keep + 1, u32::MAX) {
        return;
    }
    let mut limit = MaybeUninit::<libc::rlimit>::zeroed();
    // SAFETY: getrlimit fills the struct; close on any number is harmless.
    unsafe {
        let most = if libc::getrlimit(libc::RLIMIT_NOFILE, limit.as_mut_ptr()) == 0 {
            limit.assume_init().rlim_cur.min(1 << 20) as u32
        } else {
            1024
        };
        for fd in (0..most).filter(|&fd| fd != keep) {
            libc::close(fd as c_int);
        }
    }
}

/// The child: what `posix_spawn` does with our attributes and file
/// actions, in its order, then the exec; on failure the error number goes
/// to the plan and the child exits.
extern "C" fn child(plan: *mut c_void) -> c_int {
    // SAFETY: the parent passes its `Plan`, live and untouched until we
    // exec or exit.
    let plan = unsafe { &mut *plan.cast::<Plan<'_>>() };
    // SAFETY: system calls only, on what the plan holds.
    plan.error = unsafe { prepare_and_exec(plan) };
    // SAFETY: ends this process alone (not the listener's threads).
    unsafe { libc::_exit(127) }
}

/// The error number of the first step that failed (only returns on one).
unsafe fn prepare_and_exec(plan: &Plan<'_>) -> c_int {
    let errno = || {
        io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY (all below): plain system calls on the plan's descriptors,
    // strings and signal numbers, each valid until the exec.
    unsafe {
        for &sig in plan.signals {
            if libc::sigaction(sig, &plan.default, std::ptr::null_mut()) != 0 {
                return errno();
            }
        }
        if plan.own_group && libc::setpgid(0, 0) != 0 {
            return errno();
        }
        for (target, &fd) in plan.stdio.iter().enumerate() {
            if libc::dup2(fd, target as c_int) < 0 {
                return errno();
            }
        }
        if let Some(cwd) = plan.cwd
            && libc::chdir(cwd) != 0
        {
            return errno();
        }
        let none: u64 = 0;
        let old: *mut u64 = std::ptr::null_mut();
        if libc::syscall(libc::SYS_rt_sigprocmask, libc::SIG_SETMASK, &none, old, 8) != 0 {
            return errno();
        }
        // execvp's rules: a place that cannot be searched or holds nothing
        // is passed over; one that holds the name but denies its exec is
        // remembered; any other failure ends the search.
        let (mut last, mut denied) = (libc::ENOENT, false);
        for place in plan.places.split_inclusive(|&b| b == 0) {
            libc::execve(place.as_ptr().cast(), plan.argv, plan.envp);
            last = errno();
            match last {
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => return last,
            }
        }
        if denied { libc::EACCES } else { last }
    }
}
