//! The listener on an object-store root (docs/object-store.md, "The
//! protocol on objects"): one target's inbox drained one job at a time,
//! with the folder lane's rules (acceptance, replay guard, age, a queued
//! job's cancel, dependencies, a date ahead of this clock; the stop path
//! of [`runner`](crate::engine::runner)) over objects, found by listing at each poll (a bucket
//! sends no events).
//!
//! Per job, the order of writes: its claim (its archived copy placed
//! create-only in `archive/done/`: of two listeners exactly one goes on,
//! and a job claimed once is never claimed again), its marker read beside
//! it → spawn → output as log chunks while it runs (`running/<id>.json`
//! shows it once it has run a second) → the last chunks → its result,
//! create-only (placed while the next job is claimed, before that one is
//! spawned) → its inbox copy removed → a marker's move → `running/`
//! removed. A claim without a result is a listener that stopped while the
//! job ran: the next start gives it one `interrupted` result, so a job
//! never runs twice; a result already placed only has the moves after it
//! redone. The runner writes each log to a local spool folder in the state
//! directory, from which the chunks are placed.
//!
//! Parts: `checks` (the claim and what a claim taken means, a queued
//! job's marker, its dependencies), `claim` (the `running/` document and
//! the start's rule for one found), `recovery` (what a stopped listener left),
//! `objects` (the object forms of the folder moves, replaced objects, log
//! chunks), `watch` (what the runner looks at while a job runs), `beats`
//! (the heartbeat).

mod beats;
mod checks;
pub mod claim;
mod objects;
mod publish;
mod recovery;
mod run;
mod slots;
mod watch;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

use crate::base::clock;
use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::engine::listener::{Counters, Settings, Summary};
use crate::engine::runner::{Control, Mailbox};
use crate::engine::shutdown::Shutdown;
use crate::local::governor::Tier;
use crate::local::state::Lock;
use crate::places::heartbeat::{self};
use crate::places::rejected::Kind;
use crate::platform::{self};
use crate::protocol::accept::{self, Rejection};
use crate::protocol::dependency::{self};
use crate::protocol::doc::detail;
use crate::protocol::doc::{Job, job};
use crate::protocol::judge;
use crate::store::fsops::Dir;
use crate::store::layout::{Place, StateDirs};
use crate::store::port::Shelves;
use crate::store::port::bucket::BucketTarget;
use crate::trust::Key;
pub use beats::Beats;
use checks::Replay;
use objects::Replaced;

/// What the HTTP intake holds to feed a listener on a bucket from its own
/// threads: the same target, key and age limit, and the listener's
/// mailbox (a wake, or a cancel straight to the runner).
#[derive(Clone)]
pub struct Door {
    /// The target served.
    pub t: BucketTarget,
    /// The fleet key.
    pub key: Arc<Key>,
    /// Jobs older than this are stale.
    pub max_age: Duration,
    /// Wakes the idle listener, or reaches the running job's runner.
    pub control: Mailbox,
    /// The root, as people read it.
    pub root: String,
}

/// A job's bytes are held from its listing to its claim up to this size,
/// the claim being its archived copy written from them (a larger one is
/// read again at its claim).
const HELD_MAX: usize = 64 * 1024;

/// An accepted job as the listing found it.
#[derive(Clone)]
struct Listed {
    /// The version the listing saw.
    etag: Option<String>,
    job: Arc<Job>,
    /// Its bytes as read, when small enough to hold ([`HELD_MAX`]).
    bytes: Option<Arc<[u8]>>,
}

