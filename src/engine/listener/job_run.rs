//! One job's start and end (docs/protocol.md §7): its start line, what to
//! spawn and the watch for its marker; then what its watch saw said, its
//! outcome made and counted. A job ended unstarted (a marker before its
//! start, a dependency that failed) gets its outcome here too. Recording
//! the outcome is the [`Recorder`]'s.

use std::path::PathBuf;
use std::sync::Arc;

use super::inbox::Candidate;
use super::pickup::Pickup;
use super::recorder::{Counters, Recorder};
use super::site::Site;
use crate::base::clock;
use crate::base::error::Result;
use crate::engine::runner;
use crate::engine::watcher::Watch;
use crate::places::heartbeat::Heartbeat;
use crate::protocol::doc::detail::{self, DependencySeen};
use crate::protocol::doc::report::Report;
use crate::protocol::doc::{Job, Marker, Outcome, Termination, job};
use crate::protocol::jobenv;
use crate::store::layout::{self, Folders};

/// A job begun: what to spawn, its marker watch and when it started.
pub(super) struct Begun {
    pub req: runner::Request,
    pub watch: Watch,
    pub started_at: String,
}

/// A job's start: its start line in the ledger (flushed with `flush`:
/// the caller flushes it before the spawn otherwise, at the full level),
/// then what to spawn and the watch for its marker, last looked for when
/// the hint's change count was `looked`, which writes `beat`.
#[allow(clippy::too_many_arguments)]
pub(super) fn begin(
    site: &Site,
    rec: &mut Recorder,
    pickup: &Pickup,
    beat: &Heartbeat,
    f: &Folders,
    c: &Candidate,
    looked: u64,
    flush: bool,
) -> Result<Begun> {
    let id = c.job.id.clone();
    let started_at = rec.start(&id, flush)?;
    let (header, payload) = (c.job.header(), c.job.payload());
    site.say_with(|| match c.job.is_sealed() {
        true => format!("running {id}: (sealed)"),
        false => format!("running {id}: {}", job::argv_summary(&payload.argv)),
    });

    let env = jobenv::for_job(
        &c.job,
        &site.root.display().to_string(),
        site.target(),
        &site.key_path.display().to_string(),
        &jobenv::token(&site.key, &id, &c.job.target),
    );
    // Alone, a job owns every process below the listener; beside
    // others, its own are told apart by its id in their environment.
    let mark = (site.settings.slots > 1).then(|| format!("{}={id}", jobenv::JOB_ID));
    let req = runner::Request {
        job_id: id.clone(),
        argv: payload.argv.clone(),
        cwd: payload.cwd.as_ref().map(PathBuf::from),
        env,
        timeout: header.timeout,
        grace: header.grace(),
        stop_grace: site.settings.stop_grace,
        logs: f.logs().clone(),
        stdout_log: layout::log_name(&id, "stdout"),
        stderr_log: layout::log_name(&id, "stderr"),
        logged: !c.job.is_sealed(),
        mark,
    };
    let watch = Watch::new(
        id,
        f,
        site.dirs.target().to_string(),
        Arc::clone(&site.key),
        site.settings.poll,
        site.settings.settle,
        beat.clone(),
        (pickup.hint().clone(), looked),
    );
    Ok(Begun {
        req,
        watch,
        started_at,
    })
}

/// A job's end: what its watch saw said, its outcome made and counted.
pub(super) fn outcome(
    site: &Site,
    counters: &mut Counters,
    job: &Job,
    started_at: &str,
    report: &Report,
    watch: &mut Watch,
) -> Outcome {
    let id = &job.id;
    if let Some(r) = watch.refusal.take() {
        site.say(format!(
            "ignored marker for {id}: {} ({})",
            r.verdict.as_str(),
            r.message
        ));
    }
    for note in std::mem::take(&mut watch.notes) {
        site.say(note);
    }
    let finished_at = clock::format(clock::after(started_at, report.duration));
    let outcome = detail::outcome_of(&site.key, job, started_at, report, &finished_at);
    let how = outcome.termination();
    match how {
        Termination::Exited if outcome.ok => counters.done += 1,
        Termination::Cancelled => counters.cancelled += 1,
        _ => counters.failed += 1,
    }
    site.say_with(|| {
        format!(
            "finished {id}: {} ({}, {})",
            how.describe(outcome.ok),
            outcome.exit_phrase(),
            clock::human(report.duration)
        )
    });
    outcome
}

/// The outcome of `c`, cancelled by `marker` before it started, counted.
pub(super) fn cancelled_before_start(
    site: &Site,
    counters: &mut Counters,
    c: &Candidate,
    marker: &Marker,
) -> Outcome {
    let finished_at = clock::format(clock::now());
    let outcome = detail::cancelled_before_start(&site.key, &c.job, marker, &finished_at);
    counters.cancelled += 1;
    site.say(format!(
        "cancelled {} before start (marker from {})",
        c.job.id, marker.origin
    ));
    outcome
}

/// The outcome of `c`, ended unstarted because the job it waited for did
/// not end as required (`dep`), counted.
pub(super) fn dependency_failed(
    site: &Site,
    counters: &mut Counters,
    c: &Candidate,
    dep: DependencySeen,
) -> Outcome {
    let finished_at = clock::format(clock::now());
    counters.failed += 1;
    site.say(format!(
        "ended {} without running: dependency-failed ({}:{} {})",
        c.job.id, dep.target, dep.job_id, dep.ended
    ));
    detail::dependency_failed(&site.key, &c.job, dep, &finished_at)
}
