//! The trust boundary (SECURITY.md): a folder writer without the key
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
    kit_spec(&["pid", p(pidfile), "sleep", "30"])
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
    let r = w.reason(&format!("{id}.json"));
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
fn junk_in_the_archive_neither_suppresses_a_queued_job_nor_blocks_its_id() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let done = w.pc().join("archive").join("done");
    let other = uid("other");
    w.write_job("PC", &other, "PC", &now_text(), &appends(&side, "other"));
    let other_bytes = std::fs::read(w.inbox(&other)).unwrap();
    // What a folder writer can put at archive/done/<id>.json: an empty file,
    // a folder, another genuine job's file under this name.
    let plant = |what: &str, p: &Path| match what {
        "empty" => std::fs::write(p, b"").unwrap(),
        "folder" => std::fs::create_dir(p).unwrap(),
        _ => std::fs::write(p, &other_bytes).unwrap(),
    };
    for what in ["empty", "folder", "renamed"] {
        let id = uid(what);
        w.write_job("PC", &id, "PC", &now_text(), &appends(&side, what));
        plant(what, &done.join(format!("{id}.json")));
        // Before it is ever sent, an id is not taken from `enqueue` either.
        let fresh = uid(&format!("{what}-fresh"));
        plant(what, &done.join(format!("{fresh}.json")));
        let mut args = vec!["enqueue", "--target", "PC", "--job-id", &fresh, "--"];
        let noop = kit(&[]);
        args.extend(noop.iter().map(String::as_str));
        let (code, out, err) = w.run(&args);
        assert_eq!(code, 0, "{what}: {out}{err}");
    }
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["done"].as_u64(), c["skipped"].as_u64()),
        (Some(7), Some(0)),
        "{c}"
    );
    let mut ran = lines(&side);
    ran.sort();
    assert_eq!(ran, ["empty", "folder", "other", "renamed"]);
}

#[test]
fn text_a_folder_writer_plants_never_reaches_a_terminal_raw() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    // The job "rejected", with a reason that clears the screen, sets the
    // window title and forges a line of its own.
    let rejected = w.pc().join("archive").join("rejected");
    std::fs::rename(w.inbox(&id), rejected.join(format!("{id}.json"))).unwrap();
    let reason = json!({
        "kind": "job", "target": "PC", "rejectedAt": now_text(),
        "verdict": "bad-signature\u{1b}[2J",
        "message": format!("\u{1b}]0;PWNED\u{7}\n{id} on PC: done (exit 0) after 4.0s"),
    });
    std::fs::write(
        rejected.join(format!("{id}.json.reason.json")),
        reason.to_string(),
    )
    .unwrap();
    // A heartbeat with the same in its host and state.
    let mut beat = Beat::aged("listening", 0).doc();
    beat["host"] = json!("pc\u{1b}[2J\nPC: listener alive");
    beat["state"] = json!("listening\u{1b}]0;x\u{7}");
    std::fs::write(w.pc().join("listener.json"), beat.to_string()).unwrap();
    for args in [
        vec!["result", "--target", "PC", "--job-id", id.as_str()],
        vec!["status", "--target", "PC"],
        vec!["doctor", "--target", "PC"],
    ] {
        let (_, out, err) = w.run(&args);
        for (stream, text) in [("stdout", &out), ("stderr", &err)] {
            assert!(
                !text.contains(['\u{1b}', '\u{7}']),
                "{args:?} {stream} drives the terminal: {text:?}"
            );
            assert!(
                !text
                    .lines()
                    .any(|l| l.starts_with(&format!("{id} on PC: done"))
                        || l.starts_with("PC: listener alive")),
                "{args:?} {stream} shows a forged line: {text}"
            );
        }
    }
}

#[test]
fn a_forged_result_written_while_the_job_runs_gives_way_to_the_genuine_one() {
    let w = World::with_target();
    let id = uid("forged-late");
    let pidfile = scratch(&w, "pid");
    let spec = kit_spec(&["pid", p(&pidfile), "sleep", "1"]);
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    let _l = w.spawn_listener(&[]);
    read_pid(&pidfile, Duration::from_secs(10));
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
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "bad-signature");
}

