//! The one waiting loop behind `enqueue --wait`, `result --wait` and
//! `cancel --wait`: poll the folder until a verified result appears, the
//! target rejects the job, or the wait times out, showing a one-line
//! progress indicator on a terminal. A wait says (on its progress line at
//! once, in a line of its own after a few seconds without progress, and
//! again as it changes) when the target's listener has never run, has
//! stopped or has gone quiet, since that, not the job, is then what it
//! waits on; liveness
//! is judged by whether the signed heartbeat changes, on this process's own
//! clock ([`heartbeat::Tracker`]), so a listener whose clock is hours off
//! is still seen alive. A wait that ends without a result says why the job
//! has none ([`Why`]): the same words `result` uses for an unfinished job.
//!
//! File-system events on `results/` ([`crate::store::events`]) end a poll's sleep
//! early, so a result that lands or syncs in is reported at once; they are
//! only hints, and where none arrive the poll finds the result as before.
//! Where the watch cannot be set up (no `results/` yet, a watch limit, a
//! file system without events) each look still waits out the poll.

use std::io::Write;
use std::sync::{Mutex, Once, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::base::clock;
use crate::base::error::{Error, Result};
use crate::base::names::JobId;
use crate::places::heartbeat::{self, Liveness, Sight, Tracker};
use crate::places::observe::{self, Hold, NoResult, Observed, Unseen};
use crate::places::output::Follower;
use crate::protocol::doc::{Marker, Outcome};
use crate::store::events::{Events, Hint};
use crate::store::layout::TargetDirs;
use crate::trust::Key;

/// How often the folder is looked at while waiting.
pub const POLL: Duration = Duration::from_millis(200);

/// The least time between two looks when events wake a wait early: a busy
/// lane placing many results wakes it at most 50 times a second.
const EARLIEST: Duration = Duration::from_millis(20);

/// How long a wait goes without progress before it says what holds the
/// job.
const QUIET: Duration = Duration::from_secs(5);

/// The most time between two looks at the target's heartbeat: well within
/// the staleness, so a new beat is timed to about a second.
const BEAT_LOOK: Duration = Duration::from_secs(1);

/// Sets how long a wait sees no new heartbeat before it calls the target's
/// listener not heard from ([`heartbeat::STALE_AFTER`] when unset). It
/// changes only what a wait says, never what a listener does: the
/// one-listener rule keeps its own.
pub const STALE_VAR: &str = "FLEET_DISPATCH_WAIT_STALE_AFTER";

/// The staleness [`STALE_VAR`] sets. A value that is not a duration is
/// named in a warning and the default used: the wait may begin after the
/// job was sent (`enqueue --wait`), when a refusal would leave it sent and
/// unwatched.
fn stale_after() -> Duration {
    let Some(v) = std::env::var_os(STALE_VAR) else {
        return heartbeat::STALE_AFTER;
    };
    match v.to_str().map(clock::parse_duration) {
        Some(Ok(d)) => d,
        _ => {
            crate::note!(
                "fleet-dispatch: warning: {STALE_VAR}={} is not a duration (90s, 5m); the wait uses {}",
                v.to_string_lossy(),
                clock::format_duration(heartbeat::STALE_AFTER)
            );
            heartbeat::STALE_AFTER
        }
    }
}

/// How a wait ended: the verified result; or the job rejected by its
/// target's listener, or still unfinished when the wait ran out (the last
/// state seen, and why) — [`observe::Observed::answer`]'s model.
pub type Waited = observe::Answered<Box<Why>>;

/// Copies what `follow` has gained to this process's stdout and stderr. A
/// reader gone from stdout (`| head`) ends the program quietly, as
/// [`crate::base::out::line`] does.
pub fn pump(follow: &mut Follower) {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    if let Err(e) = follow.pump(&mut out, &mut err)
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(crate::base::exit::SUCCESS));
    }
    for note in follow.take_notes() {
        crate::note!("fleet-dispatch: {note}");
    }
}

/// How long a follow that reached the job's result waits for its logs to
/// hold all the result says they do (a sync engine may bring the log after
/// the result).
const LOG_GRACE: Duration = Duration::from_secs(5);

