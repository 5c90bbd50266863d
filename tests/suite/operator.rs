//! What an operator meets at the shell: stdout carries only the answer,
//! every command ends quietly on a closed pipe and the demo cleans up
//! however it ends; a job the target rejected is reported as rejected, at
//! once, with a distinct exit status; plain `result` exits by the job.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// The demo, with its temp folder pointed into the test's world (TMPDIR on
/// Unix, TMP and TEMP on Windows).
mod demo {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::time::Duration;

    use crate::util::*;

    /// `demo` with its temp dir in `tmp`, so the test can see what it leaves
    /// behind.
    fn demo_cmd(w: &World, tmp: &std::path::Path) -> std::process::Command {
        let mut c = w.bg_cmd();
        c.env("TMPDIR", tmp)
            .env("TMP", tmp)
            .env("TEMP", tmp)
            .arg("demo");
        c
    }

    /// The processes whose command line or environment names `dir`: the
    /// demo's listener and jobs run with their root inside it. Linux only
    /// (`/proc`); elsewhere none are found.
    fn processes_within(dir: &std::path::Path) -> Vec<String> {
        let needle = dir.to_str().unwrap().as_bytes();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        procs
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            })
            .filter(|e| {
                ["environ", "cmdline"].iter().any(|f| {
                    std::fs::read(e.path().join(f))
                        .is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
                })
            })
            .map(|e| {
                let pid = e.file_name().to_string_lossy().into_owned();
                let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
                format!(
                    "{pid}: {}",
                    String::from_utf8_lossy(&cmd).replace('\0', " ")
                )
            })
            .collect()
    }

    /// Fails unless every process of the demo in `tmp` is gone (a moment
    /// is allowed for one that is exiting).
    fn no_process_left(tmp: &std::path::Path) {
        let mut left = Vec::new();
        let gone = (0..50).any(|_| {
            left = processes_within(tmp);
            left.is_empty() || {
                std::thread::sleep(Duration::from_millis(100));
                false
            }
        });
        assert!(gone, "the demo left processes behind: {left:#?}");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn processes_within_finds_a_process_running_in_the_folder() {
        let w = World::new();
        let tmp = scratch(&w, "tmp");
        let child = std::process::Command::new(jobkit())
            .args(["sleep", "30"])
            .env("FLEET_DISPATCH_ROOT", tmp.join("root"))
            .start();
        let guard = ListenerGuard { child: Some(child) };
        assert!(
            !processes_within(&tmp).is_empty(),
            "the scan misses a live process"
        );
        drop(guard);
        no_process_left(&tmp);
    }

    #[test]
    fn demo_into_a_closed_pipe_ends_quietly_and_leaves_nothing_behind() {
        let w = World::new();
        let tmp = scratch(&w, "tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = demo_cmd(&w, &tmp)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .start();
        // Read a few lines, as `| head -3` would, then go away.
        let mut out = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..3 {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
        }
        drop(out);
        let (code, _, err) = ListenerGuard { child: Some(child) }.wait(Duration::from_secs(30));
        assert_eq!(code, 0, "{err}");
        assert!(!err.contains("panicked"), "{err}");
        no_process_left(&tmp);
        assert_eq!(
            files(&tmp),
            Vec::<String>::new(),
            "the demo left its folder behind"
        );
    }

    // Unix only: Ctrl-C is SIGINT sent to the demo by pid; Windows has no
    // signal to one process, and Wine 8 cannot deliver the console's
    // CTRL_C_EVENT.
    #[cfg(unix)]
    #[test]
    fn demo_stopped_by_ctrl_c_exits_130_and_leaves_nothing_behind() {
        let w = World::new();
        let tmp = scratch(&w, "tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let mut child = demo_cmd(&w, &tmp)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .start();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        // Once the listener runs, interrupt.
        let mut line = String::new();
        while !line.contains("3. A job that succeeds") {
            line.clear();
            assert!(out.read_line(&mut line).unwrap() > 0, "demo ended early");
        }
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
        let (code, _, _) = ListenerGuard { child: Some(child) }.wait(Duration::from_secs(30));
        assert_eq!(code, 130, "demo did not stop on Ctrl-C with 130");
        no_process_left(&tmp);
        assert_eq!(
            files(&tmp),
            Vec::<String>::new(),
            "the demo left its folder behind"
        );
    }
}

#[test]
fn enqueue_interrupt_prints_only_the_new_id_on_stdout() {
    let w = World::with_target();
    let old = w.enqueue(&[], &["true"]);
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        &old,
        "--",
        "true",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(out.lines().count(), 1, "stdout: {out}");
    assert!(w.inbox(out.trim()).exists(), "stdout is not the id: {out}");
    assert!(err.contains(&format!("cancel of {old} requested")), "{err}");
}

fn foreign_job(w: &World, id: &str) {
    std::fs::write(w.inbox(id), foreign_job_text(id)).unwrap();
}

#[test]
fn a_rejected_job_is_reported_as_rejected_with_both_key_fingerprints() {
    let w = World::with_target();
    let id = uid("other-key");
    foreign_job(&w, &id);
    assert_eq!(w.listen_once(&[])["rejected"], 1);
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 76, "{out}{err}");
    assert!(
        err.contains("rejected by PC") && err.contains("bad-signature"),
        "{err}"
    );
    // The listener judged with the same key as this machine's: no mismatch
    // to report; the verdict alone says the file's signature was wrong.
    assert!(!err.contains("keys differ"), "{err}");
    let (code, out, _) = w.run(&["--json", "result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 76);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["state"], "rejected", "{v}");
    assert_eq!(v["rejected"]["verdict"], "bad-signature", "{v}");
    // A sender whose key differs from the target's is told so.
    let other = w.dir.path().join("other.key");
    write_private(&other, &"ab".repeat(32));
    let (code, _, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &other)
            .args(["result", "--target", "PC", "--job-id", &id]),
    );
    assert_eq!(code, 76, "{err}");
    assert!(err.contains("keys differ"), "{err}");
}

#[test]
fn a_wait_ends_at_once_when_the_target_rejects_the_job() {
    let w = World::with_target();
    let id = uid("wait-rejected");
    foreign_job(&w, &id);
    let _l = w.spawn_listener(&[]);
    let started = Instant::now();
    let (code, out, err) = w.run(&[
        "result",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "60s",
    ]);
    assert_eq!(code, 76, "{out}{err}");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    assert!(err.contains("rejected by PC"), "{err}");
}

#[test]
fn plain_result_exits_by_the_jobs_outcome_and_an_unfinished_job_is_not_an_error() {
    let w = World::with_target();
    let queued = w.enqueue(&[], &kit(&[]));
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &queued]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(err.contains("queued") && !err.contains("error:"), "{err}");
    let failing = w.enqueue(&[], &kit(&["exit", "1"]));
    w.listen_once(&[]);
    let (code, _, _) = w.run(&["result", "--target", "PC", "--job-id", &queued]);
    assert_eq!(code, 0);
    let (code, out, _) = w.run(&["result", "--target", "PC", "--job-id", &failing]);
    assert_eq!(code, 1, "{out}");
    let (code, _, err) = w.run(&["result", "--target", "PC", "--job-id", "never-seen"]);
    assert_eq!(code, 66, "{err}");
}

#[test]
fn a_wait_says_when_the_target_has_no_listener() {
    let w = World::with_target();
    let id = w.enqueue(&[], &["true"]);
    let (code, _, err) = w.run(&[
        "result",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "7s",
    ]);
    assert_eq!(code, 124, "{err}");
    assert!(err.contains("no listener has ever run for PC"), "{err}");
}

/// `result --wait --wait-timeout 7s` on a queued job of PC's: long enough
/// for the wait to look at the listener once it makes no progress.
fn wait_on_a_queued_job(w: &World) -> (i32, String) {
    let id = w.enqueue(&[], &kit(&[]));
    let (code, _, err) = w.run(&[
        "result",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "7s",
    ]);
    (code, err)
}

#[test]
fn a_wait_says_when_the_targets_heartbeat_is_stale_and_how_old() {
    let w = World::with_target();
    Beat::aged("listening", 600).write(&w);
    let (code, err) = wait_on_a_queued_job(&w);
    assert_eq!(code, 124, "{err}");
    assert!(
        err.contains("PC's listener has not been heard from for 10m"),
        "{err}"
    );
    assert!(
        err.contains("s (its machine may be off, or sync lags)"),
        "{err}"
    );
    assert!(!err.contains("no listener has ever run"), "{err}");
}

#[test]
fn a_wait_says_when_the_targets_listener_stopped() {
    let w = World::with_target();
    Beat::aged("stopped", 20).write(&w);
    let (code, err) = wait_on_a_queued_job(&w);
    assert_eq!(code, 124, "{err}");
    assert!(err.contains("PC's listener stopped "), "{err}");
    assert!(
        err.contains("s ago; nothing runs until it is started again"),
        "{err}"
    );
    assert!(!err.contains("not been heard from"), "{err}");
}

#[test]
fn keygen_and_status_show_the_key_fingerprint() {
    let w = World::new();
    let key = w.dir.path().join("new.key");
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &key)
            .args(["--json", "keygen"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let fp = v["fingerprint"].as_str().unwrap();
    assert_eq!(fp.len(), 8, "{v}");
    assert!(fp.bytes().all(|b| b.is_ascii_hexdigit()));
    let text = std::fs::read_to_string(&key).unwrap();
    assert!(!text.contains(fp), "the fingerprint is a piece of the key");
    // The heartbeat of a listener using that key carries the fingerprint
    // keygen printed, and status shows this machine's the same.
    w.make_target("PC");
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &key)
            .args(["--json", "listen", "--once"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let beat: Value =
        serde_json::from_str(&std::fs::read_to_string(w.pc().join("listener.json")).unwrap())
            .unwrap();
    assert_eq!(beat["keyFingerprint"], fp, "{beat}");
    let (_, out, _) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &key)
            .args(["--json", "status", "--target", "PC"]),
    );
    let s: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(s["targets"][0]["listener"]["keyFingerprint"], fp, "{s}");
    assert_eq!(s["keyFingerprint"], fp, "{s}");
}

#[test]
fn every_bad_value_is_a_validation_error_and_writes_nothing() {
    let w = World::with_target();
    let before = files(&w.root);
    for bad in [
        vec!["--priority", "low"],
        vec!["--timeout", "5x"],
        vec!["--timeout", "0s"],
        vec!["--timeout", "30m1h"],
        vec!["--cwd", "repo/sub"],
        vec!["--cwd", "~/repo"],
        // Past what every listener accepts: refused here, not by the target.
        vec!["--timeout", "4000d"],
        vec!["--grace", "4000d"],
        // The word that names the last job enqueued.
        vec!["--job-id", "last"],
    ] {
        let mut args = vec!["enqueue", "--target", "PC"];
        args.extend_from_slice(&bad);
        args.extend_from_slice(&["--", "true"]);
        let (code, out, err) = w.run(&args);
        assert_eq!(code, 64, "{bad:?}: {out}{err}");
        // In the SPEC's form, a value clap refuses (`--priority low`) too.
        assert!(
            err.starts_with("fleet-dispatch: error: VALIDATION_ERROR: "),
            "{bad:?}: {err}"
        );
        assert_eq!(files(&w.root), before, "{bad:?} wrote something");
    }
    let (code, _, err) = w.run(&["--durability", "sometimes", "status"]);
    assert_eq!(code, 64, "{err}");
}

#[test]
fn durations_take_compounds_in_falling_order() {
    let w = World::with_target();
    let id = w.enqueue(&["--timeout", "1h30m", "--grace", "1m30s"], &["true"]);
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.inbox(&id)).unwrap()).unwrap();
    let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
    assert_eq!(spec["timeoutSec"], 5400, "{spec}");
    assert_eq!(spec["graceSec"], 90, "{spec}");
}