#[test]
fn enqueue_takes_an_id_whose_only_trace_is_a_result_that_does_not_verify() {
    let w = World::with_target();
    let id = uid("planted");
    std::fs::write(w.result_path(&id), b"{}").unwrap();
    let mut args = vec!["enqueue", "--target", "PC", "--job-id", &id, "--"];
    let argv = kit(&[]);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
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
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let name = format!("{id}.json");
    std::fs::write(w.marker(&id), b"{\"jobId\": \"x\"}").unwrap();
    // Not a marker for this job: moved aside at once, not after settling.
    wait_until(Duration::from_secs(5), || w.rejected(&name).exists());
    assert_eq!(w.reason(&name)["kind"], "marker");
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
    let pid = read_pid(&pidfile, Duration::from_secs(10));
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
    assert_eq!(w.reason(&name)["verdict"], "malformed");
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
    read_pid(&pidfile, Duration::from_secs(10));
    std::fs::write(w.marker(&old), b"garbage").unwrap();
    let side = scratch(&w, "side");
    let argv = kit(&["append", p(&side), "new"]);
    let mut args = vec!["enqueue", "--target", "PC", "--interrupt", &old, "--"];
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.wait_result(&old, LIMIT)["error"], "cancelled");
    let new = out.lines().next().unwrap().trim().to_string();
    assert_eq!(w.wait_result(&new, LIMIT)["ok"], true);
    assert_eq!(lines(&side), ["new"]);
}

// Unix only: folders whose names differ only in case can stand side by side
// only where names are case-sensitive; Windows (and Wine, over any disk)
// takes `buILd` and `BUILD` for `build`, so no variant is ever made.
#[cfg(unix)]
#[test]
fn case_variant_folders_never_draw_the_listener_or_the_sender_away() {
    let w = World::new();
    w.make_target("build");
    // A folder writer adds spellings of the same name.
    w.make_target("buILd");
    w.make_target("BUILD");
    let side = scratch(&w, "side");
    let argv = kit(&["append", p(&side), "ran"]);
    let mut args = vec!["enqueue", "--target", "build", "--"];
    args.extend(argv.iter().map(String::as_str));
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

// Unix only, as above: on Windows `buILd` is `BUILD`, one folder.
#[cfg(unix)]
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
        &json!({"argv": kit(&[]), "label": label}),
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

/// A listener polling every 100 ms, both its streams in a log file (read
/// while it runs); returns it and the log's path.
fn listener_logging_to_a_file(w: &World) -> (ListenerGuard, std::path::PathBuf) {
    let log = scratch(w, "listener.log");
    let file = std::fs::File::create(&log).unwrap();
    let l = ListenerGuard {
        child: Some(
            w.bg_cmd()
                .args(["listen", "--poll-interval", "100ms"])
                .stdout(file.try_clone().unwrap())
                .stderr(file)
                .start(),
        ),
    };
    (l, log)
}

/// A heartbeat as another listener instance would write it, signed with
/// the fleet key.
fn foreign_beat(w: &World, state: &'static str, age_secs: i64) {
    Beat::aged(state, age_secs).write(w);
}

/// The same, written by a folder writer without the key: unsigned, or
/// with a signature that does not hold.
fn forged_beat(w: &World, state: &'static str, signed_badly: bool) {
    let b = Beat::aged(state, 0);
    let beat = if signed_badly {
        let mut d = b.doc();
        d["pid"] = json!(4343);
        d
    } else {
        b.fields()
    };
    std::fs::write(w.pc().join("listener.json"), beat.to_string()).unwrap();
}

#[test]
fn a_listener_refuses_to_start_while_another_instance_serves_the_target() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("two-listeners");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    foreign_beat(&w, "running", 5);
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(
        err.contains("BUSY") && err.contains("00112233aabbccdd") && err.contains("OTHER"),
        "{err}"
    );
    // It says when the other was last seen.
    assert!(
        ["5", "6"]
            .iter()
            .any(|s| err.contains(&format!("last heartbeat {s}."))),
        "{err}"
    );
    assert!(lines(&side).is_empty(), "a job ran beside another listener");
    // Gone quiet for longer than a heartbeat counts: this one may start.
    foreign_beat(&w, "running", 120);
    assert_eq!(w.listen_once(&[])["done"], 1);
    // And a listener that said it stopped is no rival either.
    foreign_beat(&w, "stopped", 1);
    assert_eq!(w.listen_once(&[])["done"], 0);
    assert_eq!(lines(&side), ["ran"]);
}

