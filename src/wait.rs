//! The one waiting loop behind `enqueue --wait`, `result --wait` and
//! `cancel --wait`: poll the folder until a verified result appears, the
//! target rejects the job, or the wait times out, showing a one-line
//! progress indicator on a terminal. A wait that makes no progress for a
//! few seconds says when the target's listener has never run or has gone
//! quiet, since that, not the job, is then what it waits on.
//!
//! File-system events on `results/` ([`crate::events`]) end a poll's sleep
//! early, so a result that lands or syncs in is reported at once; they are
//! only hints, and where none arrive the poll finds the result as before.
//! Where the watch cannot be set up (no `results/` yet, a watch limit, a
//! file system without events) each look still waits out the poll.

use std::io::Write;
use std::sync::{Mutex, Once, mpsc};
use std::time::{Duration, Instant};

use crate::clock;
use crate::doc::Outcome;
use crate::error::{Error, Result};
use crate::events::{Events, Hint};
use crate::heartbeat;
use crate::key::Key;
use crate::layout::TargetDirs;
use crate::names::JobId;
use crate::observe::{self, Observed};
use crate::output::Follower;
use crate::rejected::Reason;

/// How often the folder is looked at while waiting.
const POLL: Duration = Duration::from_millis(200);

/// The least time between two looks when events wake a wait early: a busy
/// lane placing many results wakes it at most 50 times a second.
const EARLIEST: Duration = Duration::from_millis(20);

/// How long a wait goes without progress before it looks at the listener.
const QUIET: Duration = Duration::from_secs(5);

/// How a wait ended.
pub enum Waited {
    /// The verified result.
    Done(Box<Outcome>),
    /// The target's listener rejected the job file, and why.
    Rejected(Box<Reason>),
    /// Still not finished when the wait ran out; the last state seen.
    TimedOut(Observed),
}

/// Copies what `follow` has gained to this process's stdout and stderr. A
/// reader gone from stdout (`| head`) ends the program quietly, as
/// [`crate::out::line`] does.
pub fn pump(follow: &mut Follower) {
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    if let Err(e) = follow.pump(&mut out, &mut err)
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(i32::from(crate::exit::SUCCESS));
    }
    for note in follow.take_notes() {
        eprintln!("fleet-dispatch: {note}");
    }
}

/// How long a follow that reached the job's result waits for its logs to
/// hold all the result says they do (a sync engine may bring the log after
/// the result).
const LOG_GRACE: Duration = Duration::from_secs(5);

/// Holds what `follow` showed against `o`, the job's verified result
/// ([`crate::output::judge`]), giving a log still short [`LOG_GRACE`] to
/// arrive. What was shown but is not the job's output is `FORBIDDEN`: the
/// command must not end as if it had shown the job's output.
fn settle_logs(follow: &mut Follower, id: &JobId, o: &Outcome) -> Result<()> {
    use crate::output::Verdict;
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
        eprintln!("fleet-dispatch: {note}");
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
            Verdict::Short(has, should) => eprintln!(
                "fleet-dispatch: {file} holds {has} of the {should} bytes {id}'s result says it does (it may still be arriving); `fleet-dispatch logs` prints it once it has"
            ),
            Verdict::Matches => {}
        }
    }
    Ok(())
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
    // The progress line would tangle with the job's streamed stderr.
    let show = !quiet && follow.is_none() && crate::screen::progress_line();
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
            eprintln!("fleet-dispatch: {}", forged.note(id, &seen));
            warned = Some(forged);
        }
        if let Some(f) = follow.as_deref_mut() {
            // After the look, so output written before the result is all
            // copied when the result ends the wait.
            f.saw(&seen);
            pump(f);
        }
        match seen {
            Observed::Done(o) => {
                clear();
                if let Some(f) = follow.as_deref_mut() {
                    settle_logs(f, id, &o)?;
                }
                return Ok(Waited::Done(o));
            }
            Observed::Rejected(r) => {
                clear();
                return Ok(Waited::Rejected(r));
            }
            Observed::ForgedResult(forged) => {
                clear();
                return Err(forged.refusal(id));
            }
            _ => {}
        }
        if seen.word() != last_word {
            last_word = seen.word();
            progress = Instant::now();
        }
        // The heartbeat is read once per quiet spell, not on every poll.
        if progress.elapsed() >= QUIET
            && looked.is_none_or(|t| t.elapsed() >= QUIET)
            && let Some(note) = {
                looked = Some(Instant::now());
                listener_note(dirs, key).or_else(|| held_note(dirs, id, key, &seen))
            }
            && said.as_deref() != Some(note.as_str())
        {
            clear();
            eprintln!("fleet-dispatch: {note}");
            said = Some(note);
        }
        if show {
            eprint!(
                "\r\x1b[2K{id}: {} {}",
                seen.word(),
                clock::human(start.elapsed())
            );
            let _ = std::io::stderr().flush();
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            if show {
                eprintln!();
            }
            return Ok(Waited::TimedOut(seen));
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
                eprintln!("{line}");
            }
            std::process::exit(i32::from(crate::exit::INTERRUPTED));
        });
    });
}

/// What is wrong with the target's listener, if anything: it never ran,
/// its heartbeat does not verify under `key`, or it is stale or says it
/// stopped.
pub fn listener_note(dirs: &TargetDirs, key: &Key) -> Option<String> {
    let target = dirs.target();
    let Some(beat) = heartbeat::read(dirs) else {
        return Some(format!(
            "no listener has ever run for {target} (no {}): start `fleet-dispatch listen` on it",
            dirs.listener_json().display()
        ));
    };
    if !beat.verified(key, target) {
        return Some(format!(
            "{target}'s heartbeat ({}) is not signed with this machine's key, so whether its listener runs is unknown (an older version, another key, or a folder writer wrote it)",
            dirs.listener_json().display()
        ));
    }
    if heartbeat::seen_alive(&beat.state, beat.age(), heartbeat::changed(dirs)) {
        return None;
    }
    let age = beat.age().map_or("at an unreadable time".to_string(), |a| {
        format!("{} ago", clock::human(a))
    });
    Some(if beat.state == "stopped" {
        format!("{target}'s listener stopped {age}; nothing runs until it is started again")
    } else {
        format!(
            "{target}'s listener has not been heard from since {age} (its machine may be off, or sync lags)"
        )
    })
}

/// What a queued job held by a dependency waits for (docs/protocol.md
/// §7.13), if it is.
fn held_note(dirs: &TargetDirs, id: &JobId, key: &Key, seen: &Observed) -> Option<String> {
    if *seen != Observed::Queued {
        return None;
    }
    let held = observe::held_on(dirs, id, key);
    if held.is_empty() {
        return None;
    }
    let names: Vec<String> = held.iter().map(ToString::to_string).collect();
    Some(format!("{id} is held: it waits for {}", names.join(", ")))
}

/// The error printed when a wait ran out.
pub fn timed_out_message(id: &JobId, seen: &Observed, limit: Duration) -> String {
    format!(
        "gave up waiting for {id} after {}: it is still {}",
        clock::format_duration(limit),
        seen.word()
    )
}
