//! A result's `detail` (docs/protocol.md §5.3): what the result says beyond its exit
//! code, and the rule turning how a run ended into its result (unsigned: the
//! caller signs it, [`Outcome::signed`], the listener off the path between
//! two jobs).
//!
//! The detail travels as a JSON string inside the result and is signed as
//! that string, so it is written and read through one type, [`Detail`].
//! Its fields are declared in alphabetical order: that is the order the
//! listener has always written them in (a sorted JSON object), so the same
//! facts give the same signed bytes. Reading tolerates fields it does not
//! know, since results written by other versions are read too.

use serde::{Deserialize, Serialize};

use super::report::{Exit, Report, StopReason};
use super::{Job, Marker, Outcome, Termination};
use crate::platform;
use crate::trust::Key;

/// What a result's `detail` holds; a field is absent when it does not
/// apply to how the job ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Detail {
    /// The job waited for that did not end as required (a
    /// `dependency-failed` result).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependency: Option<DependencySeen>,
    /// Wall time from spawn to exit (0 for a job cancelled before start).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The exit code of a process that exited after it was signalled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code_after_signal: Option<i32>,
    /// True when the grace ran out and the tree was killed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_expired: Option<bool>,
    /// The job's label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Processes left behind by the main process and stopped with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub leftovers_stopped: Option<u64>,
    /// The cancel marker that stopped the job, or that came too late.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker: Option<MarkerSeen>,
    /// A note for people (recovered results).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The process id of a job recovered after a listener crash.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pid: Option<i32>,
    /// Set when a cancel met a job that had already ended by itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raced: Option<String>,
    /// True for the `interrupted` result written at start-up recovery.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<bool>,
    /// A sealed job's detail, sealed to its origin (docs/identities.md,
    /// "Sealed jobs"): the envelope of this object's text, every other
    /// field absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sealed: Option<serde_json::Value>,
    /// The signal that ended the job (`SIGTERM`, `SIGKILL`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Why the program could not be started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_error: Option<String>,
    /// Bytes written to stderr in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_bytes: Option<u64>,
    /// The end of stderr.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_tail: Option<String>,
    /// Bytes written to stdout in all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<u64>,
    /// Present when the stdout log holds less than it should (it could not
    /// be made, or a write to it failed): the bytes it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_log_bytes: Option<u64>,
    /// The same for the stderr log.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_log_bytes: Option<u64>,
    /// The end of stdout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_tail: Option<String>,
}

/// Which job a `dependency-failed` result waited for, and how that job
/// ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct DependencySeen {
    /// How it ended: its result's `error` word (`failed (exit 3)` for a
    /// process that exited non-zero), or `rejected (<verdict>)`.
    pub ended: String,
    /// Its id.
    pub job_id: String,
    /// Its target.
    pub target: String,
}

/// Which cancel marker a result refers to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct MarkerSeen {
    /// The marker's `createdAt`.
    pub created_at: String,
    /// The machine that wrote it.
    pub origin: String,
}

impl From<&Marker> for MarkerSeen {
    fn from(m: &Marker) -> MarkerSeen {
        MarkerSeen {
            created_at: m.created_at.clone(),
            origin: m.origin.clone(),
        }
    }
}

/// What `detail.raced` says.
pub const RACED: &str = "the job ended by itself before the cancel landed";
/// What `detail.note` says on a recovered result.
pub const RECOVERED: &str = "the listener stopped while this job ran; it is not run again";

/// The most of a job's label a result repeats, in bytes: a label may be
/// as large as the job allows, and the result must stay within what
/// readers accept ([`super::outcome::MAX_BYTES`]).
pub const LABEL_BYTES: usize = 1024;

/// The most of a spawn error a result keeps, in bytes (it names the
/// program, which may be as long as the job allows).
pub const SPAWN_ERROR_BYTES: usize = 4096;

/// `text` cut to at most `max` bytes at a character boundary, with `…`
/// saying it was cut.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

impl Detail {
    /// The detail's text, as signed: compact JSON.
    pub fn to_text(&self) -> String {
        // Plain strings and numbers: serialising cannot fail.
        serde_json::to_string(self).expect("detail serialises")
    }

    /// The detail of `text`; an empty one when it does not parse.
    pub fn from_text(text: &str) -> Detail {
        serde_json::from_str(text).unwrap_or_default()
    }
}

