//! A result's `detail` (docs/protocol.md §5.3): what the result says beyond its exit
//! code, and the rule turning how a run ended into the signed result.
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
use crate::key::Key;
use crate::platform;

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

/// The signed result of a job that ran (or failed to start): how it ended
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
        label: job.spec.label.as_deref().map(|l| clip(l, LABEL_BYTES)),
        leftovers_stopped: (r.leftovers_stopped > 0).then_some(r.leftovers_stopped as u64),
        ..Detail::default()
    };
    let (how, code) = match (&r.exit, &r.stop) {
        (Exit::SpawnFailed(msg), _) => {
            d.spawn_error = Some(clip(msg, SPAWN_ERROR_BYTES));
            (Termination::SpawnFailed, None)
        }
        (_, Some(stop)) => {
            d.grace_expired = Some(stop.grace_expired);
            let signal = if stop.grace_expired {
                "SIGKILL"
            } else {
                "SIGTERM"
            };
            d.signal = Some(signal.to_string());
            if let Exit::Code(c) = r.exit {
                d.exit_code_after_signal = Some(c);
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
    Outcome::sign(
        key,
        job.id.as_str(),
        &job.target,
        how,
        code,
        started,
        finished_at,
        &d,
    )
}

/// The signed result of a job cancelled by `marker` before it started.
pub fn cancelled_before_start(key: &Key, job: &Job, marker: &Marker, finished_at: &str) -> Outcome {
    let d = Detail {
        marker: Some(MarkerSeen::from(marker)),
        ..Detail::default()
    };
    never_started(key, job, Termination::CancelledBeforeStart, d, finished_at)
}

/// The signed result of a job that ended before its process was spawned:
/// no duration, no exit code, its label kept.
fn never_started(key: &Key, job: &Job, t: Termination, d: Detail, finished_at: &str) -> Outcome {
    let d = Detail {
        duration_ms: Some(0),
        label: job.spec.label.as_deref().map(|l| clip(l, LABEL_BYTES)),
        ..d
    };
    Outcome::sign(
        key,
        job.id.as_str(),
        &job.target,
        t,
        None,
        None,
        finished_at,
        &d,
    )
}

/// The signed result of a job that never started because the job it
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

/// The signed `interrupted` result of job `job_id` on `target`, started at
/// `started_at` as process `pid`, found unfinished after a listener crash.
pub fn recovered(
    key: &Key,
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
    Outcome::sign(
        key,
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
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::clock;
    use crate::doc::Spec;
    use crate::doc::report::Stop;
    use crate::names::{JobId, Machine};

    const ID: &str = "20261129-193000-9f2c4e1ab37d5c08";
    const STARTED: &str = "2026-11-29T19:30:00.000Z";
    const FINISHED: &str = "2026-11-29T19:30:05.000Z";

    fn key() -> Key {
        Key::from_bytes(&[7u8; 32]).unwrap()
    }

    fn job(label: Option<&str>) -> Job {
        let spec = Spec {
            argv: vec!["true".into()],
            label: label.map(str::to_string),
            ..Spec::default()
        };
        let id = JobId::parse(ID).unwrap();
        Job::sign(
            &key(),
            id,
            "PC",
            "LAPTOP",
            clock::parse(STARTED).unwrap(),
            spec,
        )
    }

    fn marker() -> Marker {
        let pc = Machine::parse("PC", "target").unwrap();
        let laptop = Machine::parse("LAPTOP", "origin").unwrap();
        let id = JobId::parse(ID).unwrap();
        Marker::sign(&key(), &id, &pc, &laptop, "2026-11-29T19:30:02.000Z")
    }

    fn report(exit: Exit) -> Report {
        Report {
            duration: Duration::from_millis(1500),
            stdout_tail: "out\n".into(),
            stderr_tail: String::new(),
            output_bytes: (4, 0),
            ..Report::not_started(exit)
        }
    }

    fn stopped(exit: Exit, reason: StopReason, grace_expired: bool) -> Report {
        Report {
            stop: Some(Stop {
                reason,
                grace_expired,
            }),
            ..report(exit)
        }
    }

    fn run(r: &Report) -> (Outcome, Detail) {
        let o = outcome_of(&key(), &job(None), STARTED, r, FINISHED);
        assert!(key().verify(&o.canonical(), &o.sig));
        let d = o.detail();
        (o, d)
    }

    #[test]
    fn exit_0_is_done() {
        let (o, d) = run(&report(Exit::Code(0)));
        assert!(o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Exited, 0));
        assert_eq!(
            (o.started_at.as_str(), o.finished_at.as_str()),
            (STARTED, FINISHED)
        );
        assert_eq!(d.duration_ms, Some(1500));
        assert_eq!(d.stdout_tail.as_deref(), Some("out\n"));
        assert_eq!((d.stdout_bytes, d.stderr_bytes), (Some(4), Some(0)));
        assert_eq!((d.signal, d.marker, d.label), (None, None, None));
    }

    #[test]
    fn exit_n_is_a_failure_with_its_code() {
        let (o, d) = run(&report(Exit::Code(3)));
        assert!(!o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Exited, 3));
        assert_eq!(d.signal, None);
    }

    #[test]
    fn a_spawn_failure_has_no_start_and_says_why() {
        let r = Report::not_started(Exit::SpawnFailed("cannot start \"nope\"".into()));
        let (o, d) = run(&r);
        assert_eq!(o.termination(), Termination::SpawnFailed);
        assert_eq!((o.exit_code, o.started_at.as_str()), (-1, ""));
        assert_eq!(d.spawn_error.as_deref(), Some("cannot start \"nope\""));
        assert_eq!(d.duration_ms, Some(0));
    }

    #[test]
    fn a_cancel_within_the_grace_is_sigterm_and_names_the_marker() {
        let r = stopped(Exit::Code(0), StopReason::Cancel(Box::new(marker())), false);
        let (o, d) = run(&r);
        assert!(!o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Cancelled, -1));
        assert_eq!(d.signal.as_deref(), Some("SIGTERM"));
        assert_eq!(d.grace_expired, Some(false));
        assert_eq!(d.exit_code_after_signal, Some(0));
        assert_eq!(d.marker, Some(MarkerSeen::from(&marker())));
        assert_eq!(d.raced, None);
    }

    #[test]
    fn a_cancel_past_the_grace_is_sigkill() {
        let r = stopped(
            Exit::Signal(9),
            StopReason::Cancel(Box::new(marker())),
            true,
        );
        let (o, d) = run(&r);
        assert_eq!(o.termination(), Termination::Cancelled);
        assert_eq!(d.signal.as_deref(), Some("SIGKILL"));
        assert_eq!(d.grace_expired, Some(true));
        assert_eq!(d.exit_code_after_signal, None);
    }

    #[test]
    fn a_timeout_is_a_timeout_even_after_exit_0() {
        let (o, d) = run(&stopped(Exit::Code(0), StopReason::Timeout, false));
        assert!(!o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Timeout, -1));
        assert_eq!(d.exit_code_after_signal, Some(0));
        assert_eq!(d.marker, None);
    }

    #[test]
    fn a_shutdown_is_interrupted() {
        let (o, d) = run(&stopped(Exit::Code(143), StopReason::Shutdown, false));
        assert_eq!(o.termination(), Termination::Interrupted);
        assert_eq!(d.signal.as_deref(), Some("SIGTERM"));
    }

    #[test]
    fn a_raced_cancel_keeps_the_honest_exit_and_names_the_marker() {
        let r = Report {
            raced: Some(StopReason::Cancel(Box::new(marker()))),
            ..report(Exit::Code(0))
        };
        let (o, d) = run(&r);
        assert!(o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Exited, 0));
        assert_eq!(d.raced.as_deref(), Some(RACED));
        assert_eq!(d.marker, Some(MarkerSeen::from(&marker())));
        assert_eq!(r.marker(), Some(&marker()));
    }

    #[test]
    fn a_death_by_a_signal_we_did_not_send_is_a_failure_naming_it() {
        let (o, d) = run(&report(Exit::Signal(9)));
        assert!(!o.ok);
        assert_eq!((o.termination(), o.exit_code), (Termination::Exited, -1));
        assert_eq!(d.signal, Some(platform::signal_name(9)));
        assert_eq!(d.grace_expired, None);
    }

    #[test]
    fn leftovers_are_counted_only_when_there_were_some() {
        assert_eq!(run(&report(Exit::Code(0))).1.leftovers_stopped, None);
        let r = Report {
            leftovers_stopped: 2,
            ..report(Exit::Code(0))
        };
        assert_eq!(run(&r).1.leftovers_stopped, Some(2));
    }

    #[test]
    fn the_label_is_carried() {
        let o = outcome_of(
            &key(),
            &job(Some("nightly")),
            STARTED,
            &report(Exit::Code(0)),
            FINISHED,
        );
        assert_eq!(o.detail().label.as_deref(), Some("nightly"));
        let c = cancelled_before_start(&key(), &job(Some("nightly")), &marker(), FINISHED);
        assert_eq!(c.detail().label.as_deref(), Some("nightly"));
    }

    #[test]
    fn cancelled_before_start_has_no_start_and_names_the_marker() {
        let o = cancelled_before_start(&key(), &job(None), &marker(), FINISHED);
        assert_eq!(o.termination(), Termination::CancelledBeforeStart);
        assert_eq!((o.ok, o.exit_code, o.started_at.as_str()), (false, -1, ""));
        let d = o.detail();
        assert_eq!(
            (d.duration_ms, d.marker),
            (Some(0), Some(MarkerSeen::from(&marker())))
        );
    }

    #[test]
    fn a_recovered_result_is_interrupted_and_says_so() {
        let o = recovered(&key(), "a", "PC", STARTED, 42, FINISHED);
        assert_eq!(o.termination(), Termination::Interrupted);
        assert_eq!(o.started_at, STARTED);
        let d = o.detail();
        assert_eq!((d.recovered, d.pid), (Some(true), Some(42)));
        assert_eq!(d.note.as_deref(), Some(RECOVERED));
    }

    #[test]
    fn the_signed_text_keeps_the_sorted_key_order_of_earlier_versions() {
        // Earlier versions built the detail as a JSON value, whose keys
        // serialise sorted: the same facts must give the same signed text.
        let r = Report {
            raced: Some(StopReason::Cancel(Box::new(marker()))),
            leftovers_stopped: 1,
            ..stopped(Exit::Code(1), StopReason::Timeout, true)
        };
        let o = outcome_of(&key(), &job(Some("l")), STARTED, &r, FINISHED);
        let earlier = json!({
            "durationMs": 1500, "stdoutTail": "out\n", "stderrTail": "",
            "stdoutBytes": 4, "stderrBytes": 0, "label": "l", "leftoversStopped": 1,
            "graceExpired": true, "signal": "SIGKILL", "exitCodeAfterSignal": 1,
            "raced": RACED,
            "marker": {"origin": "LAPTOP", "createdAt": "2026-11-29T19:30:02.000Z"},
        });
        assert_eq!(o.detail, earlier.to_string());
        let rec = recovered(&key(), "a", "PC", STARTED, 7, FINISHED);
        let earlier = json!({"recovered": true, "note": RECOVERED, "pid": 7});
        assert_eq!(rec.detail, earlier.to_string());
    }

    #[test]
    fn dependency_failed_never_started_and_names_the_dependency() {
        let dep = DependencySeen {
            ended: "failed (exit 3)".into(),
            job_id: "build-1".into(),
            target: "BUILD".into(),
        };
        let o = dependency_failed(&key(), &job(Some("tests")), dep.clone(), FINISHED);
        assert!(key().verify(&o.canonical(), &o.sig));
        assert_eq!(o.termination(), Termination::DependencyFailed);
        assert_eq!((o.ok, o.exit_code, o.started_at.as_str()), (false, -1, ""));
        assert_eq!(o.wait_exit_status(), 1);
        let d = o.detail();
        assert_eq!(d.dependency, Some(dep));
        assert_eq!(
            (d.duration_ms, d.label.as_deref()),
            (Some(0), Some("tests"))
        );
        // Sorted keys, as every detail is written.
        assert!(
            o.detail.starts_with(r#"{"dependency":{"ended":"#),
            "{}",
            o.detail
        );
    }

    #[test]
    fn reading_tolerates_unknown_fields_and_bad_text() {
        let d = Detail::from_text(r#"{"durationMs":5,"future":{"x":1},"label":null}"#);
        assert_eq!(d.duration_ms, Some(5));
        assert_eq!(d.label, None);
        assert_eq!(Detail::from_text("not json"), Detail::default());
    }

    #[test]
    fn clip_cuts_at_a_character_boundary_and_says_so() {
        assert_eq!(clip("short", 10), "short");
        let cut = clip("ééééé", 6);
        assert!(cut.len() <= 6 && cut.ends_with('…'), "{cut}");
        assert_eq!(cut, "é…");
    }

    #[test]
    fn the_largest_result_a_job_can_cause_stays_within_the_readers_limit() {
        // Everything a job controls at its largest: a label filling the job,
        // output tails of control bytes (escaped twice: once in the detail,
        // once as a string in the result), a spawn error naming a huge
        // program, and a marker.
        let label = "\u{1}\"".repeat(400_000);
        let tail = "\u{1}".repeat(crate::doc::report::TAIL_BYTES);
        let mut r = Report {
            stdout_tail: tail.clone(),
            stderr_tail: tail,
            output_bytes: (u64::MAX, u64::MAX),
            leftovers_stopped: usize::MAX,
            raced: Some(StopReason::Cancel(Box::new(marker()))),
            ..Report::not_started(Exit::SpawnFailed("\u{1}".repeat(1 << 20)))
        };
        r.stop = Some(Stop {
            reason: StopReason::Cancel(Box::new(marker())),
            grace_expired: true,
        });
        let o = outcome_of(&key(), &job(Some(&label)), STARTED, &r, FINISHED);
        let bytes = crate::doc::to_file_bytes(&o);
        assert!(
            (bytes.len() as u64) < crate::doc::outcome::MAX_BYTES / 4,
            "{} bytes",
            bytes.len()
        );
        assert!(key().verify(&o.canonical(), &o.sig));
        let cancelled = cancelled_before_start(&key(), &job(Some(&label)), &marker(), FINISHED);
        assert!(
            cancelled
                .detail()
                .label
                .is_some_and(|l| l.len() <= LABEL_BYTES)
        );
    }
}
