//! `listen` (docs/protocol.md §3, §6, §7): the real binary draining
//! a real inbox, running real processes, writing signed results, and refusing
//! what must never run. Jobs are minted by `util::sign` unless the test
//! is about `enqueue`'s own path into the listener.
//!
//! Every job that must *not* run appends to a side-effect file when it does,
//! so "never run" is checked, not assumed.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

// ---------------------------------------------------------------- helpers

/// The key's text as it would appear if it leaked.
fn key_hex() -> &'static str {
    VECTOR_KEY.trim_end()
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The envelope of a job from `LAPTOP` signed with the fleet key.
fn job_value(id: &str, target: &str, created_at: &str, spec: &Value) -> Value {
    job_doc(
        id,
        target,
        created_at,
        "LAPTOP",
        &spec.to_string(),
        Signer::Fleet,
    )
}

fn job_bytes(id: &str, target: &str, created_at: &str, spec: &Value) -> Vec<u8> {
    job_value(id, target, created_at, spec)
        .to_string()
        .into_bytes()
}

/// Asserts the six docs/protocol.md §7 counters: those named have their value, the rest 0.
fn assert_counters(c: &Value, expect: &[(&str, u64)]) {
    for k in [
        "done",
        "failed",
        "cancelled",
        "deferred",
        "rejected",
        "skipped",
    ] {
        let want = expect.iter().find(|(n, _)| *n == k).map_or(0, |(_, v)| *v);
        assert_eq!(c[k], want, "counter {k} in {c}");
    }
}

/// The `.reason.json` beside a rejected input.
fn reason(w: &World, name: &str) -> Value {
    let p = w.rejected(&format!("{name}.reason.json"));
    let text =
        std::fs::read_to_string(&p).unwrap_or_else(|_| panic!("no reason file {}", p.display()));
    serde_json::from_str(&text).unwrap()
}

/// Asserts a rejection: input moved aside with a reason naming `verdict`,
/// never a result.
fn assert_rejected(w: &World, name: &str, verdict: &str) {
    assert!(
        std::fs::symlink_metadata(w.rejected(name)).is_ok(),
        "{name} not in archive/rejected: {:?}",
        files(&w.pc())
    );
    let r = reason(w, name);
    assert_eq!(r["verdict"], verdict, "{r}");
    assert!(r["message"].as_str().is_some_and(|m| !m.is_empty()), "{r}");
    assert!(is_spec_time(r["rejectedAt"].as_str().unwrap_or("")), "{r}");
    assert!(
        std::fs::symlink_metadata(w.pc().join("inbox").join(name)).is_err(),
        "{name} still in the inbox"
    );
}

