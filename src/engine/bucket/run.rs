//! One job's start and end on a bucket: what to spawn (its logs to the
//! local spool, from which they are placed as chunks), its run in this
//! thread (the serial drain) and its end (the outcome made, counted and
//! said, then placed by [`BucketListener::finish`]).

use std::path::PathBuf;
use std::sync::Arc;

use super::BucketListener;
use super::claim::Claim;
use super::objects::{Chunks, Replaced};
use super::watch::BucketWatch;
use crate::base::clock;
use crate::base::error::Result;
use crate::engine::runner;
use crate::protocol::accept::Rejection;
use crate::protocol::doc::report::Report;
use crate::protocol::doc::{self, Job, Termination, detail, job};
use crate::protocol::jobenv;
use crate::store::layout;
use crate::store::port::Shelves;

/// A job about to be spawned: what to run, its logs on their way, and
/// when it started.
pub(super) struct Begun {
    pub req: runner::Request,
    pub chunks: Vec<Chunks>,
    pub started_at: String,
}

/// What a job's watch gathered while it ran, handed back at its end.
pub(super) struct Watched {
    pub notes: Vec<String>,
    pub refusal: Option<Rejection>,
    pub chunks: Vec<Chunks>,
    pub claim: Option<Replaced>,
}

impl Watched {
    /// What `w` gathered, its output placed to the end.
    pub fn from(mut w: BucketWatch<'_>) -> Watched {
        w.place_output();
        Watched {
            notes: std::mem::take(&mut w.notes),
            refusal: w.refusal.take(),
            chunks: std::mem::take(&mut w.chunks),
            claim: w.claim.take(),
        }
    }
}

impl BucketListener {
    /// What to spawn for `j` (claimed); `mark` tells its processes from
    /// those of jobs beside it.
    pub(super) fn begin(&self, j: &Job, mark: Option<String>) -> Begun {
        let id = j.id.clone();
        let started_at = clock::format(clock::now());
        let (header, payload) = (j.header(), j.payload());
        match j.is_sealed() {
            true => self.say(format!("running {id}: (sealed)")),
            false => self.say(format!(
                "running {id}: {}",
                job::argv_summary(&payload.argv)
            )),
        }
        let env = jobenv::for_job(
            j,
            &self.root_shown,
            self.t.target().as_str(),
            &self.key_path.display().to_string(),
            &jobenv::token(&self.key, &id, &j.target),
        );
        let (out_log, err_log) = (
            layout::log_name(&id, "stdout"),
            layout::log_name(&id, "stderr"),
        );
        // A sealed job's output goes to no log in the root.
        let chunks = if j.is_sealed() {
            Vec::new()
        } else {
            vec![
                Chunks::new(self.spool.path().join(&out_log), id.as_str(), "stdout"),
                Chunks::new(self.spool.path().join(&err_log), id.as_str(), "stderr"),
            ]
        };
        let req = runner::Request {
            job_id: id,
            argv: payload.argv.clone(),
            cwd: payload.cwd.as_ref().map(PathBuf::from),
            env,
            timeout: header.timeout,
            grace: header.grace(),
            stop_grace: self.settings.stop_grace,
            logs: self.spool.clone(),
            stdout_log: out_log,
            stderr_log: err_log,
            logged: !j.is_sealed(),
            mark,
        };
        Begun {
            req,
            chunks,
            started_at,
        }
    }

    /// The claim of `j` as it shows once spawned as `pid`.
    pub(super) fn shown_claim(&self, j: &Job, started_at: &str, pid: i32) -> Vec<u8> {
        let mut c = Claim::of(
            j,
            started_at,
            &self.beats.host,
            std::process::id(),
            &self.beats.run,
        );
        c.pid = pid;
        doc::to_file_bytes(&c)
    }

    /// Runs `j` (claimed) in this thread, then ends it.
    pub(super) fn run_job(&mut self, j: &Job) -> Result<()> {
        let b = self.begin(j, None);
        while self.rx.try_recv().is_ok() {}
        let claim = self.claimed.take();
        let (report, watched) = match runner::start(b.req, self.mail.bell()) {
            Ok(running) => {
                let show = self.shown_claim(j, &b.started_at, running.id());
                let mut watch = BucketWatch::new(
                    self.t.bucket().target(self.t.target()),
                    Arc::clone(&self.key),
                    j.id.clone(),
                    self.settings.poll,
                    Some(&mut self.beats),
                    b.chunks,
                    claim,
                    show,
                );
                let report = running.wait(&self.rx, &mut watch);
                (report, Watched::from(watch))
            }
            Err(report) => (
                *report,
                Watched {
                    notes: Vec::new(),
                    refusal: None,
                    chunks: b.chunks,
                    claim,
                },
            ),
        };
        self.end(j, &b.started_at, &report, watched)
    }

    /// The end of `j`, started at `started_at`, as `report` and its watch
    /// tell: said, counted, placed.
    pub(super) fn end(
        &mut self,
        j: &Job,
        started_at: &str,
        report: &Report,
        w: Watched,
    ) -> Result<()> {
        let id = &j.id;
        if let Some(r) = w.refusal {
            self.say(format!(
                "ignored marker for {id}: {} ({})",
                r.verdict.as_str(),
                r.message
            ));
        }
        for n in w.notes {
            self.say(n);
        }
        for c in w.chunks {
            c.discard();
        }
        let finished_at = clock::format(clock::after(started_at, report.duration));
        let o =
            detail::outcome_of(&self.key, j, started_at, report, &finished_at).signed(&self.key);
        let how = o.termination();
        match how {
            Termination::Exited if o.ok => self.counters.done += 1,
            Termination::Cancelled => self.counters.cancelled += 1,
            _ => self.counters.failed += 1,
        }
        self.say(format!(
            "finished {id}: {} ({}, {})",
            how.describe(o.ok),
            o.exit_phrase(),
            clock::human(report.duration)
        ));
        self.finish(id, &o, w.claim)
    }
}