#[test]
fn two_listeners_with_their_own_state_started_together_run_each_job_once() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let ids: Vec<String> = (0..8).map(|i| uid(&format!("race{i}"))).collect();
    for id in &ids {
        let spec = kit_spec(&["append", p(&side), id, "sleep", "0.1"]);
        w.write_job("PC", id, "PC", &now_text(), &spec);
    }
    let start = |state: &str| {
        ListenerGuard::spawn(
            w.bg_cmd()
                .env("FLEET_DISPATCH_STATE_DIR", w.dir.path().join(state))
                .args(["listen", "--once"]),
        )
    };
    let (a, b) = (start("state-a"), start("state-b"));
    let (ca, oa, ea) = a.wait(LIMIT);
    let (cb, ob, eb) = b.wait(LIMIT);
    for (code, out, err) in [(ca, &oa, &ea), (cb, &ob, &eb)] {
        assert!(code == 0 || code == 75, "{code}: {out}{err}");
    }
    let mut ran = lines(&side);
    ran.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(ran, want, "each job once: a={oa}{ea} b={ob}{eb}");
}

#[test]
fn a_running_listener_that_sees_another_instance_stops_starting_jobs_until_it_stops() {
    let w = World::with_target();
    let (_l, log) = listener_logging_to_a_file(&w);
    wait_until(Duration::from_secs(10), || {
        w.pc().join("listener.json").exists()
    });
    foreign_beat(&w, "listening", 0);
    // The listener looks for another instance once per poll interval, so a
    // job queued before its next look may still start: queue it once the
    // other instance was seen, then let three more polls pass.
    let refusals = || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("not starting jobs")
            .count()
    };
    wait_until(Duration::from_secs(5), || refusals() >= 1);
    let side = scratch(&w, "side");
    let id = uid("held");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let queued_at = refusals();
    wait_until(Duration::from_secs(5), || refusals() >= queued_at + 3);
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(said.contains("00112233aabbccdd"), "{said}");
    assert!(
        lines(&side).is_empty(),
        "a job ran beside another listener: {said}"
    );
    // A "stopped" only a folder writer signed does not end the wait.
    forged_beat(&w, "stopped", false);
    let forged_at = refusals();
    wait_until(Duration::from_secs(5), || refusals() >= forged_at + 3);
    assert!(
        lines(&side).is_empty(),
        "a forged stopped beat let a job run beside another listener"
    );
    foreign_beat(&w, "stopped", 0);
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("starting jobs again")
    );
}

#[test]
fn a_forged_fresh_heartbeat_neither_blocks_a_start_nor_stops_a_running_listener() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // Unsigned (what an older listener or a folder writer leaves), then
    // signed but altered: `listen` starts and runs the job either way.
    for (i, badly) in [false, true].into_iter().enumerate() {
        let id = uid(&format!("forged-beat{i}"));
        w.write_job("PC", &id, "PC", &now_text(), &appends(&side, &id));
        forged_beat(&w, "running", badly);
        assert_eq!(w.listen_once(&[])["done"], 1);
    }
    assert_eq!(lines(&side).len(), 2);
    a_planted_beat_counts_for_nothing(&w, &side, || forged_beat(&w, "listening", false));
}

/// With a beat that must not count planted in PC's folder by `plant`:
/// `status` calls it neither verified nor alive, and a running listener
/// that finds it (planted again over the listener's own) starts the next
/// job, appending "after" to `side`.
fn a_planted_beat_counts_for_nothing(w: &World, side: &Path, plant: impl Fn()) {
    plant();
    let (code, out, err) = w.run(&["--json", "status", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let l = &v["targets"][0]["listener"];
    assert_eq!(
        (&l["verified"], &l["alive"]),
        (&json!(false), &json!(false)),
        "{v}"
    );
    let (_l, log) = listener_logging_to_a_file(w);
    let ours = w.pc().join("listener.json");
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&ours)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
            .is_some_and(|b| b["target"] == "PC" && b["sig"].is_string())
    });
    plant();
    let id = uid("after-planted-beat");
    w.write_job("PC", &id, "PC", &now_text(), &appends(side, "after"));
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["ok"], true, "{r}");
    let said = std::fs::read_to_string(&log).unwrap();
    assert!(!said.contains("not starting jobs"), "{said}");
}

