//! The process runner: starts one job as its own process group with a null
//! stdin and captured, capped output, waits for it, and owns the one stop
//! path used by cancels, timeouts and listener shutdown alike: a graceful
//! signal to the whole tree, then, after the grace, a forced kill.
//!
//! It waits in the listener's own thread (with `listen --slots N`, N > 1,
//! in a thread per job, the [`Running`] moved there with its request):
//! [`platform::JobIo`] waits on the
//! output pipes, the exit (not reaped, so the group id stays reserved while
//! we may still signal it) and the [`Mailbox`]'s bell at once, and the
//! cancel [`Watch`](crate::engine::watcher::Watch) is looked at between waits. A short job thus costs no
//! thread and no hand-over between threads, which on a virtual machine
//! costs as much as the spawn itself.

use std::collections::VecDeque;
use std::io::Write;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use crate::base::names::JobId;
use crate::engine::shutdown;
pub use crate::engine::watcher::Looks;
use crate::platform::{self, IoEvent, JobIo, Signal, Stream};
use crate::protocol::doc::report::{self, Exit, Report, Stop, StopReason};

use crate::places::output::{LOG_CAP, truncation_line};

pub use crate::engine::mailbox::{Control, Ended, Mailbox};

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
    /// The most grace a stop of the listener gives ([`Request::shutdown_grace`]).
    pub stop_grace: Option<Duration>,
    /// The folder the logs go to (`logs/`), held open.
    pub logs: crate::store::fsops::Dir,
    /// The stdout log's name in it.
    pub stdout_log: String,
    /// The stderr log's name in it.
    pub stderr_log: String,
    /// False for a sealed job: its output goes to no log in the root, only
    /// to the tails its sealed result carries.
    pub logged: bool,
    /// With other jobs running beside it (listener slots), the environment
    /// entry its processes carry ([`crate::protocol::jobenv::JOB_ID`]), by which its
    /// stop tells them from theirs; None when it runs alone.
    pub mark: Option<String>,
}

impl Request {
    /// The grace the job gets when the listener is stopped: its own,
    /// capped by the listener's stop grace, so a service manager's stop
    /// timeout covers it whatever grace the job asked for.
    pub fn shutdown_grace(&self) -> Duration {
        self.stop_grace
            .map_or(self.grace, |cap| cap.min(self.grace))
    }
}

/// A job process that was started, and its output being captured. It owns
/// its request, so it can be waited for in a thread of its own.
pub struct Running {
    req: Request,
    started: Instant,
    child: platform::JobProcess,
    tree: platform::Tree,
    io: JobIo,
    exited: bool,
    out: Tail,
    err: Tail,
    buf: Vec<u8>,
}

/// What the runner wakes up for.
enum Wake {
    Exited,
    Message(Control),
    Timeout,
}

/// The pauses before each new try of a spawn that failed for a shortage
/// that passes ([`platform::spawn_may_pass`]): about two seconds in all,
/// then the job is `spawn-failed`. Nothing ran, so a retry never runs a job
/// twice, and its start is already in the ledger.
pub const SPAWN_RETRIES: [Duration; 3] = [
    Duration::from_millis(100),
    Duration::from_millis(400),
    Duration::from_millis(1600),
];

/// The most of the searched `PATH` a spawn failure quotes.
const PATH_SHOWN: usize = 400;

/// What a program that was not found is told: a bare name is looked up in
/// the listener's `PATH` (or the job's own `--env PATH=…`), not the
/// sender's, and a service manager (cron, systemd, launchd, Task
/// Scheduler) starts the listener with a short one: the usual trap.
fn not_on_path(program: &str, env: &[(String, String)]) -> String {
    if program.contains('/') || (cfg!(windows) && program.contains('\\')) {
        return String::new();
    }
    let (path, whose) = match env.iter().find(|(k, _)| k == "PATH") {
        Some((_, v)) => (v.clone(), "the job's PATH (its --env PATH=…)"),
        None => (
            std::env::var("PATH").unwrap_or_default(),
            "the listener's PATH, not the sender's",
        ),
    };
    let shown = if path.len() > PATH_SHOWN {
        let mut end = PATH_SHOWN;
        while !path.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &path[..end], path.len())
    } else if path.is_empty() {
        "(empty)".to_string()
    } else {
        path
    };
    let find = if cfg!(windows) { "where" } else { "command -v" };
    format!(
        "; {program:?} was looked for in {whose}: {shown}. A listener started by cron, systemd, launchd or Task Scheduler has a short PATH: give the program's full path (`{find} {program}` on the target), or set PATH where the listener starts, or send --env PATH=…"
    )
}