/// A listener serving one target of a bucket.
pub struct BucketListener {
    t: BucketTarget,
    key: Arc<Key>,
    key_path: PathBuf,
    root_shown: String,
    settings: Settings,
    shutdown: Arc<Shutdown>,
    mail: Mailbox,
    rx: Receiver<Control>,
    beats: Beats,
    /// Where the runner writes a job's logs before they are placed.
    spool: Dir,
    counters: Counters,
    /// Accepted jobs by inbox name, as listed.
    accepted: HashMap<String, Listed>,
    /// Jobs said as deferred or held, so each is said once.
    said: std::collections::HashSet<String>,
    /// The runnable jobs of the last listing, in drain order, and when it
    /// was made.
    queue: Vec<Arc<Job>>,
    listed: std::time::Instant,
    /// What `running/` shows of the job this listener claimed last (not
    /// written until it has run a second).
    claimed: Option<Replaced>,
    /// The inbox's names at this run's first listing: a job among them
    /// claimed already was claimed by a listener that stopped.
    at_start: Option<std::collections::HashSet<String>>,
    /// Where `listen --drain` asks this listener to stop between jobs.
    drain: Dir,
    /// The jobs running beside each other (`--slots`).
    slots: slots::Slots,
    /// The moves after each result, in a thread of their own.
    publisher: publish::Publisher,
    /// Jobs ended by this run whose moves may still be under way.
    finished: std::collections::HashSet<JobId>,
    /// Since when the passes fail (the store does not answer), if they do.
    unanswered: Option<std::time::Instant>,
    _lock: Lock,
}

impl BucketListener {
    /// Takes this machine's lock for the target (`state`), refuses to
    /// start beside another live listener of it (its heartbeat on the
    /// bucket), and brings to an end what a stopped one left.
    pub fn start(
        t: BucketTarget,
        state: &StateDirs,
        key: Key,
        key_path: PathBuf,
        settings: Settings,
        shutdown: Arc<Shutdown>,
    ) -> Result<BucketListener> {
        let lock = Lock::acquire(state, t.target().as_str())?;
        let key = Arc::new(key);
        let run = heartbeat::run_id();
        let host = platform::hostname().unwrap_or_default();
        // A beat from this host whose process is gone is a listener that
        // died here: no need to wait for its beat to age.
        let rival = heartbeat::on_bucket(&t, &key).filter(|b| {
            b.alive()
                && b.run != run
                && !(b.host == host && i32::try_from(b.pid).is_ok_and(|p| !platform::is_alive(p)))
        });
        if let Some(b) = rival.as_ref() {
            return Err(Error::new(
                Code::Busy,
                format!(
                    "another listener serves {} on {}: {} (its heartbeat is {} old)",
                    t.target(),
                    t.shown(),
                    b.who(),
                    b.age().map_or("of unknown age".into(), clock::human)
                ),
            )
            .hint(
                "stop it first; a listener that died is taken over once its heartbeat is stale",
            ));
        }
        // A store that overwrites would let two listeners both claim a job.
        crate::store::objstore::probe(t.bucket().client(), t.bucket().root())?;
        // A drain request left from an earlier run is not for this one.
        let drain = Dir::open_trusted(state.base())?;
        drain.take(crate::store::layout::DRAIN);
        let spool_path = state.base().join("bucket-logs");
        crate::store::fsops::create_dirs(std::slice::from_ref(&spool_path))?;
        let spool = Dir::open_trusted(&spool_path)?;
        let (mail, rx) = Mailbox::open("the listener's")?;
        let wake = mail.clone();
        shutdown.on_request(move || wake.send(Control::Shutdown));
        platform::become_subreaper();
        let beats = Beats {
            object: Replaced::new(t.key_of(heartbeat::ON_BUCKET), None),
            key: Arc::clone(&key),
            target: t.target().to_string(),
            host,
            instance: crate::local::state::instance_id(state)?,
            run,
            started_at: clock::format(clock::now()),
            poll: settings.poll,
        };
        let root_shown = t.bucket().root().to_string();
        let kept = state.base().join(publish::KEPT);
        crate::store::fsops::create_dirs(std::slice::from_ref(&kept))?;
        let kept = Dir::open_trusted(&kept)?;
        // Results an earlier run could not place come first: each is a
        // job's true end, which a recovery would otherwise call interrupted.
        let placed = publish::place_kept(&t.bucket().target(t.target()), &kept)?;
        if placed > 0 {
            crate::note!("fleet-dispatch: placed {placed} result(s) an earlier run kept");
        }
        let keeping = publish::Keeping {
            dir: kept,
            persist: !settings.once,
            shutdown: Arc::clone(&shutdown),
        };
        let publisher =
            publish::Publisher::start(t.bucket().target(t.target()), Arc::clone(&key), keeping);
        let mut l = BucketListener {
            t,
            key,
            key_path,
            root_shown,
            settings,
            shutdown,
            mail,
            rx,
            beats,
            spool,
            counters: Counters::default(),
            accepted: HashMap::new(),
            said: Default::default(),
            queue: Vec::new(),
            listed: std::time::Instant::now(),
            claimed: None,
            at_start: None,
            publisher,
            drain,
            slots: Default::default(),
            finished: Default::default(),
            unanswered: None,
            _lock: lock,
        };
        l.beat("listening");
        l.recover()?;
        Ok(l)
    }

