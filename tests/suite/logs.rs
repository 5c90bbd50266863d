//! A job's output and how a person names a job: `logs` prints the captured
//! output, `--follow` streams it while the job runs and exits as `result`
//! does; `result` says when its tail was cut and where the rest is; a job
//! is named by `last` or a unique prefix of its id.

use std::io::Read;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn logs_prints_a_finished_jobs_output_by_stream() {
    let w = World::with_target();
    let id = w.enqueue(
        &[],
        &kit(&["out", "to-stdout", "err", "to-stderr", "exit", "3"]),
    );
    w.listen_once(&[]);
    let (code, out, err) = w.run(&["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.trim(), "to-stdout");
    assert_eq!(err.trim(), "to-stderr");
    let (_, out, err) = w.run(&[
        "logs", "--target", "PC", "--job-id", &id, "--stream", "stderr",
    ]);
    assert_eq!((out.trim(), err.trim()), ("", "to-stderr"));
    let (code, _, err) = w.run(&["logs", "--target", "PC", "--job-id", "never-ran"]);
    assert_eq!(code, 66, "{err}");
}

#[test]
fn logs_follow_streams_while_the_job_runs_and_exits_with_its_code() {
    let w = World::with_target();
    let gate = scratch(&w, "gate");
    let id = w.enqueue(
        &[],
        &kit(&[
            "out",
            "first-line",
            "wait-for",
            p(&gate),
            "out",
            "second-line",
            "exit",
            "4",
        ]),
    );
    let _l = w.spawn_listener(&[]);
    let follow = w
        .bg_cmd()
        .args(["logs", "--target", "PC", "--job-id", &id, "--follow"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .start();
    let (code, text, _) = through_the_gate(follow, "first-line", &gate);
    assert_eq!(code, Some(4));
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        ["first-line", "second-line"],
        "{text}"
    );
}

#[test]
fn result_wait_follow_streams_the_output_then_the_result() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "streamed", "sleep", "0.5"]));
    let _l = w.spawn_listener(&[]);
    let (code, out, err) = w.run(&[
        "result", "--target", "PC", "--job-id", &id, "--wait", "--follow",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let streamed = out.find("streamed").expect("the output");
    let summary = out.find(&format!("{id} on PC")).expect("the result");
    assert!(streamed < summary, "{out}");
}

#[test]
fn a_cut_tail_says_so_and_where_the_whole_output_is() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["fill", "20000", "line"]));
    w.listen_once(&[]);
    let (code, out, _) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("of 20000 bytes"), "{out}");
    assert!(
        out.contains(&format!("fleet-dispatch logs --target PC --job-id {id}")),
        "{out}"
    );
    let (_, all, _) = w.run(&[
        "logs", "--target", "PC", "--job-id", &id, "--stream", "stdout",
    ]);
    assert_eq!(all.len(), 20000);
}

#[test]
fn last_and_a_unique_prefix_name_a_job() {
    let w = World::with_target();
    let first = w.enqueue(&["--job-id", "alpha-1234"], &kit(&[]));
    let second = w.enqueue(&["--job-id", "alpha-5678"], &kit(&[]));
    let third = w.enqueue(&["--job-id", "beta-9999"], &kit(&[]));
    assert_eq!(
        (first.as_str(), second.as_str()),
        ("alpha-1234", "alpha-5678")
    );
    let json = |args: &[&str]| -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let (_, out, _) = w.run(&all);
        serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
    };
    // `last` is the last job enqueued from here; a prefix, the one job it starts.
    assert_eq!(
        json(&["result", "--target", "PC", "--job-id", "last"])["jobId"],
        third
    );
    assert_eq!(
        json(&["result", "--target", "PC", "--job-id", "beta"])["jobId"],
        third
    );
    let (code, _, err) = w.run(&["result", "--target", "PC", "--job-id", "alpha"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("alpha-1234") && err.contains("alpha-5678"),
        "{err}"
    );
    let (code, _, err) = w.run(&["cancel", "--target", "PC", "--job-id", "alpha-5"]);
    assert_eq!(code, 0, "{err}");
    assert!(w.marker("alpha-5678").exists());
}

#[test]
fn logs_of_a_rejected_job_says_so_and_exits_with_the_rejection_status() {
    let w = World::with_target();
    let id = uid("logs-rejected");
    std::fs::write(w.inbox(&id), foreign_job_text(&id)).unwrap();
    assert_eq!(w.listen_once(&[])["rejected"], 1);
    for extra in [&[][..], &["--follow"][..]] {
        let mut args = vec!["logs", "--target", "PC", "--job-id", &id];
        args.extend_from_slice(extra);
        let (code, out, err) = output_within(w.cmd().args(&args), LIMIT);
        assert_eq!(code, 76, "{extra:?}: {out}{err}");
        assert_eq!(out, "", "{extra:?}");
        assert!(
            err.contains("rejected by PC") && err.contains("bad-signature"),
            "{extra:?}: {err}"
        );
    }
}

