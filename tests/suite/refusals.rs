//! No mistake ends in a silent exit 0 (docs/guide.md, "Mistakes refused"):
//! `enqueue` and `cancel` refuse a root one level too deep or too high
//! before writing anything; `enqueue` warns of a listener whose heartbeat
//! is stale or signed with another key; `cancel` and `--interrupt` refuse
//! an id nothing knows (with the nearest ids) unless `--force`, and accept
//! one this machine sent though it has not synced; `--interrupt running`
//! names the one job the target runs; `--interrupt last` says when that
//! job is not running.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::*;

/// This machine's key fingerprint, as `status` reports it.
fn ours(w: &World) -> String {
    let (code, out, err) = w.run(&["--json", "status", "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    v["keyFingerprint"].as_str().unwrap().to_string()
}

/// `enqueue --target PC -- true` with `root` as the root and PC named in
/// the fleet setting, as the README recommends (so no folder is needed).
fn enqueue_at(w: &World, root: &Path, extra: &[&str]) -> (i32, String, String) {
    output(
        w.cmd()
            .env("FLEET_DISPATCH_FLEET", "PC,LAPTOP")
            .args(["--root", p(root), "enqueue", "--target", "PC"])
            .args(extra)
            .args(["--", "true"]),
    )
}

/// Every file and folder under `dir`, as paths relative to it.
fn tree(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect()
}

#[test]
fn a_root_one_level_too_deep_is_refused_before_anything_is_written() {
    let w = World::with_target();
    let deep = w.root.join("PC");
    let before = tree(&w.root);
    let (code, out, err) = enqueue_at(&w, &deep, &[]);
    assert_eq!(code, 78, "CONFIG: {out}{err}");
    assert!(err.contains("one level too deep"), "{err}");
    assert!(
        err.contains(&format!("did you mean --root {}", w.root.display())),
        "the fix: {err}"
    );
    assert_eq!(tree(&w.root), before, "nothing written: {err}");
    // A target whose listener never ran holds only what senders made
    // (inbox/, cancel/): a root pointed at it is as deep.
    let w = World::new();
    std::fs::create_dir_all(w.root.join("PC").join("inbox")).unwrap();
    let before = tree(&w.root);
    let (code, out, err) = enqueue_at(&w, &w.root.join("PC"), &[]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("it holds inbox"), "{err}");
    assert_eq!(tree(&w.root), before);
    // `cancel` writes into the root too, and is refused alike.
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_FLEET", "PC").args([
        "--root",
        p(&w.root.join("PC")),
        "cancel",
        "--target",
        "PC",
        "--job-id",
        "build-1",
        "--force",
    ]));
    assert_eq!(code, 78, "{out}{err}");
    assert_eq!(tree(&w.root), before);
}

