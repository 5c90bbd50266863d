//! docs/protocol.md §5.2 `after`/`afterAny` and §7.13, job dependencies:
//! `enqueue --after [TARGET:]ID` holds a job queued until each named job has
//! a verified result, runs it after a success (any ending with
//! `--after-any`), and ends it `dependency-failed`, unstarted, otherwise —
//! on one target or across two in one root, through the real binary. The
//! side-effect file each job appends to shows what ran and in what order.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

/// The order jobs ran in: each appends its word here.
fn log(w: &World) -> PathBuf {
    w.dir.path().join("ran.log")
}

/// `enqueue --target PC --job-id ID EXTRA… -- jobkit append <log> WORD [exit CODE]`.
fn enqueue_word(w: &World, id: &str, extra: &[&str], word: &str, code: Option<&str>) -> String {
    let log = log(w);
    let mut steps = vec!["append", p(&log), word];
    if let Some(c) = code {
        steps.extend(["exit", c]);
    }
    let mut args = vec!["--job-id", id];
    args.extend_from_slice(extra);
    w.enqueue(&args, &kit(&steps))
}

/// `enqueue --target TARGET --job-id ID -- jobkit STEPS…`, sent from PC.
fn enqueue_on(w: &World, target: &str, id: &str, steps: &[&str]) {
    let mut args = vec!["enqueue", "--target", target, "--job-id", id, "--"];
    let argv = kit(steps);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
}

fn held(w: &World, id: &str) {
    assert!(w.inbox(id).exists(), "{id} left the inbox");
    assert!(!w.result_path(id).exists(), "{id} has a result");
    assert!(!w.rejected(&format!("{id}.json")).exists(), "{id} rejected");
}

#[test]
fn a_job_after_another_runs_only_once_that_one_succeeded() {
    let w = World::with_target();
    // B is older and high priority: without the dependency it would run first.
    enqueue_word(&w, "b", &["--priority", "high", "--after", "a"], "B", None);
    enqueue_word(&w, "a", &[], "A", None);
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 2, "{c}");
    assert_eq!(lines(&log(&w)), ["A", "B"]);
    let r = w.result("b");
    assert_eq!(
        (r["ok"].clone(), r["error"].clone()),
        (json!(true), json!(""))
    );
    // The dependency is part of the signed spec.
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.done("b")).unwrap()).unwrap();
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    assert_eq!(
        spec["after"],
        json!([{"target": "PC", "jobId": "a"}]),
        "{spec}"
    );
    assert!(spec.get("afterAny").is_none(), "{spec}");
}

#[test]
fn a_failed_dependency_ends_the_job_unstarted_naming_it() {
    let w = World::with_target();
    enqueue_word(&w, "a", &[], "A", Some("3"));
    enqueue_word(&w, "b", &["--after", "a", "--label", "tests"], "B", None);
    let c = w.listen_once(&[]);
    assert_eq!(c["failed"], 2, "{c}");
    assert_eq!(lines(&log(&w)), ["A"], "B must not run");
    let r = w.result("b");
    assert!(result_sig_ok(&r), "{r}");
    assert_eq!(r["error"], "dependency-failed", "{r}");
    assert_eq!(
        (r["ok"].clone(), r["exitCode"].clone()),
        (json!(false), json!(-1))
    );
    assert_eq!(r["startedAt"], "", "{r}");
    let d = w.detail("b");
    assert_eq!(
        d["dependency"],
        json!({"target": "PC", "jobId": "a", "ended": "failed (exit 3)"}),
        "{d}"
    );
    assert_eq!(d["label"], "tests");
    assert!(w.done("b").exists());
    // `result` says so and exits 1, as for any job that did not run to its end.
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", "b"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("dependency-failed"), "{out}");
    assert!(
        out.contains("it waited for a on PC, which ended failed (exit 3)"),
        "{out}"
    );
    let (_, out, _) = w.run(&["--json", "result", "--target", "PC", "--job-id", "b"]);
    assert!(out.contains("dependency-failed"), "{out}");
    // A chain fails along: C after B ends the same way, naming B.
    enqueue_word(&w, "c", &["--after", "b"], "C", None);
    w.listen_once(&[]);
    assert_eq!(w.detail("c")["dependency"]["ended"], "dependency-failed");
    assert_eq!(lines(&log(&w)), ["A"]);
}

