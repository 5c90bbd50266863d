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
//! reach `results/` is published again. One flush per job on the way from
//! one spawn to the next (`recorder`).
//!
//! This file is the drain loop, over the listener's parts, each in a file
//! of its own with the fields it owns: `site` (where it runs and with
//! what, fixed), `pickup` (the folders held for a pass, file-system
//! events, a queued job's cancel check), `queue` (the inbox's runnable
//! jobs in drain order, held and deferred jobs, the walk over them,
//! refusals), `recorder` (the ledger, the publisher, the counters),
//! `liveness` (the heartbeat, another listener serving the target) and
//! `control` (the mailbox, shutdown and drain requests, the slots). Beside
//! them: `inbox` and `held` (what the queue remembers between passes),
//! `slots` (jobs run at once, each waited for in a thread of its own),
//! `job_run` (one job's start and end), `recovery` (start-up after a
//! crash) and `handle` (the HTTP intake's way in). A step that needs two
//! parts takes both. The rules it applies live outside: acceptance in
//! [`crate::protocol::accept`], the replay guard in [`crate::places::replay`], results in
//! [`crate::protocol::doc::detail`], refusals in [`crate::places::rejected`], a job's
//! environment in [`crate::protocol::jobenv`].

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::publisher::Publisher;
use crate::engine::runner::{self, Control as Message};
use crate::engine::shutdown::Shutdown;
use crate::engine::watcher::Watch;
use crate::local::governor::Tier;
use crate::local::state::{Ledger, Lock};
use crate::places::rejected;
use crate::platform;
use crate::protocol::doc::report::Report;
use crate::protocol::doc::{Job, Outcome};
use crate::store::fsops::Durability;
use crate::store::layout::{Folders, StateDirs, TargetDirs};
use crate::trust::Key;

use control::Control;
use inbox::Candidate;
use job_run::Begun;
use liveness::Liveness;
use pickup::Pickup;
use queue::{Queue, Step};
use recorder::Recorder;
use site::Site;

mod control;
mod handle;
mod held;
mod inbox;
mod job_run;
mod liveness;
mod pickup;
mod queue;
mod recorder;
mod recovery;
mod site;
mod slots;

pub use handle::Handle;
pub use recorder::Counters;
pub use site::Settings;

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