/// The (unsigned) result of a job that ran (or failed to start): how it ended
/// (`report`), started at `started_at`, finished at `finished_at`.
pub fn outcome_of(
    key: &Key,
    job: &Job,
    started_at: &str,
    report: &Report,
    finished_at: &str,
) -> Outcome {
    let r = report;
    let mut d = Detail {
        duration_ms: Some(r.duration.as_millis() as u64),
        stdout_tail: Some(r.stdout_tail.clone()),
        stderr_tail: Some(r.stderr_tail.clone()),
        stdout_bytes: Some(r.output_bytes.0),
        stderr_bytes: Some(r.output_bytes.1),
        stdout_log_bytes: r.logs_short.0,
        stderr_log_bytes: r.logs_short.1,
        label: job.payload().label.as_deref().map(|l| clip(l, LABEL_BYTES)),
        leftovers_stopped: (r.leftovers_stopped > 0).then_some(r.leftovers_stopped as u64),
        ..Detail::default()
    };
    let (how, code) = match (&r.exit, &r.stop) {
        (Exit::SpawnFailed(msg), _) => {
            d.spawn_error = Some(clip(msg, SPAWN_ERROR_BYTES));
            (Termination::SpawnFailed, None)
        }
        (exit, Some(stop)) => {
            d.grace_expired = Some(stop.grace_expired);
            d.signal = Some(stop_signal(exit, stop.main_killed));
            if let Exit::Code(c) = exit {
                d.exit_code_after_signal = Some(*c);
            }
            let how = match &stop.reason {
                StopReason::Cancel(m) => {
                    d.marker = Some(MarkerSeen::from(&**m));
                    Termination::Cancelled
                }
                StopReason::Timeout => Termination::Timeout,
                StopReason::Shutdown => Termination::Interrupted,
            };
            (how, None)
        }
        (Exit::Code(c), None) => (Termination::Exited, Some(*c)),
        (Exit::Signal(s), None) => {
            d.signal = Some(platform::signal_name(*s));
            (Termination::Exited, None)
        }
    };
    if let Some(StopReason::Cancel(m)) = &r.raced {
        d.raced = Some(RACED.to_string());
        d.marker = Some(MarkerSeen::from(&**m));
    }
    let started = (how != Termination::SpawnFailed).then_some(started_at);
    Outcome::unsigned(
        job.id.as_str(),
        &job.target,
        how,
        code,
        started,
        finished_at,
        &sealed_for_origin(key, job, d),
    )
}

/// The detail `d` of a result of `job` as it is signed: as it is for a
/// clear job; for a sealed one, sealed to the origin's X25519 key on the
/// roster within the result's [`super::outcome::seal_context`]. When the
/// roster holds no key of the origin valid now, the detail is withheld
/// (a note says why) rather than written in clear.
fn sealed_for_origin(key: &Key, job: &Job, d: Detail) -> Detail {
    if !job.is_sealed() {
        return d;
    }
    match key.sealing_key(&job.origin) {
        Ok(to) => {
            let mut random = [0u8; 32];
            crate::base::random::fill(&mut random);
            let context = super::outcome::seal_context(job.id.as_str(), &job.target, &job.origin);
            let envelope =
                crate::trust::seal::seal(&to, context.as_bytes(), d.to_text().as_bytes(), random);
            Detail {
                sealed: Some(envelope.to_json()),
                ..Detail::default()
            }
        }
        Err(why) => Detail {
            note: Some(format!(
                "the detail of this sealed job is withheld: nothing to seal it to ({why})"
            )),
            ..Detail::default()
        },
    }
}

/// The signal a stopped job's result names: the one its main process died
/// of, as its wait status tells it; for one that exited with a code (and on
/// Windows, where every end is a code), the last stop signal it was sent
/// while it ran: `SIGKILL` only when the forced kill was sent to it
/// (`main_killed`), never for one that had exited before the grace ran
/// out on what it left behind.
fn stop_signal(exit: &Exit, main_killed: bool) -> String {
    match exit {
        Exit::Signal(s) => platform::signal_name(*s),
        _ if main_killed => "SIGKILL".to_string(),
        _ => "SIGTERM".to_string(),
    }
}

/// The (unsigned) result of a job cancelled by `marker` before it started.
pub fn cancelled_before_start(key: &Key, job: &Job, marker: &Marker, finished_at: &str) -> Outcome {
    let d = Detail {
        marker: Some(MarkerSeen::from(marker)),
        ..Detail::default()
    };
    never_started(key, job, Termination::CancelledBeforeStart, d, finished_at)
}

/// The (unsigned) result of a job that ended before its process was spawned:
/// no duration, no exit code, its label kept.
fn never_started(key: &Key, job: &Job, t: Termination, d: Detail, finished_at: &str) -> Outcome {
    let d = Detail {
        duration_ms: Some(0),
        label: job.payload().label.as_deref().map(|l| clip(l, LABEL_BYTES)),
        ..d
    };
    Outcome::unsigned(
        job.id.as_str(),
        &job.target,
        t,
        None,
        None,
        finished_at,
        &sealed_for_origin(key, job, d),
    )
}

/// The (unsigned) result of a job that never started because the job it
/// waited for, `dependency`, did not end as required.
pub fn dependency_failed(
    key: &Key,
    job: &Job,
    dependency: DependencySeen,
    finished_at: &str,
) -> Outcome {
    let d = Detail {
        dependency: Some(dependency),
        ..Detail::default()
    };
    never_started(key, job, Termination::DependencyFailed, d, finished_at)
}

/// The (unsigned) `interrupted` result of job `job_id` on `target`, started at
/// `started_at` as process `pid`, found unfinished after a listener crash.
pub fn recovered(
    job_id: &str,
    target: &str,
    started_at: &str,
    pid: i32,
    finished_at: &str,
) -> Outcome {
    let d = Detail {
        recovered: Some(true),
        note: Some(RECOVERED.to_string()),
        pid: Some(pid),
        ..Detail::default()
    };
    Outcome::unsigned(
        job_id,
        target,
        Termination::Interrupted,
        None,
        Some(started_at),
        finished_at,
        &d,
    )
}

#[cfg(test)]
mod tests;