/// Starts `req`'s process, or reports why it could not start: at once, or
/// after the [`SPAWN_RETRIES`] of a shortage that did not pass.
pub fn start(req: Request, bell: &platform::Bell) -> std::result::Result<Running, Box<Report>> {
    let started = Instant::now();
    let blank = |exit: Exit| Box::new(Report::not_started(exit));
    let spawn = platform::JobSpawn {
        argv: &req.argv,
        cwd: req.cwd.as_deref(),
        env: &req.env,
        // Beside others, a job's orphans would mix at the listener: a
        // keeper of its own holds them.
        keeper: req.mark.is_some(),
        pauses: &SPAWN_RETRIES,
    };
    let mut tries = 0;
    let mut child = loop {
        let e = match platform::spawn_job(&spawn) {
            Ok(c) => break c,
            Err(e) => e,
        };
        tries += 1;
        let pause = SPAWN_RETRIES
            .get(tries - 1)
            .filter(|_| platform::spawn_may_pass(&e));
        if let Some(pause) = pause {
            say_retry(&req, &e, tries);
            std::thread::sleep(*pause);
            continue;
        }
        return Err(blank(spawn_failed(&req, &e, tries)));
    };
    let tree = match platform::Tree::adopt(&child, req.mark.clone()) {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(blank(Exit::SpawnFailed(format!(
                "cannot take charge of the process: {e}"
            ))));
        }
    };
    // What a stop of the listener gives it, for the first signal to say.
    shutdown::job_started(tree.id(), req.job_id.as_str(), req.shutdown_grace());
    let io = JobIo::new(&mut child, &tree, bell);
    Ok(Running {
        out: Tail::new(req.logs.clone(), req.stdout_log.clone(), req.logged),
        err: Tail::new(req.logs.clone(), req.stderr_log.clone(), req.logged),
        req,
        started,
        child,
        tree,
        io,
        exited: false,
        buf: take_buffer(),
    })
}

/// A start that failed for a shortage, tried again after its pause:
/// said whatever the verbosity, as a shell's `fork: retry` is.
fn say_retry(req: &Request, e: &std::io::Error, tries: usize) {
    let pause = SPAWN_RETRIES.get(tries - 1).copied().unwrap_or_default();
    crate::note!(
        "job {}: cannot start {:?} yet ({e}); trying again in {} ms",
        req.job_id,
        req.argv[0],
        pause.as_millis()
    );
}

/// A job whose process could not be started after `tries` tries.
fn spawn_failed(req: &Request, e: &std::io::Error, tries: usize) -> Exit {
    let place = req
        .cwd
        .as_ref()
        .map(|c| format!(" in {}", c.display()))
        .unwrap_or_default();
    let tried = if tries > 1 {
        format!(" ({tries} tries)")
    } else {
        String::new()
    };
    let path_note = if e.kind() == std::io::ErrorKind::NotFound {
        not_on_path(&req.argv[0], &req.env)
    } else {
        String::new()
    };
    Exit::SpawnFailed(format!(
        "cannot start {:?}{place}: {e}{tried}{path_note}",
        req.argv[0]
    ))
}

/// Bytes read from an output pipe at once.
const READ_BUFFER: usize = 8192;