/// Where the listener runs and with what: its parts.
pub struct Listener {
    site: Site,
    pickup: Pickup,
    queue: Queue,
    recorder: Recorder,
    liveness: Liveness,
    control: Control,
    _lock: Lock,
    _folder_lock: crate::store::fsops::FileLock,
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
        let (folders, repairs) = rejected::open_writable(&dirs)?;
        let key = Arc::new(key);
        let (liveness, folder_lock) = Liveness::start(&dirs, &state, &key, settings.poll)?;
        platform::become_subreaper();
        platform::tune_allocator();
        let now = clock::now();
        // Keep ids at least as long as the max age, and never under 30 days:
        // a job file resurrected by sync must meet the ledger or its age.
        let retention =
            settings.max_age.max(Duration::from_secs(30 * 86400)) + Duration::from_secs(86400);
        let (ledger, unfinished) = Ledger::load(&state, now, retention)?;
        let control = Control::new(shutdown, &dirs, liveness.beat(), &state)?;
        let publisher = Publisher::start(
            dirs.clone(),
            Arc::clone(&key),
            (settings.durability == Durability::Relaxed).then(|| state.ledger()),
        );
        let queue = Queue::new(settings.settle);
        let mut l = Listener {
            pickup: Pickup::new(folders, state.watching()),
            queue,
            recorder: Recorder::new(ledger, publisher),
            liveness,
            control,
            site: Site {
                dirs,
                key,
                key_path,
                root,
                settings,
                pid: std::process::id(),
            },
            _lock: lock,
            _folder_lock: folder_lock,
        };
        l.pickup
            .repaired(&l.site, &mut l.recorder.counters, repairs);
        l.site.record_governor(&state);
        l.pickup.watch(&l.site, l.control.mail());
        recovery::recover(&l.site, &mut l.pickup, &mut l.recorder, unfinished)?;
        l.liveness.heartbeat(None, "listening");
        Ok(l)
    }

    /// What another thread needs to feed this listener (the HTTP intake).
    pub fn handle(&self) -> Handle {
        Handle::new(
            &self.site,
            self.control.mail().clone(),
            self.recorder.view(),
        )
    }

    /// Drains the inbox: once, or until shut down.
    pub fn run(mut self) -> Result<Summary> {
        self.site.say(format!(
            "listening for {} in {} (poll {}{})",
            self.site.dirs.target(),
            self.site.dirs.inbox().display(),
            clock::format_duration(self.site.settings.poll),
            if self.pickup.has_events() {
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
                self.liveness.heartbeat(None, "stopped");
                return Err(e);
            }
        };
        let interrupted = self.control.shutdown_requested();
        self.liveness.heartbeat(None, "stopped");
        Ok(Summary {
            counters: self.recorder.counters.clone(),
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
            if self.control.shutdown_requested() {
                break;
            }
            // Between jobs: a drain request ends the loop once the job that
            // ran has finished, before another starts.
            if self.control.drain_requested() {
                self.site.say("draining: starting no new job, and stopping");
                drained = true;
                break;
            }
            // Jobs that ended in slots, and messages for them.
            if !self.control.slots.is_empty() && self.dispatch_waiting()? {
                break;
            }
            let acted = if self.slot_free_beside(0) {
                self.pass()?
            } else {
                false
            };
            if self.control.shutdown_requested() {
                break;
            }
            let busy = !self.control.slots.is_empty();
            if acted {
                again = false;
                let (site, pickup) = (&self.site, &mut self.pickup);
                self.recorder.checkpoint_if_due(site, pickup, busy)?;
                continue;
            }
            self.checkpoint()?;
            // Folders are held for a pass only: an idle listener holds none
            // (one with jobs in slots keeps them for their ends), nor the
            // listing of `cancel/`, which holds that folder too.
            if !busy {
                self.pickup.let_go();
            }
            if self.site.settings.once && !busy {
                // A job held on a result of ours that was being placed can
                // start now that it is placed: one more pass.
                if self.queue.take_held_on_own() && !again {
                    again = true;
                    continue;
                }
                break;
            }
            if self.liveness.due() {
                self.liveness.heartbeat(None, "listening");
            }
            // Sleep one poll interval, waking at once on shutdown, a change
            // an event hinted at, or the end of a job running in a slot.
            if let Some(msg) = self.control.next(self.site.settings.poll)
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
    /// The folders are looked at afresh for each pass
    /// ([`Pickup::for_pass`]): when they cannot be opened (a writer keeps
    /// swapping them), the pass is skipped and tried again after a poll
    /// interval: nothing in the folder stops the listener.
    fn pass(&mut self) -> Result<bool> {
        if self.liveness.rival_serves(&self.site) {
            return Ok(false);
        }
        let counters = &mut self.recorder.counters;
        let Some(f) = self
            .pickup
            .for_pass(&self.site, counters, self.control.mail())
        else {
            return Ok(false);
        };
        let fresh = self.pickup.hinted()
            || self
                .queue
                .stale(&f, self.site.settings.poll, self.recorder.inbox_mtime())
            || self.queue.roster_changed(&self.site);
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

    /// Lists the inbox: refusals made, and the runnable jobs queued in
    /// drain order.
    fn rescan(&mut self, f: &Folders) -> Result<()> {
        self.pickup.listing();
        let (jobs, found) = self.queue.scan(&self.site, f)?;
        for line in found.notes {
            self.site.say(line);
        }
        for (name, r) in found.refused {
            let counters = &mut self.recorder.counters;
            self.queue.refuse(&self.site, counters, f, &name, &r);
        }
        let (recorder, slots) = (&self.recorder, &self.control.slots);
        self.queue
            .reset(f, jobs, |id| recorder.holds(id) || slots.runs(id));
        Ok(())
    }

    /// Walks the queue ([`Queue::walk`]) and acts on the first job that
    /// can start or end.
    fn act(&mut self, f: &Folders) -> Result<bool> {
        // Read before any marker is looked for: the job's watch looks at
        // once if an event came after.
        let looked = self.pickup.changes();
        let tier = Tier::read(self.site.settings.governor.as_deref());
        self.queue.look_for_endings(&self.site, f);
        let (slots, n) = (&self.control.slots, self.site.settings.slots);
        let step = self.queue.walk(
            &self.site,
            &mut self.pickup,
            &mut self.recorder,
            f,
            tier,
            |starting| slots.free_beside(starting, n),
        );
        match step {
            Step::Nothing => return Ok(false),
            Step::Cancel(c, marker) => {
                let counters = &mut self.recorder.counters;
                let outcome = job_run::cancelled_before_start(&self.site, counters, &c, &marker);
                self.finish(&c.job.id, &outcome, true)?;
            }
            Step::Fail(c, dep) => {
                let counters = &mut self.recorder.counters;
                let outcome = job_run::dependency_failed(&self.site, counters, &c, dep);
                let marker = self.has_valid_marker(&c.job.id);
                self.finish(&c.job.id, &outcome, marker)?;
            }
            Step::Run(c) => self.run_job(f, c, looked)?,
            Step::Start(batch) => self.start_slots(f, batch, looked)?,
        }
        self.queue.note_own_change(f);
        Ok(true)
    }

    /// Runs `c`, whose marker was last looked for when the hint's change
    /// count was `looked`, in this thread (one slot: the serial drain).
    fn run_job(&mut self, f: &Folders, c: Candidate, looked: u64) -> Result<()> {
        // Messages left from an earlier job are stale; a shutdown asked for
        // meanwhile is in the flag, checked once the queue is clear; a
        // change an event hinted at is in the hint's count.
        self.control.clear();
        self.pickup.woken();
        if self.control.shutdown_requested() {
            return Ok(());
        }
        let full = self.site.settings.durability == Durability::Full;
        let Begun {
            req,
            mut watch,
            started_at,
        } = self.begin(f, &c, looked, full)?;
        // The previous job's result is published while this one runs; a
        // failure there is reported once this job is recorded.
        let (report, settled) = match runner::start(req, self.control.mail().bell()) {
            Ok(running) => {
                let settled = self
                    .recorder
                    .spawned(&self.site, &c.job, running.id(), &started_at);
                let report = running.wait(self.control.rx(), &mut watch);
                // Wakes dropped while the job was being stopped.
                self.pickup.woken();
                (report, settled)
            }
            Err(report) => (*report, self.recorder.settle(&self.site)),
        };
        self.end(&c.job, &started_at, &report, watch)?;
        settled
    }

    /// Starts each of `batch` in a slot of its own (see [`slots`]), their
    /// markers last looked for when the hint's change count was `looked`.
    /// Their start lines are flushed together, before the first spawn:
    /// jobs that can start at the same moment share one flush.
    fn start_slots(&mut self, f: &Folders, batch: Vec<Candidate>, looked: u64) -> Result<()> {
        if self.control.shutdown_requested() {
            return Ok(());
        }
        let mut begun = Vec::with_capacity(batch.len());
        for c in batch {
            let b = self.begin(f, &c, looked, false)?;
            begun.push((c, b));
        }
        if self.site.settings.durability == Durability::Full {
            self.recorder.sync()?;
        }
        let mut settled = Ok(());
        for (c, b) in begun {
            let s = self.start_slot(c, b);
            if settled.is_ok() {
                settled = s;
            }
        }
        settled
    }

    /// Spawns `c`, begun as `b`, and hands it to a thread of its own.
    fn start_slot(&mut self, c: Candidate, b: Begun) -> Result<()> {
        let Begun {
            req,
            watch,
            started_at,
        } = b;
        let mailbox = slots::mailbox(&c.job)?;
        let running = match runner::start(req, mailbox.0.bell()) {
            Ok(r) => r,
            Err(report) => {
                let settled = self.recorder.settle(&self.site);
                self.end(&c.job, &started_at, &report, watch)?;
                return settled;
            }
        };
        let settled = self
            .recorder
            .spawned(&self.site, &c.job, running.id(), &started_at);
        let done = self.control.mail().clone();
        let id = c.job.id.clone();
        let slot = slots::wait_apart(c.job, started_at, mailbox, running, watch, done)?;
        self.liveness.slot(&id, true);
        self.control.slots.add(slot);
        settled
    }

    /// A job's start ([`job_run::begin`]).
    fn begin(&mut self, f: &Folders, c: &Candidate, looked: u64, flush: bool) -> Result<Begun> {
        let beat = self.liveness.beat();
        job_run::begin(
            &self.site,
            &mut self.recorder,
            &self.pickup,
            beat,
            f,
            c,
            looked,
            flush,
        )
    }

    /// A job's end: what its watch saw said, its outcome counted and
    /// recorded ([`Self::finish`]).
    fn end(
        &mut self,
        job: &Job,
        started_at: &str,
        report: &Report,
        mut watch: Watch,
    ) -> Result<()> {
        if watch.beat_written() {
            self.liveness.heartbeat(None, "listening");
        }
        let counters = &mut self.recorder.counters;
        let outcome = job_run::outcome(&self.site, counters, job, started_at, report, &mut watch);
        // The marker the runner met is the one to consume; without one, a
        // marker may still have come after the watch's last look, and is
        // consumed all the same (the completion race, docs/protocol.md §7).
        let marker = report.marker().is_some() || self.has_valid_marker(&job.id);
        self.finish(&job.id, &outcome, marker)
    }

    /// Records `outcome` ([`Recorder::record`]): the job ended, and the
    /// held jobs waiting for it are judged afresh.
    fn finish(&mut self, id: &JobId, outcome: &Outcome, marker: bool) -> Result<()> {
        self.recorder.record(id, outcome, marker)?;
        self.queue.ended(self.site.target(), id);
        Ok(())
    }

    /// True when a valid marker for a finished job is in `cancel/`
    /// ([`Pickup::has_valid_marker`]).
    fn has_valid_marker(&mut self, id: &JobId) -> bool {
        let counters = &mut self.recorder.counters;
        self.pickup.has_valid_marker(&self.site, counters, id)
    }

    /// A checkpoint ([`Recorder::checkpoint`]).
    fn checkpoint(&mut self) -> Result<()> {
        let busy = !self.control.slots.is_empty();
        self.recorder.checkpoint(&self.site, &mut self.pickup, busy)
    }

    /// True when a slot is free beside `starting` jobs about to start.
    fn slot_free_beside(&self, starting: usize) -> bool {
        let slots = self.site.settings.slots;
        self.control.slots.free_beside(starting, slots)
    }

    /// Acts on one control message: an ended job is recorded, a cancel goes
    /// to the slot running its job, a wake and a shutdown to every slot.
    /// True for a shutdown. With one slot no job runs here while messages
    /// are read: a wake only notes the hint, a cancel has no one to go to.
    fn dispatch(&mut self, msg: Message) -> Result<bool> {
        match msg {
            Message::Ended(e) => {
                let Some((job, started_at)) = self.control.slots.take(&e.job_id) else {
                    return Ok(false);
                };
                self.liveness.slot(&job.id, false);
                platform::reap_orphans_beside();
                self.end(&job, &started_at, &e.report, e.watch)?;
                Ok(false)
            }
            Message::Wake => {
                self.pickup.woken();
                Ok(self.control.route(Message::Wake))
            }
            other => Ok(self.control.route(other)),
        }
    }

    /// Acts on the messages waiting, without waiting; true when one was a
    /// shutdown.
    fn dispatch_waiting(&mut self) -> Result<bool> {
        let mut stop = false;
        while let Some(msg) = self.control.waiting() {
            stop |= self.dispatch(msg)?;
        }
        Ok(stop)
    }

    /// After a failure of the listener: every job in a slot gets the stop
    /// a shutdown gives, and is waited for, whatever fails meanwhile. Each
    /// end is recorded when it can be; one that cannot is in the ledger as
    /// started, so the next start records it `interrupted`. Its processes
    /// are stopped either way.
    fn stop_every_slot(&mut self) {
        self.control.slots.send_all(|| Message::Shutdown);
        while !self.control.slots.is_empty() {
            match self.control.next_or_closed(self.site.settings.poll) {
                // An end leaves its slot before it is recorded.
                Ok(msg) => {
                    let _ = self.dispatch(msg);
                }
                Err(false) => {}
                Err(true) => break,
            }
        }
    }

    /// Waits until every job running in a slot has ended, recording each:
    /// they are asked to stop first when a shutdown was asked for (also
    /// while waiting), and left to finish otherwise (a drain). Results are
    /// handed on as they come.
    fn wind_down(&mut self) -> Result<()> {
        let mut stopping = false;
        while !self.control.slots.is_empty() {
            if self.control.shutdown_requested() && !stopping {
                stopping = true;
                self.control.slots.send_all(|| Message::Shutdown);
            }
            match self.control.next_or_closed(self.site.settings.poll) {
                Ok(msg) => stopping |= self.dispatch(msg)?,
                Err(false) => {}
                Err(true) => break,
            }
            self.recorder.settle(&self.site)?;
        }
        Ok(())
    }
}