/// Holds what `follow` showed against `o`, the job's verified result
/// ([`crate::places::output::judge`]), giving a log still short [`LOG_GRACE`] to
/// arrive. What was shown but is not the job's output is `FORBIDDEN`: the
/// command must not end as if it had shown the job's output.
fn settle_logs(follow: &mut Follower, id: &JobId, o: &Outcome) -> Result<()> {
    use crate::places::output::Verdict;
    let start = Instant::now();
    let judged = loop {
        let judged = follow.judged(o);
        let short = judged.iter().any(|(_, v)| matches!(v, Verdict::Short(..)));
        if !short || start.elapsed() >= LOG_GRACE {
            break judged;
        }
        std::thread::sleep(POLL);
        pump(follow);
    };
    for note in follow.take_notes() {
        crate::note!("fleet-dispatch: {note}");
    }
    for (file, verdict) in judged {
        match verdict {
            Verdict::NotTheJobs(why) => {
                return Err(Error::forbidden(format!(
                    "what was shown from {file} is not {id}'s output ({why}); {id} ended {} (exit {})",
                    o.termination().describe(o.ok),
                    o.exit_code
                ))
                .hint(format!(
                    "`fleet-dispatch result --target {} --job-id {id}` shows the end of its own output, signed; find who writes the folder",
                    o.target
                )));
            }
            Verdict::Short(has, should) => crate::note!(
                "fleet-dispatch: {file} holds {has} of the {should} bytes {id}'s result says it does (it may still be arriving); `fleet-dispatch logs` prints it once it has"
            ),
            Verdict::Matches => {}
        }
    }
    Ok(())
}

/// `id`'s result on `dirs`' target, or why it has none, from one look:
/// for a command that does not wait. The inner error is the refusal
/// [`Observed::answer`] makes of what was seen (`NOT_FOUND` for a job not
/// seen yet); beside it, the warning for a result that does not verify
/// beside a job still queued or running, which is otherwise ignored.
///
/// # Errors
///
/// As [`observe::look`].
pub fn at_once(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
) -> Result<(Result<Waited>, Option<String>)> {
    let look = observe::look(dirs, id, key)?;
    let note = look.ignored.as_ref().map(|f| f.note(id, &look.state));
    let answered = look.state.answer(dirs, id, Unseen::Missing);
    let answered =
        answered.map(|a| a.map_err(|no| no.map(|seen| Box::new(Why::now(dirs, id, key, seen)))));
    Ok((answered, note))
}

