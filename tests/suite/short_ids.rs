//! Short ids (docs/protocol.md §8, how a command names a job): a file
//! someone put in a folder under a longer name — unsigned, not even JSON —
//! never captures the id a person gives to `enqueue --after`, `cancel`,
//! `enqueue --interrupt`, `result` or `logs`, nor stops a prefix from
//! naming the one verified job it is the start of; an exact id always wins.

use serde_json::Value;

use crate::util::*;

/// Puts `inbox/<name>.json` on target PC, as a folder writer without the
/// key could: not a job, not even JSON.
fn plant(w: &World, name: &str) {
    std::fs::write(w.inbox(name), "planted, not a job").unwrap();
}

#[test]
fn after_a_job_not_here_yet_is_not_captured_by_a_planted_name() {
    let w = World::with_target();
    plant(&w, "nightly-x");
    let log = w.dir.path().join("ran.log");
    // The dependent is sent before the job it waits for, as a chain often is.
    let dep = w.enqueue(&["--after", "nightly"], &kit(&["append", p(&log), "B"]));
    assert_eq!(signed_after(&w, &dep), ["PC:nightly"]);
    w.enqueue(&["--job-id", "nightly"], &kit(&["append", p(&log), "A"]));
    // The planted file settles and is refused meanwhile: it names nothing.
    let c = w.listen_once(&["--settle", "0s"]);
    assert_eq!(c["done"], 2, "{c}");
    assert_eq!(lines(&log), ["A", "B"]);
    assert_eq!(w.result(&dep)["ok"], true, "{}", w.result(&dep));
    assert!(w.rejected("nightly-x.json").exists());
}

#[test]
fn cancel_of_a_job_on_its_way_marks_that_job_not_a_planted_one() {
    let w = World::with_target();
    plant(&w, "nightly-x");
    // On its way from another machine: nothing here knows it, so it takes
    // --force (tests/suite/refusals.rs has the refusal without).
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", "nightly", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker("nightly").exists(), "{out}{err}");
    assert!(
        !w.marker("nightly-x").exists(),
        "the planted name drew the cancel"
    );
    // The job arrives and never starts.
    let log = w.dir.path().join("ran.log");
    w.enqueue(&["--job-id", "nightly"], &kit(&["append", p(&log), "A"]));
    let c = w.listen_once(&[]);
    assert_eq!(c["cancelled"], 1, "{c}");
    assert_eq!(w.result("nightly")["error"], "cancelled-before-start");
    assert!(lines(&log).is_empty());
}

#[test]
fn interrupt_of_a_job_on_its_way_marks_that_job_not_a_planted_one() {
    let w = World::with_target();
    plant(&w, "nightly-x");
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        "nightly",
        "--force",
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains("nightly") && !err.contains("nightly-x"),
        "{err}"
    );
    assert!(w.marker("nightly").exists(), "{out}{err}");
    assert!(
        !w.marker("nightly-x").exists(),
        "the planted name drew the cancel"
    );
}

/// Runs genuine jobs `nightly-1` (printing `hello`) and `nightly-2`… as
/// given, then plants `nightly-x`.
fn genuine_and_planted(w: &World, ids: &[&str]) {
    for id in ids {
        w.enqueue(&["--job-id", id], &kit(&["out", "hello"]));
    }
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], ids.len(), "{c}");
    plant(w, "nightly-x");
}

#[test]
fn result_by_prefix_names_the_one_verified_job_beside_a_planted_name() {
    let w = World::with_target();
    genuine_and_planted(&w, &["nightly-1"]);
    let (code, out, err) = w.run(&["--json", "result", "--target", "PC", "--job-id", "nightly"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["jobId"], "nightly-1", "{v}");
    // Two verified jobs it is the start of: refused, listing both and
    // never the planted name.
    w.enqueue(&["--job-id", "nightly-2"], &kit(&["out", "hello"]));
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", "nightly"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(
        err.contains("VALIDATION_ERROR") && err.contains("nightly-1") && err.contains("nightly-2"),
        "{err}"
    );
    assert!(!err.contains("nightly-x"), "{err}");
    // An exact id wins over the longer ones it is the start of.
    w.enqueue(&["--job-id", "nightly"], &kit(&["out", "hello"]));
    let (code, out, err) = w.run(&["--json", "result", "--target", "PC", "--job-id", "nightly"]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(out.contains("\"jobId\":\"nightly\""), "{out}");
}

#[test]
fn logs_by_prefix_show_the_one_verified_job_beside_a_planted_name() {
    let w = World::with_target();
    genuine_and_planted(&w, &["nightly-1"]);
    let (code, out, err) = w.run(&["logs", "--target", "PC", "--job-id", "nightly"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "hello", "{err}");
}

#[test]
fn a_batch_line_after_another_line_names_that_lines_job() {
    let w = World::with_target();
    // A verified job already there that the line's id is the start of.
    genuine_and_planted(&w, &["step-1"]);
    let file = w.dir.path().join("chain.jsonl");
    let line = |id: &str, after: Option<&str>| {
        let mut v = serde_json::json!({"jobId": id, "argv": kit(&["out", id])});
        if let Some(a) = after {
            v["after"] = serde_json::json!([a]);
        }
        v.to_string()
    };
    let text = [line("step", None), line("next", Some("step"))].join("\n");
    std::fs::write(&file, text).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--batch", p(&file)]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(signed_after(&w, "next"), ["PC:step"]);
}