    fn say(&self, line: impl std::fmt::Display) {
        if self.settings.verbose {
            crate::base::out::line(&format!("{} {line}", clock::format(clock::now())));
        }
    }

    /// Writes the heartbeat, naming the jobs running in slots.
    fn beat(&mut self, state: &str) {
        let running = self.slots.ids();
        let state = if running.is_empty() || state != "listening" {
            state
        } else {
            "running"
        };
        self.beats.write(&self.t, &running, state);
    }

    /// The HTTP intake's way in.
    pub fn door(&self) -> Door {
        Door {
            t: self.t.bucket().target(self.t.target()),
            key: Arc::clone(&self.key),
            max_age: self.settings.max_age,
            control: self.mail.clone(),
            root: self.root_shown.clone(),
        }
    }

    /// Drains until stopped (or, with `--once`, until a pass finds nothing
    /// to start).
    pub fn run(mut self) -> Result<Summary> {
        self.say(format!(
            "listening for {} on {} (polling every {})",
            self.t.target(),
            self.t.shown(),
            clock::format_duration(self.settings.poll)
        ));
        let mut next_beat = std::time::Instant::now() + heartbeat::EVERY;
        let mut drained = false;
        let interrupted = loop {
            if self.shutdown.requested() {
                break true;
            }
            self.collect_ended(false)?;
            if drained || self.drain.take(crate::store::layout::DRAIN) {
                // Asked to stop between jobs: the ones in slots end first.
                if !drained {
                    self.say("draining: no new job starts");
                    drained = true;
                }
                if self.slots.len() == 0 {
                    break false;
                }
                if let Ok(Control::Shutdown) = self.rx.recv_timeout(self.settings.poll) {
                    break true;
                }
                continue;
            }
            // A store that does not answer is waited for: said once, the
            // pass tried again at each poll (`--once` stops with the error).
            let worked = match self.pass() {
                Ok(worked) => {
                    if let Some(since) = self.unanswered.take() {
                        crate::note!(
                            "fleet-dispatch: {} answers again (after {})",
                            self.root_shown,
                            clock::human(since.elapsed())
                        );
                    }
                    worked
                }
                Err(e) if self.shutdown.requested() => {
                    crate::note!("fleet-dispatch: {e}");
                    break true;
                }
                Err(e) if self.settings.once => return Err(e),
                Err(e) => {
                    if self.unanswered.is_none() {
                        let why = &e.message;
                        crate::note!("fleet-dispatch: {why}; trying again at each poll");
                        self.unanswered = Some(std::time::Instant::now());
                    }
                    false
                }
            };
            if self.shutdown.requested() {
                break true;
            }
            if worked {
                continue;
            }
            if self.settings.once && self.slots.len() == 0 {
                break false;
            }
            if std::time::Instant::now() >= next_beat {
                next_beat = std::time::Instant::now() + heartbeat::EVERY;
                self.beat("listening");
            }
            match self.rx.recv_timeout(self.settings.poll) {
                Ok(Control::Shutdown) => break true,
                // From the HTTP intake: straight to the slot running it
                // (a queued job's marker is met by the next pass).
                Ok(Control::Cancel(id, m)) => self.slots.cancel(id, m),
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break true,
            }
            // After a wait (a wake from the intake, an ended slot, the
            // poll) the next pass lists the inbox again.
            self.queue.clear();
        };
        self.stop_slots()?;
        self.publisher.wait()?;
        self.beat("stopped");
        Ok(Summary {
            counters: self.counters,
            interrupted,
            drained: drained && !interrupted,
        })
    }