#[test]
fn after_any_runs_after_a_failure_too() {
    let w = World::with_target();
    enqueue_word(&w, "a", &[], "A", Some("3"));
    enqueue_word(&w, "b", &["--after", "a", "--after-any"], "B", None);
    w.listen_once(&[]);
    assert_eq!(lines(&log(&w)), ["A", "B"]);
    assert_eq!(w.result("b")["ok"], true);
}

#[test]
fn a_job_on_one_target_waits_for_a_job_on_another() {
    let w = World::with_target();
    w.make_target("BUILD");
    let log_file = log(&w);
    enqueue_on(&w, "BUILD", "build-2", &["append", p(&log_file), "BUILD"]);
    enqueue_word(&w, "tests", &["--after", "BUILD:build-2"], "TESTS", None);
    // PC's listener holds it: BUILD has not run it yet.
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["done"].clone(), c["rejected"].clone()),
        (json!(0), json!(0))
    );
    held(&w, "tests");
    let (code, out, _) = w.run(&["status", "--target", "PC"]);
    assert_eq!(code, 0);
    assert!(out.contains("held: waits for BUILD:build-2"), "{out}");
    let (_, out, _) = w.run(&["--json", "status", "--target", "PC"]);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let q = &v["targets"][0]["queued"][0];
    assert_eq!(q["waitsFor"], json!(["BUILD:build-2"]), "{v}");
    // BUILD's listener (another machine) runs its jobs; then PC's runs the tests.
    w.listen_once_as("BUILD", &[]);
    assert!(w.root.join("BUILD/results/build-2.json").exists());
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(lines(&log(&w)), ["BUILD", "TESTS"]);
    let (_, out, _) = w.run(&["--json", "status", "--target", "PC"]);
    assert!(!out.contains("waitsFor"), "{out}");
}

#[test]
fn a_held_job_does_not_block_the_jobs_behind_it() {
    let w = World::with_target();
    enqueue_word(
        &w,
        "first",
        &["--priority", "high", "--after", "never-sent"],
        "FIRST",
        None,
    );
    enqueue_word(&w, "second", &[], "SECOND", None);
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(lines(&log(&w)), ["SECOND"]);
    held(&w, "first");
    // A listener in loop mode keeps it held too, and says why once.
    let g = w.spawn_listener(&[]);
    enqueue_word(&w, "third", &[], "THIRD", None);
    w.wait_result("third", Duration::from_secs(20));
    held(&w, "first");
    let (code, out, err) = w.run(&["listen", "--drain"]);
    assert_eq!(code, 0, "{out}{err}");
    let (_, out, err) = g.wait(Duration::from_secs(10));
    let said = out
        .matches("holding first: waits for PC:never-sent")
        .count();
    assert_eq!(said, 1, "{out}{err}");
}

#[test]
fn a_held_job_is_cancelled_before_start() {
    let w = World::with_target();
    enqueue_word(&w, "b", &["--after", "never-sent"], "B", None);
    w.listen_once(&[]);
    held(&w, "b");
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", "b"]);
    assert_eq!(code, 0, "{out}{err}");
    let c = w.listen_once(&[]);
    assert_eq!(c["cancelled"], 1, "{c}");
    assert_eq!(w.result("b")["error"], "cancelled-before-start");
    assert!(lines(&log(&w)).is_empty());
}

#[test]
fn a_forged_or_garbled_dependency_result_does_not_release_the_job() {
    let w = World::with_target();
    w.make_target("BUILD");
    enqueue_word(&w, "b", &["--after", "a"], "B", None);
    enqueue_word(&w, "c", &["--after", "BUILD:x"], "C", None);
    // A folder writer without the key: a well-formed result signed with
    // another key, and garbage.
    let forged = |target: &str, id: &str| {
        let mut r = json!({
            "v": 1, "jobId": id, "target": target, "ok": true, "exitCode": 0, "error": "",
            "startedAt": "2026-11-29T19:30:00Z", "finishedAt": "2026-11-29T19:30:01Z",
            "detail": "{}",
        });
        r["sig"] = json!(Signer::Foreign.sig(&result_canonical(&r)));
        r.to_string()
    };
    std::fs::write(w.result_path("a"), forged("PC", "a")).unwrap();
    let theirs = w.root.join("BUILD/results/x.json");
    std::fs::write(&theirs, "{ not a result").unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["done"].clone(), c["failed"].clone()),
        (json!(0), json!(0)),
        "{c}"
    );
    held(&w, "b");
    held(&w, "c");
    assert!(lines(&log(&w)).is_empty());
    // Another target's folder is only read: its garbage stays where it is.
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "{ not a result");
    // The genuine result replaces the forged one once A really runs.
    enqueue_word(&w, "a", &[], "A", None);
    w.listen_once(&[]);
    assert_eq!(lines(&log(&w)), ["A", "B"]);
}

