//! The process runner: starts one job as its own process group with a null
//! stdin and captured, capped output, waits for it, and owns the one stop
//! path used by cancels, timeouts and listener shutdown alike: a graceful
//! signal to the whole tree, then, after the grace, a forced kill.
//!
//! Threads: a waiter blocks in `waitid(WNOWAIT)` and reports the exit without
//! reaping, so the group id stays reserved while we may still signal it; two
//! readers drain stdout and stderr. The caller's watcher and signal handler
//! speak to the runner through the same [`Control`] channel.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::doc::Marker;
use crate::names::JobId;
use crate::platform::{self, Signal};

/// Bytes of each stream kept in the log file; the rest is counted, not kept.
pub const LOG_CAP: u64 = 10 * 1024 * 1024;
/// Bytes of each stream's end copied into the result.
pub const TAIL_BYTES: usize = 4096;

/// The process group of the job running now (0 when none): read by the
/// signal handler for a second Ctrl-C, which kills it at once.
pub static CURRENT_GROUP: AtomicI32 = AtomicI32::new(0);

/// Messages the runner acts on while a job runs.
#[derive(Debug)]
pub enum Control {
    /// The process with this pid exited (from the waiter thread).
    Exited(i32),
    /// A valid cancel marker for this job (from the watcher).
    Cancel(JobId, Box<Marker>),
    /// The listener is shutting down (first Ctrl-C or SIGTERM).
    Shutdown,
    /// New work may be waiting (from the HTTP intake): an idle listener
    /// rescans at once instead of at its next poll; the runner ignores it.
    Wake,
}

/// Why the runner stopped a job.
#[derive(Clone, Debug, PartialEq)]
pub enum StopReason {
    /// A valid cancel marker.
    Cancel(Box<Marker>),
    /// The job's timeout passed.
    Timeout,
    /// The listener is stopping.
    Shutdown,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Request {
    /// The job (to match cancel messages).
    pub job_id: JobId,
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Environment variables added to the listener's own.
    pub env: Vec<(String, String)>,
    /// Wall-clock limit.
    pub timeout: Option<Duration>,
    /// Graceful-stop window.
    pub grace: Duration,
    /// Where stdout goes.
    pub stdout_log: PathBuf,
    /// Where stderr goes.
    pub stderr_log: PathBuf,
}

/// How the process ended.
#[derive(Clone, Debug, PartialEq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal ended it (by number).
    Signal(i32),
    /// It could not be started.
    SpawnFailed(String),
}

/// A stop the runner carried out.
#[derive(Clone, Debug, PartialEq)]
pub struct Stop {
    /// Why.
    pub reason: StopReason,
    /// True when the grace ran out and the tree was killed.
    pub grace_expired: bool,
}

/// Everything the listener needs to write a result.
#[derive(Clone, Debug)]
pub struct Report {
    /// How the main process ended.
    pub exit: Exit,
    /// The stop carried out, if any signal was sent. `None` also covers a
    /// process that exited by itself before any stop signal (the race).
    pub stop: Option<Stop>,
    /// A stop that was requested but found the process already gone.
    pub raced: Option<StopReason>,
    /// Wall time from spawn to exit.
    pub duration: Duration,
    /// Processes left behind by the main process and stopped with it.
    pub leftovers_stopped: usize,
    /// End of stdout.
    pub stdout_tail: String,
    /// End of stderr.
    pub stderr_tail: String,
    /// Bytes written to stdout and stderr in all.
    pub output_bytes: (u64, u64),
}