#[test]
fn another_targets_genuine_heartbeat_copied_in_neither_blocks_a_start_nor_stops_a_running_listener()
{
    let w = World::with_target();
    w.make_target("LAPTOP");
    let _laptop =
        ListenerGuard::spawn(
            w.bg_cmd_as("LAPTOP")
                .args(["listen", "--poll-interval", "100ms"]),
        );
    let theirs = w.root.join("LAPTOP").join("listener.json");
    let signed = |p: &Path| std::fs::read_to_string(p).is_ok_and(|t| t.contains("\"sig\""));
    wait_until(Duration::from_secs(10), || signed(&theirs));
    // A folder writer copies LAPTOP's fresh, genuinely signed beat into PC.
    let ours = w.pc().join("listener.json");
    let copy = || {
        let _ = std::fs::copy(&theirs, &ours);
    };
    copy();
    let side = scratch(&w, "side");
    let id = uid("copied-beat");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "once"));
    assert_eq!(w.listen_once(&[])["done"], 1, "a start was blocked");
    a_planted_beat_counts_for_nothing(&w, &side, copy);
    assert_eq!(lines(&side), ["once", "after"]);
}

/// This world's state folder for PC, as `dir` names the state directory.
fn state_of(dir: &Path) -> std::path::PathBuf {
    dir.join("pc")
}

#[test]
fn a_listener_with_our_instance_id_but_another_run_is_a_rival() {
    let w = World::with_target();
    // A first start makes the instance id; what it leaves says stopped.
    assert_eq!(w.listen_once(&[])["done"], 0);
    let instance = std::fs::read_to_string(state_of(&w.state).join("instance")).unwrap();
    let instance = instance.trim();
    // A clone of this disk serves PC elsewhere: our instance, its own run.
    Beat {
        instance: instance.to_string(),
        run: "feedfacefeedface".to_string(),
        ..Beat::aged("listening", 3)
    }
    .write(&w);
    let side = scratch(&w, "side");
    let id = uid("clone");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(
        err.contains(instance) && err.contains("last heartbeat"),
        "{err}"
    );
    assert!(lines(&side).is_empty(), "a job ran beside a clone");
}

#[test]
fn a_listener_restarted_after_a_hard_kill_is_not_its_own_rival() {
    let w = World::with_target();
    let g = w.spawn_listener(&[]);
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(w.pc().join("listener.json")).is_ok_and(|t| t.contains("\"sig\""))
    });
    kill_hard(g.pid());
    let (code, ..) = g.wait(LIMIT);
    assert_ne!(code, 0);
    // Its last beat is fresh and says listening: its own, not a rival's.
    assert!(
        std::fs::read_to_string(w.pc().join("listener.json"))
            .unwrap()
            .contains("\"listening\"")
    );
    assert_eq!(w.listen_once(&[])["done"], 0);
}

#[test]
fn two_listeners_from_a_copied_state_directory_never_run_a_job_twice() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let _a = w.spawn_listener(&[]);
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(w.pc().join("listener.json")).is_ok_and(|t| t.contains("\"sig\""))
    });
    // The second machine's state directory is a copy of the first's.
    let copy = w.dir.path().join("state-copy");
    std::fs::create_dir_all(state_of(&copy)).unwrap();
    for f in ["instance", "last-heartbeat"] {
        let _ = std::fs::copy(state_of(&w.state).join(f), state_of(&copy).join(f));
    }
    let ids: Vec<String> = (0..4).map(|i| uid(&format!("copied{i}"))).collect();
    for id in &ids {
        let spec = kit_spec(&["append", p(&side), id, "sleep", "0.1"]);
        w.write_job("PC", id, "PC", &now_text(), &spec);
    }
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_STATE_DIR", &copy)
            .args(["listen", "--once"]),
    );
    assert_eq!(code, 75, "the copy must refuse: {out}{err}");
    for id in &ids {
        assert_eq!(w.wait_result(id, LIMIT)["ok"], true);
    }
    let mut ran = lines(&side);
    ran.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(ran, want, "each job once");
}

/// Holds `<root>/PC/listener.lock` as a process without the key could
/// (a local user, an SMB client of the share).
fn squat_lock(w: &World) -> std::fs::File {
    let f = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(w.pc().join("listener.lock"))
        .unwrap();
    f.try_lock().unwrap();
    f
}

#[test]
fn a_squatted_folder_lock_is_named_as_unbacked_and_a_backed_one_names_the_listener() {
    let w = World::with_target();
    let squat = squat_lock(&w);
    let unbacked = "no heartbeat signed with the fleet key backs it";
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(
        err.contains(unbacked) && err.contains("listener.lock"),
        "{err}"
    );
    // A forged beat does not back it either.
    forged_beat(&w, "listening", false);
    let (code, _, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75);
    assert!(err.contains(unbacked), "{err}");
    // A verified beat of another instance does: it is named.
    foreign_beat(&w, "listening", 2);
    let (code, _, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75);
    assert!(
        err.contains("00112233aabbccdd") && err.contains("from this file system"),
        "{err}"
    );
    // Once the holder lets go, the lane starts (the forged beat is ignored).
    drop(squat);
    forged_beat(&w, "listening", false);
    assert_eq!(w.listen_once(&[])["done"], 0);
}

