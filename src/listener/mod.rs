//! The listener (docs/protocol.md §7): drains one target's inbox one job at
//! a time, or up to N at once with `--slots N` (§7.14, `slots`).
//!
//! Per job, in this order: acceptance (§6) → replay guard (results,
//! archive/done, ledger) → age → cancel check (a valid marker ends a queued
//! job before anything is spawned) → dependency check (a job waiting for
//! others stays queued, or ends unstarted when one failed) → governor gate
//! → run.
//!
//! Writes: the job's start line in the ledger, flushed, before the spawn;
//! when it ends, its result in the ledger (durable) → result file → job to
//! archive/done → marker to archive/consumed. A crash at any point neither
//! loses a job nor runs it twice: a started job without a result gets an
//! `interrupted` result and is never re-run; a recorded result that did not
//! reach `results/` is published again.
//!
//! One flush per job on the way from one spawn to the next: a result is
//! recorded unflushed, and the next job's start line flushes both (a
//! listener with nothing to start flushes at once); the [`Publisher`]
//! thread then places the result and archives the job, in batches.
//!
//! This file is the drain loop. Beside it: `inbox` (the listing and what
//! is remembered between listings), `walk` (the per-job steps over the
//! queue in drain order), `job_run` (one job's run, from its start
//! line to its recorded result), `slots` (jobs run at once, each waited for
//! in a thread of its own), `markers` (a queued job's cancel check),
//! `after` (the dependency check's reading), `held` (what is kept of held
//! jobs between passes), `refuse` (refused files moved
//! aside), `rival` (another listener serving the target), `recovery`
//! (start-up after a crash) and `handle` (the HTTP intake's way in). The rules it applies live
//! outside: acceptance in [`crate::accept`], the replay guard in
//! [`crate::replay`], results in [`crate::doc::detail`], refusals in
//! [`crate::rejected`], a job's environment in [`crate::jobenv`].

use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::clock;
use crate::error::Result;
use crate::events::{Events, Hint, Watching};
use crate::fsops::{self, Dir, Durability};
use crate::heartbeat::{self, Beat, Heartbeat};
use crate::layout::{DRAIN, Folders, Place, StateDirs, TargetDirs};
use crate::listing::Listing;
use crate::names::JobId;
use crate::platform;
use crate::publisher::{Finished, Publisher};
use crate::rejected;
use crate::runner::{Control, Mailbox};
use crate::shutdown::Shutdown;
use crate::state::{self, Ledger, Lock};
use crate::trust::Key;

use inbox::{Candidate, Inbox};
use slots::Slots;

mod after;
mod handle;
mod held;
mod inbox;
mod job_run;
mod markers;
mod recovery;
mod refuse;
mod rival;
mod slots;
mod walk;

pub use handle::Handle;

/// Listener settings from the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Drain once and return.
    pub once: bool,
    /// Inbox rescan and cancel poll interval.
    pub poll: Duration,
    /// Watch `inbox/` and `cancel/` for file-system events, looking at once
    /// instead of at the next poll (off for network shares that deliver
    /// none; the poll bounds everything either way).
    pub watch: bool,
    /// How long an unparseable file must stay unchanged before rejection.
    pub settle: Duration,
    /// Jobs older than this are stale.
    pub max_age: Duration,
    /// The most grace the running job gets when the listener is stopped
    /// (its own grace when less, or when this is unset), so a service
    /// manager's stop timeout can cover it.
    pub stop_grace: Option<Duration>,
    /// The governor file, if any.
    pub governor: Option<PathBuf>,
    /// Print a line per event (off with `--json`).
    pub verbose: bool,
    /// Full: a job's start line is flushed before its spawn. Relaxed: the
    /// publisher flushes the ledger once per batch, before it places the
    /// batch's results.
    pub durability: Durability,
    /// How many jobs run at once: 1 runs each in the listener's own thread
    /// (the serial drain); more run each in a thread of its own.
    pub slots: usize,
}

