//! Fan-out: `enqueue --target A,B` (or `all`) publishes one job id to each
//! target, each copy signed for its target; `result` and `cancel` over a
//! target list answer one line per target and exit with the worst status.

use std::time::Duration;

use serde_json::Value;

use crate::util::*;

/// Starts a loop listener as `machine` and waits for its heartbeat.
fn listener_as(w: &World, machine: &str) -> ListenerGuard {
    let hb = w.root.join(machine).join("listener.json");
    let g = ListenerGuard::spawn(w.bg_cmd_as(machine).args([
        "listen",
        "--poll-interval",
        "100ms",
        "--settle",
        "2s",
    ]));
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

/// The job file for `id` in `target`'s inbox, parsed.
fn queued(w: &World, target: &str, id: &str) -> Value {
    let path = w.root.join(target).join("inbox").join(format!("{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn json(out: &str) -> Value {
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

#[test]
fn fan_out_runs_the_same_id_on_both_targets_and_result_combines() {
    let w = World::new();
    w.make_target("LAPTOP");
    let _pc = w.spawn_listener(&[]);
    let _laptop = listener_as(&w, "LAPTOP");
    let (code, out, err) = w.run(&["enqueue", "--target", "PC,laptop", "--", &kit(&[])[0]]);
    assert_eq!(code, 0, "{out}{err}");
    let id = out.trim();
    assert_eq!(out.lines().count(), 1, "the id is printed once: {out}");

    let (code, out, err) = w.run(&[
        "--json",
        "result",
        "--target",
        "PC,LAPTOP",
        "--job-id",
        id,
        "--wait",
        "--wait-timeout",
        "20s",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let all = json(&out);
    let targets: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["target"].as_str().unwrap())
        .collect();
    assert_eq!(targets, ["PC", "LAPTOP"], "in the order given: {out}");
    for r in all.as_array().unwrap() {
        assert_eq!(r["jobId"], id);
        assert_eq!(r["outcome"], "done", "{out}");
        assert_eq!(r["verified"], true);
    }
    // Each copy was signed for its own target.
    for target in ["PC", "LAPTOP"] {
        let done = w
            .root
            .join(target)
            .join("archive/done")
            .join(format!("{id}.json"));
        let job: Value = serde_json::from_str(&std::fs::read_to_string(done).unwrap()).unwrap();
        assert_eq!(job["target"], target);
    }
    let (code, out, _) = w.run(&["result", "--target", "PC,LAPTOP", "--job-id", id]);
    assert_eq!(code, 0);
    assert_eq!(out.lines().count(), 2, "one line per target: {out}");
    assert!(
        out.lines().nth(1).unwrap().contains("on LAPTOP: done"),
        "{out}"
    );
}

#[test]
fn fan_out_wait_says_which_target_never_answered_and_exits_with_the_worst() {
    let w = World::new();
    w.make_target("LAPTOP");
    let _pc = w.spawn_listener(&[]);
    // PC's copy fails with 3; LAPTOP has no listener, so its copy never
    // finishes: unfinished (124) is worse than a job's own failure.
    let (code, out, err) = output_within(
        w.cmd()
            .args([
                "enqueue",
                "--target",
                "PC,LAPTOP",
                "--wait",
                "--wait-timeout",
                "3s",
                "--",
            ])
            .args(kit(&["exit", "3"])),
        Duration::from_secs(30),
    );
    assert_eq!(code, 124, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "the id, then one line per target: {out}");
    assert!(lines[1].contains("on PC: failed (exit 3)"), "{out}");
    assert!(lines[2].starts_with("LAPTOP: "), "{out}");
    assert!(
        lines[2].contains("no listener has ever run for LAPTOP"),
        "{out}"
    );

    let id = lines[0];
    let (code, out, err) = w.run(&[
        "--json",
        "result",
        "--target",
        "LAPTOP,PC",
        "--job-id",
        id,
        "--wait",
        "--wait-timeout",
        "1s",
    ]);
    assert_eq!(code, 124, "{out}{err}");
    let all = json(&out);
    assert_eq!(all[0]["target"], "LAPTOP");
    assert_eq!(all[0]["state"], "queued");
    assert_eq!(all[0]["timedOut"], true);
    assert!(
        all[0]["listener"].as_str().unwrap().contains("LAPTOP"),
        "{out}"
    );
    assert_eq!(all[1]["exitCode"], 3);
}

#[test]
fn result_over_a_list_ranks_not_found_above_unfinished() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let id = w.enqueue(&["--job-id", "only-on-pc"], &kit(&[]));
    let (code, out, _) = w.run(&["result", "--target", "PC,LAPTOP", "--job-id", &id]);
    assert_eq!(code, 66, "not found on LAPTOP outranks queued on PC: {out}");
    assert!(out.contains("queued"), "{out}");
    assert!(out.contains("no job only-on-pc on LAPTOP"), "{out}");
}

#[test]
fn target_all_publishes_to_every_target_folder() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    w.make_target("mac");
    let (code, out, err) = w.run(&[
        "--json",
        "enqueue",
        "--target",
        "all",
        "--label",
        "everywhere",
        "--",
        "x",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["targets"], serde_json::json!(["LAPTOP", "mac", "PC"]));
    let id = v["jobId"].as_str().unwrap();
    for target in ["LAPTOP", "mac", "PC"] {
        let job = queued(&w, target, id);
        assert_eq!(job["target"], target);
        assert_eq!(job["jobId"], id);
    }
}

// Unix only: Windows (and Wine) takes `pc` for `PC`, so no variant is made.
#[cfg(unix)]
#[test]
fn target_all_over_folders_that_differ_only_in_case_publishes_nowhere() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    // A second spelling of PC, as a folder writer (or a careless hand) makes it.
    w.make_target("pc");
    let before = files(&w.root);
    let (code, out, err) = w.run(&["enqueue", "--target", "all", "--", "x"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("CONFIG") && err.contains("PC, pc"), "{err}");
    assert_eq!(files(&w.root), before, "a copy went somewhere");
}

#[test]
fn cancel_over_a_list_writes_a_marker_for_each_copy() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let (code, out, _) = w.run(&["enqueue", "--target", "PC,LAPTOP", "--", "x"]);
    assert_eq!(code, 0);
    let id = out.trim();
    let (code, out, err) = w.run(&["--json", "cancel", "--target", "PC,LAPTOP", "--job-id", id]);
    assert_eq!(code, 0, "{out}{err}");
    let all = json(&out);
    for (i, target) in ["PC", "LAPTOP"].iter().enumerate() {
        assert_eq!(all[i]["target"], *target);
        assert_eq!(all[i]["status"], "requested", "{out}");
        assert!(
            w.root
                .join(target)
                .join("cancel")
                .join(format!("{id}.json"))
                .exists()
        );
    }
    // PC's listener honours its marker; LAPTOP's copy waits for its own.
    w.listen_once(&[]);
    let (code, out, _) = w.run(&["result", "--target", "PC,LAPTOP", "--job-id", id]);
    assert_eq!(code, 124, "LAPTOP's copy is still queued: {out}");
    assert!(out.contains("on PC: cancelled-before-start"), "{out}");

    let (code, _, err) = w.run(&["cancel", "--target", "PC,LAPTOP", "--job-id", id, "--wait"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--wait takes one target"), "{err}");
}

#[test]
fn fan_out_checks_every_target_before_publishing_to_any() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    // The id is taken on LAPTOP: PC must not get a copy either.
    let (code, _, _) = w.run(&[
        "enqueue", "--target", "LAPTOP", "--job-id", "taken", "--", "x",
    ]);
    assert_eq!(code, 0);
    let (code, _, err) = w.run(&[
        "enqueue",
        "--target",
        "PC,LAPTOP",
        "--job-id",
        "taken",
        "--",
        "x",
    ]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("already queued for LAPTOP"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());

    let (code, _, err) = w.run(&["enqueue", "--target", "PC,nowhere", "--", "x"]);
    assert_eq!(code, 66, "{err}");
    assert!(err.contains("unknown target \"nowhere\""), "{err}");
    let (code, _, err) = w.run(&["enqueue", "--target", "PC,pc", "--", "x"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("names PC twice"), "{err}");
    let (code, _, err) = w.run(&["enqueue", "--target", "PC,", "--", "x"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("empty name"), "{err}");
    // `all` means every target, even inside a list where a folder has
    // that name: never the folder.
    std::fs::create_dir_all(w.root.join("all").join("inbox")).unwrap();
    let (code, _, err) = w.run(&["enqueue", "--target", "PC,all", "--", "x"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("`all` names every target"), "{err}");
    assert!(files(&w.root.join("all").join("inbox")).is_empty());
    let (code, _, err) = w.run(&[
        "enqueue",
        "--target",
        "PC,LAPTOP",
        "--interrupt",
        "last",
        "--",
        "x",
    ]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--interrupt takes one target"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
}

// A file where LAPTOP's inbox belongs is refused before PC gets a copy.
#[test]
fn fan_out_to_a_target_whose_inbox_is_a_file_publishes_nowhere() {
    let w = World::with_target();
    std::fs::create_dir_all(w.root.join("LAPTOP")).unwrap();
    std::fs::write(w.root.join("LAPTOP").join("inbox"), "not a folder").unwrap();
    let (code, _, err) = w.run(&["enqueue", "--target", "PC,LAPTOP", "--", "x"]);
    assert_eq!(code, 77, "{err}");
    assert!(err.contains("inbox"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
}

// `all` is every folder this machine sees, which a folder writer can add
// to: a target whose inbox is a file (or, on Unix, a link) is passed over
// and named, and every sound target gets its copy.
#[test]
fn target_all_reaches_every_sound_target_and_names_each_unsound_one() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    std::fs::create_dir_all(w.root.join("ZZZ")).unwrap();
    std::fs::write(w.root.join("ZZZ").join("inbox"), "not a folder").unwrap();
    let elsewhere = scratch(&w, "elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    #[cfg(unix)]
    let unsound = {
        std::fs::create_dir_all(w.root.join("YYY")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, w.root.join("YYY").join("inbox")).unwrap();
        vec!["YYY", "ZZZ"]
    };
    #[cfg(not(unix))]
    let unsound = vec!["ZZZ"];
    let (code, out, err) = w.run(&["enqueue", "--target", "all", "--", "x"]);
    assert_eq!(code, 77, "an unsound target ranks as its error: {out}{err}");
    let id = out.trim();
    assert_eq!(out.lines().count(), 1, "the id alone on stdout: {out}");
    for target in ["LAPTOP", "PC"] {
        assert_eq!(queued(&w, target, id)["target"], target);
    }
    for target in &unsound {
        assert!(
            err.contains(&format!("{target}: ")) && err.contains("no copy was sent there"),
            "{target} is named: {err}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(w.root.join("ZZZ").join("inbox")).unwrap(),
        "not a folder"
    );
    assert!(files(&elsewhere).is_empty(), "written through the link");

    let (code, out, err) = w.run(&["--json", "enqueue", "--target", "all", "--", "x"]);
    assert_eq!(code, 77, "{out}{err}");
    let v = json(&out);
    assert_eq!(v["targets"], serde_json::json!(["LAPTOP", "PC"]), "{v}");
    let over: Vec<&str> = v["passedOver"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            assert_eq!(a["error"]["code"], "FORBIDDEN", "{a}");
            a["target"].as_str().unwrap()
        })
        .collect();
    assert_eq!(over, unsound, "{v}");
    assert!(queued(&w, "PC", v["jobId"].as_str().unwrap()).is_object());

    // Waiting: one answer per target in order, the worst status.
    let (code, out, err) = w.run(&[
        "--json",
        "enqueue",
        "--target",
        "all",
        "--wait",
        "--wait-timeout",
        "1s",
        "--",
        "x",
    ]);
    assert_eq!(code, 77, "{out}{err}");
    let v = json(&out);
    let each: Vec<(&str, &str)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["target"].as_str().unwrap(),
                a["state"].as_str().or(a["error"]["code"].as_str()).unwrap(),
            )
        })
        .collect();
    let mut want = vec![("LAPTOP", "queued"), ("PC", "queued")];
    want.extend(unsound.iter().map(|t| (*t, "FORBIDDEN")));
    assert_eq!(each, want, "{v}");

    // No sound target at all: nothing is sent, and the error names each.
    let w = World::new();
    std::fs::create_dir_all(w.root.join("ZZZ")).unwrap();
    std::fs::write(w.root.join("ZZZ").join("inbox"), "not a folder").unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "all", "--", "x"]);
    assert_eq!(code, 77, "{out}{err}");
    assert!(out.is_empty() && err.contains("ZZZ: "), "{out}{err}");
}

// `all` always names every target, so a listener for a machine of that
// name would serve a folder no sender can address: it is refused before
// anything is made.
#[test]
fn a_machine_named_all_cannot_listen_since_no_target_names_it() {
    let w = World::new();
    for name in ["all", "ALL"] {
        let (code, out, err) = output(w.cmd_as(name).args(["listen", "--once"]));
        assert_eq!(code, 78, "{name}: {out}{err}");
        assert!(
            err.contains(&format!("{name:?}")) && err.contains("--target all"),
            "{err}"
        );
        assert!(files(&w.root).is_empty(), "{name}: a folder was made");
    }
}

#[test]
fn logs_refuses_a_target_list() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let (code, _, err) = w.run(&["logs", "--target", "PC,LAPTOP", "--job-id", "x"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("logs reads one target's output"), "{err}");
}

/// `enqueue --target TARGETS EXTRA… -- jobkit STEPS…`; returns the id.
fn enqueue_to(w: &World, targets: &str, extra: &[&str], steps: &[&str]) -> String {
    let mut args = vec!["enqueue", "--target", targets];
    args.extend_from_slice(extra);
    args.push("--");
    let argv = kit(steps);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
    out.trim().to_string()
}

/// The signed `after` list of `id` queued for `target`.
fn queued_after(w: &World, target: &str, id: &str) -> Value {
    let job = queued(w, target, id);
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    spec["after"].clone()
}

fn held(w: &World, target: &str, id: &str) {
    let t = w.root.join(target);
    assert!(
        t.join("inbox").join(format!("{id}.json")).exists(),
        "{target}"
    );
    assert!(
        !t.join("results").join(format!("{id}.json")).exists(),
        "{target}"
    );
}

// A fan-out refused any --after before; a named target means one job for
// every copy.
#[test]
fn fan_out_after_a_named_job_makes_every_copy_wait_for_that_one_job() {
    let w = World::new();
    for t in ["BUILD", "A", "B"] {
        w.make_target(t);
    }
    let log = w.dir.path().join("ran.log");
    let build = enqueue_to(&w, "BUILD", &[], &["append", p(&log), "BUILD"]);
    let after = format!("BUILD:{build}");
    let tests = enqueue_to(
        &w,
        "A,B",
        &["--after", &after],
        &["append", p(&log), "TESTS"],
    );
    for t in ["A", "B"] {
        let want = serde_json::json!([{"target": "BUILD", "jobId": build}]);
        assert_eq!(queued_after(&w, t, &tests), want, "{t}");
    }
    for t in ["A", "B"] {
        w.listen_once_as(t, &[]);
        held(&w, t, &tests);
    }
    assert!(lines(&log).is_empty());
    w.listen_once_as("BUILD", &[]);
    for t in ["A", "B"] {
        assert_eq!(w.listen_once_as(t, &[])["done"], 1, "{t}");
    }
    assert_eq!(lines(&log), ["BUILD", "TESTS", "TESTS"]);
    let (code, out, err) = w.run(&["result", "--target", "A,B", "--job-id", &tests, "--wait"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.matches(": done").count(), 2, "{out}");
}

#[test]
fn fan_out_after_a_bare_id_waits_for_that_id_on_each_copys_own_target() {
    let w = World::new();
    w.make_target("A");
    w.make_target("B");
    let log = w.dir.path().join("ran.log");
    let prep = ["--job-id", "prep"];
    enqueue_to(&w, "A", &prep, &["append", p(&log), "PREP-A"]);
    enqueue_to(&w, "B", &prep, &["append", p(&log), "PREP-B", "exit", "3"]);
    let tests = enqueue_to(
        &w,
        "A,B",
        &["--after", "prep"],
        &["append", p(&log), "TESTS"],
    );
    for t in ["A", "B"] {
        let want = serde_json::json!([{"target": t, "jobId": "prep"}]);
        assert_eq!(queued_after(&w, t, &tests), want, "{t}");
    }
    // A's prep succeeds, so A's tests run; B's fails, so B's end unstarted.
    assert_eq!(w.listen_once_as("A", &[])["done"], 2);
    assert_eq!(w.listen_once_as("B", &[])["failed"], 2);
    assert_eq!(lines(&log), ["PREP-A", "TESTS", "PREP-B"]);
    let (code, out, err) = w.run(&["result", "--target", "A,B", "--job-id", &tests]);
    assert_eq!(code, 1, "the worst: B's copy did not run: {out}{err}");
    assert!(out.lines().next().unwrap().contains("on A: done"), "{out}");
    assert!(out.contains("on B: dependency-failed"), "{out}");
    let (_, out, _) = w.run(&["--json", "result", "--target", "B", "--job-id", &tests]);
    assert_eq!(
        json(&out)["detail"]["dependency"],
        serde_json::json!({"target": "B", "jobId": "prep", "ended": "failed (exit 3)"}),
        "{out}"
    );

    // Bound per copy, a copy waiting for itself is refused before any is
    // published.
    let (code, _, err) = w.run(&[
        "enqueue", "--target", "B,A", "--job-id", "x", "--after", "A:x", "--", "true",
    ]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("--after A:x: a job cannot wait for itself"),
        "{err}"
    );
    for t in ["A", "B"] {
        assert!(!w.root.join(t).join("inbox/x.json").exists(), "{t}");
    }
}

#[test]
fn last_names_a_fanned_out_job_on_each_of_its_targets() {
    let w = World::new();
    for t in ["PC", "A", "B"] {
        w.make_target(t);
    }
    let (code, out, err) = w.run(&["enqueue", "--target", "A,B", "--", &kit(&[])[0]]);
    assert_eq!(code, 0, "{out}{err}");
    let id = out.trim().to_string();
    let (code, out, err) = w.run(&["cancel", "--target", "A,B", "--job-id", "last"]);
    assert_eq!(code, 0, "{out}{err}");
    for t in ["A", "B"] {
        let marker = w.root.join(t).join("cancel").join(format!("{id}.json"));
        assert!(marker.is_file(), "no marker on {t}: {out}{err}");
    }
    // Another job enqueued since: `last` is that one, on its own target.
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", &kit(&[])[0]]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = w.run(&["result", "--target", "A", "--job-id", "last"]);
    assert_eq!(code, 66, "{out}{err}");
    assert!(err.contains("went to PC, not A"), "{err}");
}