/// Reads `from` until `text` has arrived; returns all read so far.
fn read_until(from: &mut impl Read, text: &str, seen: &mut Vec<u8>) {
    let started = Instant::now();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(seen).contains(text) {
        assert!(started.elapsed() < LIMIT, "{text} never streamed");
        let n = from.read(&mut buf).unwrap();
        assert!(
            n > 0,
            "the stream ended before {text}: {}",
            String::from_utf8_lossy(seen)
        );
        seen.extend_from_slice(&buf[..n]);
    }
}

/// `child`, a command streaming a job's output, seen to stream `first`
/// while the job waits for `gate` (so it streams, not prints at the end);
/// then the gate is opened and all is read: its exit code, stdout and
/// stderr.
fn through_the_gate(
    mut child: std::process::Child,
    first: &str,
    gate: &std::path::Path,
) -> (Option<i32>, String, String) {
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    read_until(&mut stdout, first, &mut seen);
    assert!(
        child.try_wait().unwrap().is_none(),
        "it exited, or printed only at the end, while the job ran"
    );
    std::fs::write(gate, b"").unwrap();
    stdout.read_to_end(&mut seen).unwrap();
    let err = stderr_text(&mut child);
    let code = child.wait().unwrap().code();
    (code, String::from_utf8_lossy(&seen).into_owned(), err)
}