/// The summary counters (docs/protocol.md §7.12).
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct Counters {
    /// Ran and exited 0 (including a raced completion).
    pub done: u64,
    /// Ran, anything else.
    pub failed: u64,
    /// Stopped by a marker, or cancelled before start.
    pub cancelled: u64,
    /// Left queued by the governor.
    pub deferred: u64,
    /// Rejected inputs.
    pub rejected: u64,
    /// Already processed (replays).
    pub skipped: u64,
    /// Layout folders found to be links or files, moved aside and made
    /// again (docs/protocol.md §3.5).
    pub repaired: u64,
}

/// How a listener run ended.
#[derive(Debug)]
pub struct Summary {
    /// The counters.
    pub counters: Counters,
    /// True when it stopped on Ctrl-C or SIGTERM.
    pub interrupted: bool,
    /// True when it stopped at a drain request (`listen --drain`).
    pub drained: bool,
}

/// Where the listener runs and with what.
pub struct Listener {
    dirs: TargetDirs,
    /// The layout's folders, held open for one pass (opened again at the
    /// next, so a folder swapped meanwhile is noticed and moved aside).
    folders: Option<Folders>,
    key: Arc<Key>,
    key_path: PathBuf,
    root: PathBuf,
    settings: Settings,
    ledger: Ledger,
    /// Finished jobs whose results are recorded in the ledger but not yet
    /// flushed: handed to the publisher after the next start line, or when
    /// nothing starts.
    pending: Vec<Finished>,
    publisher: Publisher,
    /// Results handed over since the last checkpoint, and when it was.
    unchecked: u64,
    checkpointed: Instant,
    counters: Counters,
    /// Jobs already reported as deferred by the governor.
    deferred: HashSet<JobId>,
    /// The held jobs' verdicts, kept until what they wait for may have
    /// ended ([`held`]).
    held: held::Held,
    /// A job was held on a result of ours still being placed (with
    /// `--once`, one more pass after the placing lets it start).
    held_on_own: bool,
    /// The verdict being made leaned on a result of ours being placed.
    leaned_on_own: bool,
    inbox: Inbox,
    /// `cancel/` as last listed: a queued job's cancel check, and the
    /// completion race's, look at the folder's time, not up the name.
    markers: Listing,
    /// The jobs running in slots (none with one slot: its job runs in
    /// this thread).
    slots: Slots,
    mail: Mailbox,
    rx: Receiver<Control>,
    /// What file-system events hinted at, and the watch that feeds it
    /// (none when off, or when it could not be set up).
    hint: Hint,
    events: Option<Events>,
    /// The hint's change count at the last listing of the inbox.
    listed_changes: u64,
    /// A layout folder was moved aside and made again: watch it anew.
    rewatch: bool,
    /// The watch failed once already (said once; tried again only when a
    /// folder is made anew).
    watch_failed: bool,
    /// Where [`Self::record_watching`] writes, in the state directory.
    watching: PathBuf,
    /// The root is not the one this listener knew (docs/protocol.md §3.6):
    /// said once, and again once it is back.
    root_gone: bool,
    shutdown: Arc<Shutdown>,
    beat: Heartbeat,
    last_heartbeat: Instant,
    /// Another listener seen serving this target, and when we last looked.
    rival: Option<Beat>,
    rival_checked: Option<Instant>,
    rival_was_said: bool,
    /// Where `listen --drain` asks this listener to stop between jobs: the
    /// state folder, held open (the request is looked for by its one name
    /// after every job, not by its path).
    drain: Dir,
    /// This process's id, for the `running/` files (asked once: each ask
    /// is a system call).
    pid: u32,
    _lock: Lock,
    _folder_lock: Lock,
}