#[test]
fn a_program_given_without_dashes_gets_a_hint() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "ls", "-la"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("after `--`"), "{err}");
}

#[test]
fn reading_commands_never_create_a_targets_folder() {
    let w = World::with_target();
    for args in [
        vec!["status", "--target", "LAPTOP"],
        vec!["result", "--target", "LAPTOP", "--job-id", "some-id"],
        vec!["sweep", "--target", "LAPTOP"],
    ] {
        let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_FLEET", "PC,LAPTOP").args(&args));
        assert!(code == 0 || code == 66, "{args:?}: {code} {out}{err}");
        assert!(
            !w.root.join("LAPTOP").exists(),
            "{args:?} made LAPTOP's folder"
        );
    }
    // Writing to a fleet member makes the one folder it writes into.
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_FLEET", "PC,LAPTOP")
            .args(["enqueue", "--target", "LAPTOP", "--", "true"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        w.root
            .join("LAPTOP/inbox")
            .join(format!("{}.json", out.trim()))
            .exists()
    );
}

#[test]
fn with_json_a_refused_command_line_is_a_json_validation_error() {
    let w = World::with_target();
    for args in [
        vec![
            "--json",
            "enqueue",
            "--target",
            "PC",
            "--priority",
            "low",
            "--",
            "true",
        ],
        vec![
            "enqueue",
            "--json",
            "--target",
            "PC",
            "--timeout",
            "5x",
            "--",
            "true",
        ],
        vec!["--json", "status", "--no-such-flag"],
        vec!["--json", "enqueue", "--target", "PC", "ls", "-la"],
    ] {
        let (code, out, err) = w.run(&args);
        assert_eq!(code, 64, "{args:?}: {out}{err}");
        assert_eq!(err, "", "{args:?}: clap's text on stderr");
        let v: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|_| panic!("{args:?}: not JSON: {out}"));
        assert_eq!(v["error"]["code"], "VALIDATION_ERROR", "{v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(!message.is_empty() && !message.contains('\n'), "{v}");
    }
    let (_, out, _) = w.run(&[
        "--json",
        "enqueue",
        "--target",
        "PC",
        "--priority",
        "low",
        "--",
        "true",
    ]);
    assert!(
        out.contains("low"),
        "the message names the bad value: {out}"
    );
    let (_, out, _) = w.run(&["--json", "enqueue", "--target", "PC", "ls", "-la"]);
    assert!(
        out.contains("after `--`"),
        "the hint is in the message: {out}"
    );
    // A `--json` after `--` is the job's own argument: the refusal stays text.
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--priority",
        "low",
        "--",
        "prog",
        "--json",
    ]);
    assert_eq!((code, out.as_str()), (64, ""), "{err}");
    assert!(err.contains("--priority"), "{err}");
    // Help stays help.
    let (code, out, _) = w.run(&["--json", "status", "--help"]);
    assert_eq!(code, 0);
    assert!(out.contains("Usage"), "{out}");
}

#[test]
fn a_bad_value_from_a_variable_is_refused_naming_the_variable() {
    let w = World::with_target();
    for (var, value) in [
        ("FLEET_DISPATCH_SLOTS", "0"),
        ("FLEET_DISPATCH_POLL_INTERVAL", "0s"),
        ("FLEET_DISPATCH_MAX_JOB_AGE", "0s"),
    ] {
        let (code, out, err) = output(w.cmd().env(var, value).args(["listen", "--once"]));
        assert_eq!(code, 64, "{var}: {out}{err}");
        assert!(
            err.contains(&format!("VALIDATION_ERROR: {var}: ")),
            "{var}: {err}"
        );
    }
    // Typed as a flag, the flag is named, whatever the variable says.
    let (code, _, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_SLOTS", "2")
            .args(["listen", "--once", "--slots", "0"]),
    );
    assert_eq!(code, 64, "{err}");
    assert!(!err.contains("FLEET_DISPATCH_SLOTS"), "{err}");
    assert!(err.contains("--slots"), "{err}");
}
