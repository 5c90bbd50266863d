//! The commands that work on an object-store root beyond the sender's
//! lane (docs/object-store.md, "Commands on a bucket"): `verify-marker`
//! judging a marker read from its key, `logs` reading a job's numbered
//! chunk objects (and `--follow` ending once the result is there and no
//! chunk follows), `sweep` removing stale markers by their LastModified
//! but never one whose job waits, `enqueue --wait` answering with the
//! result, and `enqueue`/`result --wait --follow` streaming the output
//! before it; `--job-id last` and a unique prefix naming a job;
//! `enqueue --wait` and `result` over a target list answering each copy; the sender's `enqueue --batch` (every line or nothing),
//! `--interrupt` (a running job stopped by a listener started here, the
//! one claim without a result as `running`) and `cancel` (`--wait`, over
//! a target list, the parent rule from inside a job). What the listener would write (chunks, results, markers) is
//! written here directly through the engine's client. Bad input is
//! answered by its code before the store is asked.
//!
//! The tests marked `needs an S3 engine` run against the store
//! `ci/engine-s3` starts (see tests/suite/objstore.rs); run with
//! `--ignored` but without it, they fail.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::engine::*;
use crate::util::*;

/// Writes `bytes` create-only at `name` under the engine's prefix.
fn put(e: &Engine, name: &str, bytes: &[u8]) {
    let a = e.client().create_only(&e.key(name), bytes);
    assert!(
        matches!(a, fleet_dispatch::store::objstore::Answer::Done(_)),
        "PUT {name}: {a:?}"
    );
}

/// A verified result of `id` on PC exiting `code`, whose detail says the
/// job wrote `stdout` and `stderr`.
fn result_doc(id: &str, code: i64, stdout: &str, stderr: &str) -> Value {
    let detail = json!({
        "stderrBytes": stderr.len(), "stderrTail": stderr,
        "stdoutBytes": stdout.len(), "stdoutTail": stdout,
    });
    signed_result(json!({
        "jobId": id, "target": "PC", "ok": code == 0, "exitCode": code, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": detail.to_string(),
    }))
}

fn put_result(e: &Engine, id: &str, r: &Value) {
    put(
        e,
        &format!("PC/results/{id}.json"),
        r.to_string().as_bytes(),
    );
}

/// Publishes a job `id` for PC through the binary (so PC is on the bucket).
fn enqueue(e: &Engine, w: &World, id: &str) {
    let got = lane_run(
        e,
        w,
        &["enqueue", "--target", "PC", "--job-id", id, "--", "true"],
    );
    assert_eq!(got.0, 0, "{got:?}");
}

/// Moves the job `id` from PC's inbox to `archive/done/`, as a listener
/// taking it would.
fn take(e: &Engine, id: &str) {
    let (from, to) = (
        format!("PC/inbox/{id}.json"),
        format!("PC/archive/done/{id}.json"),
    );
    put(e, &to, &lane_object(e, &from).unwrap());
    let c = e.client();
    let etag = match c.head(&e.key(&from)) {
        fleet_dispatch::store::objstore::Answer::Done(r) => r.etag.unwrap(),
        other => panic!("HEAD {from}: {other:?}"),
    };
    let a = c.delete_if_match(&e.key(&from), &etag);
    assert!(
        matches!(a, fleet_dispatch::store::objstore::Answer::Done(_)),
        "DELETE {from}: {a:?}"
    );
}

/// Waits for `child` to exit within `limit` (killed and failed otherwise):
/// its exit code, stdout (unless taken) and stderr.
fn finish(mut child: std::process::Child, limit: Duration) -> (i32, String, String) {
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let (mut out, mut err) = (String::new(), String::new());
    if let Some(mut o) = child.stdout.take() {
        o.read_to_string(&mut out).unwrap();
    }
    if let Some(mut e) = child.stderr.take() {
        e.read_to_string(&mut err).unwrap();
    }
    (status.code().unwrap_or(-1), out, err)
}

/// `fleet-dispatch args…` on the engine's bucket, started in the
/// background with its output captured.
fn spawn(e: &Engine, w: &World, args: &[&str]) -> std::process::Child {
    let mut c = lane_cmd(e, w);
    c.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    c.spawn().unwrap()
}