/// Runs `req` to its end. `on_spawn` is told the pid (= group id) as soon as
/// the process exists, before anything else can happen to it.
pub fn run(
    req: &Request,
    tx: &Sender<Control>,
    rx: &Receiver<Control>,
    on_spawn: impl FnOnce(i32),
) -> Report {
    let started = Instant::now();
    let blank = |exit: Exit| Report {
        exit,
        stop: None,
        raced: None,
        duration: Duration::ZERO,
        leftovers_stopped: 0,
        stdout_tail: String::new(),
        stderr_tail: String::new(),
        output_bytes: (0, 0),
    };
    let mut cmd = Command::new(&req.argv[0]);
    cmd.args(&req.argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(cwd) = &req.cwd {
        cmd.current_dir(cwd);
    }
    for (k, v) in &req.env {
        cmd.env(k, v);
    }
    platform::prepare_job(&mut cmd);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let place = req
                .cwd
                .as_ref()
                .map(|c| format!(" in {}", c.display()))
                .unwrap_or_default();
            return blank(Exit::SpawnFailed(format!(
                "cannot start {:?}{place}: {e}",
                req.argv[0]
            )));
        }
    };
    let tree = match platform::Tree::adopt(&child) {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return blank(Exit::SpawnFailed(format!(
                "cannot take charge of the process: {e}"
            )));
        }
    };
    let id = tree.id();
    CURRENT_GROUP.store(id, Ordering::SeqCst);
    on_spawn(id);

    let out = Capture::start(child.stdout.take(), req.stdout_log.clone());
    let err = Capture::start(child.stderr.take(), req.stderr_log.clone());
    let waiter_tx = tx.clone();
    let wait_exit = tree.exit_waiter();
    std::thread::spawn(move || {
        wait_exit();
        let _ = waiter_tx.send(Control::Exited(id));
    });

    let deadline = req.timeout.map(|t| started + t);
    let mut stop: Option<Stop> = None;
    let mut raced = None;
    // Phase 1: wait for an exit or a reason to stop.
    let reason = loop {
        let msg = match deadline {
            Some(d) => match rx.recv_timeout(d.saturating_duration_since(Instant::now())) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => break Some(StopReason::Timeout),
                Err(RecvTimeoutError::Disconnected) => None,
            },
            None => rx.recv().ok(),
        };
        match msg {
            Some(Control::Exited(p)) if p == id => break None,
            Some(Control::Cancel(job, marker)) if job == req.job_id => {
                break Some(StopReason::Cancel(marker));
            }
            Some(Control::Shutdown) => break Some(StopReason::Shutdown),
            Some(_) => continue,
            None => break None,
        }
    };
    if let Some(reason) = reason {
        if tree.leader_exited() {
            // It ended by itself before we sent anything: keep its honest exit.
            raced = Some(reason);
        } else {
            tree.signal(Signal::Term);
            let grace_end = Instant::now() + req.grace;
            let exited = wait_for_exit(rx, &tree, grace_end);
            let tree_gone = exited && wait_tree_gone(&tree, grace_end);
            let grace_expired = !tree_gone;
            if grace_expired {
                tree.signal(Signal::Kill);
            }
            if !exited {
                wait_for_exit(rx, &tree, Instant::now() + Duration::from_secs(3600));
            }
            stop = Some(Stop {
                reason,
                grace_expired,
            });
        }
    }
    // The main process has exited (not yet reaped): stop what it left behind.
    let leftovers_stopped = tree.others().len();
    if leftovers_stopped > 0 {
        tree.signal(Signal::Term);
        if !wait_tree_gone(&tree, Instant::now() + req.grace) {
            tree.signal(Signal::Kill);
            wait_tree_gone(&tree, Instant::now() + Duration::from_secs(2));
        }
    }
    let status = child.wait();
    CURRENT_GROUP.store(0, Ordering::SeqCst);
    tree.release();
    let duration = started.elapsed();
    let exit = match status {
        Ok(s) => match (s.code(), platform::exit_signal(&s)) {
            (Some(c), _) => Exit::Code(c),
            (None, Some(sig)) => Exit::Signal(sig),
            (None, None) => Exit::Code(-1),
        },
        Err(e) => Exit::SpawnFailed(format!("lost track of the process: {e}")),
    };
    // Output pipes close once every holder is gone; don't hang on one that
    // escaped where no process table can find it.
    let (stdout_tail, out_n) = out.finish(Duration::from_secs(2));
    let (stderr_tail, err_n) = err.finish(Duration::from_secs(2));
    Report {
        exit,
        stop,
        raced,
        duration,
        leftovers_stopped,
        stdout_tail,
        stderr_tail,
        output_bytes: (out_n, err_n),
    }
}

/// Waits until the waiter reports the leader's exit or `until` passes.
fn wait_for_exit(rx: &Receiver<Control>, tree: &platform::Tree, until: Instant) -> bool {
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Control::Exited(p)) if p == tree.id() => return true,
            Ok(_) => continue,
            Err(_) => return tree.leader_exited(),
        }
    }
}

/// Waits until no process of the tree but the exited leader is left, or
/// `until` passes.
fn wait_tree_gone(tree: &platform::Tree, until: Instant) -> bool {
    loop {
        if tree.others().is_empty() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One output stream: copied to its log up to [`LOG_CAP`], its end kept.
/// The log file is made when the first byte arrives: a silent job (most
/// quick ones) then costs no file creation in the synced folder.
struct Capture {
    state: Arc<Mutex<(VecDeque<u8>, u64)>>,
    done: Receiver<()>,
}

impl Capture {
    fn start(pipe: Option<impl Read + Send + 'static>, path: PathBuf) -> Capture {
        let state = Arc::new(Mutex::new((VecDeque::with_capacity(TAIL_BYTES), 0u64)));
        let (done_tx, done) = std::sync::mpsc::channel();
        let shared = Arc::clone(&state);
        std::thread::spawn(move || {
            let mut log: Option<File> = None;
            if let Some(mut pipe) = pipe {
                let mut buf = [0u8; 8192];
                let mut truncated = false;
                let mut tried = false;
                while let Ok(n) = pipe.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    if !tried {
                        // A log that cannot be made loses the file copy only:
                        // the tail still goes into the result.
                        tried = true;
                        log = crate::fsops::create_log(&path).ok();
                    }
                    let mut s = shared.lock().unwrap_or_else(|p| p.into_inner());
                    let room = LOG_CAP.saturating_sub(s.1) as usize;
                    if let Some(log) = log.as_mut() {
                        let _ = log.write_all(&buf[..n.min(room)]);
                        if n > room && !truncated {
                            truncated = true;
                            let _ = writeln!(
                                log,
                                "\n[fleet-dispatch: output truncated at {LOG_CAP} bytes]"
                            );
                        }
                    }
                    s.1 += n as u64;
                    s.0.extend(&buf[..n]);
                    let excess = s.0.len().saturating_sub(TAIL_BYTES);
                    s.0.drain(..excess);
                }
            }
            if let Some(log) = log.as_mut() {
                let _ = log.flush();
            }
            let _ = done_tx.send(());
        });
        Capture { state, done }
    }

    fn finish(self, wait: Duration) -> (String, u64) {
        let _ = self.done.recv_timeout(wait);
        let s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let bytes: Vec<u8> = s.0.iter().copied().collect();
        (String::from_utf8_lossy(&bytes).into_owned(), s.1)
    }
}
