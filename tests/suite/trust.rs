//! The trust boundary (README "Security"): a folder writer without the key
//! cannot suppress a job with a forged result, and cannot keep a genuine
//! cancel from landing by filling the marker's place — through `cancel`,
//! `enqueue --interrupt` and the listener's own watch.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(20);

/// A job that writes its pid to `pidfile`, then sleeps.
fn sleeper(pidfile: &Path) -> Value {
    json!({"argv": ["sh", "-c", "echo $$ > \"$1\"; exec sleep 30", "sh", pidfile.to_str().unwrap()]})
}

fn read_pid(path: &Path) -> i32 {
    let mut pid = 0;
    wait_until(Duration::from_secs(10), || {
        pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        pid > 0
    });
    assert!(pid > 0, "the job never wrote its pid");
    pid
}

fn reason(w: &World, name: &str) -> Value {
    let text = std::fs::read_to_string(w.rejected(&format!("{name}.reason.json")))
        .unwrap_or_else(|_| panic!("no reason filed for {name}"));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn an_unsigned_result_does_not_keep_a_queued_job_from_running() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("forged-result");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    std::fs::write(w.result_path(&id), b"").unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["done"].as_u64(), c["skipped"].as_u64()),
        (Some(1), Some(0)),
        "{c}"
    );
    assert_eq!(lines(&side), ["ran"]);
    assert!(
        result_sig_ok(&w.result(&id)),
        "the genuine result is in place"
    );
    let r = reason(&w, &format!("{id}.json"));
    assert_eq!(
        (r["kind"].as_str(), r["verdict"].as_str()),
        (Some("result"), Some("malformed")),
        "{r}"
    );
    assert_eq!(
        std::fs::read(w.rejected(&format!("{id}.json"))).unwrap(),
        b""
    );
}

#[test]
fn a_forged_result_written_while_the_job_runs_gives_way_to_the_genuine_one() {
    let w = World::with_target();
    let id = uid("forged-late");
    let pidfile = scratch(&w, "pid");
    let spec =
        json!({"argv": ["sh", "-c", "echo $$ > \"$1\"; sleep 1", "sh", pidfile.to_str().unwrap()]});
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    let _l = w.spawn_listener(&[]);
    read_pid(&pidfile);
    // Well formed, claiming success, signed with nothing.
    let forged = json!({
        "jobId": id, "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}", "sig": "0".repeat(64),
    });
    std::fs::write(w.result_path(&id), forged.to_string()).unwrap();
    wait_until(LIMIT, || w.rejected(&format!("{id}.json")).exists());
    let r = w.wait_result(&id, LIMIT);
    assert!(result_sig_ok(&r), "{r}");
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(
        reason(&w, &format!("{id}.json"))["verdict"],
        "bad-signature"
    );
}

#[test]
fn enqueue_takes_an_id_whose_only_trace_is_a_result_that_does_not_verify() {
    let w = World::with_target();
    let id = uid("planted");
    std::fs::write(w.result_path(&id), b"{}").unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--job-id", &id, "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.inbox(&id).exists());
    assert_eq!(w.listen_once(&[])["done"], 1);
    assert!(result_sig_ok(&w.result(&id)));
}

#[test]
fn a_forged_marker_during_a_run_is_moved_aside_and_a_genuine_one_then_stops_the_job() {
    let w = World::with_target();
    let id = uid("squat-run");
    let pidfile = scratch(&w, "pid");
    w.write_job("PC", &id, "PC", &now_text(), &sleeper(&pidfile));
    let _l = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile);
    let name = format!("{id}.json");
    std::fs::write(w.marker(&id), b"{\"jobId\": \"x\"}").unwrap();
    // Not a marker for this job: moved aside at once, not after settling.
    wait_until(Duration::from_secs(5), || w.rejected(&name).exists());
    assert_eq!(reason(&w, &name)["kind"], "marker");
    assert!(alive(pid), "an invalid marker stopped the job");
    w.write_marker("PC", &id, "PC");
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
}