/// Bad input on a bucket root is answered by its code, naming what is
/// wrong, before the store is asked (the endpoint here answers nothing).
#[test]
fn bad_input_to_the_bucket_commands_is_refused_by_its_code() {
    let w = World::new();
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.args(["--root", "s3://jobs/fleet"])
            .args(args)
            .env("FLEET_DISPATCH_S3_ENDPOINT", "http://127.0.0.1:9");
        output_within(&mut c, Duration::from_secs(20))
    };
    for (args, code, named) in [
        (
            vec!["verify-marker", "PC/inbox/a.json"],
            64,
            "PC/inbox/a.json",
        ),
        (
            vec!["verify-marker", "s3://other/fleet/PC/cancel/a.json"],
            64,
            "s3://other/fleet/PC/cancel/a.json",
        ),
        (vec!["verify-marker", "a b/cancel/x.json"], 64, "a b"),
        (
            vec!["logs", "--target", "PC,B", "--job-id", "a"],
            64,
            "PC,B",
        ),
        (vec!["logs", "--target", "PC", "--job-id", "a/b"], 64, "a/b"),
        (
            vec!["cancel", "--target", "PC,B", "--job-id", "last"],
            78,
            "`last` in --after or over a target list",
        ),
        (vec!["sweep", "--max-age", "soon"], 64, "--max-age"),
        (
            vec![
                "enqueue",
                "--target",
                "PC",
                "--wait",
                "--wait-timeout",
                "soon",
                "--",
                "true",
            ],
            64,
            "--wait-timeout",
        ),
    ] {
        let (got, out, err) = run(&args);
        assert_eq!(got, code, "{args:?}: {out}{err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_verify_marker_judges_a_marker_read_from_its_key() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("vm");
    enqueue(&e, &w, &id);
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 0, "{got:?}");
    let rel = format!("PC/cancel/{id}.json");
    let full = format!("{}{rel}", lane_root(&e));
    for name in [&rel, &full] {
        let got = lane_run(&e, &w, &["verify-marker", name]);
        assert_eq!(got.0, 0, "{got:?}");
        assert!(got.1.contains("valid") && got.1.contains(&id), "{}", got.1);
    }
    let got = lane_run(&e, &w, &["--json", "verify-marker", &rel]);
    let doc: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(
        (doc["verdict"].as_str(), doc["file"].as_str()),
        (Some("valid"), Some(full.as_str()))
    );
    // Checked against another target: not valid for it.
    let got = lane_run(&e, &w, &["verify-marker", &rel, "--target", "OTHER"]);
    assert_eq!(got.0, 1, "{got:?}");
    // One signed with another key: exit 1, with the verdict.
    let forged = lane_id("vm");
    let doc = marker_doc(&forged, "PC", &now_text(), "me", Signer::Foreign);
    let key = format!("PC/cancel/{forged}.json");
    put(&e, &key, doc.to_string().as_bytes());
    let got = lane_run(&e, &w, &["--json", "verify-marker", &key]);
    assert_eq!(got.0, 1, "{got:?}");
    let doc: Value = serde_json::from_str(&got.1).unwrap();
    assert_ne!(doc["verdict"], json!("valid"), "{doc}");
    // None there: NOT_FOUND naming the key.
    let missing = format!("PC/cancel/{}.json", lane_id("none"));
    let got = lane_run(&e, &w, &["verify-marker", &missing]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(
        got.2.contains(&format!("{}{missing}", lane_root(&e))),
        "{}",
        got.2
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_logs_reads_the_chunks_in_order_and_holds_them_against_the_result() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("logs");
    put(&e, &format!("PC/logs/{id}.stdout.0"), b"hello ");
    put(&e, &format!("PC/logs/{id}.stdout.1"), b"world\n");
    put(&e, &format!("PC/logs/{id}.stderr.0"), b"warn\n");
    // Not the next chunk (1 is missing on stderr): never read.
    put(&e, &format!("PC/logs/{id}.stderr.2"), b"stray\n");
    // Running (no result yet): what is there so far.
    let got = lane_run(&e, &w, &["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(got, (0, "hello world\n".into(), "warn\n".into()));
    put_result(&e, &id, &result_doc(&id, 0, "hello world\n", "warn\n"));
    let got = lane_run(&e, &w, &["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(got, (0, "hello world\n".into(), "warn\n".into()));
    let got = lane_run(
        &e,
        &w,
        &[
            "logs", "--target", "PC", "--job-id", &id, "--stream", "stderr",
        ],
    );
    assert_eq!(got, (0, String::new(), "warn\n".into()));
    let got = lane_run(
        &e,
        &w,
        &["--json", "logs", "--target", "PC", "--job-id", &id],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let doc: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(
        (&doc["stdout"], &doc["stderr"], &doc["state"]),
        (&json!("hello world\n"), &json!("warn\n"), &json!("done"))
    );
    // Chunks that are not what the result says the job wrote: refused.
    let other = lane_id("logs");
    put(&e, &format!("PC/logs/{other}.stdout.0"), b"planted\n");
    put_result(&e, &other, &result_doc(&other, 0, "ok\n", ""));
    let got = lane_run(&e, &w, &["logs", "--target", "PC", "--job-id", &other]);
    assert_eq!(got.0, 77, "{got:?}");
    assert!(got.1.is_empty(), "{}", got.1);
    assert!(
        got.2.contains("FORBIDDEN") && got.2.contains(&format!("PC/logs/{other}.stdout.0")),
        "{}",
        got.2
    );
    // Nothing of the job at all: NOT_FOUND naming the first chunk's key.
    let none = lane_id("none");
    let got = lane_run(&e, &w, &["logs", "--target", "PC", "--job-id", &none]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(
        got.2
            .contains(&format!("{}PC/logs/{none}.stdout.0", lane_root(&e))),
        "{}",
        got.2
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_logs_follow_prints_chunks_as_they_come_and_ends_after_the_result() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("follow");
    enqueue(&e, &w, &id);
    // Taken by its listener, as the listener would: out of the inbox.
    take(&e, &id);
    let mut child = spawn(
        &e,
        &w,
        &["logs", "--target", "PC", "--job-id", &id, "--follow"],
    );
    // Its stdout read line by line as it comes.
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout).lines() {
            let _ = tx.send(line.unwrap());
        }
    });
    put(&e, &format!("PC/logs/{id}.stdout.0"), b"one\n");
    // Shown before the next chunk exists.
    assert_eq!(rx.recv_timeout(Duration::from_secs(20)).unwrap(), "one");
    put(&e, &format!("PC/logs/{id}.stdout.1"), b"two\n");
    put(&e, &format!("PC/logs/{id}.stderr.0"), b"err\n");
    put_result(&e, &id, &result_doc(&id, 3, "one\ntwo\n", "err\n"));
    let (code, _, err) = finish(child, Duration::from_secs(30));
    assert_eq!(code, 3, "exits as the job did: {err}");
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap(), "two");
    assert!(err.contains("err\n"), "{err}");
    // With --json while it runs: JSON lines as the chunks come, the
    // result last.
    let next = lane_id("follow");
    enqueue(&e, &w, &next);
    take(&e, &next);
    let child = spawn(
        &e,
        &w,
        &[
            "--json", "logs", "--target", "PC", "--job-id", &next, "--follow",
        ],
    );
    put(
        &e,
        &format!("PC/logs/{next}.stdout.0"),
        "caf\u{e9}\n".as_bytes(),
    );
    std::thread::sleep(Duration::from_millis(700));
    put_result(&e, &next, &result_doc(&next, 0, "caf\u{e9}\n", ""));
    let (code, out, err) = finish(child, Duration::from_secs(30));
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0], json!({"stream": "stdout", "text": "caf\u{e9}\n"}));
    assert_eq!(
        lines.last().unwrap()["result"]["exitCode"],
        json!(0),
        "{out}"
    );
    // With --json once finished: JSON lines, the result last.
    let got = lane_run(
        &e,
        &w,
        &[
            "--json", "logs", "--target", "PC", "--job-id", &id, "--follow",
        ],
    );
    assert_eq!(got.0, 0, "a finished job's logs: {got:?}");
    let lines: Vec<Value> = got
        .1
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // A line per chunk read.
    let text = |stream: &str| -> String {
        lines
            .iter()
            .filter(|l| l["stream"] == json!(stream))
            .map(|l| l["text"].as_str().unwrap())
            .collect()
    };
    assert_eq!(
        (text("stdout"), text("stderr")),
        ("one\ntwo\n".into(), "err\n".into())
    );
    assert_eq!(lines.last().unwrap()["state"], json!("done"));
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_sweep_removes_stale_markers_but_never_one_whose_job_waits() {
    let (e, w) = (Engine::new(), World::new());
    let queued = lane_id("queued");
    enqueue(&e, &w, &queued);
    assert_eq!(
        lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &queued]).0,
        0
    );
    let gone = lane_id("gone");
    let stale = format!("PC/cancel/{gone}.json");
    let doc = marker_doc(&gone, "PC", &now_text(), "me", Signer::Fleet);
    put(&e, &stale, doc.to_string().as_bytes());
    let kept = format!("PC/cancel/{queued}.json");
    // Younger than the default 24h: kept, and said so on a dry run.
    let got = lane_run(&e, &w, &["sweep", "--target", "PC", "--dry-run"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(
        got.1.contains("nothing to remove") && got.1.contains(&gone),
        "{}",
        got.1
    );
    // Aged by the object's LastModified, which the listing gives.
    assert!(
        got.1.contains(&format!("{gone} (removable at ")),
        "{}",
        got.1
    );
    // Any age: the dry run names it and removes nothing.
    let got = lane_run(
        &e,
        &w,
        &["sweep", "--target", "PC", "--max-age", "0", "--dry-run"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert!(
        got.1
            .contains(&format!("would remove marker {}{stale}", lane_root(&e))),
        "{}",
        got.1
    );
    assert!(
        !got.1.contains(&format!("marker {}{kept}", lane_root(&e))),
        "{}",
        got.1
    );
    assert!(lane_object(&e, &stale).is_some());
    let got = lane_run(
        &e,
        &w,
        &["--json", "sweep", "--target", "PC", "--max-age", "0"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let doc: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(doc["counts"]["marker"], json!(1), "{doc}");
    assert!(
        lane_object(&e, &stale).is_none(),
        "the stale marker is gone"
    );
    assert!(lane_object(&e, &kept).is_some(), "its job is queued: kept");
    assert!(lane_object(&e, &format!("PC/inbox/{queued}.json")).is_some());
    // A processed job younger than the retention: all of it stays.
    let done = lane_id("done");
    put(&e, &format!("PC/logs/{done}.stdout.0"), b"x");
    put_result(&e, &done, &result_doc(&done, 0, "x", ""));
    let got = lane_run(&e, &w, &["sweep", "--target", "PC", "--max-age", "0"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(lane_object(&e, &format!("PC/results/{done}.json")).is_some());
    assert!(lane_object(&e, &format!("PC/logs/{done}.stdout.0")).is_some());
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_wait_answers_with_the_result_or_gives_up() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("wait");
    let child = spawn(
        &e,
        &w,
        &[
            "enqueue", "--target", "PC", "--job-id", &id, "--wait", "--", "true",
        ],
    );
    let start = Instant::now();
    while lane_object(&e, &format!("PC/inbox/{id}.json")).is_none() {
        assert!(start.elapsed() < Duration::from_secs(20), "never queued");
        std::thread::sleep(Duration::from_millis(200));
    }
    put_result(&e, &id, &result_doc(&id, 5, "", ""));
    let (code, out, err) = finish(child, Duration::from_secs(30));
    assert_eq!(code, 5, "exits as the job did: {out}{err}");
    assert_eq!(out.lines().next(), Some(id.as_str()), "{out}");
    assert!(out.lines().count() > 1, "then the result: {out}");
    // No result within the wait: UNFINISHED, saying so.
    let late = lane_id("late");
    let got = lane_run(
        &e,
        &w,
        &[
            "--json",
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &late,
            "--wait",
            "--wait-timeout",
            "2s",
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 124, "{got:?}");
    let doc: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(
        (&doc["jobId"], &doc["timedOut"], &doc["state"]),
        (&json!(late), &json!(true), &json!("queued"))
    );
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue",
            "--target",
            "PC",
            "--wait",
            "--wait-timeout",
            "1s",
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 124, "{got:?}");
    assert!(got.2.contains("gave up waiting"), "{}", got.2);
}

/// The sender's batch, interrupt and cancel on a bucket refuse bad input
/// by its code, naming the line, flag or id, before the store is asked.
#[test]
fn bad_batch_lines_interrupts_and_cancels_on_a_bucket_are_refused_by_their_code() {
    let w = World::new();
    let file = w.dir.path().join("jobs.jsonl");
    std::fs::write(
        &file,
        "{\"target\": \"PC\", \"argv\": [\"true\"]}\n\n{\"target\": \"PC\"}\n",
    )
    .unwrap();
    let file = file.display().to_string();
    let run = |args: &[&str]| {
        let mut c = w.cmd();
        c.args(["--root", "s3://jobs/fleet"])
            .args(args)
            .env("FLEET_DISPATCH_S3_ENDPOINT", "http://127.0.0.1:9");
        output_within(&mut c, Duration::from_secs(20))
    };
    for (args, code, named) in [
        (vec!["enqueue", "--batch", &file], 64, "line 3"),
        (
            vec!["enqueue", "--batch", "no-such.jsonl"],
            66,
            "no-such.jsonl",
        ),
        (
            vec!["enqueue", "--batch", &file, "--interrupt", "running"],
            64,
            "--interrupt cannot be given",
        ),
        (
            vec![
                "enqueue",
                "--target",
                "PC,B",
                "--interrupt",
                "running",
                "--",
                "true",
            ],
            64,
            "--interrupt takes one target",
        ),
        (
            vec![
                "enqueue",
                "--target",
                "PC",
                "--interrupt",
                "a/b",
                "--",
                "true",
            ],
            64,
            "--interrupt a/b",
        ),
        (
            vec!["cancel", "--target", "PC,B", "--job-id", "a", "--wait"],
            64,
            "--wait takes one target",
        ),
        (
            vec![
                "cancel",
                "--target",
                "PC",
                "--job-id",
                "a",
                "--wait",
                "--wait-timeout",
                "soon",
            ],
            64,
            "--wait-timeout",
        ),
    ] {
        let (got, out, err) = run(&args);
        assert_eq!(got, code, "{args:?}: {out}{err}");
        assert!(err.contains(named), "{args:?}: {err}");
    }
    // From inside a job, a bad FLEET_DISPATCH_JOB_ID is refused too.
    let mut c = w.cmd();
    c.args([
        "--root",
        "s3://jobs/fleet",
        "cancel",
        "--target",
        "PC",
        "--job-id",
        "a",
    ])
    .env("FLEET_DISPATCH_S3_ENDPOINT", "http://127.0.0.1:9")
    .env("FLEET_DISPATCH_JOB_ID", "../x");
    let (got, out, err) = output_within(&mut c, Duration::from_secs(20));
    assert_eq!(got, 64, "{out}{err}");
    assert!(err.contains("FLEET_DISPATCH_JOB_ID"), "{err}");
}

/// `fleet-dispatch` on the engine's bucket with `PC` and `B` fleet
/// members, and `vars` set.
fn lane_run_with(
    e: &Engine,
    w: &World,
    vars: &[(&str, &str)],
    args: &[&str],
) -> (i32, String, String) {
    output(&mut assert_cmd::Command::from_std({
        let mut c = lane_cmd(e, w);
        c.env("FLEET_DISPATCH_FLEET", "PC,B").args(args);
        for (k, v) in vars {
            c.env(k, v);
        }
        c
    }))
}

/// The spec of the job `id` as queued in `TARGET`'s inbox.
fn queued_spec(e: &Engine, target: &str, id: &str) -> Value {
    let job = lane_json(&lane_object(e, &format!("{target}/inbox/{id}.json")).expect("queued"));
    serde_json::from_str(job["spec"].as_str().unwrap()).unwrap()
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_batch_publishes_every_line_or_nothing() {
    let (e, w) = (Engine::new(), World::new());
    let (a, b, c) = (lane_id("a"), lane_id("b"), lane_id("c"));
    let file = w.dir.path().join("jobs.jsonl");
    let write = |lines: &[Value]| {
        let text: Vec<String> = lines.iter().map(Value::to_string).collect();
        std::fs::write(&file, text.join("\n") + "\n").unwrap();
    };
    let f = file.display().to_string();
    write(&[
        json!({"jobId": a, "argv": ["true"], "priority": "high"}),
        json!({"jobId": b, "argv": ["true"], "after": [a]}),
        json!({"jobId": c, "argv": ["true"], "target": "PC,B", "after": [format!("PC:{a}")]}),
    ]);
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["--json", "enqueue", "--batch", &f, "--target", "PC"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let out: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(
        out["jobs"],
        json!([
            {"line": 1, "jobId": a, "targets": ["PC"], "priority": "high"},
            {"line": 2, "jobId": b, "targets": ["PC"], "priority": "normal"},
            {"line": 3, "jobId": c, "targets": ["PC", "B"], "priority": "normal"},
        ])
    );
    assert_eq!(
        queued_spec(&e, "PC", &b)["after"],
        json!([{"target": "PC", "jobId": a}]),
        "a bare id is the line's own target"
    );
    assert_eq!(
        queued_spec(&e, "B", &c)["after"],
        json!([{"target": "PC", "jobId": a}])
    );
    assert_eq!(
        queued_spec(&e, "PC", &c)["after"],
        json!([{"target": "PC", "jobId": a}])
    );
    // Without --json: the ids, one a line.
    let (d, d2) = (lane_id("d"), lane_id("d2"));
    write(&[
        json!({"jobId": d, "argv": ["true"]}),
        json!({"jobId": d2, "argv": ["true"], "after": [format!("PC:{a}")]}),
    ]);
    let got = lane_run_with(&e, &w, &[], &["enqueue", "--batch", &f, "--target", "PC"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(got.1, format!("{d}\n{d2}\n"));
    // An id already queued, on line 2: nothing of line 1 is published.
    let fresh = lane_id("fresh");
    write(&[
        json!({"jobId": fresh, "argv": ["true"]}),
        json!({"jobId": a, "argv": ["true"]}),
    ]);
    let got = lane_run_with(&e, &w, &[], &["enqueue", "--batch", &f, "--target", "PC"]);
    assert_eq!(got.0, 64, "{got:?}");
    assert!(got.2.contains("line 2") && got.2.contains(&a), "{}", got.2);
    assert!(lane_object(&e, &format!("PC/inbox/{fresh}.json")).is_none());
    // The same id twice for one target, a cycle of `after`, an unknown
    // target: refused naming the line, nothing published.
    let (x, y) = (lane_id("x"), lane_id("y"));
    for (lines, named) in [
        (
            vec![
                json!({"jobId": x, "argv": ["true"]}),
                json!({"jobId": x, "argv": ["true"], "target": "B,PC"}),
            ],
            "is also on line 1",
        ),
        (
            vec![
                json!({"jobId": x, "argv": ["true"], "after": [y]}),
                json!({"jobId": y, "argv": ["true"], "after": [x]}),
            ],
            "makes a cycle",
        ),
        (
            vec![
                json!({"jobId": x, "argv": ["true"]}),
                json!({"jobId": y, "argv": ["true"], "target": "NOPE"}),
            ],
            "line 2",
        ),
    ] {
        write(&lines);
        let got = lane_run_with(&e, &w, &[], &["enqueue", "--batch", &f, "--target", "PC"]);
        assert!(got.0 == 64 || got.0 == 66, "{got:?}");
        assert!(got.2.contains(named), "{named}: {}", got.2);
        for t in ["PC", "B"] {
            for id in [&x, &y] {
                assert!(
                    lane_object(&e, &format!("{t}/inbox/{id}.json")).is_none(),
                    "{t} {id}"
                );
            }
        }
    }
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_cancel_over_a_list_and_from_inside_a_job_keeps_the_parent_rule() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("both");
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["enqueue", "--target", "PC,B", "--job-id", &id, "--", "true"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    // An id neither target has: refused as a whole, no marker.
    let none = lane_id("none");
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["cancel", "--target", "PC,B", "--job-id", &none],
    );
    assert_eq!(got.0, 66, "{got:?}");
    assert!(got.2.contains(&none), "{}", got.2);
    for t in ["PC", "B"] {
        assert!(lane_object(&e, &format!("{t}/cancel/{none}.json")).is_none());
    }
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["--json", "cancel", "--target", "PC,B", "--job-id", &id],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let out: Value = serde_json::from_str(&got.1).unwrap();
    let each: Vec<(&Value, &Value)> = out
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (&a["target"], &a["status"]))
        .collect();
    assert_eq!(
        each,
        vec![
            (&json!("PC"), &json!("requested")),
            (&json!("B"), &json!("requested"))
        ],
        "{out}"
    );
    for t in ["PC", "B"] {
        assert!(
            lane_object(&e, &format!("{t}/cancel/{id}.json")).is_some(),
            "{t}"
        );
    }
    // A job with a copy on PC only: B says it has none, PC gets a marker.
    let one = lane_id("one");
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["enqueue", "--target", "PC", "--job-id", &one, "--", "true"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &["cancel", "--target", "PC,B", "--job-id", &one],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert!(
        got.1.contains(&format!("B: no job {one} there")),
        "{}",
        got.1
    );
    assert!(lane_object(&e, &format!("PC/cancel/{one}.json")).is_some());
    assert!(lane_object(&e, &format!("B/cancel/{one}.json")).is_none());
    // From inside a job: only the direct parent may cancel.
    let (parent, child) = (lane_id("parent"), lane_id("child"));
    let inside = [("FLEET_DISPATCH_JOB_ID", parent.as_str())];
    let got = lane_run_with(
        &e,
        &w,
        &inside,
        &[
            "enqueue", "--target", "PC", "--job-id", &child, "--", "true",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(queued_spec(&e, "PC", &child)["parentJobId"], json!(parent));
    let other = lane_id("other");
    let got = lane_run_with(
        &e,
        &w,
        &[("FLEET_DISPATCH_JOB_ID", other.as_str())],
        &["cancel", "--target", "PC", "--job-id", &child],
    );
    assert_eq!(got.0, 77, "{got:?}");
    assert!(
        got.2
            .contains(&format!("only its direct parent ({parent})")),
        "{}",
        got.2
    );
    // A job enqueued from outside any job has no parent to cancel it.
    let outside = lane_id("outside");
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &[
            "enqueue", "--target", "PC", "--job-id", &outside, "--", "true",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let got = lane_run_with(
        &e,
        &w,
        &inside,
        &["cancel", "--target", "PC", "--job-id", &outside],
    );
    assert_eq!(got.0, 77, "{got:?}");
    assert!(got.2.contains("enqueued from outside a job"), "{}", got.2);
    for i in [&child, &outside] {
        assert!(
            lane_object(&e, &format!("PC/cancel/{i}.json")).is_none(),
            "{i}"
        );
    }
    let got = lane_run_with(
        &e,
        &w,
        &inside,
        &["cancel", "--target", "PC", "--job-id", &child],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert!(lane_object(&e, &format!("PC/cancel/{child}.json")).is_some());
    // --wait with no listener: gives up after its limit, UNFINISHED.
    let got = lane_run_with(
        &e,
        &w,
        &[],
        &[
            "cancel",
            "--target",
            "PC",
            "--job-id",
            &outside,
            "--wait",
            "--wait-timeout",
            "1s",
        ],
    );
    assert_eq!(got.0, 124, "{got:?}");
    assert!(
        got.1.contains(&format!("cancel of {outside} requested")),
        "{got:?}"
    );
    assert!(got.2.contains("gave up waiting"), "{}", got.2);
}

/// `fleet-dispatch` on the engine's bucket as machine `machine`, with `PC`
/// a fleet member and a state directory of its own.
fn cmd_as(e: &Engine, w: &World, machine: &str) -> std::process::Command {
    let mut c = w.bg_cmd_as(machine);
    c.env("FLEET_DISPATCH_ROOT", lane_root(e))
        .env("FLEET_DISPATCH_FLEET", "PC")
        .env(
            "FLEET_DISPATCH_STATE_DIR",
            w.home.join(format!("state-{machine}")),
        );
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c
}

/// A listener of PC on the bucket, in the background, polling fast.
fn listener(e: &Engine, w: &World) -> std::process::Child {
    let mut c = cmd_as(e, w, "PC");
    c.args(["listen", "--poll-interval", "200ms"])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c.spawn().unwrap()
}

/// Stops the listener `l` (SIGTERM, then SIGKILL after 20 s).
fn stop(l: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &l.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if l.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = l.kill();
    let _ = l.wait();
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_interrupt_and_cancel_wait_stop_the_running_job() {
    let (e, w) = (Engine::new(), World::new());
    let started = w.home.join("started");
    let sleep = |tag: &str| {
        let id = lane_id(tag);
        let mut args = vec!["enqueue", "--target", "PC", "--job-id", &id, "--"];
        let argv = kit(&["touch", p(&started), "sleep", "60"]);
        args.extend(argv.iter().map(String::as_str));
        let got = lane_run(&e, &w, &args);
        assert_eq!(got.0, 0, "{got:?}");
        id
    };
    // Nothing runs: `running` names no job, and nothing is queued.
    let first = lane_id("first");
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &first,
            "--interrupt",
            "running",
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 66, "{got:?}");
    assert!(got.2.contains("no job runs on PC now"), "{}", got.2);
    assert!(lane_object(&e, &format!("PC/inbox/{first}.json")).is_none());
    // An id PC has nothing of: refused, nothing queued.
    let ghost = lane_id("ghost");
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &first,
            "--interrupt",
            &ghost,
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 66, "{got:?}");
    assert!(got.2.contains(&format!("--interrupt {ghost}")), "{}", got.2);
    assert!(lane_object(&e, &format!("PC/inbox/{first}.json")).is_none());
    let long = sleep("long");
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the long job to start", || {
        started.exists()
    });
    let steer = lane_id("steer");
    let got = lane_run(
        &e,
        &w,
        &[
            "--json",
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &steer,
            "--interrupt",
            "running",
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let out: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(out["priority"], json!("high"), "{out}");
    assert_eq!(
        (
            &out["interrupt"]["jobId"],
            &out["interrupt"]["status"],
            &out["interrupt"]["job"]
        ),
        (&json!(long), &json!("requested"), &json!("running")),
        "{out}"
    );
    until(Duration::from_secs(30), "both results", || {
        lane_object(&e, &format!("PC/results/{long}.json")).is_some()
            && lane_object(&e, &format!("PC/results/{steer}.json")).is_some()
    });
    let r = lane_json(&lane_object(&e, &format!("PC/results/{long}.json")).unwrap());
    assert_eq!(r["error"], json!("cancelled"), "{r}");
    // An interrupt of a job that already finished: the new job waits its
    // turn, and runs.
    let after = lane_id("after");
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &after,
            "--interrupt",
            &long,
            "--",
            "true",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    assert!(got.2.contains("waits its turn"), "{}", got.2);
    until(Duration::from_secs(30), "its result", || {
        lane_object(&e, &format!("PC/results/{after}.json")).is_some()
    });
    // cancel --wait: the marker, then the job's end.
    std::fs::remove_file(&started).unwrap();
    let next = sleep("next");
    until(Duration::from_secs(30), "the next job to start", || {
        started.exists()
    });
    let got = lane_run(
        &e,
        &w,
        &["cancel", "--target", "PC", "--job-id", &next, "--wait"],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let lines: Vec<&str> = got.1.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!("cancel of {next} requested (job running)").as_str(),
            format!("{next} stopped (cancelled)").as_str(),
        ],
        "{got:?}"
    );
    // A job that already finished: nothing written, nothing to wait for.
    let quick = lane_id("quick");
    let got = lane_run(
        &e,
        &w,
        &[
            "enqueue", "--target", "PC", "--job-id", &quick, "--wait", "--", "true",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let got = lane_run(
        &e,
        &w,
        &[
            "--json", "cancel", "--target", "PC", "--job-id", &quick, "--wait",
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let out: Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(out["status"], json!("not_running"), "{out}");
    assert!(lane_object(&e, &format!("PC/cancel/{quick}.json")).is_none());
    stop(&mut l);
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_interrupt_running_names_the_one_claimed_job_without_a_result() {
    let (e, w) = (Engine::new(), World::new());
    let (a, b) = (lane_id("a"), lane_id("b"));
    put(&e, &format!("PC/running/{a}.json"), b"{}");
    put(&e, &format!("PC/running/{b}.json"), b"{}");
    let new = lane_id("new");
    let interrupt = |extra: &[&str]| {
        let mut args = vec![
            "enqueue",
            "--target",
            "PC",
            "--job-id",
            &new,
            "--interrupt",
            "running",
        ];
        args.extend_from_slice(extra);
        args.extend(["--", "true"]);
        lane_run(&e, &w, &args)
    };
    // Two claims without a result: `running` names no one job.
    let got = interrupt(&[]);
    assert_eq!(got.0, 64, "{got:?}");
    assert!(
        got.2.contains("2 jobs run on PC now") && got.2.contains(&a) && got.2.contains(&b),
        "{}",
        got.2
    );
    assert!(lane_object(&e, &format!("PC/inbox/{new}.json")).is_none());
    // One of them has its result: the other is the one running.
    put_result(&e, &a, &result_doc(&a, 0, "", ""));
    let got = interrupt(&["--force"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(
        got.2.contains(&format!("cancel of {b} requested")),
        "{}",
        got.2
    );
    assert!(lane_object(&e, &format!("PC/cancel/{b}.json")).is_some());
    assert!(lane_object(&e, &format!("PC/cancel/{a}.json")).is_none());
    assert_eq!(queued_spec(&e, "PC", &new)["priority"], json!("high"));
}

/// `enqueue --wait --follow` and `result --wait --follow` on a bucket, as
/// on a folder: the job's output streamed while it runs (its first line
/// shown before its result exists), then the result line; JSON lines with
/// `--json`, the result last; each exits as the job did.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_and_result_follow_stream_the_output_then_the_result() {
    let (e, w) = (Engine::new(), World::new());
    let mut l = listener(&e, &w);
    let id = lane_id("follow");
    let argv = kit(&[
        "out",
        "first-line",
        "err",
        "on-stderr",
        "sleep",
        "3",
        "out",
        "second-line",
        "exit",
        "3",
    ]);
    let mut args = vec![
        "enqueue", "--target", "PC", "--job-id", &id, "--wait", "--follow", "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let mut child = spawn(&e, &w, &args);
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = Vec::new();
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let _ = tx.send(line.clone());
            all.push(line);
        }
        all
    });
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        let line = rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
            .expect("the first line is streamed");
        if line == "first-line" {
            break;
        }
    }
    assert!(
        lane_object(&e, &format!("PC/results/{id}.json")).is_none(),
        "shown while the job still runs"
    );
    let (code, _, err) = finish(child, Duration::from_secs(60));
    let lines = reader.join().unwrap();
    assert_eq!(code, 3, "exits as the job did: {lines:?}{err}");
    assert_eq!(lines.first(), Some(&id), "the id first: {lines:?}");
    let first = lines.iter().position(|l| l == "first-line").unwrap();
    let second = lines.iter().position(|l| l == "second-line");
    assert_eq!(
        second,
        Some(first + 1),
        "each line once, in order: {lines:?}"
    );
    let last = lines.last().unwrap();
    assert!(last.starts_with(&format!("{id} on PC: ")), "{lines:?}");
    assert!(
        err.contains("on-stderr"),
        "stderr streamed to stderr: {err}"
    );
    // `result --wait --follow --json` of a job queued behind a running one.
    let later = lane_id("later");
    let argv = kit(&["out", "later-line", "sleep", "1"]);
    let mut args = vec!["enqueue", "--target", "PC", "--job-id", &later, "--"];
    args.extend(argv.iter().map(String::as_str));
    assert_eq!(lane_run(&e, &w, &args).0, 0);
    let got = lane_run(
        &e,
        &w,
        &[
            "--json", "result", "--target", "PC", "--job-id", &later, "--wait", "--follow",
        ],
    );
    stop(&mut l);
    assert_eq!(got.0, 0, "{got:?}");
    let docs: Vec<Value> = got
        .1
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        docs.first(),
        Some(&json!({"stream": "stdout", "text": "later-line\n"})),
        "{docs:?}"
    );
    let result = docs.last().unwrap();
    assert_eq!(
        (&result["jobId"], &result["exitCode"]),
        (&json!(later), &json!(0)),
        "{result}"
    );
    assert_eq!(docs.len(), 2, "{docs:?}");
}

/// `--job-id last` and a unique prefix name a job on a bucket as on a
/// folder: `last` is the job enqueued last from here, a prefix the one
/// verified job whose id starts with it (found by a listing of that key
/// prefix); a prefix two jobs have is refused listing both, and a planted
/// object with a matching name takes no part.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_last_and_a_prefix_name_a_job_on_a_bucket() {
    let (e, w) = (Engine::new(), World::new());
    let got = lane_run(&e, &w, &["result", "--target", "PC", "--job-id", "last"]);
    assert_eq!(got.0, 66, "{got:?}");
    assert!(
        got.2.contains("no job was enqueued from this machine"),
        "{got:?}"
    );
    let base = lane_id("pre");
    let (one, two) = (format!("{base}-one"), format!("{base}-two"));
    for id in [&one, &two] {
        let got = lane_run(
            &e,
            &w,
            &["enqueue", "--target", "PC", "--job-id", id, "--", "true"],
        );
        assert_eq!(got.0, 0, "{got:?}");
    }
    let named = |text: &str| {
        let got = lane_run(
            &e,
            &w,
            &["--json", "result", "--target", "PC", "--job-id", text],
        );
        let doc: Value = serde_json::from_str(got.1.trim()).unwrap_or(Value::Null);
        // With --json a refusal is a JSON document on stdout.
        (
            got.0,
            doc["jobId"].as_str().map(str::to_string),
            got.1 + &got.2,
        )
    };
    let (code, id, err) = named("last");
    assert_eq!(id.as_deref(), Some(two.as_str()), "{code} {err}");
    put(&e, &format!("PC/inbox/{base}-onx.json"), b"{ planted");
    let (code, id, err) = named(&format!("{base}-on"));
    assert_eq!(id.as_deref(), Some(one.as_str()), "{code} {err}");
    let (code, id, err) = named(&base);
    assert_eq!((code, id), (64, None), "{err}");
    assert!(
        err.contains(&one) && err.contains(&two) && !err.contains("onx"),
        "{err}"
    );
    // `logs` and `cancel` take them too.
    let got = lane_run(
        &e,
        &w,
        &["logs", "--target", "PC", "--job-id", &format!("{base}-t")],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", "last"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(lane_object(&e, &format!("PC/cancel/{two}.json")).is_some());
    assert!(lane_object(&e, &format!("PC/cancel/{one}.json")).is_none());
}

/// `enqueue --wait` and `result` over a target list on a bucket, as on a
/// folder: one line (or JSON object) per copy in the order given, each
/// copy's result or why it has none, and the worst status of them.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_enqueue_wait_and_result_over_a_target_list_answer_each_copy() {
    let (e, w) = (Engine::new(), World::new());
    let mut l = listener(&e, &w);
    let both = |args: &[&str]| {
        let mut c = lane_cmd(&e, &w);
        c.env("FLEET_DISPATCH_FLEET", "PC,NAS").args(args);
        output(&mut assert_cmd::Command::from_std(c))
    };
    let id = lane_id("copies");
    let argv = kit(&["exit", "3"]);
    let mut args = vec![
        "enqueue",
        "--target",
        "PC,NAS",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "8s",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    // NAS has no listener: its copy is still queued when the wait ends.
    let (code, out, err) = both(&args);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}{err}");
    assert_eq!(lines[0], id);
    assert!(lines[1].starts_with(&format!("{id} on PC: ")), "{out}");
    assert!(lines[1].contains("exit 3"), "{out}");
    assert!(
        lines[2].starts_with("NAS: ") && lines[2].contains("queued (timed out waiting)"),
        "{out}"
    );
    assert_eq!(
        code, 124,
        "the worst of 3 and a wait that ran out: {out}{err}"
    );
    let (code, out, err) = both(&["--json", "result", "--target", "PC,NAS", "--job-id", &id]);
    stop(&mut l);
    let docs: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}{err}"));
    assert_eq!(docs[0]["exitCode"], 3, "{docs}");
    assert_eq!(
        (&docs[1]["target"], &docs[1]["state"]),
        (&json!("NAS"), &json!("queued")),
        "{docs}"
    );
    assert_eq!(code, 124, "{docs}");
    // An unknown copy is that target's answer, not the command's failure.
    let ghost = lane_id("ghost");
    let (code, out, _) = both(&["result", "--target", "PC,NAS", "--job-id", &ghost]);
    assert_eq!(code, 66, "{out}");
    assert_eq!(out.lines().count(), 2, "{out}");
}

/// A chunk planted under a job's log name is streamed by `result --wait
/// --follow` like any output once the job was taken (the follow cannot
/// know yet), but the end holds it against the verified result: the
/// command says it was not the job's output and exits `FORBIDDEN`, never
/// with the job's status as if all were well (docs/object-store.md).
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_planted_chunk_shown_by_a_follow_is_refused_at_its_end() {
    let (e, w) = (Engine::new(), World::new());
    let id = lane_id("planted");
    enqueue(&e, &w, &id);
    take(&e, &id);
    put(&e, &format!("PC/logs/{id}.stdout.0"), b"planted\n");
    let child = spawn(
        &e,
        &w,
        &[
            "result", "--target", "PC", "--job-id", &id, "--wait", "--follow",
        ],
    );
    std::thread::sleep(Duration::from_millis(500));
    put_result(&e, &id, &result_doc(&id, 0, "genuine\n", ""));
    let (code, out, err) = finish(child, Duration::from_secs(30));
    assert_eq!(code, 77, "{out}{err}");
    assert!(
        err.contains("FORBIDDEN")
            && err.contains(&format!("PC/logs/{id}.stdout.0"))
            && err.contains(&format!("is not {id}'s output")),
        "{err}"
    );
    assert!(!out.contains("genuine"), "no result line after it: {out}");
}