#[test]
fn a_rejected_dependency_fails_the_job() {
    let w = World::with_target();
    // A job file too old to run: its listener refuses it as stale.
    w.write_job(
        "PC",
        "a",
        "PC",
        &ts_offset(-30 * 86400),
        &appends(&log(&w), "A"),
    );
    enqueue_word(&w, "b", &["--after", "a"], "B", None);
    w.listen_once(&[]);
    assert_eq!(w.reason("a.json")["verdict"], "stale");
    assert!(lines(&log(&w)).is_empty());
    assert_eq!(
        w.detail("b")["dependency"],
        json!({"target": "PC", "jobId": "a", "ended": "rejected (stale)"})
    );
}

#[test]
fn a_forged_rejection_never_releases_an_after_any_job() {
    let w = World::with_target();
    w.make_target("BUILD");
    enqueue_word(&w, "b", &["--after", "BUILD:x", "--after-any"], "B", None);
    w.listen_once(&[]);
    held(&w, "b");
    // A folder writer without the key files "x" as refused on BUILD, with a
    // reason of their own: BUILD's job never ran (it may still be on its way).
    let rejected = w.root.join("BUILD/archive/rejected");
    std::fs::create_dir_all(&rejected).unwrap();
    std::fs::write(rejected.join("x.json"), "{}").unwrap();
    let reason = json!({
        "verdict": "malformed", "message": "forged", "kind": "job", "target": "BUILD",
        "rejectedAt": "2026-12-02T00:00:00.000Z",
    });
    std::fs::write(rejected.join("x.json.reason.json"), reason.to_string()).unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 0, "{c}");
    assert!(lines(&log(&w)).is_empty(), "b ran on a forged rejection");
    // The most it can do is a denial: b ends unstarted, naming why.
    assert_eq!(w.result("b")["error"], "dependency-failed");
    assert_eq!(
        w.detail("b")["dependency"],
        json!({"target": "BUILD", "jobId": "x", "ended": "rejected (malformed)"})
    );
}

#[test]
fn enqueue_refuses_bad_after_values_naming_them() {
    let w = World::with_target();
    let too_many: Vec<String> = (0..65)
        .flat_map(|i| ["--after".into(), format!("j-{i}")])
        .collect();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--after".into(), "../x".into()], "\"../x\""),
        (vec!["--after".into(), "BUILD:".into()], "\"BUILD:\""),
        (vec!["--after".into(), "a/b:x".into()], "\"a/b:x\""),
        (
            vec![
                "--after".into(),
                "x".into(),
                "--after".into(),
                "PC:x".into(),
            ],
            "PC:x",
        ),
        (
            vec![
                "--job-id".into(),
                "me".into(),
                "--after".into(),
                "me".into(),
            ],
            "itself",
        ),
        (too_many, "at most 64"),
    ];
    for (extra, named) in cases {
        let mut args = vec!["enqueue", "--target", "PC"];
        args.extend(extra.iter().map(String::as_str));
        args.extend(["--", "true"]);
        let (code, out, err) = w.run(&args);
        assert_eq!(code, 64, "{extra:?}: {out}{err}");
        assert!(err.contains("VALIDATION_ERROR"), "{err}");
        assert!(err.contains(named), "{extra:?}: {err}");
    }
    // --after-any means nothing alone: a usage error.
    let (code, _, err) = w.run(&["enqueue", "--target", "PC", "--after-any", "--", "true"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--after"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
    // With --batch there is no program to forget the `--` before: no hint
    // says so.
    let (code, out, _) = w.run(&[
        "--json",
        "enqueue",
        "--batch",
        "-",
        "--target",
        "PC",
        "--after-any",
    ]);
    assert_eq!(code, 64, "{out}");
    assert!(out.contains("--after"), "{out}");
    assert!(!out.contains("come after `--`"), "{out}");
}

#[test]
fn after_names_a_job_as_every_command_does_and_an_unknown_target_is_not_found() {
    let w = World::with_target();
    let first = w.enqueue(&[], &kit(&["append", p(&log(&w)), "A"]));
    let by_last = w.enqueue(&["--after", "last"], &kit(&["append", p(&log(&w)), "B"]));
    assert_eq!(signed_after(&w, &by_last), [format!("PC:{first}")]);
    // `last` is now `by_last`; a unique prefix names `first`.
    let by_prefix = w.enqueue(&["--after", &first[..first.len() - 3]], &kit(&[]));
    assert_eq!(signed_after(&w, &by_prefix), [format!("PC:{first}")]);
    // An id nothing knows yet is taken as it is: sync may bring it later.
    let later = w.enqueue(&["--after", "PC:not-here-yet"], &kit(&[]));
    assert_eq!(signed_after(&w, &later), ["PC:not-here-yet"]);
    // A target no folder or fleet list knows is a typo, not a wait.
    let before = files(&w.root);
    let (code, out, err) = w.run(&[
        "enqueue", "--target", "PC", "--after", "NOPE:x", "--", "true",
    ]);
    assert_eq!(code, 66, "{out}{err}");
    assert!(
        err.contains("NOT_FOUND") && err.contains("--after NOPE:x"),
        "{err}"
    );
    assert_eq!(files(&w.root), before, "a refused enqueue wrote something");
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 3, "{c}");
    assert_eq!(lines(&log(&w)), ["A", "B"]);
    held(&w, &later);
}