/// The answer when `listener.lock` in the target folder is held but no
/// verified heartbeat of another listener backs it. Still `BUSY`: the
/// holder may be a genuine listener that has not written its first
/// heartbeat yet, and on one file system the lock is what keeps two
/// listeners started at one instant from both starting a job (SECURITY.md
/// states the residual risk). Said plainly, so a squatter is
/// found rather than waited for.
fn held_unbacked(dirs: &TargetDirs) -> crate::error::Error {
    crate::error::Error::new(
        crate::error::Code::Busy,
        format!(
            "{} is held by another process, but no heartbeat signed with the fleet key backs it: a listener still starting, a listener with another key, or a process without the key squatting the lock",
            dirs.folder_lock().display()
        ),
    )
    .hint("try again in a few seconds; if it stays, find the process holding the file (`fuser`/`lsof` where the folder lives, Open Files in Computer Management for an SMB share) and stop it")
}

impl Listener {
    /// Takes the lock, creates the target's folders and recovers from a
    /// crash of the previous listener.
    pub fn start(
        root: PathBuf,
        dirs: TargetDirs,
        state: StateDirs,
        key: Key,
        key_path: PathBuf,
        settings: Settings,
        shutdown: Arc<Shutdown>,
    ) -> Result<Listener> {
        let lock = Lock::acquire(&state, dirs.target().as_str())?;
        let (folders, repairs) = rejected::open_repairing(&dirs)?;
        // A folder it can list but not write (a read-only share or mount)
        // would run jobs whose results could never be placed: refused
        // before any job starts, naming the folder.
        folders.results().check_writable("write-probe")?;
        let instance = state::instance_id(&state)?;
        let host = platform::hostname().unwrap_or_default();
        let who = heartbeat::Identity {
            host,
            instance,
            key_fingerprint: key.key_id(),
        };
        let key = Arc::new(key);
        let beat = Heartbeat::new(
            dirs.clone(),
            &state,
            dirs.target().as_str(),
            &who,
            Arc::clone(&key),
            settings.poll,
        );
        let folder_lock = Lock::acquire_folder(&dirs)?;
        if let Some(other) = beat.rival() {
            let whence = if folder_lock.is_some() {
                String::new()
            } else {
                format!(
                    " (from this file system: it holds {})",
                    dirs.folder_lock().display()
                )
            };
            if other.instance == who.instance {
                return Err(crate::error::Error::new(
                    crate::error::Code::Busy,
                    format!(
                        "another listener serves {}: {}{whence}",
                        dirs.target(),
                        other.who_beside(&who.instance)
                    ),
                )
                .hint(format!(
                    "two listeners would run every job twice: stop the copy's, remove its {} (a new instance id is made at its next start) or give it its own state directory, then start them again",
                    state.instance().display()
                )));
            }
            return Err(crate::error::Error::new(
                crate::error::Code::Busy,
                format!("another listener serves {}: {}{whence}", dirs.target(), other.who()),
            )
            .hint(if folder_lock.is_some() {
                "one listener per target in the whole fleet: two would run every job twice; stop the other, or start this one once its heartbeat is over 90 s old"
            } else {
                "one listener per target in the whole fleet: two would run every job twice; stop the other first (it holds the folder lock, which a stale heartbeat does not release)"
            }));
        }
        let Some(folder_lock) = folder_lock else {
            return Err(held_unbacked(&dirs));
        };
        platform::become_subreaper();
        platform::tune_allocator();
        let now = clock::now();
        // Keep ids at least as long as the max age, and never under 30 days:
        // a job file resurrected by sync must meet the ledger or its age.
        let retention =
            settings.max_age.max(Duration::from_secs(30 * 86400)) + Duration::from_secs(86400);
        let (ledger, unfinished) = Ledger::load(&state, now, retention)?;
        let (tx, rx) = mpsc::channel();
        let bell = platform::Bell::new().map_err(|e| {
            crate::error::Error::new(
                crate::error::Code::Internal,
                format!("cannot make the listener's wake-up pipe: {e}"),
            )
        })?;
        let mail = Mailbox::new(tx, bell);
        let wake = mail.clone();
        shutdown.on_request(move || wake.send(Control::Shutdown));
        // A second Ctrl-C exits at once: the folder is told the listener
        // stopped, and no killed job shows as running any more.
        let (last_beat, last_dirs) = (beat.clone(), dirs.clone());
        shutdown.on_kill(move |killed| {
            if let Ok(Some(running)) = last_dirs.open(Place::Running) {
                for id in killed {
                    let _ = running.remove(&format!("{id}.json"));
                }
            }
            last_beat.write_killed(killed);
        });
        let drain = Dir::open_trusted(state.base())?;
        // A request left from an earlier run is not for this one.
        drain.take(DRAIN);
        let publisher = Publisher::start(
            dirs.clone(),
            Arc::clone(&key),
            (settings.durability == Durability::Relaxed).then(|| state.ledger()),
        );
        let inbox = Inbox::new(settings.settle);
        let mut l = Listener {
            dirs,
            folders: Some(folders),
            key,
            key_path,
            root,
            settings,
            ledger,
            pending: Vec::new(),
            publisher,
            unchecked: 0,
            checkpointed: Instant::now(),
            counters: Counters::default(),
            deferred: HashSet::new(),
            held: held::Held::default(),
            held_on_own: false,
            leaned_on_own: false,
            inbox,
            markers: Listing::default(),
            slots: Slots::default(),
            mail,
            rx,
            hint: Hint::new(),
            events: None,
            listed_changes: 0,
            rewatch: false,
            watch_failed: false,
            root_gone: false,
            watching: state.watching(),
            shutdown,
            beat,
            last_heartbeat: Instant::now(),
            rival: None,
            rival_checked: None,
            rival_was_said: false,
            drain,
            pid: std::process::id(),
            _lock: lock,
            _folder_lock: folder_lock,
        };
        l.repaired(repairs);
        l.record_governor(&state);
        l.watch_folders();
        l.recover(unfinished)?;
        l.heartbeat(None, "listening");
        Ok(l)
    }