    /// The inbox's runnable jobs in drain order; refusals made at once.
    fn scan(&mut self) -> Result<Vec<Arc<Job>>> {
        // Jobs whose moves were done before this listing are not in it.
        for id in self.publisher.settle(std::time::Instant::now())? {
            self.finished.remove(&id);
        }
        let client = self.t.bucket().client();
        let prefix = self.t.key(Place::Inbox, "");
        let entries = client.list(&prefix, None, 1000).map_err(|a| {
            crate::store::port::bucket::failed("list", self.t.bucket().root(), &prefix, &a)
        })?;
        let inbox = entries.into_iter().filter_map(|e| {
            let name = e.key.strip_prefix(prefix.as_str())?;
            (!name.is_empty() && !name.contains('/')).then(|| (name.to_string(), e.etag))
        });
        let inbox: Vec<(String, Option<String>)> = inbox.collect();
        if self.at_start.is_none() {
            self.at_start = Some(inbox.iter().map(|(n, _)| n.clone()).collect());
        }
        let mut now = HashMap::new();
        let mut unread = Vec::new();
        for (name, etag) in inbox {
            match self.accepted.get(&name) {
                Some(l) if l.etag == etag => {
                    now.insert(name, l.clone());
                }
                _ => unread.push((name, etag)),
            }
        }
        let reads = objects::read_all(&self.t, unread.iter().map(|(n, _)| n.as_str()).collect());
        for ((name, etag), read) in unread.into_iter().zip(reads) {
            let bytes = match &read {
                FileRead::Unreadable(why) => {
                    self.say(format!("could not read inbox/{name}: {why}"));
                    continue;
                }
                FileRead::Missing => continue,
                FileRead::Bytes(b) if b.len() <= HELD_MAX => Some(Arc::from(b.as_slice())),
                _ => None,
            };
            let judged = judge::job_read(&name, read, self.t.target().as_str(), &self.key)
                .and_then(accept::runnable);
            match judged {
                Ok(j) => {
                    let job = Arc::new(j);
                    now.insert(name, Listed { etag, job, bytes });
                }
                Err(r) => self.refuse_job(&name, &r),
            }
        }
        self.accepted = now;
        let mut jobs: Vec<Arc<Job>> = self.accepted.values().map(|l| Arc::clone(&l.job)).collect();
        jobs.sort_by(|a, b| a.drain_order(b));
        Ok(jobs)
    }

    fn refuse_job(&mut self, name: &str, r: &Rejection) {
        self.counters.rejected += 1;
        self.accepted.remove(name);
        self.queue.retain(|j| j.id.file_name() != name);
        match objects::refuse(&self.t, Place::Inbox, name, r, Kind::Job, &self.key) {
            Ok(()) => self.say(format!(
                "rejected {name}: {} ({})",
                r.verdict.as_str(),
                r.message
            )),
            Err(e) => self.say(format!("could not move inbox/{name} aside: {e}")),
        }
    }