#[test]
fn a_listener_refuses_a_spec_with_a_bad_dependency() {
    let w = World::with_target();
    let bad = [
        ("self", json!([{"target": "pc", "jobId": "self"}])),
        (
            "twice",
            json!([{"target": "PC", "jobId": "x"}, {"target": "PC", "jobId": "x"}]),
        ),
        ("badid", json!([{"target": "PC", "jobId": "../x"}])),
        ("extra", json!([{"target": "PC", "jobId": "x", "ok": true}])),
    ];
    for (id, after) in &bad {
        let mut spec = appends(&log(&w), id);
        spec["after"] = after.clone();
        w.write_job("PC", id, "PC", &now_text(), &spec);
    }
    let c = w.listen_once(&[]);
    assert_eq!(c["rejected"], bad.len(), "{c}");
    for (id, _) in &bad {
        assert_eq!(
            w.reason(&format!("{id}.json"))["verdict"],
            "unsupported-spec",
            "{id}"
        );
    }
    assert!(lines(&log(&w)).is_empty());
}

/// Sets `p`'s modification time to `days` days ago.
fn age(p: &Path, days: u64) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(days * 86400))
        .unwrap();
}

#[test]
fn sweep_keeps_the_result_a_queued_job_waits_for() {
    let w = World::with_target();
    w.make_target("BUILD");
    enqueue_on(&w, "BUILD", "old", &["out", "built"]);
    w.listen_once_as("BUILD", &[]);
    let build = w.root.join("BUILD");
    let kept = [
        build.join("results/old.json"),
        build.join("archive/done/old.json"),
    ];
    for f in &kept {
        age(f, 40);
    }
    for f in files(&build.join("logs")) {
        age(&build.join("logs").join(f), 40);
    }
    // A job on PC waits for it (held: the result is there, but PC's
    // listener has not looked yet).
    enqueue_word(&w, "waits", &["--after", "BUILD:old"], "W", None);
    let (code, out, err) = w.run(&["--json", "sweep", "--target", "BUILD"]);
    assert_eq!(code, 0, "{out}{err}");
    for f in &kept {
        assert!(f.exists(), "{} pruned: {out}", f.display());
    }
    // Once the waiting job ran, the history goes like any other.
    w.listen_once(&[]);
    assert_eq!(lines(&log(&w)), ["W"]);
    let (code, out, err) = w.run(&["--json", "sweep", "--target", "BUILD"]);
    assert_eq!(code, 0, "{out}{err}");
    for f in &kept {
        assert!(!f.exists(), "{} kept: {out}", f.display());
    }
}

#[test]
fn a_job_waiting_for_one_that_never_comes_goes_stale_with_age() {
    let w = World::with_target();
    // Signed two hours ago, waiting for a job never sent: held while young
    // enough, refused as stale once older than the job max age.
    let mut spec = appends(&log(&w), "B");
    spec["after"] = json!([{"target": "PC", "jobId": "never-sent"}]);
    w.write_job("PC", "b", "PC", &ts_offset(-2 * 3600), &spec);
    w.listen_once(&["--max-job-age", "1d"]);
    held(&w, "b");
    let c = w.listen_once(&["--max-job-age", "1h"]);
    assert_eq!(c["rejected"], 1, "{c}");
    assert_eq!(w.reason("b.json")["verdict"], "stale");
    assert!(lines(&log(&w)).is_empty());
}