    /// Counts and logs layout folders moved aside.
    fn repaired(&mut self, notes: Vec<String>) {
        self.counters.repaired += notes.len() as u64;
        self.rewatch |= !notes.is_empty();
        for n in notes {
            self.say(n);
        }
    }

    /// Watches `inbox/` and `cancel/` for events (after the layout checks
    /// passed: both are real folders in the root), each event waking the
    /// listener through its mailbox. A watch that cannot be set up is said
    /// once on stderr; the poll goes on.
    fn watch_folders(&mut self) {
        self.events = None;
        if self.settings.once {
            return;
        }
        if !self.settings.watch {
            self.record_watching(&Watching::Off);
            return;
        }
        let mail = self.mail.clone();
        let dirs = [self.dirs.inbox(), self.dirs.cancel()];
        match Events::watch(&dirs, &self.hint, move || mail.send(Control::Wake)) {
            Ok(e) => {
                self.events = Some(e);
                self.record_watching(&Watching::Events);
            }
            Err(e) => {
                self.record_watching(&Watching::Unavailable(e.clone()));
                if !std::mem::replace(&mut self.watch_failed, true) {
                    eprintln!(
                        "fleet-dispatch: cannot watch {} for changes ({e}); looking every {} instead",
                        self.dirs.inbox().display(),
                        clock::format_duration(self.settings.poll)
                    );
                }
            }
        }
    }

    /// Records which governor file this listener obeys in its state
    /// directory (or that it obeys none), where `doctor` and `status` read
    /// it: a hold is otherwise seen only as jobs that stay queued. A failed
    /// write is ignored.
    fn record_governor(&self, state: &StateDirs) {
        let at = state.governor();
        match &self.settings.governor {
            Some(file) => {
                let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
                let line = format!("{}\n", file.display());
                let _ = fsops::replace(&at, line.as_bytes(), fsops::Flush::Nothing);
            }
            None => {
                let _ = std::fs::remove_file(&at);
            }
        }
    }