#[test]
fn logs_follow_on_a_queued_job_waits_for_it_to_run_and_streams_it() {
    let w = World::with_target();
    let gate = scratch(&w, "gate");
    let id = w.enqueue(
        &[],
        &kit(&["out", "once-started", "wait-for", p(&gate), "exit", "5"]),
    );
    // No listener yet: the job is queued when the follow starts.
    let mut follow = w
        .bg_cmd()
        .args(["logs", "--target", "PC", "--job-id", &id, "--follow"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .start();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        follow.try_wait().unwrap().is_none(),
        "logs --follow gave up on a queued job"
    );
    let _l = w.spawn_listener(&[]);
    let (code, text, _) = through_the_gate(follow, "once-started", &gate);
    assert_eq!(code, Some(5));
    assert_eq!(text.trim(), "once-started");
}

#[test]
fn enqueue_wait_follow_streams_the_output_while_it_waits() {
    let w = World::with_target();
    let gate = scratch(&w, "gate");
    let _l = w.spawn_listener(&[]);
    let mut args = vec![
        "enqueue".to_string(),
        "--target".into(),
        "PC".into(),
        "--wait".into(),
        "--follow".into(),
        "--".into(),
    ];
    args.extend(kit(&[
        "out",
        "first-line",
        "err",
        "to-stderr",
        "wait-for",
        p(&gate),
        "out",
        "second-line",
    ]));
    let enqueue = w
        .bg_cmd()
        .args(&args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .start();
    let (code, text, err) = through_the_gate(enqueue, "first-line", &gate);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("to-stderr"), "stderr is followed too: {err}");
    let lines: Vec<&str> = text.lines().collect();
    // The id first, then the job's output as it came, then the result.
    let id = lines[0];
    assert!(
        w.result_path(id).exists(),
        "the first line is not the id: {text}"
    );
    let first = text.find("first-line").unwrap();
    let second = text.find("second-line").expect("the rest of the output");
    let summary = text.find(&format!("{id} on PC")).expect("the result");
    assert!(first < second && second < summary, "{text}");
}

#[test]
#[cfg(target_os = "linux")] // a full disk made with a tmpfs
#[ignore = "needs root: mounts a tmpfs"]
fn a_log_cut_short_by_a_full_disk_is_said_by_result_and_logs() {
    let w = World::with_target();
    let disk = Tmpfs::over(&w.root, "8m");
    w.make_target("PC");
    let go = scratch(&w, "go");
    let g = w.spawn_listener(&[]);
    let id = w.enqueue(
        &[],
        &kit(&["wait-for", p(&go), "fill", "3000000", "yy", "err", "e2"]),
    );
    // Room for a start of the log only; then the job writes.
    disk.fill_but(256 << 10);
    std::fs::write(&go, "").unwrap();
    std::thread::sleep(Duration::from_secs(2));
    disk.free();
    let r = w.wait_result(&id, Duration::from_secs(20));
    let d: Value = serde_json::from_str(r["detail"].as_str().unwrap()).unwrap();
    let logged = d["stdoutLogBytes"]
        .as_u64()
        .expect("the short log is recorded");
    assert!(logged < 3_000_000, "{d}");
    let on_disk = std::fs::metadata(w.pc().join("logs").join(format!("{id}.stdout.log")))
        .map_or(0, |m| m.len());
    assert_eq!(on_disk, logged, "the log is the prefix the result names");
    let (_, out, _) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert!(
        out.contains(&format!("its log holds only the first {logged}")),
        "{out}"
    );
    let (code, out, err) = w.run(&[
        "logs", "--target", "PC", "--job-id", &id, "--stream", "stdout",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.len() as u64, logged);
    assert!(err.contains("holds only its first"), "{err}");
    drop(g);
}

/// `logs/<id>.<stream>.log` of target PC.
fn log_path(w: &World, id: &str, stream: &str) -> std::path::PathBuf {
    w.pc().join("logs").join(format!("{id}.{stream}.log"))
}

// A file planted under the log's name while the job waits and runs before
// its first write is shown only once the job runs, and when the listener
// makes its own log in its place the follow says so and shows the job's
// from its start (it read on past the planted length before, and hid the
// job's own output).
#[test]
fn logs_follow_shows_the_jobs_own_log_made_over_a_planted_one() {
    let w = World::with_target();
    let gate = scratch(&w, "gate");
    let id = w.enqueue(
        &[],
        &kit(&["wait-for", p(&gate), "out", "genuine", "exit", "0"]),
    );
    // Longer than the job's output.
    let planted = "PLANTED\n".repeat(50);
    std::fs::write(log_path(&w, &id, "stdout"), &planted).unwrap();
    let follow = ListenerGuard::spawn(
        w.bg_cmd()
            .args(["logs", "--target", "PC", "--job-id", &id, "--follow"]),
    );
    std::thread::sleep(Duration::from_millis(500));
    let _l = w.spawn_listener(&[]);
    // The job runs and has not written yet: the planted file is still there.
    wait_until(LIMIT, || w.running(&id).exists());
    std::thread::sleep(Duration::from_millis(600));
    std::fs::write(&gate, b"").unwrap();
    let (code, out, err) = follow.wait(LIMIT);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.ends_with("genuine\n"),
        "the job's own output: {out}{err}"
    );
    let shown = out.trim_end_matches("genuine\n");
    assert!(
        shown.is_empty() || (shown == planted && err.contains("were not")),
        "planted text is shown only with a warning that it was not the job's: {out}{err}"
    );
}

#[test]
fn a_log_that_does_not_match_the_result_is_never_shown_as_the_jobs_output() {
    let w = World::with_target();
    // A job that wrote nothing (no log is made), and one whose log is
    // rewritten after it ended, to the same length.
    let silent = w.enqueue(&[], &kit(&["exit", "0"]));
    let spoken = w.enqueue(&[], &kit(&["out", "genuine"]));
    std::fs::write(log_path(&w, &silent, "stdout"), "PLANTED\n").unwrap();
    w.listen_once(&[]);
    std::fs::write(log_path(&w, &spoken, "stdout"), "PLANTED\n").unwrap();
    for id in [&silent, &spoken] {
        for extra in [&[][..], &["--follow"][..]] {
            let mut args = vec!["logs", "--target", "PC", "--job-id", id];
            args.extend_from_slice(extra);
            let (code, out, err) = w.run(&args);
            assert_eq!(code, 77, "{extra:?}: {out}{err}");
            assert!(!out.contains("PLANTED"), "{extra:?}: {out}");
            assert!(
                err.contains(&format!("{id}.stdout.log")) && err.contains("not"),
                "the file is named: {err}"
            );
        }
    }
    // The genuine log is shown as before.
    std::fs::write(log_path(&w, &spoken, "stdout"), "genuine\n").unwrap();
    let (code, out, err) = w.run(&["logs", "--target", "PC", "--job-id", &spoken]);
    assert_eq!((code, out.as_str()), (0, "genuine\n"), "{err}");
}

// A result recovered after a crash counts no output, though the job wrote
// some before it: its log cannot be held against it, and is shown.
#[test]
fn the_log_of_a_job_a_crash_interrupted_is_shown() {
    let w = World::with_target();
    let id = uid("crashed");
    w.write_job("PC", &id, "PC", &now_text(), &kit_spec(&["out", "x"]));
    std::fs::create_dir_all(w.state.join("pc")).unwrap();
    std::fs::write(
        ledger_path(&w),
        serde_json::json!({"jobId": id, "processedAt": ts_offset(-3), "run": true}).to_string()
            + "\n",
    )
    .unwrap();
    // What the job wrote before the listener died.
    std::fs::write(log_path(&w, &id, "stdout"), "partial\n").unwrap();
    w.listen_once(&[]);
    assert_eq!(w.result(&id)["error"], "interrupted");
    let (code, out, err) = w.run(&["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!((code, out.as_str()), (0, "partial\n"), "{err}");
}