/// Waits for `id`'s result, streaming its output through `follow` when
/// given. A result that does not verify is never reported as genuine:
/// while the job is still queued or running it is named in a warning and
/// the wait goes on; when nothing else of the job is there it is
/// `FORBIDDEN` ([`observe::look`]).
pub fn for_result(
    dirs: &TargetDirs,
    id: &JobId,
    key: &Key,
    limit: Option<Duration>,
    quiet: bool,
    mut follow: Option<&mut Follower>,
) -> Result<Waited> {
    let start = Instant::now();
    let mut tracker = Tracker::new(stale_after());
    let mut beat_looked: Option<Instant> = None;
    let mut listener: Option<Liveness> = None;
    let mut announced = None;
    // The progress line would tangle with the job's streamed stderr.
    let show = !quiet && follow.is_none() && crate::base::screen::progress_line();
    end_on_interrupt(dirs, id, show);
    let clear = || {
        if show {
            eprint!("\r\x1b[2K");
        }
    };
    let mut last_word = "";
    let mut progress = Instant::now();
    let mut said: Option<String> = None;
    let mut looked: Option<Instant> = None;
    let mut warned: Option<observe::Forged> = None;
    // The wait keeps a sender of its own, so the receive below always
    // sleeps out its poll: with no watch (or its watcher gone) no wake
    // ever comes, and the channel must not read as closed.
    let (tx, woken) = mpsc::channel();
    let hint = Hint::new();
    let mut watch = ResultsWatch::default();
    loop {
        watch.keep(dirs, &hint, &tx);
        // Before the look: a result placed during it wakes the next sleep.
        hint.woken();
        let look = Instant::now();
        let observe::Look {
            state: seen,
            ignored,
        } = observe::look(dirs, id, key)?;
        if let Some(forged) = ignored
            && warned.as_ref() != Some(&forged)
        {
            clear();
            crate::note!("fleet-dispatch: {}", forged.note(id, &seen));
            warned = Some(forged);
        }
        if let Some(f) = follow.as_deref_mut() {
            // After the look, so output written before the result is all
            // copied when the result ends the wait.
            f.saw(&seen);
            pump(f);
        }
        let seen = match seen.answer(dirs, id, Unseen::Pending) {
            Ok(Ok(o)) => {
                clear();
                if let Some(f) = follow.as_deref_mut() {
                    settle_logs(f, id, &o)?;
                }
                return Ok(Ok(o));
            }
            Ok(Err(NoResult::Rejected(r))) => {
                clear();
                return Ok(Err(NoResult::Rejected(r)));
            }
            Ok(Err(NoResult::Unfinished(seen))) => seen,
            Err(e) => {
                clear();
                return Err(e);
            }
        };
        if seen.word() != last_word {
            last_word = seen.word();
            progress = Instant::now();
        }
        // The heartbeat is looked at about once a second, not on every
        // poll: often enough to time each new beat.
        if beat_looked.is_none_or(|t| t.elapsed() >= BEAT_LOOK) {
            let now = Instant::now();
            beat_looked = Some(now);
            listener = Some(tracker.see(Sight::read(dirs, key), now));
        }
        // The progress line shows the listener's state at once; a line of
        // its own waits for a quiet spell (a listener about to take the
        // job needs no word), then comes at each change.
        if progress.elapsed() >= QUIET
            && let Some(live) = &listener
        {
            let kind = std::mem::discriminant(live);
            if announced.is_some_and(|k| k != kind)
                || (announced.is_none() && *live != Liveness::Alive)
            {
                clear();
                let note = listener_note(dirs, live)
                    .unwrap_or_else(|| format!("{}'s listener is running", dirs.target()));
                crate::note!("fleet-dispatch: {note}");
            }
            announced = Some(kind);
        }
        // What holds the job is read once per quiet spell.
        if progress.elapsed() >= QUIET
            && looked.is_none_or(|t| t.elapsed() >= QUIET)
            && let Some(note) = {
                looked = Some(Instant::now());
                held_note(dirs, id, key, &seen)
            }
            && said.as_deref() != Some(note.as_str())
        {
            clear();
            crate::note!("fleet-dispatch: {note}");
            said = Some(note);
        }
        if show {
            let aside = listener.as_ref().map_or("", short);
            eprint!(
                "\r\x1b[2K{id}: {} {}{aside}",
                seen.word(),
                clock::human(start.elapsed())
            );
            let _ = std::io::stderr().flush();
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            if show {
                crate::note!();
            }
            let live = listener.unwrap_or(Liveness::Never);
            let why = Why::look(dirs, id, key, seen, live);
            return Ok(Err(NoResult::Unfinished(Box::new(why))));
        }
        if woken.recv_timeout(POLL).is_ok() {
            std::thread::sleep(EARLIEST.saturating_sub(look.elapsed()));
        }
    }
}

/// The wait's watch on `results/`, set up once that folder is there. A
/// target whose listener never ran has only the `inbox/` that `enqueue`
/// made; when its listener starts mid-wait, the look after it made
/// `results/` watches it, so pickup is prompt from then on.
#[derive(Default)]
struct ResultsWatch {
    events: Option<Events>,
    /// The watch failed with the folder there (a watch limit, a file
    /// system without events): the poll does it all from then on.
    failed: bool,
}

impl ResultsWatch {
    /// Sets the watch up if it is not and may now be: `results/` is there
    /// (again, when the watched one went away or moved). Costs one look
    /// at the folder's entry while there is none.
    fn keep(&mut self, dirs: &TargetDirs, hint: &Hint, tx: &mpsc::Sender<()>) {
        if hint.take_lost() {
            self.events = None;
        }
        let results = dirs.results();
        if self.events.is_some() || self.failed || !results.is_dir() {
            return;
        }
        let tx = tx.clone();
        match Events::watch(std::slice::from_ref(&results), hint, move || {
            let _ = tx.send(());
        }) {
            Ok(e) => self.events = Some(e),
            // Gone again between the two looks: try again at the next.
            Err(_) => self.failed = results.is_dir(),
        }
    }
}

/// What an interrupt of the wait under way says, and whether a progress
/// line is to be cleared first.
static WAITING: Mutex<Option<(String, bool)>> = Mutex::new(None);