    /// Records how this listener learns of changes in its state directory,
    /// where `doctor` reads it; a failed write is ignored.
    fn record_watching(&self, how: &Watching) {
        let _ = fsops::replace(
            &self.watching,
            how.to_line().as_bytes(),
            fsops::Flush::Nothing,
        );
    }

    /// The layout's folders for this pass, opened (and repaired) when the
    /// pass has none yet.
    fn folders(&mut self) -> Result<Folders> {
        if let Some(f) = &self.folders {
            return Ok(f.clone());
        }
        let (f, notes) = rejected::open_repairing(&self.dirs)?;
        self.repaired(notes);
        self.folders = Some(f.clone());
        Ok(f)
    }

    /// [`Self::say`] for a line made only when verbose: those said for
    /// every job, so that a quiet drain makes none of them.
    fn say_with(&self, line: impl FnOnce() -> String) {
        if self.settings.verbose {
            self.say(line());
        }
    }

    /// Prints `line` when verbose.
    fn say(&self, line: impl std::fmt::Display) {
        if self.settings.verbose {
            // A log line that cannot be written (a closed pipe) must never
            // stop the listener or the job it runs.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{} {}", clock::format(clock::now()), line);
            let _ = out.flush();
        }
    }

    /// Drains the inbox: once, or until shut down.
    pub fn run(mut self) -> Result<Summary> {
        self.say(format!(
            "listening for {} in {} (poll {}{})",
            self.dirs.target(),
            self.dirs.inbox().display(),
            clock::format_duration(self.settings.poll),
            if self.events.is_some() {
                ", and file-system events"
            } else {
                ""
            }
        ));
        // Between jobs: those running in slots are stopped (a shutdown) or
        // finish (a drain) before the listener stops.
        let ended = self.drain().and_then(|drained| {
            self.wind_down()?;
            self.checkpoint()?;
            Ok(drained)
        });
        let drained = match ended {
            Ok(d) => d,
            Err(e) => {
                // However the listener failed (a full state disk, say), no
                // job is left behind running unwatched: each in a slot gets
                // the stop a shutdown gives, and the heartbeat says stopped.
                self.stop_every_slot();
                let _ = self.checkpoint();
                self.heartbeat(None, "stopped");
                return Err(e);
            }
        };
        let interrupted = self.shutdown.requested();
        self.heartbeat(None, "stopped");
        Ok(Summary {
            counters: self.counters.clone(),
            interrupted,
            drained,
        })
    }

    /// The drain loop of [`Listener::run`]: true when a drain request
    /// ended it.
    fn drain(&mut self) -> Result<bool> {
        let mut drained = false;
        let mut again = false;
        loop {
            if self.shutdown.requested() {
                break;
            }
            // Between jobs: a drain request ends the loop once the job that
            // ran has finished, before another starts.
            if self.drain.take(DRAIN) {
                self.say("draining: starting no new job, and stopping");
                drained = true;
                break;
            }
            // Jobs that ended in slots, and messages for them.
            if !self.slots.is_empty() && self.dispatch_waiting()? {
                break;
            }
            let acted = if self.slot_free() {
                self.pass()?
            } else {
                false
            };
            if self.shutdown.requested() {
                break;
            }
            if acted {
                again = false;
                self.checkpoint_if_due()?;
                continue;
            }
            self.checkpoint()?;
            // Folders are held for a pass only: an idle listener holds none
            // (one with jobs in slots keeps them for their ends), nor the
            // listing of `cancel/`, which holds that folder too.
            if self.slots.is_empty() {
                self.folders = None;
                self.markers = Listing::default();
            }
            if self.settings.once && self.slots.is_empty() {
                // A job held on a result of ours that was being placed can
                // start now that it is placed: one more pass.
                if std::mem::take(&mut self.held_on_own) && !again {
                    again = true;
                    continue;
                }
                break;
            }
            if self.last_heartbeat.elapsed() >= heartbeat::EVERY {
                self.heartbeat(None, "listening");
            }
            // Sleep one poll interval, waking at once on shutdown, a change
            // an event hinted at, or the end of a job running in a slot.
            if let Ok(msg) = self.rx.recv_timeout(self.settings.poll)
                && self.dispatch(msg)?
            {
                break;
            }
        }
        Ok(drained)
    }

