//! What the listener writes of the jobs it ends (docs/protocol.md §7): the
//! ledger (a job's start line flushed before its spawn, its result
//! recorded when it ends), the [`Publisher`] that places results and
//! archives jobs in batches, and the summary counters.
//!
//! One flush per job on the way from one spawn to the next: a result is
//! recorded unflushed ([`Recorder::record`]), and the next job's start
//! line flushes both (a listener with nothing to start flushes at once,
//! [`Recorder::settle`]); the publisher then places the result, and a
//! checkpoint ([`Recorder::checkpoint`]) notes in the ledger that
//! everything before it is in place.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::pickup::Pickup;
use super::site::Site;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::publisher::{Archiving, Finished, Publisher};
use crate::engine::shutdown;
use crate::local::state::{Ledger, LedgerView};
use crate::places::replay;
use crate::protocol::doc::{self, Job, Outcome};
use crate::store::fsops::Durability;
use crate::store::layout::Folders;

/// A drain that never pauses, or slots never all free, makes a checkpoint
/// after this many results: about the most a start after a crash publishes
/// again. Each costs a wait for the publisher, three folder flushes and a
/// ledger line: within the noise of a drain of `true` jobs (bench/README.md,
/// 2026-12-03).
pub(super) const CHECKPOINT_JOBS: u64 = 500;

/// ... or this long after the last checkpoint (or the last moment there
/// was nothing to checkpoint), whichever comes first.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

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

/// The ledger, the publisher and the counters.
pub(super) struct Recorder {
    ledger: Ledger,
    /// Finished jobs whose results are recorded in the ledger but not yet
    /// flushed: handed to the publisher after the next start line, or when
    /// nothing starts.
    pending: Vec<Finished>,
    publisher: Publisher,
    /// Results handed over since the last checkpoint, and when it was.
    unchecked: u64,
    checkpointed: Instant,
    /// What the listener did, for its summary.
    pub counters: Counters,
}

impl Recorder {
    /// Records into `ledger`, and hands results to `publisher`.
    pub fn new(ledger: Ledger, publisher: Publisher) -> Recorder {
        Recorder {
            ledger,
            pending: Vec::new(),
            publisher,
            unchecked: 0,
            checkpointed: Instant::now(),
            counters: Counters::default(),
        }
    }

    /// What another thread reads of the ledger (the HTTP intake's replay
    /// guard).
    pub fn view(&self) -> LedgerView {
        self.ledger.view()
    }

    /// Where the ledger is, flushed before recovery publishes again.
    pub fn ledger_path(&self) -> &std::path::Path {
        self.ledger.path()
    }

    /// Notes `n` results published again by start-up recovery: the next
    /// checkpoint covers them.
    pub fn republished(&mut self, n: usize) {
        self.unchecked += n as u64;
    }

    /// True while `id` is finished here but not yet archived: its inbox
    /// file is not a queued job (the ledger's start line would refuse it
    /// as a replay).
    pub fn holds(&self, id: &JobId) -> bool {
        self.pending.iter().any(|p| &p.id == id) || self.publisher.in_flight(id)
    }

    /// The result of `id` recorded but not yet handed to the publisher
    /// (not yet signed: this listener's own, read as it recorded it).
    pub fn pending_result(&self, id: &JobId) -> Option<Outcome> {
        let p = self.pending.iter().find(|p| &p.id == id)?;
        serde_json::from_slice(&p.result).ok()
    }

    /// True while the publisher places the result of `id`.
    pub fn placing(&self, id: &JobId) -> bool {
        self.publisher.in_flight(id)
    }

    /// What the publisher's archiving did to the inbox's time
    /// ([`super::inbox::Inbox::stale`]).
    pub fn inbox_mtime(&self) -> Archiving {
        self.publisher.inbox_mtime()
    }