#[test]
fn a_wait_on_a_held_job_says_what_it_waits_for() {
    let w = World::with_target();
    let _g = w.spawn_listener(&[]);
    let mut args = vec![
        "enqueue",
        "--target",
        "PC",
        "--job-id",
        "b",
        "--after",
        "never-sent",
        "--wait",
        "--wait-timeout",
        "7s",
        "--",
    ];
    let argv = kit(&["out", "never"]);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        err.contains("b is held: it waits for PC:never-sent"),
        "{err}"
    );
    held(&w, "b");
}

#[test]
fn result_of_a_held_job_says_what_it_waits_for_without_a_wait() {
    let w = World::with_target();
    enqueue_word(&w, "b", &["--after", "never-sent"], "B", None);
    w.listen_once(&[]);
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", "b"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("it is queued"), "{err}");
    assert!(
        err.contains("(held by a dependency: it waits for PC:never-sent)"),
        "{err}"
    );
    let (_, out, _) = w.run(&["--json", "result", "--target", "PC", "--job-id", "b"]);
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["waitsFor"], json!(["PC:never-sent"]), "{v}");
}

/// `jobs` jobs on PC, each waiting for `deps` jobs that never come.
fn held_jobs(w: &World, jobs: usize, deps: usize) {
    for i in 0..jobs {
        let after: Vec<Value> = (0..deps)
            .map(|d| json!({"target": "PC", "jobId": format!("never-{i}-{d}")}))
            .collect();
        let spec = json!({"argv": kit(&[]), "after": after});
        w.write_job("PC", &format!("held-{i:03}"), "PC", &now_text(), &spec);
    }
}

/// A quiet listener (`--json`: no line per job), polling every 100 ms.
fn quiet_listener(w: &World) -> ListenerGuard {
    let hb = w.pc().join("listener.json");
    let g = ListenerGuard::spawn(
        w.bg_cmd()
            .args(["--json", "listen", "--poll-interval", "100ms"]),
    );
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

#[cfg(target_os = "linux")]
#[test]
fn an_idle_listener_beside_held_jobs_costs_next_to_nothing_and_starts_others_at_once() {
    let w = World::with_target();
    held_jobs(&w, 100, 64);
    // Its result says the listener's first pass, which judges every held
    // job, is over; then nothing changes.
    let first_pass = w.enqueue(&[], &kit(&[]));
    let l = quiet_listener(&w);
    w.wait_result(&first_pass, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_seconds(l.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_seconds(l.pid()) - before;
    assert!(
        used < 0.4,
        "an idle listener used {used:.2} s of CPU in 3 s (1 to 1.8 s when each pass judged every dependency again)"
    );
    // An unrelated job does not wait for the held ones to be judged again.
    let started = std::time::Instant::now();
    let id = w.enqueue(&[], &kit(&[]));
    w.wait_result(&id, Duration::from_secs(20));
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(1500),
        "an unrelated job took {took:?}"
    );
    for i in 0..100 {
        held(&w, &format!("held-{i:03}"));
    }
}

#[test]
fn a_running_listener_starts_a_held_job_once_its_dependency_ends_here_or_on_another_target() {
    let w = World::with_target();
    w.make_target("BUILD");
    let log_file = log(&w);
    // Under Wine each dependency looked up costs milliseconds of file
    // calls, so the first judgement of 20 × 64 outlasts the waits below:
    // fewer held beside them there.
    held_jobs(&w, if cfg!(windows) { 2 } else { 20 }, 64);
    enqueue_word(&w, "tests", &["--after", "BUILD:build-1"], "TESTS", None);
    enqueue_word(&w, "deploy", &["--after", "local-1"], "DEPLOY", None);
    let l = quiet_listener(&w);
    std::thread::sleep(Duration::from_millis(800));
    held(&w, "tests");
    held(&w, "deploy");
    // Another target's listener runs the job waited for there.
    enqueue_on(&w, "BUILD", "build-1", &["append", p(&log_file), "BUILD"]);
    w.listen_once_as("BUILD", &[]);
    w.wait_result("tests", Duration::from_secs(10));
    // And this listener runs the one waited for here.
    enqueue_word(&w, "local-1", &[], "LOCAL", None);
    w.wait_result("deploy", Duration::from_secs(10));
    assert_eq!(lines(&log_file), ["BUILD", "TESTS", "LOCAL", "DEPLOY"]);
    drop(l);
}