    /// Handles at most one job that runs or ends; true when one did.
    ///
    /// The inbox is listed again only when its folder changed (by its
    /// mtime, or an event's hint) or a poll interval has passed, so
    /// draining n queued jobs costs n small steps, not n listings of n
    /// files. Before saying "nothing to do" the pass always looks at a
    /// fresh listing.
    ///
    /// The folders are looked at afresh for each pass: those of the last
    /// pass are kept when every name still leads to the folder held
    /// ([`TargetDirs::still_holds`]), else all are opened again, and
    /// repaired. When they cannot be (a writer keeps swapping them), the
    /// pass is skipped and tried again after a poll interval: nothing in
    /// the folder stops the listener.
    fn pass(&mut self) -> Result<bool> {
        if self.rival_serves() {
            return Ok(false);
        }
        if !self
            .folders
            .as_ref()
            .is_some_and(|f| self.dirs.still_holds(f))
        {
            self.folders = None;
        }
        let f = match self.folders() {
            Ok(f) => {
                if std::mem::take(&mut self.root_gone) {
                    eprintln!(
                        "fleet-dispatch: the dispatch root {} is back",
                        self.root.display()
                    );
                }
                f
            }
            Err(e) if e.code == crate::error::Code::Config => {
                // The root went away: nothing is made in what stands there.
                if !std::mem::replace(&mut self.root_gone, true) {
                    eprintln!("fleet-dispatch: {}; waiting for it", e.message);
                }
                return Ok(false);
            }
            Err(e) => {
                self.say(format!(
                    "cannot open the folders of {}: {e}; trying again",
                    self.dirs.target()
                ));
                return Ok(false);
            }
        };
        if self.hint.take_lost() || std::mem::take(&mut self.rewatch) {
            self.watch_folders();
        }
        let hinted = self.hint.changes() != self.listed_changes;
        let fresh = hinted
            || self
                .inbox
                .stale(f.inbox(), self.settings.poll, self.publisher.inbox_mtime());
        if fresh {
            self.rescan(&f)?;
        }
        if self.act(&f)? {
            return Ok(true);
        }
        if !fresh {
            self.rescan(&f)?;
            return self.act(&f);
        }
        Ok(false)
    }

    fn rescan(&mut self, f: &Folders) -> Result<()> {
        // Read before listing: an event during the listing lists again.
        self.listed_changes = self.hint.changes();
        let (mut jobs, found) =
            self.inbox
                .scan(f.inbox(), self.dirs.target().as_str(), &self.key)?;
        for line in found.notes {
            self.say(line);
        }
        for (name, r) in found.refused {
            self.refuse(f, &name, &r);
        }
        // Finished jobs not yet archived, and jobs running in slots, are
        // not queued (the ledger's start line would refuse them as replays).
        jobs.retain(|c| {
            !self.pending.iter().any(|p| p.id == c.job.id)
                && !self.publisher.in_flight(&c.job.id)
                && !self.slots.runs(&c.job.id)
        });
        jobs.sort_by(|a, b| a.job.drain_order(&b.job));
        let queued: HashSet<&JobId> = jobs.iter().map(|c| &c.job.id).collect();
        self.held.retain(|id| queued.contains(id));
        self.inbox.reset(jobs, f.inbox());
        Ok(())
    }

    fn heartbeat(&mut self, job: Option<&JobId>, state: &str) {
        self.last_heartbeat = Instant::now();
        self.beat.write(job.map(JobId::as_str), state);
    }
}