    /// One pass: the first job that can start or end does. True when one
    /// did (the next pass comes at once). The inbox is listed again when
    /// the last listing is a poll interval old, or nothing was left in it.
    fn pass(&mut self) -> Result<bool> {
        let slots = self.settings.slots.max(1);
        if slots > 1 && self.slots.len() >= slots {
            return Ok(false);
        }
        let tier = Tier::read(self.settings.governor.as_deref());
        if self.queue.is_empty() || self.listed.elapsed() >= self.settings.poll {
            self.queue = self.scan()?;
            self.listed = std::time::Instant::now();
        }
        for j in self.queue.clone() {
            let id = j.id.clone();
            let name = id.file_name();
            if self.finished.contains(&id) || self.slots.runs(&id) {
                continue;
            }
            if let Err(r) = accept::freshness(j.created, clock::now(), self.settings.max_age) {
                self.refuse_job(&name, &r);
                return Ok(true);
            }
            // A job that waits for others: its marker first, so a held job
            // can still be cancelled.
            let waits = !j.header().after.is_empty();
            if waits {
                // The job it waits for may be one just ended here.
                self.results_placed()?;
            }
            let early = waits.then(|| self.read_marker(&id));
            let mut marker = early.and_then(|r| self.valid_marker(&id, r));
            let dep = match (&marker, self.dependencies(&j)) {
                (Some(_), _) | (None, dependency::Verdict::Run) => None,
                (None, dependency::Verdict::Hold(waiting)) => {
                    if self.said.insert(format!("held {id}")) {
                        let names: Vec<String> = waiting
                            .iter()
                            .map(|a| format!("{}:{}", a.target, a.job_id))
                            .collect();
                        self.say(format!("holding {id}: waits for {}", names.join(", ")));
                    }
                    continue;
                }
                (None, dependency::Verdict::Fail(dep)) => Some(dep),
            };
            if marker.is_none()
                && dep.is_none()
                && let Some(ahead) = accept::ahead(j.created, clock::now())
            {
                if self.said.insert(format!("ahead {id}")) {
                    self.counters.deferred += 1;
                    self.say(format!("deferred {id}: {}", accept::ahead_reason(ahead)));
                }
                continue;
            }
            // The governor holds back what it does not admit, but a job
            // cancelled meanwhile still ends at once.
            if marker.is_none() && dep.is_none() && !tier.admits(j.header().priority) {
                let read = self.read_marker(&id);
                marker = self.valid_marker(&id, read);
                if marker.is_none() {
                    if self.said.insert(format!("governor {id}")) {
                        self.counters.deferred += 1;
                        self.say(format!("deferred {id} (governor {})", tier.as_str()));
                    }
                    continue;
                }
            }
            let Some(bytes) = self.bytes_of(&j) else {
                // Changed or gone since its listing: judged at the next.
                self.accepted.remove(&name);
                self.queue.clear();
                return Ok(true);
            };
            let (replay, read) = self.claim(&j, &bytes)?;
            match replay {
                Replay::Fresh => {}
                Replay::Claimed => continue,
                Replay::Archived => {
                    let r = accept::replay(&id, Some("archive/done/")).expect_err("a replay");
                    self.counters.skipped += 1;
                    self.refuse_job(&name, &r);
                    return Ok(true);
                }
                Replay::Left => {
                    self.left(&id)?;
                    return Ok(true);
                }
            }
            if marker.is_none() {
                marker = self.valid_marker(&id, read);
            }
            let now = clock::format(clock::now());
            if let Some(m) = marker {
                let o = detail::cancelled_before_start(&self.key, &j, &m, &now).signed(&self.key);
                self.counters.cancelled += 1;
                self.say(format!(
                    "cancelled {id} before start (marker from {})",
                    m.origin
                ));
                let claim = self.claimed.take();
                self.finish(&id, &o, claim)?;
            } else if let Some(dep) = dep {
                self.counters.failed += 1;
                self.say(format!(
                    "ended {id} without running: dependency-failed ({}:{} {})",
                    dep.target, dep.job_id, dep.ended
                ));
                let o = detail::dependency_failed(&self.key, &j, dep, &now).signed(&self.key);
                let claim = self.claimed.take();
                self.finish(&id, &o, claim)?;
            } else if slots > 1 {
                self.results_placed()?;
                self.start_slot(j)?;
            } else {
                self.results_placed()?;
                self.run_job(&j)?;
            }
            return Ok(true);
        }
        Ok(false)
    }

    /// The bytes of `j`'s inbox object as judged: held since its listing,
    /// or (too large to hold) read again, while it is still that job.
    fn bytes_of(&self, j: &Job) -> Option<Arc<[u8]>> {
        let name = j.id.file_name();
        let listed = self.accepted.get(&name)?;
        if let Some(b) = &listed.bytes {
            return Some(Arc::clone(b));
        }
        let read = self.t.shelf(Place::Inbox).read(&name, job::MAX_BYTES);
        let FileRead::Bytes(b) = &read else {
            return None;
        };
        let bytes: Arc<[u8]> = Arc::from(b.as_slice());
        let again = judge::job_read(&name, read, self.t.target().as_str(), &self.key).ok()?;
        (again.sig == j.sig).then_some(bytes)
    }
}
