//! Waiting says why it waits (docs/guide.md, "Why a wait waits"): every
//! wait, single or over several targets, names the listener's state when it
//! is not running, and a wait that runs out says what holds the job —
//! queued behind others, held by a dependency, a cancel pending, or the
//! listener. A wait judges the listener alive by new signed heartbeats on
//! its own clock, whatever time they bear.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::util::*;

/// `result --target PC --job-id ID --wait --wait-timeout LIMIT` (as `json`
/// when asked); (status, stdout, stderr).
fn wait_for(w: &World, id: &str, limit: &str, env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = w.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    output_within(
        c.args([
            "result",
            "--target",
            "PC",
            "--job-id",
            id,
            "--wait",
            "--wait-timeout",
            limit,
        ]),
        Duration::from_secs(30),
    )
}

/// The line a wait that ran out ends with.
fn gave_up(err: &str) -> &str {
    err.lines()
        .find(|l| l.contains("gave up waiting for"))
        .unwrap_or_else(|| panic!("no gave-up line: {err}"))
}

#[test]
fn a_single_target_wait_names_a_target_that_never_had_a_listener() {
    let w = World::with_target();
    let (code, out, err) = output_within(
        w.cmd().args([
            "enqueue",
            "--target",
            "PC",
            "--wait",
            "--wait-timeout",
            "1s",
            "--",
            "true",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        gave_up(&err).contains("; no listener has ever run for PC"),
        "{err}"
    );
}

#[test]
fn a_single_target_wait_names_a_stopped_listener_and_when_it_stopped() {
    let w = World::with_target();
    Beat::aged("stopped", 37).write(&w);
    let id = w.enqueue(&[], &["true"]);
    let (code, out, err) = wait_for(&w, &id, "1s", &[]);
    assert_eq!(code, 124, "{out}{err}");
    let line = gave_up(&err);
    assert!(line.contains("PC's listener stopped 3"), "{line}");
    assert!(
        line.contains("s ago; nothing runs until it is started again"),
        "{line}"
    );
    // The JSON answer carries it too.
    let (code, out, _) = output(w.cmd().args([
        "--json",
        "result",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "300ms",
    ]));
    assert_eq!(code, 124, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        v["listener"]
            .as_str()
            .unwrap()
            .contains("PC's listener stopped"),
        "{v}"
    );
}

#[test]
fn a_wait_that_runs_out_behind_queued_jobs_says_how_many() {
    let w = World::with_target();
    // A fresh heartbeat: the listener counts as running, so the queue is
    // all that holds the job.
    Beat::aged("listening", 0).write(&w);
    let first = w.enqueue(&[], &["true"]);
    for _ in 0..2 {
        w.enqueue(&[], &["true"]);
    }
    // Neither a job held by another nor one with a cancel pending is
    // ahead of it: neither may start.
    w.enqueue(&["--after", &first], &["true"]);
    let cancelled = w.enqueue(&[], &["true"]);
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &cancelled]);
    assert_eq!(code, 0, "{out}{err}");
    let low = w.enqueue(&[], &["true"]);
    let (code, out, err) = wait_for(&w, &low, "500ms", &[]);
    assert_eq!(code, 124, "{out}{err}");
    let line = gave_up(&err);
    assert!(
        line.contains("it is still queued behind 3 jobs (0 running, 3 queued before it)"),
        "{line}"
    );
    assert!(!line.contains("listener"), "{line}");
    // A high-priority job drains first: nothing ahead of it.
    let high = w.enqueue(&["--priority", "high"], &["true"]);
    let (code, out, _) = output(
        w.cmd()
            .args(["--json", "result", "--target", "PC", "--job-id", &high]),
    );
    assert_eq!(code, 124, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["queuedBehind"]["queued"], 0, "{v}");
}

#[test]
fn a_wait_that_runs_out_on_a_held_job_says_what_holds_it() {
    let w = World::with_target();
    Beat::aged("listening", 0).write(&w);
    w.enqueue(&["--job-id", "first"], &["true"]);
    let (code, out, err) = output_within(
        w.cmd().args([
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            "second",
            "--after",
            "first",
            "--wait",
            "--wait-timeout",
            "500ms",
            "--",
            "true",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        gave_up(&err).contains("it is still queued (held by a dependency: it waits for PC:first)"),
        "{err}"
    );
    // A job dated hours ahead of this clock is held by its date.
    let ahead = "deferred-job";
    w.write_job("PC", ahead, "PC", &ts_offset(3 * 3600), &kit_spec(&[]));
    let (code, out, err) = wait_for(&w, ahead, "300ms", &[]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        gave_up(&err).contains("queued (held by its date, deferred: dated 2h5"),
        "{err}"
    );
}

#[test]
fn result_of_a_job_with_a_pending_cancel_says_so_until_the_listener_acts() {
    let w = World::with_target();
    let id = w.enqueue(&[], &["true"]);
    // A marker that does not verify asks nothing.
    std::fs::write(w.marker(&id), format!("{{\"jobId\":\"{id}\"}}")).unwrap();
    let (code, _, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 124, "{err}");
    assert!(!err.contains("cancel pending"), "{err}");
    std::fs::remove_file(w.marker(&id)).unwrap();

    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 124, "{err}");
    assert!(
        err.contains(&format!(
            "{id} has no result on PC yet: it is queued and has a cancel pending (asked by PC at "
        )),
        "{err}"
    );
    assert!(!err.contains("it is queued; add --wait"), "{err}");
    let (_, out, _) = w.run(&["--json", "result", "--target", "PC", "--job-id", &id]);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["cancelPending"]["origin"], "PC", "{v}");
    // A wait that runs out says the same.
    let (code, _, err) = wait_for(&w, &id, "300ms", &[]);
    assert_eq!(code, 124, "{err}");
    assert!(gave_up(&err).contains("has a cancel pending"), "{err}");
    // Once the listener acted there is a result, and no cancel pending.
    w.listen_once(&[]);
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_ne!(code, 124, "{out}{err}");
    assert!(!err.contains("cancel pending"), "{err}");
    assert!(format!("{out}{err}").contains("cancel"), "{out}{err}");
}

