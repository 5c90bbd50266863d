//! `enqueue --batch`: one job per JSON line, every line checked before any
//! is published, the ids printed in the order of the lines.

use std::path::Path;

use serde_json::Value;

use crate::util::*;

/// Writes `lines` to a batch file in the world and returns its path.
fn batch_file(w: &World, lines: &[String]) -> String {
    let path = w.dir.path().join(format!("{}.jsonl", uid("batch")));
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

/// A batch line running `jobkit STEPS…` with `extra` fields.
fn line(steps: &[&str], extra: Value) -> String {
    let mut v = kit_spec(steps);
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

fn queued_job(w: &World, target: &str, id: &str) -> Value {
    let p = w.root.join(target).join("inbox").join(format!("{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn batch_prints_ids_in_line_order_and_every_job_runs() {
    let w = World::with_target();
    let file = batch_file(
        &w,
        &[
            line(&["out", "one"], serde_json::json!({"label": "one"})),
            String::new(),
            line(
                &["out", "two"],
                serde_json::json!({"label": "two", "priority": "high"}),
            ),
            "   ".to_string(),
            line(
                &["exit", "4"],
                serde_json::json!({"label": "three", "timeout": "1h"}),
            ),
        ],
    );
    let (code, out, err) = w.run(&[
        "--durability",
        "full",
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 3, "{out}");
    for (id, label) in ids.iter().zip(["one", "two", "three"]) {
        let job = queued_job(&w, "PC", id);
        let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
        assert_eq!(spec["label"], label, "ids follow the lines: {out}");
    }
    let counters = w.listen_once(&[]);
    assert_eq!(
        (&counters["done"], &counters["failed"]),
        (&2.into(), &1.into()),
        "{counters}"
    );
    assert_eq!(w.result(ids[0])["exitCode"], 0);
    assert_eq!(w.result(ids[2])["exitCode"], 4);
}

#[test]
fn a_bad_line_publishes_nothing_and_is_named() {
    let w = World::with_target();
    let good = line(&[], serde_json::json!({}));
    for (bad, words) in [
        (
            line(&[], serde_json::json!({"timeout": "soon"})),
            vec!["line 2", "\"timeout\""],
        ),
        (
            line(&[], serde_json::json!({"colour": "red"})),
            vec!["line 2", "unknown field \"colour\""],
        ),
        (
            line(&[], serde_json::json!({"priority": "urgent"})),
            vec!["line 2", "\"priority\""],
        ),
        (
            line(&[], serde_json::json!({"env": {"A": 1}})),
            vec!["line 2", "\"env\""],
        ),
        (
            line(&[], serde_json::json!({"target": "nowhere"})),
            vec!["line 2", "unknown target"],
        ),
        ("[1, 2]".to_string(), vec!["line 2", "not a JSON object"]),
        (
            r#"{"label": "no program"}"#.to_string(),
            vec!["line 2", "no program"],
        ),
    ] {
        let file = batch_file(&w, &[good.clone(), bad, good.clone()]);
        let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
        assert!(code == 64 || code == 66, "{code} {out}{err}");
        assert!(out.is_empty(), "{out}");
        for word in words {
            assert!(err.contains(word), "{word:?} missing: {err}");
        }
        assert!(
            files(&w.pc().join("inbox")).is_empty(),
            "nothing published: {err}"
        );
    }
}

#[test]
fn batch_from_stdin() {
    let w = World::with_target();
    let text = format!(
        "{}\n{}\n",
        line(&[], serde_json::json!({"jobId": "from-stdin-1"})),
        line(
            &[],
            serde_json::json!({"jobId": "from-stdin-2", "target": "pc"})
        )
    );
    let (code, out, err) = output(
        w.cmd()
            .args(["--json", "enqueue", "--batch", "-", "--target", "PC"])
            .write_stdin(text),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["jobs"][0]["jobId"], "from-stdin-1");
    assert_eq!(v["jobs"][0]["line"], 1);
    assert_eq!(v["jobs"][1]["jobId"], "from-stdin-2");
    assert!(w.inbox("from-stdin-1").exists() && w.inbox("from-stdin-2").exists());
}

#[test]
fn batch_flags_are_defaults_and_a_line_may_fan_out() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let file = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({})),
            line(
                &[],
                serde_json::json!({"target": "PC,LAPTOP", "label": "own"}),
            ),
        ],
    );
    let (code, out, err) = w.run(&[
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
        "--label",
        "default",
        "--priority",
        "high",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let ids: Vec<&str> = out.lines().collect();
    let spec = |target: &str, id: &str| -> Value {
        serde_json::from_str(queued_job(&w, target, id)["spec"].as_str().unwrap()).unwrap()
    };
    assert_eq!(spec("PC", ids[0])["label"], "default");
    assert_eq!(spec("PC", ids[0])["priority"], "high");
    assert_eq!(spec("LAPTOP", ids[1])["label"], "own");
    assert_eq!(queued_job(&w, "LAPTOP", ids[1])["target"], "LAPTOP");
    assert_eq!(queued_job(&w, "PC", ids[1])["target"], "PC");
}

#[test]
fn batch_refuses_flags_that_name_one_job_and_repeated_ids() {
    let w = World::with_target();
    let file = batch_file(&w, &[line(&[], serde_json::json!({}))]);
    for (extra, word) in [
        (vec!["--job-id", "x"], "--job-id cannot be given"),
        (vec!["--wait"], "--wait cannot be given"),
        (vec!["--", "true"], "a program after `--` cannot be given"),
    ] {
        let mut args = vec!["enqueue", "--batch", &file, "--target", "PC"];
        args.extend(extra);
        let (code, _, err) = w.run(&args);
        assert_eq!(code, 64, "{err}");
        assert!(err.contains(word), "{err}");
    }
    let twice = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({"jobId": "same"})),
            line(&[], serde_json::json!({"jobId": "same"})),
        ],
    );
    let (code, _, err) = w.run(&["enqueue", "--batch", &twice, "--target", "PC"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("line 2: job id same is also on line 1"),
        "{err}"
    );
    let (code, _, err) = w.run(&[
        "enqueue",
        "--batch",
        &batch_file(&w, &["".into()]),
        "--target",
        "PC",
    ]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("holds no job"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
}

/// A job's signed spec, from `target`'s inbox.
fn queued_spec(w: &World, target: &str, id: &str) -> Value {
    serde_json::from_str(queued_job(w, target, id)["spec"].as_str().unwrap()).unwrap()
}

// Issue 20: a batch line's dependency was dropped, so the job could run
// before the job it must wait for.
#[test]
fn a_batch_line_with_after_waits_for_its_dependency_and_fails_with_it() {
    let w = World::with_target();
    w.make_target("BUILD");
    let log = w.dir.path().join("ran.log");
    let log = p(&log);
    let file = batch_file(
        &w,
        &[
            line(
                &["append", log, "BUILD"],
                serde_json::json!({"target": "BUILD", "jobId": "build"}),
            ),
            // High priority: without the dependency it would run first.
            line(
                &["append", log, "TESTS"],
                serde_json::json!({"jobId": "tests", "after": ["BUILD:build"], "priority": "high"}),
            ),
            line(
                &["append", log, "LINT", "exit", "3"],
                serde_json::json!({"jobId": "lint"}),
            ),
            line(
                &["append", log, "DOCS"],
                serde_json::json!({"jobId": "docs", "after": ["lint"]}),
            ),
        ],
    );
    let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        queued_spec(&w, "PC", "tests")["after"],
        serde_json::json!([{"target": "BUILD", "jobId": "build"}])
    );
    assert_eq!(
        queued_spec(&w, "PC", "docs")["after"],
        serde_json::json!([{"target": "PC", "jobId": "lint"}]),
        "a bare id is the line's own target"
    );
    // PC's listener: lint fails, so docs ends unstarted; tests is held
    // while BUILD has not built.
    let c = w.listen_once(&[]);
    assert_eq!((&c["done"], &c["failed"]), (&0.into(), &2.into()), "{c}");
    assert_eq!(lines(Path::new(log)), ["LINT"]);
    assert!(w.inbox("tests").exists() && !w.result_path("tests").exists());
    let r = w.result("docs");
    assert_eq!(r["error"], "dependency-failed", "{r}");
    assert_eq!(
        w.detail("docs")["dependency"],
        serde_json::json!({"target": "PC", "jobId": "lint", "ended": "failed (exit 3)"})
    );
    // Once BUILD's verified result is there, the tests run.
    w.listen_once_as("BUILD", &[]);
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(lines(Path::new(log)), ["LINT", "BUILD", "TESTS"]);
    assert_eq!(w.result("tests")["ok"], true);
}

#[test]
fn after_flags_are_the_default_dependency_of_a_line_without_after() {
    let w = World::with_target();
    let file = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({"jobId": "plain"})),
            line(&[], serde_json::json!({"jobId": "none", "after": []})),
            line(&[], serde_json::json!({"jobId": "own", "after": ["lint"]})),
            line(
                &[],
                serde_json::json!({"jobId": "strict", "afterAny": false}),
            ),
        ],
    );
    w.make_target("BUILD");
    let (code, out, err) = w.run(&[
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
        "--after",
        "BUILD:b-1",
        "--after-any",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let spec = |id: &str| queued_spec(&w, "PC", id);
    let build = serde_json::json!([{"target": "BUILD", "jobId": "b-1"}]);
    assert_eq!(spec("plain")["after"], build);
    assert_eq!(spec("plain")["afterAny"], true);
    assert!(spec("none").get("after").is_none(), "{}", spec("none"));
    // A line's own list comes with its own afterAny: --after-any qualifies
    // the --after jobs only.
    assert_eq!(
        spec("own")["after"],
        serde_json::json!([{"target": "PC", "jobId": "lint"}])
    );
    assert!(spec("own").get("afterAny").is_none(), "{}", spec("own"));
    assert_eq!(spec("strict")["after"], build);
    assert!(spec("strict").get("afterAny").is_none());
}

#[test]
fn a_bad_after_in_line_3_publishes_nothing_and_names_line_3() {
    let w = World::with_target();
    w.make_target("BUILD");
    let first = line(&[], serde_json::json!({"target": "BUILD", "jobId": "b"}));
    let second = line(&[], serde_json::json!({"after": ["BUILD:b"]}));
    for (bad, words) in [
        (
            serde_json::json!({"after": ["../x"]}),
            vec!["\"after\" \"../x\"", "not a valid job id"],
        ),
        (
            serde_json::json!({"after": ["a/b:x"]}),
            vec!["\"after\" \"a/b:x\"", "not a valid target name"],
        ),
        (serde_json::json!({"after": "b"}), vec!["field \"after\""]),
        (serde_json::json!({"after": [7]}), vec!["field \"after\""]),
        (
            serde_json::json!({"afterAny": "yes"}),
            vec!["field \"afterAny\""],
        ),
        (
            serde_json::json!({"afterAny": true}),
            vec!["\"afterAny\" means nothing without \"after\""],
        ),
        (
            serde_json::json!({"after": ["x", "PC:x"]}),
            vec!["\"after\" PC:x is given twice"],
        ),
        (
            serde_json::json!({"jobId": "me", "after": ["me"]}),
            vec!["\"after\" PC:me: a job cannot wait for itself"],
        ),
        (
            serde_json::json!({"after": (0..65).map(|i| format!("j-{i}")).collect::<Vec<_>>()}),
            vec!["\"after\" names 65 jobs", "at most 64"],
        ),
    ] {
        let file = batch_file(&w, &[first.clone(), second.clone(), line(&[], bad)]);
        let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
        assert_eq!(code, 64, "{out}{err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains("VALIDATION_ERROR"), "{err}");
        assert!(err.contains("line 3: "), "{err}");
        for word in words {
            assert!(err.contains(word), "{word:?} missing: {err}");
        }
        for target in ["PC", "BUILD"] {
            let inbox = w.root.join(target).join("inbox");
            assert!(files(&inbox).is_empty(), "{target} got a job: {err}");
        }
    }
}

#[test]
fn a_line_that_fans_out_binds_a_bare_after_to_each_copys_target() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    w.make_target("BUILD");
    let file = batch_file(
        &w,
        &[line(
            &[],
            serde_json::json!({"jobId": "t", "target": "PC,LAPTOP", "after": ["prep", "BUILD:b"]}),
        )],
    );
    let (code, out, err) = w.run(&["enqueue", "--batch", &file]);
    assert_eq!(code, 0, "{out}{err}");
    for target in ["PC", "LAPTOP"] {
        assert_eq!(
            queued_spec(&w, target, "t")["after"],
            serde_json::json!([
                {"target": target, "jobId": "prep"},
                {"target": "BUILD", "jobId": "b"}
            ]),
            "{target}"
        );
    }
}

#[test]
fn a_line_whose_id_was_used_already_publishes_nothing() {
    // One id that ran (its verified result is in results/), one whose job
    // file was archived while its result went missing: both are refused by
    // the folders the batch opened once, naming the line and the place.
    let w = World::with_target();
    let ran = line(&[], serde_json::json!({"jobId": "used-ran"}));
    let archived = line(&[], serde_json::json!({"jobId": "used-archived"}));
    let file = batch_file(&w, &[ran.clone(), archived.clone()]);
    let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    w.listen_once(&[]);
    std::fs::remove_file(w.pc().join("results").join("used-archived.json")).unwrap();
    let fresh = line(&[], serde_json::json!({}));
    for (n, used, place) in [(2, &ran, "results/"), (3, &archived, "archive/done/")] {
        let lines = if n == 2 {
            vec![fresh.clone(), used.clone()]
        } else {
            vec![fresh.clone(), fresh.clone(), used.clone()]
        };
        let file = batch_file(&w, &lines);
        let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
        assert_eq!(code, 64, "{out}{err}");
        assert!(out.is_empty(), "{out}");
        assert!(err.contains(&format!("line {n}")), "{err}");
        assert!(err.contains("already used") && err.contains(place), "{err}");
        // The hint names what a line has: its field, not the flag.
        assert!(err.contains("leave out \"jobId\""), "{err}");
        assert!(
            files(&w.pc().join("inbox")).is_empty(),
            "nothing published: {err}"
        );
    }
}

#[test]
fn a_line_takes_seconds_as_a_number_and_a_bad_file_is_named_where_it_is_bad() {
    let w = World::with_target();
    let file = batch_file(
        &w,
        &[line(
            &[],
            serde_json::json!({"jobId": "secs", "timeout": 90, "grace": 3}),
        )],
    );
    let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    let spec = queued_spec(&w, "PC", "secs");
    assert_eq!(
        (spec["timeoutSec"].as_f64(), spec["graceSec"].as_f64()),
        (Some(90.0), Some(3.0)),
        "{spec}"
    );
    let before = files(&w.root);
    // A byte that is not UTF-8 on line 2; a folder given as the file.
    let bad = w.dir.path().join("bad.jsonl");
    let mut bytes = format!("{}\n", line(&[], serde_json::json!({}))).into_bytes();
    bytes.extend(b"{\"argv\": [\"\xff\"]}\n");
    std::fs::write(&bad, bytes).unwrap();
    for (given, says) in [
        (bad.to_str().unwrap(), "line 2: not UTF-8"),
        (w.dir.path().to_str().unwrap(), "a folder, not a file"),
    ] {
        let (code, out, err) = w.run(&["enqueue", "--batch", given, "--target", "PC"]);
        assert_eq!(code, 64, "{out}{err}");
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(files(&w.root), before, "a refused batch wrote something");
}

/// Runs `enqueue ARGS…`, expecting `VALIDATION_ERROR` with each of `words`
/// in its message and nothing written under the root.
fn refused_publishing_nothing(w: &World, args: &[&str], words: &[&str]) {
    let before = files(&w.root);
    let (code, out, err) = w.run(args);
    assert_eq!(code, 64, "{out}{err}");
    assert!(out.is_empty(), "{out}");
    assert!(err.contains("VALIDATION_ERROR"), "{err}");
    for word in words {
        assert!(err.contains(word), "{word:?} missing: {err}");
    }
    assert_eq!(files(&w.root), before, "a refused enqueue wrote: {err}");
}

// A job file over 1 MiB was published, and every listener refuses it
// (`too-large`).
#[test]
fn a_job_over_one_mib_is_refused_from_a_line() {
    let w = World::with_target();
    let big = serde_json::json!({"argv": ["echo", "x".repeat(1_100_000)], "jobId": "big1"});
    let file = batch_file(&w, &[line(&[], serde_json::json!({})), big.to_string()]);
    refused_publishing_nothing(
        &w,
        &["enqueue", "--batch", &file, "--target", "PC"],
        &["line 2", "\"argv\"", "1048576", "too-large"],
    );
}

// Twelve values of 100 KB: each flag is fine, the job is not. Unix only:
// Windows caps a whole command line at 32,767 characters, so there no
// command line holds a job this large.
#[cfg(unix)]
#[test]
fn a_job_over_one_mib_is_refused_from_the_flags() {
    let w = World::with_target();
    let envs: Vec<String> = (0..12)
        .map(|i| format!("A{i}={}", "v".repeat(100_000)))
        .collect();
    let mut args = vec!["enqueue", "--target", "PC", "--job-id", "big2"];
    for e in &envs {
        args.extend(["--env", e.as_str()]);
    }
    args.extend(["--", "echo", "hi"]);
    refused_publishing_nothing(&w, &args, &["--env", "1048576", "too-large"]);
}

// A NUL in a line's argv or cwd was published, and the listener refuses
// the spec (`unsupported-spec`).
#[test]
fn a_nul_in_a_lines_argv_or_cwd_publishes_nothing() {
    let w = World::with_target();
    let good = line(&[], serde_json::json!({}));
    for (bad, field) in [
        (r#"{"argv":["tr\u0000ue"]}"#, "\"argv\""),
        (r#"{"argv":["true"],"cwd":"/tmp/\u0000"}"#, "\"cwd\""),
    ] {
        let file = batch_file(&w, &[good.clone(), bad.to_string()]);
        refused_publishing_nothing(
            &w,
            &["enqueue", "--batch", &file, "--target", "PC"],
            &["line 2", field, "NUL", "unsupported-spec"],
        );
    }
}

// `--interrupt` naming the job being enqueued cancelled it before it
// started.
#[test]
fn interrupt_naming_the_job_being_enqueued_is_refused() {
    let w = World::with_target();
    refused_publishing_nothing(
        &w,
        &[
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            "selfint",
            "--interrupt",
            "selfint",
            "--",
            "echo",
            "hi",
        ],
        &["--interrupt selfint", "cannot interrupt itself"],
    );
}

// Two lines waiting for each other were published, and both waited until
// they went stale.
#[test]
fn a_dependency_cycle_among_a_batchs_lines_publishes_nothing_and_names_them() {
    let w = World::with_target();
    w.make_target("BUILD");
    let file = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({"jobId": "c0"})),
            line(&[], serde_json::json!({"jobId": "c1", "after": ["c2"]})),
            line(&[], serde_json::json!({"jobId": "c2", "after": ["c1"]})),
        ],
    );
    refused_publishing_nothing(
        &w,
        &["enqueue", "--batch", &file, "--target", "PC"],
        &[
            "\"after\" makes a cycle",
            "line 2 (PC:c1) waits for line 3 (PC:c2), which waits for line 2 (PC:c1)",
        ],
    );
    // Across targets, through a third line, still within the batch.
    let file = batch_file(
        &w,
        &[
            line(
                &[],
                serde_json::json!({"jobId": "r1", "after": ["BUILD:r3"]}),
            ),
            line(&[], serde_json::json!({"jobId": "r2", "after": ["r1"]})),
            line(
                &[],
                serde_json::json!({"jobId": "r3", "target": "BUILD", "after": ["PC:r2"]}),
            ),
        ],
    );
    refused_publishing_nothing(
        &w,
        &["enqueue", "--batch", &file, "--target", "PC"],
        &[
            "cycle",
            "line 1 (PC:r1)",
            "line 3 (BUILD:r3)",
            "line 2 (PC:r2)",
        ],
    );
}

// A batch file starting with a UTF-8 byte-order mark was refused as "line
// 1: not a JSON object".
#[test]
fn a_batch_file_starting_with_a_byte_order_mark_is_read() {
    let w = World::with_target();
    let file = w.dir.path().join("bom.jsonl");
    let text = format!(
        "\u{feff}{}\r\n{}\r\n",
        line(&[], serde_json::json!({"jobId": "bom-1"})),
        line(&[], serde_json::json!({"jobId": "bom-2"}))
    );
    std::fs::write(&file, text).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--batch", p(&file), "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().collect::<Vec<_>>(), ["bom-1", "bom-2"]);
    assert!(w.inbox("bom-1").exists() && w.inbox("bom-2").exists());
}