/// No result and no archived copy exist for `id`: it never ran.
fn assert_never_ran(w: &World, id: &str) {
    assert!(!w.result_path(id).exists(), "a result exists for {id}");
    assert!(!w.done(id).exists(), "{id} is in archive/done");
    assert!(
        !w.pc()
            .join("logs")
            .join(format!("{id}.stdout.log"))
            .exists(),
        "{id} has a log"
    );
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` (docs/protocol.md §2).
fn is_spec_time(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 24
        && b.iter().enumerate().all(|(i, &c)| match i {
            4 | 7 => c == b'-',
            10 => c == b'T',
            13 | 16 => c == b':',
            19 => c == b'.',
            23 => c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// Recomputes a result's signature with the independent signer (docs/protocol.md §5.3).
fn assert_signed(r: &Value) {
    assert!(result_sig_ok(r), "result signature does not verify: {r}");
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn log_text(w: &World, id: &str, stream: &str) -> String {
    String::from_utf8_lossy(&read(
        &w.pc().join("logs").join(format!("{id}.{stream}.log")),
    ))
    .into_owned()
}

/// Enqueues a job that appends a line to `side` each time it starts (after
/// the `prelude` steps), then sleeps: `lines(side)` counts its runs.
fn enqueue_counted(w: &World, flags: &[&str], prelude: &[&str], side: &Path) -> String {
    let mut steps = prelude.to_vec();
    steps.extend(["append", path_str(side), "x", "sleep", "30"]);
    w.enqueue(flags, &kit(&steps))
}

/// Live processes carrying `FLEET_DISPATCH_JOB_ID=<id>`: a job's tree.
#[cfg(unix)]
fn job_pids(id: &str) -> Vec<i32> {
    let needle = format!("FLEET_DISPATCH_JOB_ID={id}");
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()) && alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// Spawns a loop listener with exactly these arguments (after the global
/// ones) and waits for its heartbeat.
fn spawn(w: &World, args: &[&str]) -> ListenerGuard {
    let hb = w.pc().join("listener.json");
    let _ = std::fs::remove_file(&hb);
    let g = ListenerGuard::spawn(w.bg_cmd().args(args));
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

/// Processes a job that appends to `side` once, returning its id and the
/// bytes of its job file (to replay them).
fn processed_job(w: &World, side: &Path) -> (String, Vec<u8>) {
    let id = uid("replay");
    let path = w.write_job("PC", &id, "PC", &now_text(), &appends(side, "ran"));
    let bytes = read(&path);
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(side), ["ran"]);
    assert!(w.result_path(&id).exists() && w.done(&id).exists());
    assert!(ledger_path(w).exists(), "no ledger at {:?}", ledger_path(w));
    (id, bytes)
}

/// Puts `bytes` back as `id`'s job file (a sync engine resurrecting it),
/// listens once, and checks the replay was refused and never ran.
fn assert_replay_refused(w: &World, id: &str, bytes: &[u8], side: &Path) {
    let result_before = std::fs::read(w.result_path(id)).ok();
    std::fs::write(w.inbox(id), bytes).unwrap();
    assert_counters(&w.listen_once(&[]), &[("skipped", 1)]);
    assert_rejected(w, &format!("{id}.json"), "already-processed");
    assert_eq!(lines(side), ["ran"], "the replayed job ran again");
    assert_eq!(
        std::fs::read(w.result_path(id)).ok(),
        result_before,
        "the result changed"
    );
}

// ---------------------------------------------------------------- running

#[test]
fn a_job_from_an_independent_signer_runs_and_gets_a_signed_result() {
    let w = World::with_target();
    let id = uid("indep");
    let spec = kit_spec(&["out", "hello-from-job", "err", "oops"]);
    w.write_job("PC", &id, "PC", &now_text(), &spec);

    assert_counters(&w.listen_once(&[]), &[("done", 1)]);

    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["v"], 1);
    assert_eq!(r["jobId"], id.as_str());
    assert_eq!(r["target"], "PC");
    assert_eq!(r["ok"], true);
    assert_eq!(r["exitCode"], 0);
    assert_eq!(r["error"], "");
    let (started, finished) = (
        r["startedAt"].as_str().unwrap(),
        r["finishedAt"].as_str().unwrap(),
    );
    assert!(is_spec_time(started) && is_spec_time(finished), "{r}");
    assert!(started <= finished, "{r}");
    let d = w.detail(&id);
    assert!(d["durationMs"].is_u64(), "{d}");
    assert_eq!(d["stdoutTail"], "hello-from-job\n");
    assert_eq!(d["stderrTail"], "oops\n");
    assert_eq!(log_text(&w, &id, "stdout"), "hello-from-job\n");
    assert_eq!(log_text(&w, &id, "stderr"), "oops\n");
    assert!(w.done(&id).exists(), "job not moved to archive/done");
    assert!(!w.inbox(&id).exists(), "job left in the inbox");
    assert!(!w.running(&id).exists(), "running/ file left behind");
}

#[test]
fn a_program_named_without_a_path_is_found_in_the_jobs_own_path_not_the_listeners() {
    // A program only the job's PATH holds: looked up in the listener's
    // PATH it is not found, and the job would end `spawn-failed`.
    let w = World::with_target();
    let bin = scratch(&w, "only here");
    std::fs::create_dir(&bin).unwrap();
    let name = "fd-only-in-the-jobs-path";
    std::fs::copy(
        jobkit(),
        bin.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)),
    )
    .unwrap();
    let listeners = std::env::var_os("PATH").unwrap_or_default();
    let path =
        std::env::join_paths(std::iter::once(bin.clone()).chain(std::env::split_paths(&listeners)))
            .unwrap();
    let env = format!("PATH={}", path.to_str().unwrap());
    let found = w.enqueue(&["--env", &env], &[name, "out", "found"]);
    // The same name with the listener's PATH only: not found.
    let missing = w.enqueue(&[], &[name, "out", "found"]);
    let counters = w.listen_once(&[]);
    assert_eq!(counters["done"], 1, "{counters}");
    let r = w.result(&found);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(log_text(&w, &found, "stdout").trim(), "found");
    let r = w.result(&missing);
    assert_eq!(r["error"], "spawn-failed", "{r}");
}

#[cfg(unix)] // the listener's descriptors closed by `sh`
#[test]
fn a_listener_started_with_its_standard_descriptors_closed_still_gives_a_job_its_own() {
    // As a service manager may start it: the listener's own files then
    // take descriptors 0–2, and a job must still get its output into its
    // logs and the null device as its input, and the listener must not
    // fail on the output it cannot write.
    let w = World::with_target();
    let id = w.enqueue(&[], &["sh", "-c", "echo out; echo err >&2; cat; echo end"]);
    let mut listener = w.bg_cmd();
    listener.args(["listen", "--once"]);
    let closing = ["-c", "exec \"$0\" \"$@\" 0<&- 1>&- 2>&-"];
    let status = through("sh", &closing, &listener).status().unwrap();
    assert!(status.success(), "{status}");
    let r = w.result(&id);
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(log_text(&w, &id, "stdout"), "out\nend\n");
    assert_eq!(
        log_text(&w, &id, "stderr"),
        "err\n",
        "cat read the null device"
    );
}

#[test]
fn a_job_gets_its_fleet_variables_a_null_stdin_its_env_and_cwd_but_never_the_key() {
    let w = World::with_target();
    let id = uid("env");
    let cwd = scratch(&w, "work dir");
    std::fs::create_dir(&cwd).unwrap();
    let spec = json!({
        "argv": kit(&[
            "out", "id=$FLEET_DISPATCH_JOB_ID",
            "out", "target=$FLEET_DISPATCH_TARGET",
            "out", "origin=$FLEET_DISPATCH_ORIGIN",
            "out", "root=$FLEET_DISPATCH_ROOT",
            "out", "greeting=$GREETING",
            "cwd", "cwd=",
            "cat",
            "out", "eof",
            "env-all",
        ]),
        "cwd": path_str(&cwd),
        "env": {"GREETING": "hello there"},
        // A job that inherited a live stdin would block in `cat` until this.
        "timeoutSec": 5,
    });
    w.write_job("PC", &id, "PC", &now_text(), &spec);

    // The root comes from the flag, not the environment, so the job's
    // FLEET_DISPATCH_ROOT cannot be an inherited copy; the listener's own
    // stdin is a pipe held open, so only a null stdin lets `cat` end.
    let mut child = w
        .bg_cmd()
        .env_remove("FLEET_DISPATCH_ROOT")
        .arg("--root")
        .arg(&w.root)
        .args(["--json", "listen", "--once", "--poll-interval", "100ms"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start();
    let held_stdin = child.stdin.take();
    let until = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < until, "listener did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(held_stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    let r = w.result(&id);
    assert_eq!(r["error"], "", "{r}");
    assert_eq!(r["ok"], true, "{r}");
    let log = log_text(&w, &id, "stdout");
    let lines: Vec<&str> = log.lines().collect();
    let expect_cwd = std::fs::canonicalize(&cwd).unwrap();
    assert_eq!(
        lines[..7],
        [
            format!("id={id}").as_str(),
            "target=PC",
            "origin=LAPTOP",
            format!("root={}", w.root.display()).as_str(),
            "greeting=hello there",
            format!("cwd={}", expect_cwd.display()).as_str(),
            "eof",
        ],
        "{log}"
    );
    assert!(
        log.contains("FLEET_DISPATCH_JOB_ID="),
        "env not printed: {log}"
    );
    assert!(!log.contains(key_hex()), "the key is in the job's env");
    // Nor anywhere under the root (logs, results, heartbeat...).
    for f in files(&w.root) {
        let bytes = read(&w.root.join(&f));
        let text = String::from_utf8_lossy(&bytes);
        assert!(!text.contains(key_hex()), "the key is written in {f}");
    }
}

#[test]
#[cfg(unix)] // process groups read from `/proc`; Windows: Job Objects, see `windows`
fn each_job_runs_as_its_own_process_group() {
    let w = World::with_target();
    let id = uid("pgrp");
    let spec = json!({"argv": ["sh", "-c", "echo $$; cut -d' ' -f5 /proc/$$/stat"]});
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    let log = log_text(&w, &id, "stdout");
    let v: Vec<&str> = log.lines().collect();
    assert_eq!(v.len(), 2, "{log}");
    assert_eq!(v[0], v[1], "pid and process group differ: {log}");
}

#[test]
fn a_failing_job_s_exit_code_travels_back() {
    let w = World::with_target();
    let id = uid("fail");
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &kit_spec(&["out", "before", "exit", "7"]),
    );
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], 7);
    assert_eq!(r["error"], "");
    assert!(is_spec_time(r["startedAt"].as_str().unwrap()), "{r}");
    assert_eq!(w.detail(&id)["stdoutTail"], "before\n");
    assert!(w.done(&id).exists());
}

#[test]
#[cfg(unix)] // death by a signal exists on Unix only
fn a_job_killed_by_a_signal_it_did_not_get_from_us_has_exit_code_minus_one() {
    let w = World::with_target();
    let id = uid("selfkill");
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &json!({"argv": ["sh", "-c", "kill -9 $$"]}),
    );
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], -1);
    assert_eq!(r["error"], "");
    assert_eq!(w.detail(&id)["signal"], "SIGKILL");
}

/// Alone, and beside others (where the job's start is reported by its
/// keeper to the job's own thread, after the dispatcher went on).
#[test]
fn a_program_that_does_not_exist_is_spawn_failed_with_an_empty_start() {
    for slots in ["1", "2"] {
        let w = World::with_target();
        let id = uid("nospawn");
        let spec = json!({"argv": ["/nonexistent/fleet-dispatch-no-such-program", "x"]});
        w.write_job("PC", &id, "PC", &now_text(), &spec);
        assert_counters(&w.listen_once(&["--slots", slots]), &[("failed", 1)]);
        let r = w.result(&id);
        assert_signed(&r);
        assert_eq!(r["error"], "spawn-failed", "slots {slots}");
        assert_eq!(r["ok"], false);
        assert_eq!(r["exitCode"], -1);
        assert_eq!(r["startedAt"], "", "slots {slots}: {r}");
        assert!(is_spec_time(r["finishedAt"].as_str().unwrap()), "{r}");
        let why = w.detail(&id)["spawnError"].as_str().unwrap().to_string();
        assert!(
            why.contains("cannot start") && !why.contains("tries"),
            "slots {slots}: a missing program is not tried again: {why}"
        );
        assert!(w.done(&id).exists(), "a spawn failure is still processed");
        assert!(!w.inbox(&id).exists());
        assert!(!w.pc().join("running").join(format!("{id}.json")).exists());
    }
}

/// A pids cgroup holding one process, limited to the tasks it has: its
/// next thread or child fails with `EAGAIN`, as at a process limit. The
/// limit is lifted and the group removed when dropped.
#[cfg(target_os = "linux")]
struct PidsLimit {
    dir: std::path::PathBuf,
}

#[cfg(target_os = "linux")]
impl PidsLimit {
    /// `Err` says why no such group can be had here (no pids controller,
    /// not root), for the test to fail with: it is ignored for that.
    fn hold(pid: i32) -> Result<PidsLimit, String> {
        let name = format!("fleet-dispatch-test-{}", uid("pids"));
        let base = ["/sys/fs/cgroup/pids", "/sys/fs/cgroup"]
            .into_iter()
            .map(Path::new)
            .find(|b| {
                std::fs::create_dir(b.join(&name)).is_ok()
                    && b.join(&name).join("pids.max").exists()
            })
            .ok_or("no pids cgroup can be made here (cgroup v1 `pids` or v2 with pids enabled)")?;
        let g = PidsLimit {
            dir: base.join(name),
        };
        let set = |file: &str, value: String| {
            std::fs::write(g.dir.join(file), value).map_err(|e| format!("{file}: {e}"))
        };
        set("cgroup.procs", pid.to_string())?;
        let now = std::fs::read_to_string(g.dir.join("pids.current")).map_err(|e| e.to_string())?;
        set("pids.max", now.trim().to_string())?;
        Ok(g)
    }

    /// How many forks and thread starts the limit refused so far.
    fn refused(&self) -> u64 {
        std::fs::read_to_string(self.dir.join("pids.events"))
            .ok()
            .and_then(|t| t.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0)
    }

    fn lift(&self) {
        std::fs::write(self.dir.join("pids.max"), "max").unwrap();
    }
}

#[cfg(target_os = "linux")]
impl Drop for PidsLimit {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("pids.max"), "max");
        // Empty once the listener has exited; moved back to the root before.
        let root = self.dir.parent().unwrap().join("cgroup.procs");
        if let Ok(pids) = std::fs::read_to_string(self.dir.join("cgroup.procs")) {
            for pid in pids.lines() {
                let _ = std::fs::write(&root, pid);
            }
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

#[test]
#[cfg(target_os = "linux")] // a process limit made with a pids cgroup
#[ignore = "needs root: makes a pids cgroup"]
fn a_spawn_refused_by_a_process_limit_is_tried_again_and_runs_once_the_limit_passes() {
    let w = World::with_target();
    let g = spawn(&w, &["listen", "--poll-interval", "100ms"]);
    let limit = PidsLimit::hold(g.pid()).unwrap_or_else(|why| panic!("{why}"));
    // A limit that stays: the tries run out, and the job is spawn-failed.
    let side = scratch(&w, "side");
    let stuck = w.enqueue(&[], &kit(&["append", path_str(&side), "stuck"]));
    let r = w.wait_result(&stuck, Duration::from_secs(20));
    assert_eq!(r["error"], "spawn-failed", "{r}");
    let why = w.detail(&stuck)["spawnError"].as_str().unwrap().to_string();
    assert!(why.contains("(4 tries)"), "{why}");
    assert!(lines(&side).is_empty(), "it ran");
    // A limit that passes during the tries: the job runs, once.
    let refused = limit.refused();
    let id = w.enqueue(&[], &kit(&["append", path_str(&side), "ran"]));
    wait_until(Duration::from_secs(10), || limit.refused() > refused);
    limit.lift();
    let r = w.wait_result(&id, Duration::from_secs(20));
    assert_eq!(r["ok"], true, "{r}\n{}", w.detail(&id));
    assert_eq!(lines(&side), vec!["ran".to_string()]);
    let (_, _, err) = g.stop(&w, libc::SIGTERM, Duration::from_secs(10));
    assert_eq!(
        err.matches(&format!("job {stuck}: cannot start")).count(),
        3,
        "{err}"
    );
    assert!(err.contains(&format!("job {id}: cannot start")), "{err}");
    assert!(err.contains("trying again in 100 ms"), "{err}");
    drop(limit);
}

#[test]
fn a_cwd_that_does_not_exist_is_spawn_failed() {
    let w = World::with_target();
    let id = uid("nocwd");
    let side = scratch(&w, "side");
    let mut spec = appends(&side, "ran");
    spec["cwd"] = json!(path_str(&scratch(&w, "no-such-dir")));
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_eq!(r["error"], "spawn-failed");
    assert_eq!(r["startedAt"], "");
    assert!(lines(&side).is_empty(), "it ran somewhere else");
}

#[test]
fn output_is_captured_with_a_cap_and_its_tail_goes_into_the_result() {
    let w = World::with_target();
    let id = uid("cap");
    // 12 MB of output, then a last line: beyond any sane log cap.
    let total: u64 = 12_000_000;
    w.write_job(
        "PC",
        &id,
        "PC",
        &now_text(),
        &kit_spec(&["fill", &total.to_string(), "abcdefghi", "out", "END"]),
    );
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    let log_len = std::fs::metadata(w.pc().join("logs").join(format!("{id}.stdout.log")))
        .unwrap()
        .len();
    assert!(log_len < total, "log not capped: {log_len} bytes");
    assert!(log_len >= 1_000_000, "cap suspiciously small: {log_len}");
    let d = w.detail(&id);
    let tail = d["stdoutTail"].as_str().unwrap();
    assert!(tail.ends_with("abcdefghi\nEND\n"), "{tail:?}");
    assert!(tail.len() <= 64 * 1024, "tail not bounded: {}", tail.len());
    // The result itself stays a small document.
    assert!(read(&w.result_path(&id)).len() < 256 * 1024);
}

#[test]
fn a_background_process_left_by_a_job_is_stopped_with_it() {
    let w = World::with_target();
    let id = uid("leftover");
    let spec = json!({"argv": kit(&["spawn", "[", "sleep", "30", "]", "last-pid"]), "graceSec": 1});
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    let (code, _, err) = output_within(
        w.cmd()
            .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
        Duration::from_secs(15),
    );
    assert_eq!(code, 0, "{err}");
    let r = w.result(&id);
    assert_eq!(r["exitCode"], 0, "{r}");
    let pid: i32 = w.detail(&id)["stdoutTail"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(Duration::from_secs(3), || !alive(pid));
    #[cfg(unix)] // the whole tree, found by its environment in `/proc`
    assert!(job_pids(&id).is_empty());
}

// ---------------------------------------------------------------- refusals

#[test]
fn a_tampered_spec_is_bad_signature_and_never_runs() {
    let w = World::with_target();
    let id = uid("tamper");
    let side = scratch(&w, "side");
    let path = w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "signed"));
    let mut body: Value = serde_json::from_slice(&read(&path)).unwrap();
    let spec = body["spec"].as_str().unwrap().replace("signed", "tampered");
    body["spec"] = json!(spec);
    let tampered = body.to_string().into_bytes();
    std::fs::write(&path, &tampered).unwrap();

    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "bad-signature");
    assert_eq!(
        read(&w.rejected(&format!("{id}.json"))),
        tampered,
        "the rejected file was altered"
    );
    assert!(lines(&side).is_empty(), "the tampered job ran");
    assert_never_ran(&w, &id);
}

#[test]
fn a_job_for_another_target_is_wrong_target() {
    let w = World::with_target();
    let id = uid("wrongtgt");
    let side = scratch(&w, "side");
    w.write_job("PC", &id, "LAPTOP", &now_text(), &appends(&side, "ran"));
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "wrong-target");
    assert!(lines(&side).is_empty());
    assert_never_ran(&w, &id);
}

#[test]
fn a_body_target_differing_only_in_case_is_this_target() {
    let w = World::with_target();
    let id = uid("casetgt");
    let side = scratch(&w, "side");
    w.write_job("PC", &id, "pc", &now_text(), &appends(&side, "ran"));
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(&side), ["ran"]);
}

#[test]
fn acceptance_reports_the_first_failing_check_in_spec_order() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    // Wrong target (6) and a tampered signature (7): the target wins.
    let a = uid("order-a");
    let mut body = job_value(&a, "LAPTOP", &now_text(), &appends(&side, "a"));
    body["spec"] = json!(body["spec"].as_str().unwrap().replace("echo a", "echo A"));
    std::fs::write(w.inbox(&a), body.to_string()).unwrap();
    // Renamed (5) and for another target (6): the name wins.
    let b = uid("order-b");
    let renamed = uid("order-c");
    std::fs::write(
        w.inbox(&renamed),
        job_bytes(&b, "LAPTOP", &now_text(), &appends(&side, "b")),
    )
    .unwrap();
    // A bad createdAt (4) on a renamed file (5): the names win.
    let d = uid("order-d");
    let bad_time = uid("order-e");
    std::fs::write(
        w.inbox(&bad_time),
        job_bytes(&d, "PC", "yesterday", &appends(&side, "d")),
    )
    .unwrap();

    assert_counters(&w.listen_once(&[]), &[("rejected", 3)]);
    assert_rejected(&w, &format!("{a}.json"), "wrong-target");
    assert_rejected(&w, &format!("{renamed}.json"), "job-id-mismatch");
    assert_rejected(&w, &format!("{bad_time}.json"), "invalid-created-at");
    assert!(lines(&side).is_empty());
}

#[test]
fn a_job_older_than_the_max_age_is_stale() {
    let w = World::with_target();
    let id = uid("stale");
    let side = scratch(&w, "side");
    w.write_job(
        "PC",
        &id,
        "PC",
        &ts_offset(-8 * 86400),
        &appends(&side, "ran"),
    );
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "stale");
    assert!(lines(&side).is_empty());
    assert_never_ran(&w, &id);
}

#[test]
fn max_job_age_sets_the_staleness_limit() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let old = uid("old");
    w.write_job(
        "PC",
        &old,
        "PC",
        &ts_offset(-2 * 3600),
        &appends(&side, "old"),
    );
    assert_counters(&w.listen_once(&["--max-job-age", "1h"]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{old}.json"), "stale");
    // The same age is fine under the default of 7 days.
    let young = uid("young");
    w.write_job(
        "PC",
        &young,
        "PC",
        &ts_offset(-2 * 3600),
        &appends(&side, "young"),
    );
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(&side), ["young"]);
}

#[test]
fn a_job_dated_hours_ahead_is_deferred_not_rejected() {
    // As after this machine's clock stepped back three hours: the job
    // waits in the inbox, counted and shown as deferred, never refused.
    let w = World::with_target();
    let side = scratch(&w, "side");
    let far = uid("future");
    w.write_job(
        "PC",
        &far,
        "PC",
        &ts_offset(3 * 3600),
        &appends(&side, "far"),
    );
    // Clock drift under an hour runs at once.
    let near = uid("drift");
    w.write_job(
        "PC",
        &near,
        "PC",
        &ts_offset(30 * 60),
        &appends(&side, "near"),
    );
    assert_counters(&w.listen_once(&[]), &[("done", 1), ("deferred", 1)]);
    assert_eq!(lines(&side), ["near"]);
    assert_never_ran(&w, &far);
    assert!(w.inbox(&far).exists(), "{:?}", files(&w.pc()));
    assert!(!w.rejected(&format!("{far}.json")).exists());
    // A second pass defers it again: nothing is lost.
    assert_counters(&w.listen_once(&[]), &[("deferred", 1)]);
    assert!(w.inbox(&far).exists());

    let (_, out, _) = w.run(&["--json", "status", "--target", "PC"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    let q = &v["targets"][0]["queued"][0];
    assert_eq!(q["jobId"], far.as_str(), "{v}");
    let ahead = q["aheadSec"].as_u64().unwrap_or(0);
    assert!((3 * 3600 - 60..=3 * 3600).contains(&ahead), "{q}");
    let (_, out, _) = w.run(&["status", "--target", "PC"]);
    assert!(
        out.contains("deferred: dated 2h59m ahead of this clock, more than the 1h allowed"),
        "{out}"
    );
    let (code, out, err) = w.run(&["doctor", "--target", "PC"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("1 deferred, the furthest dated 2h59m ahead of this clock"),
        "{out}"
    );
}

#[test]
fn a_job_dated_just_past_the_skew_runs_once_the_clock_reaches_it() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("soon");
    w.write_job(
        "PC",
        &id,
        "PC",
        &ts_offset(3600 + 4),
        &appends(&side, "ran"),
    );
    let listener = w.spawn_listener(&[]);
    std::thread::sleep(Duration::from_millis(1500));
    assert_never_ran(&w, &id);
    assert!(w.inbox(&id).exists(), "{:?}", files(&w.pc()));
    let r = w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(lines(&side), ["ran"]);
    // The finish is the start plus the time it ran, by the monotonic clock.
    assert!(r["finishedAt"].as_str() >= r["startedAt"].as_str(), "{r}");
    drop(listener);
}

#[test]
fn an_unknown_spec_field_is_unsupported_spec() {
    let w = World::with_target();
    let id = uid("unknown");
    let side = scratch(&w, "side");
    let mut spec = appends(&side, "ran");
    spec["shell"] = json!(true);
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "unsupported-spec");
    assert!(lines(&side).is_empty());
    assert_never_ran(&w, &id);
}

#[test]
fn a_spec_env_name_starting_fleet_dispatch_is_unsupported_spec() {
    let w = World::with_target();
    let id = uid("fdenv");
    let side = scratch(&w, "side");
    let mut spec = appends(&side, "ran");
    spec["env"] = json!({"FLEET_DISPATCH_JOB_ID": "someone-else"});
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "unsupported-spec");
    assert!(lines(&side).is_empty());
}

#[test]
fn unknown_envelope_fields_never_act_and_a_file_over_1_mib_is_too_large() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let limit = 1024 * 1024;
    // Signed and valid, padded by an unsigned envelope field.
    let padded = |id: &str, word: &str, size: usize| {
        let mut v = job_value(id, "PC", &now_text(), &appends(&side, word));
        v["pad"] = json!("");
        let base = v.to_string().len();
        v["pad"] = json!("x".repeat(size - base));
        let b = v.to_string().into_bytes();
        assert_eq!(b.len(), size);
        b
    };
    let big = uid("big");
    std::fs::write(w.inbox(&big), padded(&big, "big", limit + 1)).unwrap();
    let fits = uid("fits");
    std::fs::write(w.inbox(&fits), padded(&fits, "fits", limit)).unwrap();
    assert_counters(&w.listen_once(&[]), &[("done", 1), ("rejected", 1)]);
    assert_rejected(&w, &format!("{big}.json"), "too-large");
    assert_eq!(lines(&side), ["fits"]);
}

#[test]
fn a_second_rejection_of_the_same_name_never_overwrites_the_first() {
    let w = World::with_target();
    let id = uid("twice");
    let side = scratch(&w, "side");
    w.write_job("PC", &id, "LAPTOP", &now_text(), &appends(&side, "one"));
    let first = read(&w.inbox(&id));
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    w.write_job("PC", &id, "LAPTOP", &ts_offset(-1), &appends(&side, "two"));
    let second = read(&w.inbox(&id));
    assert_ne!(first, second);
    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    let name = format!("{id}.json");
    assert_eq!(read(&w.rejected(&name)), first);
    let kept: Vec<String> = files(&w.pc().join("archive").join("rejected"))
        .into_iter()
        .filter(|f| !f.ends_with(".reason.json"))
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let other = kept.iter().find(|f| **f != name).unwrap();
    assert_eq!(read(&w.rejected(other)), second);
    assert_eq!(reason(&w, other)["verdict"], "wrong-target");
    assert!(lines(&side).is_empty());
}

// ---------------------------------------------------------------- replay

#[test]
fn a_replayed_job_is_already_processed_skipped_and_never_run_twice() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (id, _) = processed_job(&w, &side);
    // The archived copy itself comes back into the inbox.
    let archived = read(&w.done(&id));
    assert_replay_refused(&w, &id, &archived, &side);
    assert_eq!(read(&w.done(&id)), archived, "the archived copy changed");
}

#[test]
fn a_replay_is_refused_by_the_result_alone() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (id, bytes) = processed_job(&w, &side);
    std::fs::remove_file(w.done(&id)).unwrap();
    std::fs::remove_file(ledger_path(&w)).unwrap();
    assert_replay_refused(&w, &id, &bytes, &side);
}

#[test]
fn a_replay_is_refused_by_the_archived_copy_alone() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (id, bytes) = processed_job(&w, &side);
    std::fs::remove_file(w.result_path(&id)).unwrap();
    std::fs::remove_file(ledger_path(&w)).unwrap();
    assert_replay_refused(&w, &id, &bytes, &side);
}

#[test]
fn a_replay_is_refused_by_the_ledger_alone() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (id, bytes) = processed_job(&w, &side);
    std::fs::remove_file(w.result_path(&id)).unwrap();
    std::fs::remove_file(w.done(&id)).unwrap();
    assert_replay_refused(&w, &id, &bytes, &side);
}

// ---------------------------------------------------------------- names

#[test]
fn a_conflict_copy_named_like_a_job_id_is_job_id_mismatch_and_never_runs() {
    let w = World::with_target();
    let id = uid("conflict");
    let side = scratch(&w, "side");
    let path = w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let copy = w.pc().join("inbox").join(format!("{id}-PC.json"));
    std::fs::copy(&path, &copy).unwrap();
    let copy_bytes = read(&copy);
    assert_counters(&w.listen_once(&[]), &[("done", 1), ("rejected", 1)]);
    let name = format!("{id}-PC.json");
    assert_rejected(&w, &name, "job-id-mismatch");
    assert_eq!(read(&w.rejected(&name)), copy_bytes);
    assert_eq!(lines(&side), ["ran"], "the conflict copy ran too");
}

#[test]
fn temp_and_conflict_names_are_never_read_run_moved_or_deleted() {
    let w = World::with_target();
    let id = uid("tmpname");
    let side = scratch(&w, "side");
    // Each holds a valid job signed for `id`: reading it as one would run it.
    let body = job_bytes(&id, "PC", &now_text(), &appends(&side, "ran"));
    let names = [
        format!("{id}.sync-conflict-20261129-193000-ABCDEFG.json"),
        format!(".syncthing.{id}.json.tmp"),
        format!("~${id}.json"),
        format!(".{id}.json.abc123abc123.tmp"),
        format!("{id}.json.tmp"),
        format!("{id}.JSON"),
    ];
    let inbox = w.pc().join("inbox");
    for n in &names {
        std::fs::write(inbox.join(n), &body).unwrap();
    }
    // A zero settle time: anything parsed and refused would go at once.
    assert_counters(&w.listen_once(&["--settle", "0s"]), &[]);
    for n in &names {
        assert_eq!(read(&inbox.join(n)), body, "{n} changed or vanished");
    }
    let mut expected: Vec<String> = names.to_vec();
    expected.sort();
    assert_eq!(files(&inbox), expected);
    assert!(lines(&side).is_empty(), "a temp or conflict name ran");
    assert!(files(&w.pc().join("archive")).is_empty());
    assert!(files(&w.pc().join("results")).is_empty());
}

#[test]
#[cfg(unix)] // Wine cannot create symbolic links; Windows links: `windows`
fn a_symlink_in_the_inbox_is_moved_aside_as_not_a_file_and_never_followed() {
    let w = World::with_target();
    let id = uid("link");
    let side = scratch(&w, "side");
    let outside = scratch(&w, "outside.json");
    let body = job_bytes(&id, "PC", &now_text(), &appends(&side, "ran"));
    std::fs::write(&outside, &body).unwrap();
    std::os::unix::fs::symlink(&outside, w.inbox(&id)).unwrap();

    assert_counters(&w.listen_once(&[]), &[("rejected", 1)]);
    let name = format!("{id}.json");
    assert_rejected(&w, &name, "not-a-file");
    let moved = std::fs::symlink_metadata(w.rejected(&name)).unwrap();
    assert!(
        moved.file_type().is_symlink(),
        "the link was not moved as a link"
    );
    assert_eq!(read(&outside), body, "the link's target was touched");
    assert!(lines(&side).is_empty(), "the link was followed and run");
    assert_never_ran(&w, &id);
}

#[test]
#[cfg(unix)] // FIFOs exist on Unix only
fn a_fifo_named_like_a_job_never_blocks_the_listener() {
    let w = World::with_target();
    let id = uid("fifo");
    let path = std::ffi::CString::new(path_str(&w.inbox(&id))).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o644) }, 0);
    let (code, out, err) = output_within(
        w.cmd()
            .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
        Duration::from_secs(10),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_counters(&v["counters"], &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "not-a-file");
}

// ---------------------------------------------------------------- settle

#[test]
fn an_unparseable_file_is_left_until_unchanged_for_the_settle_time() {
    let w = World::with_target();
    let id = uid("settle");
    let path = w.inbox(&id);
    std::fs::write(&path, b"").unwrap();
    // Just written: it may still be arriving.
    assert_counters(&w.listen_once(&["--settle", "30s"]), &[]);
    assert!(path.exists(), "a young unparseable file was moved");
    assert!(files(&w.pc().join("archive")).is_empty());
    // Unchanged for longer than the settle time (by its mtime): rejected.
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(60))
        .unwrap();
    assert_counters(&w.listen_once(&["--settle", "30s"]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "malformed");
}

#[test]
fn with_a_zero_settle_time_an_unparseable_file_is_rejected_at_once() {
    let w = World::with_target();
    let id = uid("settle0");
    std::fs::write(w.inbox(&id), b"").unwrap();
    assert_counters(&w.listen_once(&["--settle", "0s"]), &[("rejected", 1)]);
    assert_rejected(&w, &format!("{id}.json"), "malformed");
}

#[test]
fn a_job_file_completed_within_the_settle_time_runs_once_and_nothing_is_rejected() {
    let w = World::with_target();
    let id = uid("halfway");
    let side = scratch(&w, "side");
    let g = spawn(
        &w,
        &["listen", "--poll-interval", "100ms", "--settle", "5s"],
    );
    let body = job_bytes(&id, "PC", &now_text(), &appends(&side, "ran"));
    std::fs::write(w.inbox(&id), &body[..body.len() / 2]).unwrap();
    // Several polls see the half file.
    std::thread::sleep(Duration::from_millis(300));
    assert!(w.inbox(&id).exists(), "the half-written file was taken");
    std::fs::write(w.inbox(&id), &body).unwrap();
    let r = w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(r["ok"], true, "{r}");
    assert_eq!(lines(&side), ["ran"]);
    assert!(files(&w.pc().join("archive").join("rejected")).is_empty());
    let (code, out, err) = g.stop(&w, libc::SIGINT, Duration::from_secs(5));
    assert_eq!(code, polite_stop::EXIT, "{out}{err}");
    assert!(out.contains("rejected 0"), "{out}");
}

// ---------------------------------------------------------------- order

#[test]
fn high_priority_jobs_run_before_normal_ones() {
    let w = World::with_target();
    let log = scratch(&w, "order");
    let append = |word: &str| kit(&["append", path_str(&log), word]);
    let mut normal = Vec::new();
    for word in ["n1", "n2", "n3"] {
        normal.push(w.enqueue(&[], &append(word)));
    }
    let high = w.enqueue(&["--priority", "high"], &append("high"));

    assert_counters(&w.listen_once(&[]), &[("done", 4)]);
    let got = lines(&log);
    assert_eq!(got.len(), 4, "{got:?}");
    assert_eq!(got[0], "high", "{got:?}");
    let mut rest = got[1..].to_vec();
    rest.sort();
    assert_eq!(rest, ["n1", "n2", "n3"]);
    let h_finished = w.result(&high)["finishedAt"].as_str().unwrap().to_string();
    for id in &normal {
        let started = w.result(id)["startedAt"].as_str().unwrap().to_string();
        assert!(
            h_finished <= started,
            "{id} started before the high job ended"
        );
    }
}

#[test]
fn same_priority_jobs_run_by_created_at_then_by_id() {
    let w = World::with_target();
    let log = scratch(&w, "order");
    let stem = uid("ord");
    let t10 = ts_offset(-10);
    // 20 s ago, written at +05:00: its text sorts last, its instant second.
    let utc_plus_5 = ts_offset(-20 + 5 * 3600).replace('Z', "+05:00");
    let jobs = [
        ("c", ts_offset(-30)),
        ("z", utc_plus_5),
        ("b", t10.clone()),
        ("a", t10),
        ("0", ts_offset(-5)),
    ];
    for (suffix, created) in &jobs {
        let id = format!("{stem}-{suffix}");
        w.write_job("PC", &id, "PC", created, &appends(&log, suffix));
    }
    assert_counters(&w.listen_once(&[]), &[("done", 5)]);
    assert_eq!(lines(&log), ["c", "z", "a", "b", "0"]);
}

// ---------------------------------------------------------------- lock

#[test]
fn a_second_listener_exits_75_naming_the_first_one_s_pid() {
    let w = World::with_target();
    let g = w.spawn_listener(&[]);
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 75, "{out}{err}");
    assert!(err.contains("BUSY"), "{err}");
    assert!(
        err.contains(&g.pid().to_string()),
        "holder's pid not named: {err}"
    );
    let (code, out, _) = w.run(&["--json", "listen", "--once"]);
    assert_eq!(code, 75);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["error"]["code"], "BUSY", "{v}");
    // The first one is unaffected and still serves the inbox.
    let side = scratch(&w, "side");
    let id = uid("afterbusy");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(lines(&side), ["ran"]);
}

#[test]
fn the_lock_is_per_target() {
    let w = World::with_target();
    let _g = w.spawn_listener(&[]);
    let (code, out, err) =
        output(
            w.cmd_as("LAPTOP")
                .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
        );
    assert_eq!(code, 0, "{out}{err}");
}

// ---------------------------------------------------------------- live state

#[test]
fn running_file_and_heartbeat_show_the_job_while_it_runs() {
    let w = World::with_target();
    let g = w.spawn_listener(&[]);
    let hb: Value = serde_json::from_slice(&read(&w.pc().join("listener.json"))).unwrap();
    assert_eq!(hb["pid"], g.pid(), "{hb}");

    let go = scratch(&w, "go");
    let id = uid("live");
    let spec = json!({
        "argv": kit(&["wait-for", path_str(&go)]),
        "timeoutSec": 20,
    });
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    let running: Value = serde_json::from_slice(&read(&w.running(&id))).unwrap();
    assert_eq!(running["jobId"], id.as_str(), "{running}");
    wait_until(Duration::from_secs(5), || {
        std::fs::read(w.pc().join("listener.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v["running"] == id.as_str())
    });
    assert!(!w.result_path(&id).exists());

    std::fs::write(&go, b"").unwrap();
    let r = w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(r["ok"], true, "{r}");
    wait_until(Duration::from_secs(5), || !w.running(&id).exists());
    assert!(files(&w.pc().join("running")).is_empty());
}

// ---------------------------------------------------------------- timeout

#[test]
fn a_job_that_ignores_sigterm_is_killed_after_the_grace_as_timeout() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let id = w.enqueue(
        &["--timeout", "1s", "--grace", "1s"],
        &kit(&["ignore-stop", "pid", path_str(&pidfile), "sleep", "30"]),
    );
    let t = Instant::now();
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let r = w.result(&id);
    assert_signed(&r);
    let d = w.detail(&id);
    assert_eq!(r["error"], "timeout", "{r}\n{d}");
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], -1);
    assert_eq!(d["graceExpired"], true, "{d}");
    assert_eq!(d["signal"], "SIGKILL", "{d}");
    assert!(d["durationMs"].as_u64().unwrap() >= 1900, "{d}");
    let pid: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!alive(pid), "the job outlived its timeout");
    #[cfg(unix)] // the whole tree, found by its environment in `/proc`
    assert!(job_pids(&id).is_empty(), "the job outlived its timeout");
    assert!(w.done(&id).exists());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 cannot deliver CTRL_BREAK: every stop there is the forced one after the grace"
)]
fn a_job_that_exits_on_sigterm_at_its_timeout_ends_within_the_grace() {
    let w = World::with_target();
    let id = w.enqueue(
        &["--timeout", "1s", "--grace", "5s"],
        &kit(&["sleep", "30"]),
    );
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_eq!(r["error"], "timeout");
    assert_eq!(r["exitCode"], -1);
    let d = w.detail(&id);
    assert_eq!(d["graceExpired"], false, "{d}");
    assert_eq!(d["signal"], "SIGTERM", "{d}");
    let ms = d["durationMs"].as_u64().unwrap();
    assert!((900..4000).contains(&ms), "{d}");
}

// ---------------------------------------------------------------- crash recovery

#[test]
#[cfg(unix)] // on Windows the job dies with its listener (kill-on-close Job Object): `windows`
fn a_listener_killed_mid_job_leaves_one_interrupted_result_and_no_second_run() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let g = w.spawn_listener(&[]);
    let id = enqueue_counted(&w, &[], &[], &side);
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    wait_until(Duration::from_secs(5), || lines(&side).len() == 1);
    let pid = wait_open_pid(&w, &id);
    let tree = job_pids(&id);
    assert!(
        tree.contains(&pid),
        "ledger pid {pid} not in the job's tree {tree:?}"
    );

    g.signal(libc::SIGKILL);
    let _ = g.wait(Duration::from_secs(5));
    assert!(
        alive(pid),
        "precondition: the job outlives its killed listener"
    );

    let c = w.listen_once(&[]);
    assert_counters(&c, &[("failed", 1)]);
    assert_eq!(files(&w.pc().join("results")), [format!("{id}.json")]);
    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["error"], "interrupted");
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], -1);
    assert!(is_spec_time(r["startedAt"].as_str().unwrap()), "{r}");
    wait_until(Duration::from_secs(3), || {
        tree.iter().all(|&p| !alive(p)) && job_pids(&id).is_empty()
    });
    assert_eq!(lines(&side).len(), 1, "the job ran twice");
    assert!(w.done(&id).exists() && !w.inbox(&id).exists());
    assert!(!w.running(&id).exists(), "running/ file left behind");
    assert_eq!(open_job(&w), None, "the job is still open in the ledger");

    let result = read(&w.result_path(&id));
    assert_counters(&w.listen_once(&[]), &[]);
    assert_eq!(lines(&side).len(), 1);
    assert_eq!(read(&w.result_path(&id)), result);
}

// ---------------------------------------------------------------- summary and signals

#[test]
fn the_human_summary_line_names_every_counter() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    w.write_job("PC", &uid("ok"), "PC", &now_text(), &appends(&side, "ok"));
    w.write_job(
        "PC",
        &uid("bad"),
        "PC",
        &now_text(),
        &kit_spec(&["exit", "2"]),
    );
    w.write_job(
        "PC",
        &uid("away"),
        "LAPTOP",
        &now_text(),
        &appends(&side, "no"),
    );
    let (code, out, err) = w.run(&["listen", "--once", "--poll-interval", "100ms"]);
    assert_eq!(code, 0, "{out}{err}");
    let last = out.lines().last().unwrap_or("");
    for part in [
        "done 1",
        "failed 1",
        "cancelled 0",
        "deferred 0",
        "rejected 1",
        "skipped 0",
    ] {
        assert!(last.contains(part), "{part:?} not in {last:?}");
    }
}

#[test]
fn the_json_summary_has_the_seven_counters_and_interrupted() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["--json", "listen", "--once", "--poll-interval", "100ms"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let mut keys: Vec<&String> = v["counters"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "cancelled",
            "deferred",
            "done",
            "failed",
            "rejected",
            "repaired",
            "skipped"
        ]
    );
    assert_eq!(v["interrupted"], false);
}

#[test]
#[cfg(unix)] // SIGINT to the listener: Wine 8 cannot send the console event
fn sigint_stops_an_idle_loop_listener_promptly_with_130() {
    let w = World::with_target();
    let g = w.spawn_listener(&[]);
    let t = Instant::now();
    g.signal(libc::SIGINT);
    let (code, _, err) = g.wait(Duration::from_secs(3));
    assert_eq!(code, 130, "{err}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // The lock went with it.
    assert_counters(&w.listen_once(&[]), &[]);
}

#[test]
#[cfg(unix)] // SIGTERM to the listener: Wine 8 cannot send the console event
fn sigterm_while_a_job_runs_interrupts_it_and_exits_130() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let g = spawn(&w, &["--json", "listen", "--poll-interval", "100ms"]);
    let id = enqueue_counted(&w, &["--grace", "1s"], &[], &side);
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    wait_until(Duration::from_secs(5), || lines(&side).len() == 1);
    let tree = job_pids(&id);
    assert!(!tree.is_empty());

    g.signal(libc::SIGTERM);
    let (code, out, err) = g.wait(Duration::from_secs(10));
    assert_eq!(code, 130, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["interrupted"], true, "{v}");
    assert_counters(&v["counters"], &[("failed", 1)]);

    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["error"], "interrupted");
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], -1);
    assert!(
        tree.iter().all(|&p| !alive(p)),
        "the job outlived the listener"
    );
    assert!(w.done(&id).exists() && !w.inbox(&id).exists());
    assert!(!w.running(&id).exists());

    assert_counters(&w.listen_once(&[]), &[]);
    assert_eq!(lines(&side).len(), 1, "the interrupted job ran again");
}

#[test]
#[cfg(unix)] // SIGINT to the listener: Wine 8 cannot send the console event
fn a_second_sigint_kills_the_job_at_once_and_the_restart_records_it_interrupted() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut g = w.spawn_listener(&[]);
    let id = enqueue_counted(&w, &["--grace", "30s"], &["ignore-stop"], &side);
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    wait_until(Duration::from_secs(5), || lines(&side).len() == 1);
    let tree = job_pids(&id);
    assert!(!tree.is_empty());

    g.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    // The first Ctrl-C is graceful: the job has 30 s to go.
    assert!(
        g.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the first Ctrl-C did not wait for the grace"
    );
    let t = Instant::now();
    g.signal(libc::SIGINT);
    let (code, out, err) = g.wait(Duration::from_secs(5));
    assert_eq!(code, 130, "{out}{err}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    wait_until(Duration::from_secs(3), || tree.iter().all(|&p| !alive(p)));

    // Until the next start records it, the views say what happened to it,
    // not that it is queued.
    let (code, out, err) = w.run(&["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("killed with its listener") && out.contains(&id),
        "{out}"
    );
    let (_, out, _) = w.run(&["--json", "status"]);
    let st: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(
        st["targets"][0]["queued"][0]["killedWithListener"], true,
        "{st}"
    );
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        err.contains("recorded as interrupted when the listener next starts"),
        "{out}{err}"
    );

    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    assert_eq!(w.result(&id)["error"], "interrupted");
    assert_eq!(lines(&side).len(), 1, "the job ran again");
    // Recorded: no longer said.
    let (_, out, _) = w.run(&["status"]);
    assert!(!out.contains("killed with its listener"), "{out}");
}

#[test]
fn a_first_listen_creates_the_target_folders() {
    let w = World::new();
    assert!(!w.pc().exists());
    assert_counters(&w.listen_once(&[]), &[]);
    for d in [
        "inbox",
        "cancel",
        "running",
        "results",
        "logs",
        "archive/done",
        "archive/consumed",
        "archive/rejected",
    ] {
        assert!(w.pc().join(d).is_dir(), "{d} missing");
    }
}

#[test]
fn a_listener_keeps_the_spelling_of_its_existing_folder() {
    let w = World::new();
    w.make_target("pc");
    let side = scratch(&w, "side");
    let id = uid("spelling");
    w.write_job("pc", &id, "PC", &now_text(), &appends(&side, "ran"));
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(&side), ["ran"]);
    assert!(
        w.root
            .join("pc")
            .join("results")
            .join(format!("{id}.json"))
            .exists()
    );
    let mut targets: Vec<String> = std::fs::read_dir(&w.root)
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    targets.sort();
    assert_eq!(
        targets,
        ["pc"],
        "a second folder was made for the same machine"
    );
}

#[test]
fn a_loop_listener_rejects_an_unparseable_file_once_the_settle_time_has_passed() {
    let w = World::with_target();
    let id = uid("garbage");
    let g = spawn(
        &w,
        &["listen", "--poll-interval", "100ms", "--settle", "1s"],
    );
    let t = Instant::now();
    std::fs::write(w.inbox(&id), b"{\"jobId\": \"not finished").unwrap();
    let name = format!("{id}.json");
    wait_until(Duration::from_secs(10), || w.rejected(&name).exists());
    assert!(
        t.elapsed() >= Duration::from_millis(900),
        "rejected after {:?}, before the settle time",
        t.elapsed()
    );
    wait_until(Duration::from_secs(2), || {
        w.rejected(&format!("{name}.reason.json")).exists()
    });
    assert_rejected(&w, &name, "malformed");
    drop(g);
}

#[test]
fn a_crash_after_the_start_line_but_before_the_spawn_gives_interrupted_and_no_run() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("prespawn");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let started = ts_offset(-3);
    std::fs::create_dir_all(w.state.join("pc")).unwrap();
    std::fs::write(
        ledger_path(&w),
        json!({"jobId": id, "processedAt": started, "run": true}).to_string() + "\n",
    )
    .unwrap();
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["error"], "interrupted");
    assert_eq!(r["startedAt"], started.as_str());
    assert!(lines(&side).is_empty(), "the interrupted job was run");
    assert!(w.done(&id).exists() && !w.inbox(&id).exists());
    assert_eq!(open_job(&w), None);
    assert_counters(&w.listen_once(&[]), &[]);
    assert!(lines(&side).is_empty());
}

#[test]
fn junk_in_the_result_place_of_a_job_a_crash_interrupted_gives_way_to_its_interrupted_result() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("junked");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    std::fs::create_dir_all(w.state.join("pc")).unwrap();
    std::fs::write(
        ledger_path(&w),
        json!({"jobId": id, "processedAt": ts_offset(-3), "run": true}).to_string() + "\n",
    )
    .unwrap();
    // Written by a folder writer while the job ran, before the crash.
    std::fs::write(w.result_path(&id), b"junk").unwrap();
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_signed(&r);
    assert_eq!(r["error"], "interrupted");
    assert_eq!(w.reason(&format!("{id}.json"))["kind"], "result");
    assert!(lines(&side).is_empty(), "the interrupted job was run");
}

#[test]
fn a_crash_after_the_result_finishes_the_bookkeeping_without_a_second_run() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (id, _) = processed_job(&w, &side);
    let result = read(&w.result_path(&id));
    let at = ts_offset(-1);
    let recorded = [
        json!({"jobId": id, "processedAt": at, "run": true}),
        json!({"jobId": id, "pid": 1}),
        json!({"jobId": id, "processedAt": at, "result": String::from_utf8(result.clone()).unwrap()}),
    ]
    .map(|l| l.to_string() + "\n")
    .concat();
    // As if the listener died once the result was recorded in the ledger,
    // first before publishing it, then before archiving the job.
    for published in [false, true] {
        std::fs::rename(w.done(&id), w.inbox(&id)).unwrap();
        if !published {
            std::fs::remove_file(w.result_path(&id)).unwrap();
        }
        std::fs::write(ledger_path(&w), &recorded).unwrap();
        assert_counters(&w.listen_once(&[]), &[]);
        assert_eq!(read(&w.result_path(&id)), result, "published: {published}");
        assert!(w.done(&id).exists() && !w.inbox(&id).exists());
        assert_eq!(open_job(&w), None);
        assert_eq!(lines(&side), ["ran"]);
        let ledger = std::fs::read_to_string(ledger_path(&w)).unwrap();
        assert!(!ledger.contains("result"), "not rewritten: {ledger}");
    }
    // The ledger has it: with result and archive gone, it still refuses.
    let bytes = read(&w.done(&id));
    std::fs::remove_file(w.result_path(&id)).unwrap();
    std::fs::remove_file(w.done(&id)).unwrap();
    assert_replay_refused(&w, &id, &bytes, &side);
}

#[test]
fn a_high_job_queued_while_another_runs_goes_next() {
    let w = World::with_target();
    let log = scratch(&w, "order");
    let go = scratch(&w, "go");
    let _g = w.spawn_listener(&[]);
    let first = uid("first");
    let spec = json!({
        "argv": kit(&["wait-for", path_str(&go), "append", path_str(&log), "first"]),
        "timeoutSec": 20,
    });
    w.write_job("PC", &first, "PC", &now_text(), &spec);
    wait_until(Duration::from_secs(10), || w.running(&first).exists());
    let normal = uid("normal");
    w.write_job(
        "PC",
        &normal,
        "PC",
        &ts_offset(-60),
        &appends(&log, "normal"),
    );
    let high = uid("high");
    let mut spec = appends(&log, "high");
    spec["priority"] = json!("high");
    w.write_job("PC", &high, "PC", &now_text(), &spec);
    std::fs::write(&go, b"").unwrap();
    w.wait_result(&normal, Duration::from_secs(10));
    w.wait_result(&high, Duration::from_secs(10));
    assert_eq!(lines(&log), ["first", "high", "normal"]);
}

#[test]
fn created_at_in_any_rfc3339_form_is_accepted() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let base = ts_offset(-60);
    let forms = [
        format!("{}Z", &base[..19]),
        base.to_lowercase(),
        ts_offset(-60 - 7 * 3600).replace('Z', "-07:00"),
        base.replace('Z', "+00:00"),
    ];
    for (n, created) in forms.iter().enumerate() {
        w.write_job(
            "PC",
            &uid("form"),
            "PC",
            created,
            &appends(&side, &n.to_string()),
        );
    }
    assert_counters(&w.listen_once(&[]), &[("done", 4)]);
    let mut got = lines(&side);
    got.sort();
    assert_eq!(got, ["0", "1", "2", "3"]);
}

#[test]
fn a_setsid_grandchild_left_by_a_job_is_stopped_with_it() {
    let w = World::with_target();
    let id = uid("setsid");
    let spec = json!({
        "argv": kit(&["escape", "[", "sleep", "30", "]", "last-pid"]),
        "graceSec": 1,
    });
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    let (code, _, err) = output_within(
        w.cmd()
            .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
        Duration::from_secs(15),
    );
    assert_eq!(code, 0, "{err}");
    let pid: i32 = w.detail(&id)["stdoutTail"]
        .as_str()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    wait_until(Duration::from_secs(3), || !alive(pid));
    #[cfg(unix)] // the whole tree, found by its environment in `/proc`
    assert!(job_pids(&id).is_empty());
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 cannot deliver CTRL_BREAK: every stop there is the forced one after the grace"
)]
fn a_job_that_exits_0_in_answer_to_the_timeout_signal_is_still_a_timeout() {
    let w = World::with_target();
    let id = uid("exit0");
    // Fractional seconds are allowed in a spec.
    let spec = json!({
        "argv": kit(&["exit-on-stop", "0", "sleep", "3600"]),
        "timeoutSec": 0.5,
        "graceSec": 5,
    });
    w.write_job("PC", &id, "PC", &now_text(), &spec);
    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    let r = w.result(&id);
    assert_eq!(r["error"], "timeout", "{r}");
    assert_eq!(r["ok"], false);
    assert_eq!(r["exitCode"], -1);
    assert_eq!(w.detail(&id)["graceExpired"], false);
}

#[test]
fn a_job_id_of_64_characters_runs_and_a_65_character_name_is_ignored() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let stem = uid("long");
    let long = format!("{stem}{}", "x".repeat(64 - stem.len()));
    assert_eq!(long.len(), 64);
    w.write_job("PC", &long, "PC", &now_text(), &appends(&side, "64"));
    let too_long = format!("{long}y");
    let path = w.pc().join("inbox").join(format!("{too_long}.json"));
    let body = job_bytes(&too_long, "PC", &now_text(), &appends(&side, "65"));
    std::fs::write(&path, &body).unwrap();
    assert_counters(&w.listen_once(&["--settle", "0s"]), &[("done", 1)]);
    assert_eq!(lines(&side), ["64"]);
    assert_eq!(
        read(&path),
        body,
        "a name that is not <id>.json was touched"
    );
}

#[test]
fn a_job_can_enqueue_a_child_job_with_what_the_listener_gives_it() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let parent = uid("parent");
    let spec = json!({"argv": [
        path_str(&bin()), "enqueue", "--target", "PC", "--",
        path_str(&jobkit()), "append", path_str(&side), "child",
    ]});
    w.write_job("PC", &parent, "PC", &now_text(), &spec);
    // Everything from flags: the job cannot inherit it from the listener's
    // environment, only from what the listener sets for it.
    let listen = || {
        let (code, out, err) = output(
            w.cmd()
                .env_remove("FLEET_DISPATCH_ROOT")
                .env_remove("FLEET_DISPATCH_KEY_FILE")
                .env_remove("FLEET_DISPATCH_MACHINE")
                .arg("--root")
                .arg(&w.root)
                .arg("--key-file")
                .arg(&w.key)
                .args(["--machine", "PC"])
                .args(["--json", "listen", "--once", "--poll-interval", "100ms"]),
        );
        assert_eq!(code, 0, "{out}{err}");
    };
    listen();
    let r = w.result(&parent);
    assert_eq!(r["exitCode"], 0, "{r} {}", w.detail(&parent));
    let child = w.detail(&parent)["stdoutTail"]
        .as_str()
        .unwrap()
        .trim()
        .to_string();
    if !w.result_path(&child).exists() {
        listen();
    }
    assert_eq!(w.result(&child)["ok"], true);
    assert_eq!(lines(&side), ["child"]);
    let archived: Value = serde_json::from_slice(&read(&w.done(&child))).unwrap();
    let spec: Value = serde_json::from_str(archived["spec"].as_str().unwrap()).unwrap();
    assert_eq!(spec["parentJobId"], parent.as_str(), "{spec}");
    assert_eq!(archived["origin"], "PC");
}

/// Regression: the listener panicked (exit 101) on its next log line after
/// `listen | head -1` closed its stdout, with the journal already written.
#[test]
fn a_closed_stdout_never_costs_a_job_its_run() {
    use std::io::BufRead;
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut g = spawn(&w, &["listen", "--poll-interval", "100ms"]);
    // Read the first line, then close the pipe, as `listen | head -1` does.
    let stdout = g.child.as_mut().unwrap().stdout.take().unwrap();
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .unwrap();
    let id = uid("epipe");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !w.result_path(&id).exists() && Instant::now() < deadline {
        if g.child.as_mut().unwrap().try_wait().unwrap().is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let exited = g.child.as_mut().unwrap().try_wait().unwrap();
    let mut err = String::new();
    if exited.is_some() {
        use std::io::Read;
        let mut e = g.child.as_mut().unwrap().stderr.take().unwrap();
        let _ = e.read_to_string(&mut err);
    }
    assert!(!err.contains("panicked"), "the listener panicked: {err}");
    if w.result_path(&id).exists() {
        // It kept serving: the job ran to its real end.
        assert_eq!(w.result(&id)["error"], "", "{}", w.result(&id));
        assert_eq!(lines(&side), ["ran"]);
    } else {
        // It stopped quietly: then the job must be untouched, still queued.
        assert!(exited.is_some(), "neither a result nor an exit");
        assert!(w.inbox(&id).exists(), "the job left the inbox unfinished");
        assert_eq!(open_job(&w), None, "the job was started and lost");
        assert!(lines(&side).is_empty());
    }
}

#[test]
fn a_loop_listener_survives_its_inbox_vanishing_for_a_while() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let mut g = w.spawn_listener(&[]);
    let inbox = w.pc().join("inbox");
    // On Windows a folder the listener holds during a pass cannot be
    // removed (a sharing violation): it goes between passes, as a sync
    // engine's retry would take it.
    let mut removed = std::fs::remove_dir(&inbox);
    wait_until(Duration::from_secs(10), || {
        removed.is_ok() || {
            removed = std::fs::remove_dir(&inbox);
            removed.is_ok()
        }
    });
    removed.unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        g.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the listener died when its inbox vanished"
    );
    // Sync brings the folder back, with a job in it.
    std::fs::create_dir_all(&inbox).unwrap();
    let id = uid("back");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(lines(&side), ["ran"]);
}

#[test]
#[cfg(unix)] // `exec env -i` and `/proc/PID/environ`; on Windows the job dies with its listener
fn crash_recovery_kills_the_orphaned_group_even_when_it_dropped_its_environment() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let g = w.spawn_listener(&[]);
    let id = w.enqueue(
        &[],
        &[
            "sh",
            "-c",
            "echo x >> \"$1\"; exec env -i sleep 30",
            "sh",
            path_str(&side),
        ],
    );
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    wait_until(Duration::from_secs(5), || lines(&side).len() == 1);
    let pid = wait_open_pid(&w, &id);
    // The job's process is now `sleep` with an empty environment.
    wait_until(Duration::from_secs(5), || {
        std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|e| e.is_empty())
    });
    g.signal(libc::SIGKILL);
    let _ = g.wait(Duration::from_secs(5));
    assert!(
        alive(pid),
        "precondition: the job outlives its killed listener"
    );

    assert_counters(&w.listen_once(&[]), &[("failed", 1)]);
    assert_eq!(w.result(&id)["error"], "interrupted");
    let gone = Instant::now() + Duration::from_secs(3);
    while alive(pid) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(pid);
    if survived {
        // SAFETY: kill(2) on the orphan this test made, so it does not linger.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
    assert!(
        !survived,
        "the orphaned job process {pid} survived recovery"
    );
}

#[test]
fn the_lock_holds_whatever_the_case_of_the_machine_name() {
    let w = World::with_target();
    let g = w.spawn_listener(&[]);
    let (code, out, err) = output_within(
        w.cmd_as("pc")
            .args(["listen", "--once", "--poll-interval", "100ms"]),
        Duration::from_secs(10),
    );
    assert_eq!(code, 75, "a second listener for PC ran as `pc`: {out}{err}");
    assert!(err.contains(&g.pid().to_string()), "{err}");
}

#[test]
fn a_job_signed_in_upper_case_hex_runs() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("upper");
    let mut v = job_value(&id, "PC", &now_text(), &appends(&side, "ran"));
    v["sig"] = json!(v["sig"].as_str().unwrap().to_ascii_uppercase());
    std::fs::write(w.inbox(&id), v.to_string()).unwrap();
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(&side), ["ran"]);
}

// ---------------------------------------------------------------- durability

/// A job's argv appending `word` to `file`.
fn append_argv(file: &Path, word: &str) -> Vec<String> {
    kit(&["append", path_str(file), word])
}

#[test]
fn a_relaxed_listener_runs_every_job_once_and_places_every_result() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let ids: Vec<String> = (0..20)
        .map(|i| {
            w.enqueue(
                &["--durability", "relaxed"],
                &append_argv(&side, &format!("j{i}")),
            )
        })
        .collect();
    let c = w.listen_once(&["--durability", "relaxed"]);
    assert_counters(&c, &[("done", 20)]);
    let mut ran = lines(&side);
    ran.sort();
    let mut want: Vec<String> = (0..20).map(|i| format!("j{i}")).collect();
    want.sort();
    assert_eq!(ran, want, "each job ran exactly once");
    for id in &ids {
        let r = w.result(id);
        assert_signed(&r);
        assert_eq!(r["ok"], true, "{r}");
        assert!(w.done(id).exists() && !w.inbox(id).exists());
    }
    assert_eq!(open_job(&w), None);
    // A second pass finds nothing to do.
    assert_counters(&w.listen_once(&["--durability", "relaxed"]), &[]);
}

#[test]
fn a_relaxed_listener_killed_mid_job_still_never_runs_it_twice() {
    // The start line is not flushed before the spawn, but a crash of the
    // listener alone loses nothing the kernel was given.
    let w = World::with_target();
    let side = scratch(&w, "side");
    let g = w.spawn_listener(&["--durability", "relaxed"]);
    let id = enqueue_counted(&w, &[], &[], &side);
    wait_until(Duration::from_secs(10), || lines(&side).len() == 1);
    wait_open_pid(&w, &id);
    kill_hard(g.pid());
    let _ = g.wait(Duration::from_secs(5));
    let c = w.listen_once(&["--durability", "relaxed"]);
    assert_counters(&c, &[("failed", 1)]);
    assert_eq!(w.result(&id)["error"], "interrupted");
    assert_eq!(lines(&side).len(), 1, "the job ran twice");
    assert_eq!(open_job(&w), None);
}

#[test]
fn an_unknown_durability_level_is_a_validation_error_naming_the_choices() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["--durability", "sometimes", "status"]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("full") && err.contains("relaxed"), "{err}");
}

#[test]
fn a_running_listeners_ledger_reads_whole_and_a_clean_stop_leaves_no_zeros() {
    // A crash mid-write leaves a line cut short; the next listener starts
    // with it gone (rewritten or cut), and while its job runs every line
    // of the ledger, zeroed space ahead of them read as line ends, is
    // whole and names the running job's start. A clean stop leaves the
    // file ending with its last line, none of the space written ahead.
    let w = World::with_target();
    w.enqueue(&[], &kit(&[]));
    w.listen_once(&[]);
    let ledger = ledger_path(&w);
    let clean = std::fs::read(&ledger).unwrap();
    assert_eq!(clean.last(), Some(&b'\n'));
    assert!(!clean.contains(&0), "zeros left after a clean stop");
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&ledger)
        .unwrap();
    std::io::Write::write_all(&mut f, b"{\"v\":2,\"kind\":\"res").unwrap();
    drop(f);
    let started = scratch(&w, "started");
    let gate = scratch(&w, "gate");
    let id = w.enqueue(&[], &kit(&["touch", p(&started), "wait-for", p(&gate)]));
    let mut listener = w.bg_cmd().args(["listen", "--once"]).start();
    wait_until(Duration::from_secs(20), || started.exists());
    let running = std::fs::read(&ledger).unwrap();
    std::fs::write(&gate, "").unwrap();
    assert!(listener.wait().unwrap().success());
    let shown = String::from_utf8_lossy(&running).replace('\0', "");
    let lines: Vec<Value> = running
        .split(|&b| b == b'\n' || b == 0)
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_slice(l)
                .unwrap_or_else(|e| panic!("{e}: {:?} in {shown}", String::from_utf8_lossy(l)))
        })
        .collect();
    assert!(
        lines
            .iter()
            .any(|v| v["kind"] == "start" && v["jobId"] == id.as_str()),
        "the running job's start: {shown}"
    );
    let after = std::fs::read(&ledger).unwrap();
    assert!(!after.contains(&0) && after.last() == Some(&b'\n'));
}

/// Linux: what a process holds open is read from `/proc`.
#[cfg(target_os = "linux")]
#[test]
fn an_idle_listener_holds_no_folder_of_the_target_open() {
    // Between passes the listener holds nothing in the shared folder but
    // its lock, so a sync engine or a user may move or remove any folder
    // of the layout; that includes `cancel/`, which the cancel check
    // lists (the folder is old enough to be listed: the sleep).
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "done"]));
    std::thread::sleep(Duration::from_millis(200));
    let g = w.spawn_listener(&[]);
    w.wait_result(&id, Duration::from_secs(20));
    let pc = std::fs::canonicalize(w.pc()).unwrap();
    let held = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(format!("/proc/{}/fd", g.pid()))
            .map(|fds| {
                fds.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                    .filter(|t| t.starts_with(&pc) && !t.ends_with("listener.lock"))
                    .collect()
            })
            .unwrap_or_default()
    };
    // The pass after the job's end finds nothing to do and lets go.
    wait_until(Duration::from_secs(5), || held().is_empty());
    assert!(held().is_empty(), "held while idle: {:?}", held());
}

#[cfg(target_os = "linux")]
#[test]
fn unparseable_files_waiting_to_settle_are_not_read_again_at_each_pass() {
    let w = World::with_target();
    // Each as a sync engine leaves a file it is still writing: the start
    // of a document, 128 KiB of it so far (one file, under 1,000 names).
    let partial = format!("{{\"v\": 1, \"spec\": \"{}", "x".repeat(128 * 1024));
    let first = w.inbox("junk-0000");
    std::fs::write(&first, &partial).unwrap();
    for i in 1..1000 {
        std::fs::hard_link(&first, w.inbox(&format!("junk-{i:04}"))).unwrap();
    }
    // Its result says the listener's first pass, which reads each file
    // once, is over.
    let first_pass = w.enqueue(&[], &kit(&[]));
    let hb = w.pc().join("listener.json");
    let l = ListenerGuard::spawn(w.bg_cmd().args([
        "--json",
        "listen",
        "--poll-interval",
        "100ms",
        "--settle",
        "60s",
    ]));
    wait_until(Duration::from_secs(10), || hb.exists());
    w.wait_result(&first_pass, Duration::from_secs(30));
    std::thread::sleep(Duration::from_millis(300));
    let before = cpu_seconds(l.pid());
    std::thread::sleep(Duration::from_secs(3));
    let used = cpu_seconds(l.pid()) - before;
    assert!(
        used < 0.6,
        "a listener used {used:.2} s of CPU in 3 s (2.8 s when each pass read every file again)"
    );
    // Still unsettled: none is refused yet, and a job beside them runs.
    let id = w.enqueue(&[], &kit(&[]));
    w.wait_result(&id, Duration::from_secs(20));
    assert!(w.inbox("junk-0000").exists());
    assert!(!w.rejected("junk-0000.json").exists());
}

/// The entries of `dir`, folders included.
fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A loop listener whose stderr goes to `log`, to be read while it runs.
fn listener_logging_to(w: &World, log: &Path) -> ListenerGuard {
    let err = std::fs::File::create(log).unwrap();
    let child = w
        .bg_cmd()
        .args(["listen", "--poll-interval", "100ms"])
        .stdout(Stdio::null())
        .stderr(err)
        .start();
    ListenerGuard { child: Some(child) }
}

/// Waits until `log` holds `text`, and returns it.
fn logged(log: &Path, text: &str) -> String {
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(log).is_ok_and(|t| t.contains(text))
    });
    std::fs::read_to_string(log).unwrap()
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a folder whose files a listener holds open"
)]
fn a_root_that_vanishes_under_a_listener_is_waited_for_not_rebuilt() {
    // A brand-new empty root: the listener's first start identifies it.
    let w = World::new();
    let log = w.dir.path().join("listener.err");
    let listener = listener_logging_to(&w, &log);
    wait_until(Duration::from_secs(10), || {
        w.pc().join("listener.json").exists()
    });
    assert!(w.root.join("fleet-root.json").exists());
    let side = scratch(&w, "side");
    let one = w.enqueue(&[], &kit(&["append", p(&side), "one"]));
    assert_eq!(w.wait_result(&one, Duration::from_secs(10))["ok"], true);

    // Its mount goes away (a sync client moves it): an empty folder stands
    // in its place, and stays empty.
    let away = w.dir.path().join("root-away");
    std::fs::rename(&w.root, &away).unwrap();
    std::fs::create_dir(&w.root).unwrap();
    let said = logged(&log, "waiting for it");
    assert!(said.contains("fleet-root.json"), "{said}");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(entries(&w.root), Vec::<String>::new());
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("CONFIG"), "{err}");
    assert!(err.contains("fleet-root.json"), "{err}");
    assert!(err.contains(&w.root.display().to_string()), "{err}");
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &one]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("fleet-root.json"), "{err}");
    assert_eq!(entries(&w.root), Vec::<String>::new());

    // Back: the listener goes on where it was.
    std::fs::remove_dir(&w.root).unwrap();
    std::fs::rename(&away, &w.root).unwrap();
    let two = w.enqueue(&[], &kit(&["append", p(&side), "two"]));
    assert_eq!(w.wait_result(&two, Duration::from_secs(10))["ok"], true);
    assert_eq!(lines(&side), ["one", "two"]);
    logged(&log, "is back");
    drop(listener);
}

#[test]
fn a_root_from_before_identities_gets_one_without_fuss() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = w.enqueue(&[], &kit(&["append", p(&side), "ran"]));
    assert!(w.root.join("fleet-root.json").exists());
    assert_counters(&w.listen_once(&[]), &[("done", 1)]);
    assert_eq!(lines(&side), ["ran"]);
    assert_eq!(w.result(&id)["ok"], true);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a folder another process holds open"
)]
fn a_listener_started_in_a_vanished_root_waits_for_it() {
    let w = World::with_target();
    assert_counters(&w.listen_once(&[]), &[]);
    let away = w.dir.path().join("root-away");
    std::fs::rename(&w.root, &away).unwrap();
    std::fs::create_dir(&w.root).unwrap();
    // --once refuses; a loop listener waits, making nothing.
    let (code, out, err) = w.run(&["listen", "--once"]);
    assert_eq!(code, 78, "{out}{err}");
    assert!(err.contains("fleet-root.json"), "{err}");
    let log = w.dir.path().join("listener.err");
    let listener = listener_logging_to(&w, &log);
    logged(&log, "waiting for it");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(entries(&w.root), Vec::<String>::new());
    std::fs::remove_dir(&w.root).unwrap();
    std::fs::rename(&away, &w.root).unwrap();
    logged(&log, "is back");
    let hb = w.pc().join("listener.json");
    wait_until(Duration::from_secs(10), || {
        std::fs::read_to_string(&hb).is_ok_and(|t| t.contains("\"listening\""))
    });
    drop(listener);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Windows refuses to rename a folder whose files a listener holds open"
)]
fn a_result_finished_while_the_root_is_away_is_placed_once_it_is_back() {
    let w = World::with_target();
    let log = w.dir.path().join("listener.err");
    let listener = listener_logging_to(&w, &log);
    wait_until(Duration::from_secs(10), || {
        w.pc().join("listener.json").exists()
    });
    let side = scratch(&w, "side");
    let id = w.enqueue(&[], &kit(&["sleep", "1", "append", p(&side), "ran"]));
    wait_until(Duration::from_secs(10), || w.running(&id).exists());
    let away = w.dir.path().join("root-away");
    std::fs::rename(&w.root, &away).unwrap();
    std::fs::create_dir(&w.root).unwrap();
    // It ends while the root is away: nothing is placed in the folder left.
    wait_until(Duration::from_secs(10), || lines(&side) == ["ran"]);
    logged(&log, "waiting for it");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(entries(&w.root), Vec::<String>::new());
    std::fs::remove_dir(&w.root).unwrap();
    std::fs::rename(&away, &w.root).unwrap();
    let r = w.wait_result(&id, Duration::from_secs(10));
    assert_eq!(r["ok"], true, "{r}");
    assert!(w.done(&id).exists());
    assert!(!w.running(&id).exists());
    drop(listener);
}