#[test]
fn a_root_one_level_too_high_is_refused_naming_the_root_to_use() {
    let w = World::with_target();
    // The folder holding the root: its `root/` folder holds target PC.
    let high = w.dir.path().join("high");
    std::fs::create_dir_all(&high).unwrap();
    let fleet = high.join("fleet");
    std::fs::rename(&w.root, &fleet).unwrap();
    let before = tree(&high);
    let (code, out, err) = enqueue_at(&w, &high, &[]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("one level too high"), "{err}");
    assert!(
        err.contains(&format!("did you mean --root {}", fleet.display())),
        "{err}"
    );
    assert_eq!(tree(&high), before, "no PC/inbox made: {err}");
    // The root it names takes the job.
    let (code, out, err) = enqueue_at(&w, &fleet, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

/// A root pointed at some other folder (a whole OneDrive: its own folders,
/// none of this fleet's) before any listener has run: no real root is
/// found inside to name, and still nothing is written.
#[test]
fn a_root_holding_only_folders_foreign_to_the_fleet_is_refused() {
    let w = World::new();
    let onedrive = w.dir.path().join("OneDrive");
    for d in ["Documents", "Pictures", "fleet-dispatch"] {
        std::fs::create_dir_all(onedrive.join(d)).unwrap();
    }
    let before = tree(&onedrive);
    let (code, out, err) = enqueue_at(&w, &onedrive, &[]);
    assert_eq!(code, 78, "CONFIG: {out}{err}");
    assert!(err.contains("not a dispatch root"), "{err}");
    assert!(err.contains("Documents, fleet-dispatch, Pictures"), "{err}");
    assert!(
        err.contains("a new root is an empty folder"),
        "the fix: {err}"
    );
    assert_eq!(tree(&onedrive), before, "no PC/inbox made: {err}");
    // doctor says the same, and the empty folder inside takes the job.
    let (code, out, _) = output(w.cmd().env("FLEET_DISPATCH_FLEET", "PC,LAPTOP").args([
        "--root",
        p(&onedrive),
        "doctor",
    ]));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("not a dispatch root"), "{out}");
    let (code, out, err) = enqueue_at(&w, &onedrive.join("fleet-dispatch"), &[]);
    assert_eq!(code, 0, "{out}{err}");
    // A folder named after a machine of the fleet is the fleet's: a root
    // holding one beside other folders is a root.
    let w = World::new();
    std::fs::create_dir_all(w.root.join("notes")).unwrap();
    std::fs::create_dir_all(w.root.join("LAPTOP")).unwrap();
    let (code, out, err) = enqueue_at(&w, &w.root, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_fresh_root_takes_its_first_job_and_one_with_its_identity_and_targets_a_new_target() {
    let w = World::new();
    let (code, out, err) = enqueue_at(&w, &w.root, &[]);
    assert_eq!(code, 0, "an empty root is a new root: {out}{err}");
    let id = out.trim();
    assert!(w.inbox(id).exists());
    assert!(w.root.join("fleet-root.json").exists());
    // A first job to a second target, beside its identity and PC.
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_FLEET", "PC,LAPTOP")
            .args(["enqueue", "--target", "LAPTOP", "--", "true"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        w.root
            .join("LAPTOP")
            .join("inbox")
            .join(format!("{}.json", out.trim()))
            .exists()
    );
    assert!(err.is_empty(), "no listener yet is no warning: {err}");
}

#[test]
fn a_stale_heartbeat_is_warned_of_and_the_job_still_queued() {
    let w = World::with_target();
    let mut fresh = Beat::aged("listening", 1);
    fresh.key_fingerprint = Some(ours(&w));
    fresh.write(&w);
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.is_empty(), "a live listener with our key: {err}");
    let mut stale = Beat::aged("listening", 600);
    stale.key_fingerprint = Some(ours(&w));
    stale.write(&w);
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.inbox(out.trim()).exists(), "queued all the same");
    assert!(
        err.contains("warning: PC: stale") && err.contains("10m"),
        "{err}"
    );
    assert!(err.contains("the job is queued"), "{err}");
    // For programs, in the answer.
    let (code, out, err) = w.run(&["--json", "enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["warnings"][0]["check"], "heartbeat", "{v}");
    // A batch is warned of alike, once for its target.
    let batch = scratch(&w, "jobs.jsonl");
    std::fs::write(&batch, "{\"argv\": [\"true\"]}\n{\"argv\": [\"true\"]}\n").unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--batch", p(&batch)]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 2, "{out}");
    assert_eq!(err.matches("warning: PC: stale").count(), 1, "{err}");
}

#[test]
fn a_listener_with_another_key_is_warned_of_naming_both_fingerprints() {
    let w = World::with_target();
    let theirs = "0123456789abcdef";
    let mut beat = Beat::aged("listening", 1);
    beat.key_fingerprint = Some(theirs.to_string());
    beat.write(&w);
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("warning: PC:"), "{err}");
    assert!(
        err.contains(theirs) && err.contains(&ours(&w)),
        "both fingerprints: {err}"
    );
    assert!(err.contains("rejected"), "{err}");
}

/// `cancel --target PC --job-id ID EXTRA…` as `machine`.
fn cancel(w: &World, machine: &str, id: &str, extra: &[&str]) -> (i32, String, String) {
    output(
        w.cmd_as(machine)
            .args(["cancel", "--target", "PC", "--job-id", id])
            .args(extra),
    )
}

#[test]
fn cancel_of_an_id_nothing_knows_is_refused_with_the_nearest_ids_and_no_marker() {
    let w = World::with_target();
    w.enqueue(&["--job-id", "build-1234"], &["true"]);
    w.enqueue(&["--job-id", "deploy-77"], &["true"]);
    let (code, out, err) = cancel(&w, "LAPTOP", "build-1243", &[]);
    assert_eq!(code, 66, "NOT_FOUND: {out}{err}");
    assert!(err.contains("no job build-1243 on PC"), "{err}");
    assert!(err.contains("nearest known ids: build-1234"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert!(files(&w.pc().join("cancel")).is_empty(), "no marker");
    // A generated id, taken as it is by the name rules, is refused alike.
    let (code, _, err) = cancel(&w, "LAPTOP", "20261129-193000-00000000000000aa", &[]);
    assert_eq!(code, 66, "{err}");
    assert!(files(&w.pc().join("cancel")).is_empty());
    // Over a list, an id no target knows is refused as a whole.
    w.make_target("LAPTOP");
    let (code, _, err) = output(w.cmd_as("LAPTOP").args([
        "cancel",
        "--target",
        "PC,LAPTOP",
        "--job-id",
        "build-1243",
    ]));
    assert_eq!(code, 66, "{err}");
    assert!(files(&w.pc().join("cancel")).is_empty());
}

#[test]
fn cancel_with_force_writes_the_marker_of_a_job_not_synced_yet() {
    let w = World::with_target();
    let (code, out, err) = cancel(&w, "LAPTOP", "on-its-way", &["--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        "cancel of on-its-way requested (job not seen yet)"
    );
    assert!(w.marker("on-its-way").exists());
}

#[test]
fn cancel_of_a_job_this_machine_sent_is_accepted_before_it_syncs() {
    let w = World::with_target();
    let id = w.enqueue(&[], &["true"]);
    // The target's folder has not got it yet (sync lags): only this
    // machine's record of what it sent knows it.
    std::fs::remove_file(w.inbox(&id)).unwrap();
    let (code, out, err) = cancel(&w, "PC", &id, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("requested (job not seen yet)"), "{out}");
    assert!(w.marker(&id).exists());
    // Another machine never sent it: refused there.
    std::fs::remove_file(w.marker(&id)).unwrap();
    let (code, _, err) = output(
        w.cmd_as("LAPTOP")
            .env(
                "FLEET_DISPATCH_STATE_DIR",
                w.dir.path().join("laptop-state"),
            )
            .args(["cancel", "--target", "PC", "--job-id", &id]),
    );
    assert_eq!(code, 66, "{err}");
    // Every job of a batch counts as sent, not only its last.
    let batch = scratch(&w, "jobs.jsonl");
    std::fs::write(&batch, "{\"argv\": [\"true\"]}\n{\"argv\": [\"true\"]}\n").unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--batch", p(&batch)]);
    assert_eq!(code, 0, "{out}{err}");
    for id in out.lines() {
        std::fs::remove_file(w.inbox(id)).unwrap();
        let (code, out, err) = cancel(&w, "PC", id, &[]);
        assert_eq!(code, 0, "{id}: {out}{err}");
        assert!(out.contains("requested (job not seen yet)"), "{out}");
    }
}

#[test]
fn cancel_of_a_finished_job_stays_not_running() {
    let w = World::with_target();
    let id = w.enqueue(&[], &["true"]);
    w.listen_once(&[]);
    let (code, out, err) = cancel(&w, "LAPTOP", &id, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("is not running"), "{out}");
}

#[test]
fn interrupt_of_an_id_nothing_knows_is_refused_and_queues_nothing() {
    let w = World::with_target();
    w.enqueue(&["--job-id", "build-1234"], &["true"]);
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        "build-1243",
        "--",
        "true",
    ]);
    assert_eq!(code, 66, "{out}{err}");
    assert!(
        err.contains("--interrupt build-1243") && err.contains("build-1234"),
        "{err}"
    );
    assert_eq!(files(&w.pc().join("inbox")), vec!["build-1234.json"]);
    assert!(files(&w.pc().join("cancel")).is_empty());
}

/// Writes PC's heartbeat, signed and alive, running `jobs`.
fn running_beat(w: &World, jobs: &[&str]) {
    let mut beat = Beat::aged("running", 1);
    beat.key_fingerprint = Some(ours(w));
    let mut doc = beat.fields();
    doc["running"] = jobs.first().map_or(Value::Null, |j| json!(j));
    doc["runningJobs"] = json!(jobs);
    let path = w.pc().join("listener.json");
    std::fs::write(&path, signed_beat(doc).to_string()).unwrap();
}

fn interrupt(w: &World, what: &str) -> (i32, String, String) {
    w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        what,
        "--",
        "true",
    ])
}

#[test]
fn interrupt_running_names_the_one_running_job_and_is_refused_for_none_or_several() {
    let w = World::with_target();
    // No listener: nothing runs.
    let (code, out, err) = interrupt(&w, "running");
    assert_eq!(code, 66, "{out}{err}");
    assert!(err.contains("no heartbeat signed"), "{err}");
    // A live listener running nothing.
    running_beat(&w, &[]);
    let (code, out, err) = interrupt(&w, "running");
    assert_eq!(code, 66, "{out}{err}");
    assert!(err.contains("no job runs on PC now"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty(), "nothing queued");
    // Several slots busy: which one is the user's to say.
    running_beat(&w, &["job-a", "job-b"]);
    let (code, out, err) = interrupt(&w, "running");
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("job-a, job-b"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
    // One: stopped, and the new job queued.
    running_beat(&w, &["job-a"]);
    let (code, out, err) = interrupt(&w, "running");
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker("job-a").exists(), "{err}");
    assert!(w.inbox(out.trim()).exists());
}

#[test]
fn interrupt_last_says_when_the_last_job_is_not_running() {
    let w = World::with_target();
    let first = w.enqueue(&[], &["true"]);
    // Still queued: cancelled before it starts, and said to be not running.
    let (code, out, err) = interrupt(&w, "last");
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        err.contains(&format!(
            "--interrupt last named {first}, the last job sent from here, which is not running"
        )),
        "{err}"
    );
    assert!(err.contains("(job queued)"), "{err}");
    // Finished: nothing to stop, and said so.
    w.listen_once(&[]);
    let (code, out, err) = interrupt(&w, "last");
    assert_eq!(code, 0, "{out}{err}");
    assert!(err.contains("which is not running"), "{err}");
    assert!(err.contains("already finished"), "{err}");
}
