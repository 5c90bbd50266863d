//! Unit tests of the result rules: what each ending makes of a report.

use std::time::Duration;

use serde_json::json;

use super::*;
use crate::base::clock;
use crate::base::names::{JobId, Machine};
use crate::protocol::doc::Spec;
use crate::protocol::doc::report::Stop;
use crate::trust::Signer;

const ID: &str = "20261129-193000-9f2c4e1ab37d5c08";
const STARTED: &str = "2026-11-29T19:30:00.000Z";
const FINISHED: &str = "2026-11-29T19:30:05.000Z";

fn key() -> Key {
    Key::from_bytes(&[7u8; 32]).unwrap()
}

fn job(label: Option<&str>) -> Job {
    let mut spec = Spec::of(vec!["true".into()]);
    spec.payload.label = label.map(str::to_string);
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
            main_killed: grace_expired,
        }),
        ..report(exit)
    }
}

fn run(r: &Report) -> (Outcome, Detail) {
    let o = outcome_of(&key(), &job(None), STARTED, r, FINISHED);
    assert!(o.sig.is_empty(), "made unsigned: the caller signs");
    let o = o.signed(&key());
    assert!(key().verify(Signer::Machine(&o.target), &o.canonical(), &o.sig));
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
    // The signal it died of, by its platform's name ("SIGKILL" on Unix).
    assert_eq!(d.signal, Some(platform::signal_name(9)));
    assert_eq!(d.grace_expired, Some(true));
    assert_eq!(d.exit_code_after_signal, None);
}

#[test]
fn a_main_process_that_exited_within_the_grace_is_not_said_killed_when_its_leftovers_were() {
    let mut r = stopped(Exit::Code(0), StopReason::Timeout, true);
    r.stop.as_mut().unwrap().main_killed = false;
    let (_, d) = run(&r);
    assert_eq!(d.signal.as_deref(), Some("SIGTERM"));
    assert_eq!(d.grace_expired, Some(true));
    assert_eq!(d.exit_code_after_signal, Some(0));
}

#[test]
fn the_signal_named_is_the_one_the_main_process_died_of() {
    // A stop signal answered by a death from another (a handler that
    // re-raised, say) names the signal the status shows.
    let (_, d) = run(&stopped(Exit::Signal(6), StopReason::Timeout, false));
    assert_eq!(d.signal, Some(platform::signal_name(6)));
    assert_eq!(d.exit_code_after_signal, None);
    // Killed, but its own exit won the race (or Windows, where a kill
    // leaves a code): the kill sent, and the code it exited with.
    let (_, d) = run(&stopped(Exit::Code(0), StopReason::Timeout, true));
    assert_eq!(d.signal.as_deref(), Some("SIGKILL"));
    assert_eq!(d.exit_code_after_signal, Some(0));
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
    let o = recovered("a", "PC", STARTED, 42, FINISHED);
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
    let rec = recovered("a", "PC", STARTED, 7, FINISHED);
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
    let o = dependency_failed(&key(), &job(Some("tests")), dep.clone(), FINISHED).signed(&key());
    assert!(key().verify(Signer::Machine(&o.target), &o.canonical(), &o.sig));
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
    let tail = "\u{1}".repeat(crate::protocol::doc::report::TAIL_BYTES);
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
        main_killed: true,
    });
    let o = outcome_of(&key(), &job(Some(&label)), STARTED, &r, FINISHED).signed(&key());
    let bytes = crate::protocol::doc::to_file_bytes(&o);
    assert!(
        (bytes.len() as u64) < crate::protocol::doc::outcome::MAX_BYTES / 4,
        "{} bytes",
        bytes.len()
    );
    assert!(key().verify(Signer::Machine(&o.target), &o.canonical(), &o.sig));
    let cancelled = cancelled_before_start(&key(), &job(Some(&label)), &marker(), FINISHED);
    assert!(
        cancelled
            .detail()
            .label
            .is_some_and(|l| l.len() <= LABEL_BYTES)
    );
}