/// Makes Ctrl-C or SIGTERM end the wait for `id` with the interrupted
/// status and a line saying that only the wait stopped, not the job. The
/// handler is installed once per process (a command that installed its
/// own, the demo, keeps it); each wait sets what it says.
fn end_on_interrupt(dirs: &TargetDirs, id: &JobId, show: bool) {
    let line = format!(
        "fleet-dispatch: stopped waiting for {id} on {target}; the job goes on (`fleet-dispatch result --target {target} --job-id {id} --wait` waits again)",
        target = dirs.target()
    );
    *WAITING.lock().unwrap_or_else(|p| p.into_inner()) = Some((line, show));
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let _ = ctrlc::set_handler(|| {
            if let Some((line, show)) = WAITING.lock().unwrap_or_else(|p| p.into_inner()).take() {
                if show {
                    eprint!("\r\x1b[2K");
                }
                crate::note!("{line}");
            }
            std::process::exit(i32::from(crate::base::exit::INTERRUPTED));
        });
    });
}

/// What is wrong with the target's listener, as `live` says, if anything.
fn listener_note(dirs: &TargetDirs, live: &Liveness) -> Option<String> {
    let target = dirs.target();
    let ago = |a: &Option<Duration>| {
        a.map_or("at an unreadable time".to_string(), |a| {
            format!("{} ago", clock::human(a))
        })
    };
    Some(match live {
        Liveness::Alive => return None,
        Liveness::Never => format!(
            "no listener has ever run for {target} (no {}): start `fleet-dispatch listen` on it",
            dirs.listener_json().display()
        ),
        Liveness::Unverified => format!(
            "{target}'s heartbeat ({}) is not signed with this machine's key, so whether its listener runs is unknown (an older version, another key, or a folder writer wrote it)",
            dirs.listener_json().display()
        ),
        Liveness::Stopped(a) => format!(
            "{target}'s listener stopped {}; nothing runs until it is started again",
            ago(a)
        ),
        Liveness::Quiet(Some(a)) => format!(
            "{target}'s listener has not been heard from for {} (its machine may be off, or sync lags)",
            clock::human(*a)
        ),
        Liveness::Quiet(None) => format!(
            "{target}'s listener has not been heard from (its heartbeat bears no readable time; its machine may be off, or sync lags)"
        ),
    })
}

/// The progress line's word on the listener, when it is not running.
fn short(live: &Liveness) -> &'static str {
    match live {
        Liveness::Alive => "",
        Liveness::Never => " (no listener)",
        Liveness::Unverified => " (listener unverified)",
        Liveness::Stopped(_) => " (listener stopped)",
        Liveness::Quiet(_) => " (listener not heard from)",
    }
}

/// What a queued or running job waits on that a look at its own files
/// tells at little cost: a cancel not yet acted upon, or the jobs it is
/// held on (docs/protocol.md §7.13).
fn held_note(dirs: &TargetDirs, id: &JobId, key: &Key, seen: &Observed) -> Option<String> {
    if !matches!(seen, Observed::Queued | Observed::Running) {
        return None;
    }
    if let Some(m) = observe::cancel_pending(dirs, id, key) {
        return Some(format!("{id} {}", cancel_words(seen, &m)));
    }
    if *seen != Observed::Queued {
        return None;
    }
    let held = observe::held_on(dirs, id, key);
    if held.is_empty() {
        return None;
    }
    Some(format!("{id} is held: it waits for {}", names(&held)))
}

fn names(after: &[crate::protocol::doc::job::After]) -> String {
    let names: Vec<String> = after.iter().map(ToString::to_string).collect();
    names.join(", ")
}

/// `has a cancel pending (…)`: what becomes of a job seen `seen` whose
/// marker `m` its listener has not acted on yet.
fn cancel_words(seen: &Observed, m: &Marker) -> String {
    let then = if *seen == Observed::Running {
        "its listener stops it"
    } else {
        "its listener records it cancelled without running it"
    };
    format!(
        "has a cancel pending (asked by {} at {}): {then} when it next looks",
        m.origin, m.created_at
    )
}

/// Why a job has no result yet: its state, what holds it, and what is
/// wrong with its target's listener — one wording for every wait that
/// ends without a result and for `result` of an unfinished job.
#[derive(Debug)]
pub struct Why {
    /// The job's state.
    pub seen: Observed,
    target: String,
    listener: Option<String>,
    cancel: Option<Marker>,
    hold: Option<Hold>,
    killed_with_listener: bool,
}