    /// Where `id` was already processed, if anywhere, in the folders this
    /// pass holds.
    pub fn seen_where(&self, site: &Site, f: &Folders, id: &JobId) -> Option<&'static str> {
        let job = (id, site.target(), &*site.key);
        replay::used_in(Some(f.results()), Some(f.done()), job, || {
            self.ledger.contains(id.as_str())
        })
    }

    /// The start line of `id` in the ledger, flushed with `flush`; when it
    /// started.
    pub fn start(&mut self, id: &JobId, flush: bool) -> Result<String> {
        let started = clock::now();
        self.ledger.start(id.as_str(), started, flush)?;
        Ok(clock::format(started))
    }

    /// Flushes the start lines written unflushed.
    pub fn sync(&mut self) -> Result<()> {
        self.ledger.sync()
    }

    /// Records `outcome` in the ledger, unsigned: the publisher signs it
    /// as it places it, off the path from one spawn to the next (an Ed25519
    /// signature is 26 µs). It is handed on by [`Self::settle`],
    /// with `marker` saying whether a valid marker waits to be consumed
    /// (the publisher consumes it once the result is durable: a marker
    /// consumed before that could let a crash run a job that was cancelled
    /// before it started).
    pub fn record(&mut self, id: &JobId, outcome: &Outcome, marker: bool) -> Result<()> {
        let result = doc::to_file_bytes(outcome);
        {
            let _recording = shutdown::recording();
            self.ledger.record(id.as_str(), clock::now(), &result)?;
        }
        self.pending.push(Finished {
            id: id.clone(),
            result,
            marker,
        });
        Ok(())
    }

    /// Pending results made durable (a no-op after the next job's start
    /// line flushed them; at the relaxed level the publisher flushes) →
    /// handed to the publisher.
    pub fn settle(&mut self, site: &Site) -> Result<()> {
        if site.settings.durability == Durability::Full {
            self.ledger.sync()?;
        }
        for f in std::mem::take(&mut self.pending) {
            self.unchecked += 1;
            self.publisher.publish(f)?;
        }
        Ok(())
    }

    /// After the spawn of `job`, started at `started_at`, as process
    /// (group) `pid`: its pid in the ledger, the results waiting made
    /// durable and handed on, and the job shown in `running/` (made here,
    /// while the job runs, not on the way to its spawn). A failure handing
    /// results on is returned, to be reported once this job is recorded.
    pub fn spawned(&mut self, site: &Site, job: &Job, pid: i32, started_at: &str) -> Result<()> {
        let id = &job.id;
        // If this write fails the start-up scan by job id still finds the orphans.
        let _ = self.ledger.note_pid(id.as_str(), pid);
        let settled = self.settle(site);
        // A sealed job's running/ copy names no part of its payload.
        let clear = (!job.is_sealed()).then(|| job.payload());
        let shown = Shown {
            argv: clear.map_or(&[][..], |p| &p.argv[..]),
            job_id: id.as_str(),
            label: clear.and_then(|p| p.label.as_deref()),
            sealed: job.is_sealed(),
            listener_pid: site.pid,
            origin: &job.origin,
            started_at,
        };
        self.publisher
            .show_running(id.clone(), doc::to_file_bytes(&shown));
        settled
    }

    /// Settles the pending result, waits for the publisher, flushes the
    /// folders results were placed and archived in, and notes that in the
    /// ledger (which compacts itself then if it should, keeping the start
    /// lines of jobs still running).
    ///
    /// While jobs run in slots (`busy`) it only settles, until one is due
    /// ([`Self::checkpoint_due`]): waiting for the publisher at every end
    /// would hold up the jobs that end meanwhile.
    pub fn checkpoint(&mut self, site: &Site, pickup: &mut Pickup, busy: bool) -> Result<()> {
        self.settle(site)?;
        if busy && !self.checkpoint_due() {
            return Ok(());
        }
        // At the relaxed level the publisher has flushed the ledger with
        // its last batch; flushing here too covers a listener with nothing
        // published (start lines of jobs that failed to spawn, say).
        self.ledger.sync()?;
        let waited = self.publisher.wait();
        for note in self.publisher.notes() {
            site.say(note);
        }
        self.counters.repaired += self.publisher.repaired();
        // Results not placed yet stay unfinished in the ledger: no
        // checkpoint until they are.
        if !waited? {
            return Ok(());
        }
        if self.unchecked == 0 && !self.ledger.wants_checkpoint() {
            // Nothing to note: a drain's time to its next checkpoint
            // counts from here.
            self.checkpointed = Instant::now();
            return Ok(());
        }
        // Folders that cannot be opened now were flushed by the publisher
        // when it placed the batch, or are moved aside at the next pass.
        if let Ok(f) = pickup.open(site, &mut self.counters) {
            for dir in [f.results(), f.done(), f.consumed()] {
                dir.sync();
            }
        }
        self.ledger.checkpoint(clock::now())?;
        self.unchecked = 0;
        self.checkpointed = Instant::now();
        Ok(())
    }

    /// A checkpoint between jobs of a drain that does not pause (none is
    /// made otherwise until the listener idles), once one is due.
    pub fn checkpoint_if_due(
        &mut self,
        site: &Site,
        pickup: &mut Pickup,
        busy: bool,
    ) -> Result<()> {
        if self.checkpoint_due() {
            return self.checkpoint(site, pickup, busy);
        }
        Ok(())
    }

    /// True once [`CHECKPOINT_JOBS`] results were handed on since the last
    /// checkpoint, or any and [`CHECKPOINT_EVERY`] passed: what a start
    /// after a crash publishes again stays that small.
    fn checkpoint_due(&self) -> bool {
        let handed = self.unchecked + self.pending.len() as u64;
        handed >= CHECKPOINT_JOBS || (handed > 0 && self.checkpointed.elapsed() >= CHECKPOINT_EVERY)
    }
}

/// A running job's file in `running/` (its fields in name order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    argv: &'a [String],
    job_id: &'a str,
    label: Option<&'a str>,
    listener_pid: u32,
    origin: &'a str,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    sealed: bool,
    started_at: &'a str,
}