/// Fills every numbered slot `archive/rejected/` keeps for `name` (and its
/// reasons), as a folder writer can with empty files.
fn fill_rejected_slots(w: &World, name: &str) {
    let rejected = w.pc().join("archive").join("rejected");
    std::fs::create_dir_all(&rejected).unwrap();
    for n in 0..1000 {
        let stored = if n == 0 {
            name.to_string()
        } else {
            format!("{name}.{n}")
        };
        std::fs::write(rejected.join(&stored), b"").unwrap();
        std::fs::write(rejected.join(format!("{stored}.reason.json")), b"").unwrap();
    }
}

#[test]
fn filling_every_rejected_slot_blocks_no_cancel_no_result_and_no_start() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // A genuine cancel still lands on junk in the marker's place.
    let cancelled = uid("cancelled");
    w.write_job(
        "PC",
        &cancelled,
        "PC",
        &now_text(),
        &appends(&side, "cancelled"),
    );
    fill_rejected_slots(&w, &format!("{cancelled}.json"));
    std::fs::write(w.marker(&cancelled), b"junk").unwrap();
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &cancelled]);
    assert_eq!(code, 0, "{out}{err}");
    // A genuine result still takes the place of junk in results/.
    let placed = uid("placed");
    w.write_job("PC", &placed, "PC", &now_text(), &appends(&side, "placed"));
    fill_rejected_slots(&w, &format!("{placed}.json"));
    std::fs::write(w.result_path(&placed), b"junk").unwrap();
    // And a folder in the place of the listener's lock file still lets it start.
    let lock = w.pc().join("listener.lock");
    let _ = std::fs::remove_file(&lock);
    std::fs::create_dir_all(lock.join("x")).unwrap();
    fill_rejected_slots(&w, "listener.lock");
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["done"].as_u64(), c["cancelled"].as_u64()),
        (Some(1), Some(1)),
        "{c}"
    );
    assert_eq!(lines(&side), ["placed"]);
    assert_eq!(w.result(&cancelled)["error"], "cancelled-before-start");
    assert!(
        result_sig_ok(&w.result(&placed)),
        "the genuine result is in place"
    );
    assert!(lock.is_file(), "the lock file was made again");
}

#[test]
fn a_planted_longer_name_never_draws_a_cancel_of_a_job_still_on_its_way() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // The job is not here yet (sync lags); a folder writer plants a name
    // its id is the start of, in the archive and in the inbox.
    let id = "20261202-160000-0123456789abcdef";
    let rejected = w.pc().join("archive").join("rejected");
    std::fs::create_dir_all(&rejected).unwrap();
    std::fs::write(rejected.join(format!("{id}f.json")), b"x").unwrap();
    // Sent from elsewhere, so --force (an unknown id is refused without).
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", id, "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker(id).is_file(), "the marker has the job's own name");
    std::fs::write(w.inbox(&format!("{id}e")), b"x").unwrap();
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", id]);
    assert_eq!(code, 66, "a whole id is never ambiguous: {out}{err}");
    // The job arrives, and is cancelled before it starts.
    std::fs::remove_file(w.inbox(&format!("{id}e"))).unwrap();
    w.write_job("PC", id, "PC", &now_text(), &appends(&side, "ran"));
    w.listen_once(&[]);
    assert!(lines(&side).is_empty(), "the job ran");
    assert_eq!(w.result(id)["error"], "cancelled-before-start");
}

/// A well-formed result for `id` claiming success, signed with nothing.
fn forged_result(id: &str) -> String {
    json!({
        "v": 1, "jobId": id, "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}", "sig": "0".repeat(64),
    })
    .to_string()
}

/// `results/<id>.json` as a message names it.
fn result_name(id: &str) -> String {
    Path::new("results")
        .join(format!("{id}.json"))
        .display()
        .to_string()
}

