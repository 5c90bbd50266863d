//! One job's run (docs/protocol.md §7): its start line flushed before the
//! spawn, the wait with its marker watch, and its result recorded in the
//! ledger, then handed to the publisher once durable.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::{Candidate, Listener};
use crate::clock;
use crate::doc::report::Report;
use crate::doc::{self, Job, Outcome, Termination, detail, job};
use crate::error::Result;
use crate::fsops::Durability;
use crate::jobenv;
use crate::layout::{self, Folders};
use crate::names::JobId;
use crate::publisher::Finished;
use crate::runner;
use crate::shutdown;
use crate::watcher::Watch;

/// A drain that never pauses, or slots never all free, makes a checkpoint
/// after this many results: about the most a start after a crash publishes
/// again. Each costs a wait for the publisher, three folder flushes and a
/// ledger line: within the noise of a drain of `true` jobs (bench/README.md,
/// 2026-12-03).
pub(super) const CHECKPOINT_JOBS: u64 = 500;

/// ... or this long after the last checkpoint (or the last moment there
/// was nothing to checkpoint), whichever comes first.
pub(super) const CHECKPOINT_EVERY: Duration = Duration::from_secs(5);

impl Listener {
    /// Records `outcome` in the ledger; it is handed on by [`Self::settle`],
    /// with `marker` saying whether a valid marker waits to be consumed
    /// (the publisher consumes it once the result is durable: a marker
    /// consumed before that could let a crash run a job that was cancelled
    /// before it started).
    pub(super) fn finish(&mut self, id: &JobId, outcome: &Outcome, marker: bool) -> Result<()> {
        let result = doc::to_file_bytes(outcome);
        {
            let _recording = shutdown::recording();
            self.ledger.record(id.as_str(), clock::now(), &result)?;
        }
        self.inbox.forget(&id.file_name());
        self.held.ended(self.dirs.target().as_str(), id);
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
    pub(super) fn settle(&mut self) -> Result<()> {
        if self.settings.durability == Durability::Full {
            self.ledger.sync()?;
        }
        for f in std::mem::take(&mut self.pending) {
            self.unchecked += 1;
            self.publisher.publish(f)?;
        }
        Ok(())
    }

    /// Settles the pending result, waits for the publisher, flushes the
    /// folders results were placed and archived in, and notes that in the
    /// ledger (which compacts itself then if it should, keeping the start
    /// lines of jobs still running).
    ///
    /// While jobs run in slots it only settles, until one is due
    /// ([`Self::checkpoint_due`]): waiting for the publisher at every end
    /// would hold up the jobs that end meanwhile.
    pub(super) fn checkpoint(&mut self) -> Result<()> {
        self.settle()?;
        if !self.slots.is_empty() && !self.checkpoint_due() {
            return Ok(());
        }
        // At the relaxed level the publisher has flushed the ledger with
        // its last batch; flushing here too covers a listener with nothing
        // published (start lines of jobs that failed to spawn, say).
        self.ledger.sync()?;
        let waited = self.publisher.wait();
        for note in self.publisher.notes() {
            self.say(note);
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
        if let Ok(f) = self.folders() {
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
    pub(super) fn checkpoint_if_due(&mut self) -> Result<()> {
        if self.checkpoint_due() {
            return self.checkpoint();
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

    /// True when a valid marker for a finished job is in `cancel/`, read
    /// from the folder (for a job whose runner did not meet one).
    pub(super) fn has_valid_marker(&mut self, id: &JobId) -> bool {
        let Ok(f) = self.folders() else {
            return false;
        };
        self.valid_marker(&f, id).is_some()
    }

    /// Runs `c`, whose marker was last looked for when the hint's change
    /// count was `looked`, in this thread (one slot: the serial drain).
    pub(super) fn run_job(&mut self, f: &Folders, c: Candidate, looked: u64) -> Result<()> {
        // Messages left from an earlier job are stale; a shutdown asked for
        // meanwhile is in the flag, checked once the queue is clear; a
        // change an event hinted at is in the hint's count.
        while self.rx.try_recv().is_ok() {}
        self.hint.woken();
        if self.shutdown.requested() {
            return Ok(());
        }
        let Begun {
            req,
            mut watch,
            started_at,
        } = self.begin(f, &c, looked, self.settings.durability == Durability::Full)?;
        // The previous job's result is published while this one runs; a
        // failure there is reported once this job is recorded.
        let (report, settled) = match runner::start(req, self.mail.bell()) {
            Ok(running) => {
                let settled = self.spawned(&c.job, running.id(), &started_at);
                let report = running.wait(&self.rx, &mut watch);
                // Wakes dropped while the job was being stopped.
                self.hint.woken();
                (report, settled)
            }
            Err(report) => (*report, self.settle()),
        };
        self.end(&c.job, &started_at, &report, watch)?;
        settled
    }

    /// A job's start: its start line in the ledger (flushed with `flush`:
    /// the caller flushes it before the spawn otherwise, at the full level),
    /// then what to spawn and the watch for its marker.
    pub(super) fn begin(
        &mut self,
        f: &Folders,
        c: &Candidate,
        looked: u64,
        flush: bool,
    ) -> Result<Begun> {
        let id = c.job.id.clone();
        let started = clock::now();
        let started_at = clock::format(started);
        self.ledger.start(id.as_str(), started, flush)?;
        let (header, payload) = (c.job.header(), c.job.payload());
        self.say_with(|| format!("running {id}: {}", job::argv_summary(&payload.argv)));

        let env = jobenv::for_job(
            &c.job,
            &self.root.display().to_string(),
            self.dirs.target().as_str(),
            &self.key_path.display().to_string(),
        );
        // Alone, a job owns every process below the listener; beside
        // others, its own are told apart by its id in their environment.
        let mark = (self.settings.slots > 1).then(|| format!("{}={id}", jobenv::JOB_ID));
        let req = runner::Request {
            job_id: id.clone(),
            argv: payload.argv.clone(),
            cwd: payload.cwd.as_ref().map(PathBuf::from),
            env,
            timeout: header.timeout,
            grace: header.grace(),
            stop_grace: self.settings.stop_grace,
            logs: f.logs().clone(),
            stdout_log: layout::log_name(&id, "stdout"),
            stderr_log: layout::log_name(&id, "stderr"),
            mark,
        };
        let watch = Watch::new(
            id,
            f,
            self.dirs.target().to_string(),
            Arc::clone(&self.key),
            self.settings.poll,
            self.settings.settle,
            self.beat.clone(),
            (self.hint.clone(), looked),
        );
        Ok(Begun {
            req,
            watch,
            started_at,
        })
    }

    /// After the spawn of `job`, started at `started_at`, as process
    /// (group) `pid`: its pid in the ledger, the results waiting made
    /// durable and handed on, and the job shown in `running/` (made here,
    /// while the job runs, not on the way to its spawn). A failure handing
    /// results on is returned, to be reported once this job is recorded.
    pub(super) fn spawned(&mut self, job: &Job, pid: i32, started_at: &str) -> Result<()> {
        let id = &job.id;
        // If this write fails the start-up scan by job id still finds the orphans.
        let _ = self.ledger.note_pid(id.as_str(), pid);
        let settled = self.settle();
        let shown = Shown {
            argv: &job.payload().argv,
            job_id: id.as_str(),
            label: job.payload().label.as_deref(),
            listener_pid: self.pid,
            origin: &job.origin,
            started_at,
        };
        self.publisher
            .show_running(id.clone(), doc::to_file_bytes(&shown));
        settled
    }

    /// A job's end: what its watch saw said, its outcome counted and
    /// recorded ([`Self::finish`]).
    pub(super) fn end(
        &mut self,
        job: &Job,
        started_at: &str,
        report: &Report,
        mut watch: Watch,
    ) -> Result<()> {
        let id = &job.id;
        if watch.beat_written() {
            self.heartbeat(None, "listening");
        }
        if let Some(r) = watch.refusal.take() {
            self.say(format!(
                "ignored marker for {id}: {} ({})",
                r.verdict.as_str(),
                r.message
            ));
        }
        for note in std::mem::take(&mut watch.notes) {
            self.say(note);
        }
        let finished_at = clock::format(clock::after(started_at, report.duration));
        let outcome = detail::outcome_of(&self.key, job, started_at, report, &finished_at);
        let how = outcome.termination();
        match how {
            Termination::Exited if outcome.ok => self.counters.done += 1,
            Termination::Cancelled => self.counters.cancelled += 1,
            _ => self.counters.failed += 1,
        }
        self.say_with(|| {
            format!(
                "finished {id}: {} ({}, {})",
                how.describe(outcome.ok),
                outcome.exit_phrase(),
                clock::human(report.duration)
            )
        });
        // The marker the runner met is the one to consume; without one, a
        // marker may still have come after the watch's last look, and is
        // consumed all the same (the completion race, docs/protocol.md §7).
        let marker = report.marker().is_some() || self.has_valid_marker(id);
        self.finish(id, &outcome, marker)
    }
}

/// A job begun: what to spawn, its marker watch and when it started.
pub(super) struct Begun {
    pub req: runner::Request,
    pub watch: Watch,
    pub started_at: String,
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
    started_at: &'a str,
}