thread_local! {
    /// The read buffer of the last job this thread ran, kept for its next:
    /// a fresh zeroed 8 KiB per job cost about 5 % of a serial drain's own
    /// instructions (18,000 a job: the allocator tidies its free lists for
    /// a request that large, then zeroes it).
    static SPARE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn take_buffer() -> Vec<u8> {
    let buf = SPARE_BUFFER.take();
    if buf.len() == READ_BUFFER {
        buf
    } else {
        vec![0; READ_BUFFER]
    }
}

impl Running {
    /// The process (and group) id.
    pub fn id(&self) -> i32 {
        self.tree.id()
    }

    /// Waits for the next exit, message or `until`, copying output meanwhile.
    fn next(&mut self, rx: &Receiver<Control>, until: Instant) -> Wake {
        loop {
            if let Ok(m) = rx.try_recv() {
                return Wake::Message(m);
            }
            match self.io.next(until, &mut self.buf) {
                IoEvent::Output(Stream::Out, n) => self.out.take(&self.buf[..n]),
                IoEvent::Output(Stream::Err, n) => self.err.take(&self.buf[..n]),
                IoEvent::Exited => {
                    self.exited = true;
                    return Wake::Exited;
                }
                IoEvent::Bell => {}
                // Each wait looks at its own conditions again.
                IoEvent::Timeout | IoEvent::Closed => return Wake::Timeout,
            }
        }
    }

    /// Waits until the main process exits or `until` passes. A stop is
    /// under way: a shutdown met meanwhile only brings `until` forward (see
    /// [`Running::shutdown_met`]); other messages are dropped.
    fn wait_for_exit(&mut self, rx: &Receiver<Control>, until: &mut Instant) -> bool {
        while !self.exited {
            match self.next(rx, *until) {
                Wake::Timeout => return self.tree.leader_exited(),
                Wake::Message(Control::Shutdown) => self.shutdown_met(until),
                _ => {}
            }
        }
        true
    }

    /// Waits until no process of the tree but the exited leader is left, or
    /// `until` passes (brought forward as in [`Running::wait_for_exit`]).
    fn wait_tree_gone(&mut self, rx: &Receiver<Control>, until: &mut Instant) -> bool {
        loop {
            if self.tree.others().is_empty() {
                return true;
            }
            let now = Instant::now();
            if now >= *until {
                return false;
            }
            let slice = (now + Duration::from_millis(20)).min(*until);
            loop {
                match self.next(rx, slice) {
                    Wake::Timeout => break,
                    Wake::Message(Control::Shutdown) => self.shutdown_met(until),
                    _ => {}
                }
            }
        }
    }

    /// The listener is being stopped while this job's stop (a cancel, a
    /// timeout) already runs its grace: what is left of that grace is
    /// capped by the grace a stop gives, counted from now, so a service
    /// manager's stop timeout holds whenever the stop comes.
    fn shutdown_met(&self, until: &mut Instant) {
        *until = (*until).min(Instant::now() + self.req.shutdown_grace());
    }

    /// [`Running::wait`] in a thread of its own (a slot): a runner that
    /// failed still reports, so the thread always hands its job back.
    pub fn wait_guarded(self, rx: &Receiver<Control>, watch: &mut impl Looks) -> Report {
        let leader = self.id();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.wait(rx, watch)))
            .unwrap_or_else(|_| {
                shutdown::job_ended(leader);
                Report::not_started(Exit::SpawnFailed(
                    "lost track of the process: its runner failed".to_string(),
                ))
            })
    }

    /// Waits for the process to end, stopping it on an accepted cancel
    /// marker, its timeout or a shutdown met on `rx`, and reports how it
    /// went.
    pub fn wait(mut self, rx: &Receiver<Control>, watch: &mut impl Looks) -> Report {
        let mut tries = 1;
        let req = &self.req;
        let start = platform::await_start(&self.child, &mut |e, told| {
            say_retry(req, e, told);
            tries = told + 1;
        });
        if let Err(e) = start {
            // A keeper that started nothing has ended or is ending: reaped
            // here, as the spawn's own failure would have been.
            let _ = self.child.wait();
            shutdown::job_ended(self.tree.id());
            let exit = spawn_failed(&self.req, &e, tries);
            let Running { tree, buf, .. } = self;
            SPARE_BUFFER.set(buf);
            tree.release();
            return Report::not_started(exit);
        }
        let deadline = self.req.timeout.map(|t| self.started + t);
        let mut stop: Option<Stop> = None;
        let mut raced = None;
        // Phase 1: wait for an exit or a reason to stop.
        let reason = loop {
            if Instant::now() >= watch.due()
                && let Some(m) = watch.look()
            {
                break Some(StopReason::Cancel(Box::new(m)));
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break Some(StopReason::Timeout);
            }
            let until = deadline.map_or(watch.due(), |d| d.min(watch.due()));
            match self.next(rx, until) {
                Wake::Exited => break None,
                Wake::Message(Control::Cancel(job, marker)) if job == self.req.job_id => {
                    break Some(StopReason::Cancel(marker));
                }
                Wake::Message(Control::Shutdown) => break Some(StopReason::Shutdown),
                Wake::Message(Control::Wake) => watch.woken(),
                Wake::Message(_) | Wake::Timeout => continue,
            }
        };
        let grace = match reason {
            Some(StopReason::Shutdown) => self.req.shutdown_grace(),
            _ => self.req.grace,
        };
        if let Some(reason) = reason {
            if self.tree.leader_exited() {
                // It ended by itself before we sent anything: keep its honest exit.
                raced = Some(reason);
            } else {
                self.tree.signal(Signal::Term);
                let mut grace_end = Instant::now() + grace;
                let exited = self.wait_for_exit(rx, &mut grace_end);
                let tree_gone = exited && self.wait_tree_gone(rx, &mut grace_end);
                let grace_expired = !tree_gone;
                if grace_expired {
                    self.tree.signal(Signal::Kill);
                }
                if !exited {
                    self.wait_for_exit(rx, &mut (Instant::now() + Duration::from_secs(3600)));
                }
                stop = Some(Stop {
                    reason,
                    grace_expired,
                    main_killed: !exited,
                });
            }
        }
        // The main process has exited (not yet reaped): stop what it left behind.
        let leftovers_stopped = self.tree.others().len();
        if leftovers_stopped > 0 {
            self.tree.signal(Signal::Term);
            if !self.wait_tree_gone(rx, &mut (Instant::now() + grace)) {
                self.tree.signal(Signal::Kill);
                self.wait_tree_gone(rx, &mut (Instant::now() + Duration::from_secs(2)));
            }
        }
        let status = self.child.wait();
        shutdown::job_ended(self.tree.id());
        let duration = self.started.elapsed();
        // Output pipes close once every holder is gone; don't hang on one that
        // escaped where no process table can find it.
        let drained = Instant::now() + Duration::from_secs(2);
        while self.io.streams_open() && Instant::now() < drained {
            self.next(rx, drained);
        }
        let Running {
            tree,
            out,
            err,
            buf,
            ..
        } = self;
        SPARE_BUFFER.set(buf);
        tree.release();
        let exit = match status {
            Ok(s) => match (s.code(), platform::exit_signal(&s)) {
                (Some(c), _) => Exit::Code(c),
                (None, Some(sig)) => Exit::Signal(sig),
                (None, None) => Exit::Code(-1),
            },
            Err(e) => Exit::SpawnFailed(format!("lost track of the process: {e}")),
        };
        let (stdout_tail, out_n, out_short) = out.finish();
        let (stderr_tail, err_n, err_short) = err.finish();
        Report {
            exit,
            stop,
            raced,
            duration,
            leftovers_stopped,
            stdout_tail,
            stderr_tail,
            output_bytes: (out_n, err_n),
            logs_short: (out_short, err_short),
        }
    }
}