// A key given twice in a line was taken silently, the last one winning.
#[test]
fn a_key_given_twice_in_a_line_publishes_nothing_and_is_named() {
    let w = World::with_target();
    let good = line(&[], serde_json::json!({}));
    for (bad, words) in [
        (
            r#"{"argv":["true"],"argv":["false"]}"#,
            vec!["line 2", "key \"argv\" is given twice"],
        ),
        (
            r#"{"argv":["true"],"env":{"A":"1","A":"2"}}"#,
            vec!["line 2", "key \"A\" in \"env\" is given twice"],
        ),
    ] {
        let file = batch_file(&w, &[good.clone(), bad.to_string()]);
        refused_publishing_nothing(&w, &["enqueue", "--batch", &file, "--target", "PC"], &words);
    }
}

/// Regression: every temp file of a batch was held open until the one
/// flush, so 1,020 lines failed at `ulimit -n 1024` (EMFILE), and 3,000
/// at launchd's 256.
#[cfg(unix)]
#[test]
fn a_batch_of_3000_lines_publishes_under_a_limit_of_256_open_files() {
    let w = World::with_target();
    let lines: Vec<String> = (0..3000)
        .map(|i| serde_json::json!({"argv": ["true"], "label": format!("n{i}")}).to_string())
        .collect();
    let file = batch_file(&w, &lines);
    let mut c = w.bg_cmd();
    limit_open_files(&mut c, 256).args([
        "--durability",
        "full",
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
    ]);
    let (code, out, err) = output(&mut assert_cmd::Command::from_std(c));
    assert_eq!(code, 0, "{err}");
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 3000);
    let queued = files(&w.pc().join("inbox"));
    assert_eq!(queued.len(), 3000, "only the jobs, no temp file left");
    for (i, id) in ids.iter().enumerate().step_by(499) {
        let spec: Value =
            serde_json::from_str(queued_job(&w, "PC", id)["spec"].as_str().unwrap()).unwrap();
        assert_eq!(spec["label"], format!("n{i}"), "ids follow the lines");
    }
}