#[test]
fn a_wait_over_several_targets_names_each_listener_and_what_holds_each_job() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    Beat::aged("stopped", 20).write(&w);
    let (code, out, err) = output_within(
        w.cmd().args([
            "enqueue",
            "--target",
            "PC,LAPTOP",
            "--wait",
            "--wait-timeout",
            "1s",
            "--",
            "true",
        ]),
        Duration::from_secs(30),
    );
    assert_eq!(code, 124, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines[1].starts_with("PC: ")
            && lines[1].contains("queued with nothing ahead of it; PC's listener stopped 2"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("LAPTOP: ")
            && lines[2].contains("; no listener has ever run for LAPTOP"),
        "{out}"
    );
}

/// Writes PC's heartbeat signed as its listener would, dated `skew`
/// seconds off this clock, in place (a rename: a reader never sees half a
/// file); the file's time is `mtime` when given (a sync tool that carries
/// the writer's time), else now.
fn beat_skewed(pc: &Path, skew: i64, mtime: Option<SystemTime>) {
    let beat = Beat {
        heartbeat_at: ts_offset(skew),
        ..Beat::aged("listening", 0)
    };
    let tmp = pc.join(".listener.json.tmp");
    std::fs::write(&tmp, beat.doc().to_string()).unwrap();
    if let Some(t) = mtime {
        std::fs::File::options()
            .write(true)
            .open(&tmp)
            .and_then(|f| f.set_modified(t))
            .unwrap();
    }
    // On Windows a rename over a file another process is reading fails
    // (a sharing violation) until the reader lets go: tried again, as a
    // sync engine does.
    let started = std::time::Instant::now();
    loop {
        match std::fs::rename(&tmp, pc.join("listener.json")) {
            Err(e)
                if e.kind() == std::io::ErrorKind::PermissionDenied
                    && started.elapsed() < Duration::from_secs(5) =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            r => break r.unwrap(),
        }
    }
}

/// `skew` seconds from now as a file time.
fn skewed(skew: i64) -> SystemTime {
    let d = Duration::from_secs(skew.unsigned_abs());
    if skew < 0 {
        SystemTime::now() - d
    } else {
        SystemTime::now() + d
    }
}

/// Keeps rewriting PC's heartbeat dated `skew` off, file times too, every
/// 250 ms until the flag drops.
fn keep_beating(w: &World, skew: i64) -> (Arc<AtomicBool>, std::thread::JoinHandle<()>) {
    let on = Arc::new(AtomicBool::new(true));
    let (flag, pc) = (on.clone(), w.pc());
    let beats = std::thread::spawn(move || {
        while flag.load(Ordering::SeqCst) {
            beat_skewed(&pc, skew, Some(skewed(skew)));
            std::thread::sleep(Duration::from_millis(250));
        }
    });
    (on, beats)
}

#[test]
fn a_wait_sees_a_listener_alive_whose_clock_is_hours_off() {
    for skew in [-3 * 3600, 3 * 3600] {
        let w = World::with_target();
        // First seen as just written; every later beat carries the skewed
        // time in the file too, so only the beats' change says it lives.
        beat_skewed(&w.pc(), skew, None);
        let id = w.enqueue(&[], &["true"]);
        let (on, beats) = keep_beating(&w, skew);
        let (code, out, err) =
            wait_for(&w, &id, "3s", &[("FLEET_DISPATCH_WAIT_STALE_AFTER", "2s")]);
        on.store(false, Ordering::SeqCst);
        beats.join().unwrap();
        assert_eq!(code, 124, "{out}{err}");
        assert!(!err.contains("not heard from"), "skew {skew}: {err}");
        assert!(
            gave_up(&err).ends_with("it is still queued with nothing ahead of it"),
            "skew {skew}: {err}"
        );
    }
}

#[test]
fn a_wait_calls_a_listener_whose_heartbeat_stopped_changing_not_heard_from() {
    let w = World::with_target();
    // Dated hours ahead, as by a clock that runs ahead, and just written:
    // no wall time says it is old, only that no new beat comes.
    beat_skewed(&w.pc(), 3 * 3600, None);
    let id = w.enqueue(&[], &["true"]);
    let (code, out, err) = wait_for(&w, &id, "3s", &[("FLEET_DISPATCH_WAIT_STALE_AFTER", "1s")]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        gave_up(&err).contains("; PC's listener has not been heard from for "),
        "{err}"
    );
    // A setting that is not a duration is named, and the default used.
    let (code, _, err) = wait_for(
        &w,
        &id,
        "300ms",
        &[("FLEET_DISPATCH_WAIT_STALE_AFTER", "soon")],
    );
    assert_eq!(code, 124, "{err}");
    assert!(
        err.contains("warning: FLEET_DISPATCH_WAIT_STALE_AFTER=soon is not a duration"),
        "{err}"
    );
}