/// One output stream: copied to its log up to [`LOG_CAP`], its end kept.
/// The log file is made when the first byte arrives: a silent job (most
/// quick ones) then costs no file creation in the synced folder.
struct Tail {
    dir: crate::store::fsops::Dir,
    name: String,
    log: Option<crate::store::fsops::Log>,
    /// False when no log is made (a sealed job's).
    keep: bool,
    tried: bool,
    truncated: bool,
    end: VecDeque<u8>,
    bytes: u64,
    /// Bytes the log file holds. Once output came, a log that is gone (it
    /// could not be made, or a write failed) holds less than it should,
    /// and the result says so.
    logged: u64,
}

impl Tail {
    fn new(dir: crate::store::fsops::Dir, name: String, keep: bool) -> Tail {
        Tail {
            dir,
            name,
            log: None,
            keep,
            tried: false,
            truncated: false,
            end: VecDeque::new(),
            bytes: 0,
            logged: 0,
        }
    }

    fn take(&mut self, chunk: &[u8]) {
        if !self.tried && self.keep {
            // A log that cannot be made loses the file copy only: the tail
            // still goes into the result.
            self.tried = true;
            self.log = self.dir.create_log(&self.name).ok();
        }
        let room = LOG_CAP.saturating_sub(self.bytes) as usize;
        if let Some(log) = self.log.as_mut() {
            let mut part = &chunk[..chunk.len().min(room)];
            // Counted write by write: a full disk can take part of one.
            while !part.is_empty() {
                match log.write(part) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Ok(0) | Err(_) => {
                        // Nothing more is written either, so the log stays
                        // a true prefix of the output.
                        self.log = None;
                        break;
                    }
                    Ok(n) => {
                        self.logged += n as u64;
                        part = &part[n..];
                    }
                }
            }
        }
        if let Some(log) = self.log.as_mut()
            && chunk.len() > room
            && !self.truncated
        {
            self.truncated = true;
            let _ = log.write_all(truncation_line().as_bytes());
        }
        self.bytes += chunk.len() as u64;
        self.end.extend(chunk);
        let excess = self.end.len().saturating_sub(report::TAIL_BYTES);
        self.end.drain(..excess);
    }

    /// The tail, the bytes written in all, and the bytes the log holds
    /// when it holds less than it should.
    fn finish(self) -> (String, u64, Option<u64>) {
        let bytes: Vec<u8> = self.end.into_iter().collect();
        let short = (self.tried && self.log.is_none()).then_some(self.logged);
        (
            String::from_utf8_lossy(&bytes).into_owned(),
            self.bytes,
            short,
        )
    }
}