#[test]
fn a_marker_rewritten_forever_is_moved_aside_after_the_settle_limit() {
    let w = World::with_target();
    let id = uid("squat-forever");
    let pidfile = scratch(&w, "pid");
    w.write_job("PC", &id, "PC", &now_text(), &sleeper(&pidfile));
    let _l = ListenerGuard::spawn(w.bg_cmd().args([
        "listen",
        "--poll-interval",
        "100ms",
        "--settle",
        "1s",
    ]));
    let pid = read_pid(&pidfile);
    let marker = w.marker(&id);
    let name = format!("{id}.json");
    // Half a marker, rewritten in place with a new size every 50 ms: it never
    // stays unchanged for the settle time.
    let started = Instant::now();
    let mut n = 0usize;
    while !w.rejected(&name).exists() && started.elapsed() < Duration::from_secs(15) {
        n += 1;
        std::fs::write(
            &marker,
            format!("{{\"jobId\": \"{id}\", \"pad\": \"{}", "x".repeat(n % 97)),
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    assert!(w.rejected(&name).exists(), "never moved aside in {took:?}");
    assert!(
        took >= Duration::from_millis(3500),
        "moved aside before the limit: {took:?}"
    );
    assert_eq!(reason(&w, &name)["verdict"], "malformed");
    assert!(alive(pid));
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.wait_result(&id, LIMIT)["error"], "cancelled");
}

#[test]
fn interrupt_stops_the_running_job_though_its_cancel_slot_was_squatted() {
    let w = World::with_target();
    let old = uid("steer-old");
    let pidfile = scratch(&w, "pid");
    w.write_job("PC", &old, "PC", &now_text(), &sleeper(&pidfile));
    let _l = w.spawn_listener(&[]);
    read_pid(&pidfile);
    std::fs::write(w.marker(&old), b"garbage").unwrap();
    let side = scratch(&w, "side");
    let argv = [
        "sh",
        "-c",
        "echo new >> \"$1\"",
        "sh",
        side.to_str().unwrap(),
    ];
    let mut args = vec!["enqueue", "--target", "PC", "--interrupt", &old, "--"];
    args.extend_from_slice(&argv);
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.wait_result(&old, LIMIT)["error"], "cancelled");
    let new = out.lines().next().unwrap().trim().to_string();
    assert_eq!(w.wait_result(&new, LIMIT)["ok"], true);
    assert_eq!(lines(&side), ["new"]);
}

#[test]
fn case_variant_folders_never_draw_the_listener_or_the_sender_away() {
    let w = World::new();
    w.make_target("build");
    // A folder writer adds spellings of the same name.
    w.make_target("buILd");
    w.make_target("BUILD");
    let side = scratch(&w, "side");
    let argv = [
        "sh",
        "-c",
        "echo ran >> \"$1\"",
        "sh",
        side.to_str().unwrap(),
    ];
    let mut args = vec!["enqueue", "--target", "build", "--"];
    args.extend_from_slice(&argv);
    let (code, out, err) = output(w.cmd_as("LAPTOP").args(&args));
    assert_eq!(code, 0, "{out}{err}");
    let id = out.trim().to_string();
    assert!(
        w.root
            .join("build/inbox")
            .join(format!("{id}.json"))
            .exists()
    );
    let (code, out, err) = output(w.cmd_as("build").args(["--json", "listen", "--once"]));
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(lines(&side), ["ran"]);
    assert!(
        w.root
            .join("build/results")
            .join(format!("{id}.json"))
            .exists()
    );
}

#[test]
fn several_case_variants_without_the_exact_spelling_are_a_config_error_naming_them() {
    let w = World::new();
    w.make_target("BUILD");
    w.make_target("buILd");
    for (machine, args) in [
        ("build", vec!["listen", "--once"]),
        ("LAPTOP", vec!["enqueue", "--target", "build", "--", "true"]),
    ] {
        let before = files(&w.root);
        let (code, out, err) = output(w.cmd_as(machine).args(&args));
        assert_eq!(code, 78, "{args:?}: {out}{err}");
        assert!(
            err.contains("CONFIG") && err.contains("BUILD, buILd"),
            "{err}"
        );
        assert_eq!(files(&w.root), before, "{args:?} wrote something");
    }
}

#[test]
fn a_job_at_the_size_limit_still_yields_a_result_readers_accept() {
    let w = World::with_target();
    let id = uid("big-label");
    let label = "é".repeat(500_000);
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &json!({"argv": ["true"], "label": label}),
    );
    assert_eq!(w.listen_once(&[])["done"], 1);
    let (code, out, err) = w.run(&["--json", "result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let shown = v["detail"]["label"].as_str().unwrap();
    assert!(
        shown.len() <= 1024 && shown.ends_with('…'),
        "{} bytes",
        shown.len()
    );
    assert!(label.starts_with(shown.trim_end_matches('…')));
}