#[test]
fn a_forged_result_never_shows_a_queued_job_with_a_pending_cancel_as_finished() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker(&id).exists());
    std::fs::write(w.result_path(&id), forged_result(&id)).unwrap();
    let named = result_name(&id);

    let (code, out, err) = w.run(&["--json", "status", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let t = &v["targets"][0];
    assert_eq!(t["queuedCount"], 1, "{t}");
    let c = &t["cancelPending"][0];
    assert_eq!(c["job"], "queued", "{c}");
    let ignored = c["ignoredResult"].as_str().unwrap_or_default();
    assert!(
        ignored.contains(&named) && ignored.contains("bad-signature"),
        "the forged file is named: {c}"
    );

    let (code, out, err) = w.run(&["status", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("cancel   {id} (job queued)")),
        "{out}"
    );
    assert!(!out.contains("(job finished)"), "{out}");
    assert!(out.contains(&named), "the forged file is named: {out}");

    let (code, out, err) = w.run(&["--json", "doctor", "--target", "PC"]);
    assert_eq!(code, 1, "a forged result is a warning: {out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "cancels")
        .unwrap_or_else(|| panic!("no cancels check: {v:#}"));
    let (msg, hint) = (
        c["message"].as_str().unwrap(),
        c["hint"].as_str().unwrap_or_default(),
    );
    assert!(
        msg.contains(&format!("{id} (queued)")) && msg.contains(&named),
        "{c}"
    );
    assert!(!msg.contains("finished") && !hint.contains("sweep"), "{c}");
    let (_, out, _) = w.run(&["doctor", "--target", "PC"]);
    assert!(!out.contains("markers for finished jobs"), "{out}");
    assert!(out.contains(&named), "{out}");

    // `result` says what the job is, and names the file it ignored.
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(err.contains("queued") && err.contains(&named), "{err}");
}

#[test]
fn a_forged_result_ends_no_wait_and_the_genuine_outcome_does() {
    let w = World::with_target();
    let queued = w.enqueue(&[], &kit(&["exit", "3"]));
    std::fs::write(w.result_path(&queued), forged_result(&queued)).unwrap();
    let waiting = ListenerGuard::spawn(w.bg_cmd().args([
        "result",
        "--target",
        "PC",
        "--job-id",
        &queued,
        "--wait",
        "--wait-timeout",
        "60s",
    ]));
    // An id whose forged result is planted before the job is even sent.
    let ahead = uid("forged-ahead");
    std::fs::write(w.result_path(&ahead), forged_result(&ahead)).unwrap();
    let argv = kit(&["exit", "4"]);
    let mut args = vec![
        "enqueue",
        "--target",
        "PC",
        "--job-id",
        &ahead,
        "--wait",
        "--wait-timeout",
        "60s",
        "--",
    ];
    args.extend(argv.iter().map(String::as_str));
    let sending = ListenerGuard::spawn(w.bg_cmd().args(&args));
    wait_until(LIMIT, || w.inbox(&ahead).exists());
    std::thread::sleep(Duration::from_secs(2));
    let mut waits = [waiting, sending];
    for g in &mut waits {
        assert!(
            g.child.as_mut().unwrap().try_wait().unwrap().is_none(),
            "a forged result ended a wait while the job was queued"
        );
    }
    let _l = w.spawn_listener(&[]);
    let [waiting, sending] = waits;
    for (g, id, code) in [(waiting, &queued, 3), (sending, &ahead, 4)] {
        let (got, out, err) = g.wait(LIMIT);
        assert_eq!(
            got, code,
            "{id}: the genuine outcome ends the wait: {out}{err}"
        );
        assert!(
            err.contains("warning") && err.contains(&result_name(id)),
            "the forged file is named: {err}"
        );
        assert!(result_sig_ok(&w.result(id)));
    }
}

#[test]
fn a_clone_of_this_state_directory_is_named_as_such_by_its_run() {
    let w = World::with_target();
    assert_eq!(w.listen_once(&[])["done"], 0);
    let instance = std::fs::read_to_string(state_of(&w.state).join("instance")).unwrap();
    let instance = instance.trim();
    // The clone's beat: our instance id, its own run.
    Beat {
        instance: instance.to_string(),
        run: "feedfacefeedface".to_string(),
        ..Beat::aged("listening", 3)
    }
    .write(&w);
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(
        err.contains("a copy of this listener's state directory"),
        "{err}"
    );
    assert!(err.contains("run feedfacefeedface"), "{err}");
    let instance_file = state_of(&w.state).join("instance");
    assert!(err.contains(&instance_file.display().to_string()), "{err}");
    // Another instance is still another listener.
    Beat {
        instance: "0123456789abcdef".to_string(),
        ..Beat::aged("listening", 3)
    }
    .write(&w);
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(!err.contains("copy of this"), "{err}");
    assert!(err.contains("instance 0123456789abcdef"), "{err}");
}