impl Why {
    /// Looks at what holds `id`, seen `seen`, whose listener is `live`.
    pub fn look(dirs: &TargetDirs, id: &JobId, key: &Key, seen: Observed, live: Liveness) -> Why {
        let waiting = matches!(seen, Observed::Queued | Observed::Running);
        let cancel = waiting
            .then(|| observe::cancel_pending(dirs, id, key))
            .flatten();
        let queued = seen == Observed::Queued;
        Why {
            hold: (queued && cancel.is_none())
                .then(|| observe::hold(dirs, id, key))
                .flatten(),
            killed_with_listener: queued
                && observe::killed_with_listener(dirs, key)
                    .iter()
                    .any(|k| *k == id.as_str()),
            listener: listener_note(dirs, &live),
            target: dirs.target().to_string(),
            cancel,
            seen,
        }
    }

    /// [`Why::look`] once, the listener judged as `status` judges it
    /// ([`heartbeat::seen_alive`]'s rule): for a command that does not
    /// wait.
    pub fn now(dirs: &TargetDirs, id: &JobId, key: &Key, seen: Observed) -> Why {
        let live = Tracker::new(heartbeat::STALE_AFTER).see(Sight::read(dirs, key), Instant::now());
        Why::look(dirs, id, key, seen, live)
    }

    /// `queued behind 2 jobs (…)`, `queued (held by …)`, `running`, and
    /// what is wrong with the listener.
    pub fn state(&self) -> String {
        let mut s = self.seen.word().to_string();
        if let Some(m) = &self.cancel {
            s.push_str(&format!(" and {}", cancel_words(&self.seen, m)));
        }
        match &self.hold {
            Some(Hold::After(after)) => {
                let by = if after.len() == 1 {
                    "a dependency"
                } else {
                    "dependencies"
                };
                s.push_str(&format!(" (held by {by}: it waits for {})", names(after)));
            }
            Some(Hold::Deferred(ahead)) => s.push_str(&format!(
                " (held by its date, deferred: {})",
                crate::protocol::accept::ahead_reason(*ahead)
            )),
            Some(Hold::Behind { running, queued }) => {
                s.push_str(&match running + queued {
                    0 => " with nothing ahead of it".to_string(),
                    n => format!(
                        " behind {n} job{} ({running} running, {queued} queued before it)",
                        if n == 1 { "" } else { "s" }
                    ),
                });
            }
            None => {}
        }
        if self.seen == Observed::NotSeen {
            s.push_str(&format!(" on {} (sync may lag)", self.target));
        }
        if self.killed_with_listener {
            s.push_str(" (it was running when its listener was killed: it is recorded as interrupted when the listener next starts)");
        }
        if let Some(note) = &self.listener {
            s.push_str(&format!("; {note}"));
        }
        s
    }

    /// The error printed when a wait for `id` ran out after `limit`.
    pub fn timed_out(&self, id: &JobId, limit: Duration) -> String {
        format!(
            "gave up waiting for {id} after {}: it is still {}",
            clock::format_duration(limit),
            self.state()
        )
    }

    /// The error printed by `result` of `id` without `--wait`.
    pub fn no_result(&self, id: &JobId) -> String {
        format!(
            "{id} has no result on {} yet: it is {}; add --wait to wait for it",
            self.target,
            self.state()
        )
    }

    /// Adds what holds the job to `out`, the command's JSON answer.
    pub fn add_json(&self, out: &mut Value) {
        out["state"] = json!(self.seen.word());
        if let Some(note) = &self.listener {
            out["listener"] = json!(note);
        }
        if let Some(m) = &self.cancel {
            out["cancelPending"] = json!({"origin": m.origin, "createdAt": m.created_at});
        }
        match &self.hold {
            Some(Hold::After(after)) => {
                out["waitsFor"] = after.iter().map(|a| json!(a.to_string())).collect();
            }
            Some(Hold::Deferred(ahead)) => out["aheadSec"] = json!(ahead.as_secs()),
            Some(Hold::Behind { running, queued }) => {
                out["queuedBehind"] = json!({"running": running, "queued": queued});
            }
            None => {}
        }
        if self.killed_with_listener {
            out["killedWithListener"] = json!(true);
        }
    }
}
