//! docs/protocol.md §5.1, §6, §7 and the `cancel` row of §8: stop running and
//! queued jobs, steer with `enqueue --interrupt`, the governor gate, listener
//! shutdown and the counters — with the real binary, real processes and real
//! signals. A cancel must land every time it should and never when it should
//! not, so each rule has a test whose job would visibly behave otherwise.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

/// Long enough for any result in this module; far shorter than `sleep 30`.
const RESULT_LIMIT: Duration = Duration::from_secs(20);

/// `--env NAME=<path>`, so a job's steps name the path as `$NAME`.
fn env_flag(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

/// `sh -c SCRIPT`, for the tests of Unix-only behaviour (job control).
#[cfg(unix)]
fn sh(script: &str) -> [&str; 3] {
    ["sh", "-c", script]
}

/// Fields of `/proc/<pid>/stat` after the command name: state, ppid, pgrp, session…
#[cfg(unix)]
fn stat_fields(pid: i32) -> Vec<String> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    s[s.rfind(')').unwrap() + 2..]
        .split(' ')
        .map(str::to_string)
        .collect()
}

/// A loop-mode listener with a chosen poll interval (the shared helper fixes
/// 100ms), polling only: events would end the race these tests stage.
fn listener_polling(w: &World, poll: &str) -> ListenerGuard {
    let hb = w.pc().join("listener.json");
    let _ = std::fs::remove_file(&hb);
    let g = ListenerGuard::spawn(w.bg_cmd().args([
        "listen",
        "--poll-interval",
        poll,
        "--settle",
        "2s",
        "--no-watch",
    ]));
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

/// `--json listen --once` in the background; finish it with [`once_counters`].
fn spawn_once(w: &World, extra: &[&str]) -> ListenerGuard {
    ListenerGuard::spawn(w.bg_cmd().args(["--json", "listen", "--once"]).args(extra))
}

fn once_counters(g: ListenerGuard) -> Value {
    let (code, out, err) = g.wait(RESULT_LIMIT);
    assert_eq!(code, 0, "listen --once failed: {out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    v["counters"].clone()
}

/// `cancel --target PC --job-id ID EXTRA…` as `machine`.
fn cancel_as(w: &World, machine: &str, id: &str, extra: &[&str]) -> (i32, String, String) {
    output(
        w.cmd_as(machine)
            .args(["cancel", "--target", "PC", "--job-id", id])
            .args(extra),
    )
}

fn cancel_json(w: &World, id: &str) -> Value {
    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .args(["--json", "cancel", "--target", "PC", "--job-id", id]),
    );
    assert_eq!(code, 0, "cancel failed: {out}{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

/// A marker body for `id` with the given signature (none: unsigned).
fn marker_text(id: &str, created: &str, sig: Option<String>) -> String {
    let mut body = json!({"jobId": id, "target": "PC", "createdAt": created, "origin": "LAPTOP"});
    if let Some(sig) = sig {
        body["sig"] = json!(sig);
    }
    body.to_string()
}

/// A valid marker for `id`, signed with the fleet key.
fn signed_marker_text(id: &str) -> String {
    marker_doc(id, "PC", &now_text(), "LAPTOP", Signer::Fleet).to_string()
}

/// A marker for `id` signed with a key that is not the fleet's.
fn foreign_marker_text(id: &str) -> String {
    marker_doc(id, "PC", &now_text(), "LAPTOP", Signer::Foreign).to_string()
}

/// Waits for the marker to reach `archive/consumed/`: a loop listener
/// writes the result first, then archives the job, then moves the marker.
/// Enqueues a job that writes its pid to a file, then sleeps 30 s; returns
/// its id and the pid file.
fn sleeper(w: &World) -> (String, std::path::PathBuf) {
    let pidfile = scratch(w, "pid");
    let id = w.enqueue(
        &["--env", &env_flag("PIDFILE", &pidfile)],
        &kit(&["pid", "$PIDFILE", "sleep", "30"]),
    );
    (id, pidfile)
}

fn wait_consumed(w: &World, id: &str) {
    wait_until(Duration::from_secs(5), || w.consumed(id).exists());
}

/// Waits for a refused marker to leave `cancel/` (to `archive/rejected/`).
fn wait_marker_gone(w: &World, id: &str) {
    wait_until(Duration::from_secs(5), || !w.marker(id).exists());
}

/// The spec of an archived job, parsed.
fn archived_spec(w: &World, id: &str) -> Value {
    let job: Value = serde_json::from_str(&std::fs::read_to_string(w.done(id)).unwrap()).unwrap();
    serde_json::from_str(job["spec"].as_str().unwrap()).unwrap()
}

fn assert_cancelled(w: &World, id: &str, error: &str) {
    let r = w.result(id);
    assert_eq!(r["error"], error, "result: {r}");
    assert_eq!(r["ok"], false, "result: {r}");
    assert_eq!(r["exitCode"], -1, "result: {r}");
}

fn assert_done_ok(w: &World, id: &str) {
    let r = w.result(id);
    assert_eq!(r["error"], "", "result: {r}");
    assert_eq!(r["ok"], true, "result: {r}");
    assert_eq!(r["exitCode"], 0, "result: {r}");
}

// ---------------------------------------------------------------------------
// cancel of a running job (watcher, runner, result)

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 cannot deliver CTRL_BREAK: every stop there is the forced one after the grace"
)]
fn cancel_of_a_running_job_stops_it_and_archives_job_and_marker() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    assert!(alive(pid));
    // `running/` is written by the listener's publisher, a moment after
    // the spawn: only then does the folder say "running".
    wait_until(Duration::from_secs(5), || w.running(&id).exists());

    let started = Instant::now();
    let (code, out, err) = cancel_as(&w, "LAPTOP", &id, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        format!("cancel of {id} requested (job running)")
    );

    w.wait_result(&id, RESULT_LIMIT);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "the cancel took the whole grace or more: {:?}",
        started.elapsed()
    );
    assert!(!alive(pid), "the job's process {pid} survived its cancel");
    assert_cancelled(&w, &id, "cancelled");
    assert!(!w.result(&id)["startedAt"].as_str().unwrap().is_empty());
    let d = w.detail(&id);
    assert_eq!(d["signal"], "SIGTERM", "detail: {d}");
    assert_eq!(d["graceExpired"], false, "detail: {d}");

    assert!(w.done(&id).exists(), "job file not in archive/done");
    assert!(!w.inbox(&id).exists());
    assert!(!w.running(&id).exists(), "running/ file left behind");
    wait_consumed(&w, &id);
    assert!(!w.marker(&id).exists(), "marker left in cancel/");
    let consumed: Value =
        serde_json::from_str(&std::fs::read_to_string(w.consumed(&id)).unwrap()).unwrap();
    assert_eq!(consumed["origin"], "LAPTOP");
    assert_eq!(d["marker"]["origin"], "LAPTOP", "detail: {d}");
    assert_eq!(
        d["marker"]["createdAt"], consumed["createdAt"],
        "detail: {d}"
    );
}

#[test]
fn cancel_writes_a_marker_signed_over_the_canonical_string() {
    let w = World::with_target();
    let id = "20261129-193000-00000000000000aa";
    let (code, out, err) = cancel_as(&w, "LAPTOP", id, &["--force"]);
    assert_eq!(code, 0, "{out}{err}");
    // Sync may lag: a job this folder has not seen yet can still be
    // cancelled, with --force.
    assert_eq!(
        out.trim(),
        format!("cancel of {id} requested (job not seen yet)")
    );
    // Written atomically: the final file only, no temp file left.
    assert_eq!(files(&w.pc().join("cancel")), vec![format!("{id}.json")]);
    let m: Value = serde_json::from_str(&std::fs::read_to_string(w.marker(id)).unwrap()).unwrap();
    assert_eq!(m["jobId"], id);
    assert_eq!(m["target"], "PC");
    assert_eq!(m["origin"], "LAPTOP");
    let created = m["createdAt"].as_str().unwrap();
    assert_eq!(created.len(), "2026-11-29T19:31:00.000Z".len(), "{created}");
    assert!(created.ends_with('Z'), "{created}");
    let sig = m["sig"].as_str().unwrap().to_ascii_lowercase();
    assert_eq!(sig, independent_sig(&marker_canonical_of(&m)));
}

#[test]
fn a_job_that_ignores_sigterm_is_killed_after_the_grace() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let id = w.enqueue(
        &["--grace", "1s", "--env", &env_flag("PIDFILE", &pidfile)],
        &kit(&["ignore-stop", "pid", "$PIDFILE", "sleep", "30"]),
    );
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    cancel_as(&w, "LAPTOP", &id, &[]);
    w.wait_result(&id, RESULT_LIMIT);
    assert!(!alive(pid), "the job ignoring SIGTERM survived");
    assert_cancelled(&w, &id, "cancelled");
    let d = w.detail(&id);
    assert_eq!(d["graceExpired"], true, "detail: {d}");
    assert_eq!(d["signal"], "SIGKILL", "detail: {d}");
    // The kill came after the grace, not instead of it.
    assert!(d["durationMs"].as_u64().unwrap() >= 1000, "detail: {d}");
}

#[test]
#[cfg(unix)] // SIGSTOP and SIGCONT exist on Unix only
fn a_stopped_job_is_continued_so_it_can_act_on_sigterm() {
    // SIGCONT precedes SIGTERM: a job stopped with SIGSTOP still gets its
    // graceful stop; it exits 0 in answer, and that is still a cancel.
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let cpidfile = scratch(&w, "cpid");
    let termed = scratch(&w, "termed");
    let id = w.enqueue(
        &[
            "--grace",
            "5s",
            "--env",
            &env_flag("PIDFILE", &pidfile),
            "--env",
            &env_flag("CPID", &cpidfile),
            "--env",
            &env_flag("TERMED", &termed),
        ],
        &sh(concat!(
            r#"trap 'echo term > "$TERMED"; exit 0' TERM; "#,
            r#"sleep 30 & echo $! > "$CPID"; echo $$ > "$PIDFILE"; wait"#
        )),
    );
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let cpid = read_pid(&cpidfile, Duration::from_secs(10));
    // Stop the group only once the child is `sleep` itself: a shell caught
    // between fork and exec would still carry the TERM trap, or sleep
    // uninterruptibly in vfork instead of stopping.
    wait_until(Duration::from_secs(5), || {
        std::fs::read_to_string(format!("/proc/{cpid}/comm")).is_ok_and(|c| c.trim() == "sleep")
    });
    // SAFETY: kill(2) on the job's own process group.
    unsafe {
        libc::kill(-pid, libc::SIGSTOP);
    }
    wait_until(Duration::from_secs(5), || {
        stat_fields(pid)[0] == "T" && stat_fields(cpid)[0] == "T"
    });
    cancel_as(&w, "LAPTOP", &id, &[]);
    w.wait_result(&id, RESULT_LIMIT);
    assert!(
        termed.exists(),
        "the stopped job never ran its TERM handler"
    );
    assert_cancelled(&w, &id, "cancelled");
    let d = w.detail(&id);
    assert_eq!(d["graceExpired"], false, "detail: {d}");
    assert_eq!(d["signal"], "SIGTERM", "detail: {d}");
    assert_eq!(d["exitCodeAfterSignal"], 0, "detail: {d}");
}

#[test]
#[cfg(unix)] // `setsid`, sessions in `/proc` and the subreaper are Unix; Windows: `windows`
fn a_grandchild_started_with_setsid_is_gone_after_the_cancel() {
    // Two escapes from the job's process group: a `setsid` child of the job,
    // and a daemonized one whose parent exits at once, so only the
    // listener's subreaper role keeps it in the tree.
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let gpidfile = scratch(&w, "gpid");
    let dpidfile = scratch(&w, "dpid");
    let id = w.enqueue(
        &[
            "--grace",
            "1s",
            "--env",
            &env_flag("PIDFILE", &pidfile),
            "--env",
            &env_flag("GPID", &gpidfile),
            "--env",
            &env_flag("DPID", &dpidfile),
        ],
        &sh(concat!(
            r#"setsid sh -c 'echo $$ > "$GPID"; exec sleep 60' & "#,
            r#"( setsid sh -c 'echo $$ > "$DPID"; exec sleep 60' & ); "#,
            r#"echo $$ > "$PIDFILE"; exec sleep 30"#
        )),
    );
    let g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let gpid = read_pid(&gpidfile, Duration::from_secs(10));
    let dpid = read_pid(&dpidfile, Duration::from_secs(10));
    for escaped in [gpid, dpid] {
        // It really left the job's process group: it leads a session of its own.
        wait_until(Duration::from_secs(5), || {
            let f = stat_fields(escaped);
            f[2] == escaped.to_string() && f[3] == escaped.to_string()
        });
    }
    // The daemonized one was orphaned and adopted by the listener.
    wait_until(Duration::from_secs(5), || {
        stat_fields(dpid)[1] == g.pid().to_string()
    });
    cancel_as(&w, "LAPTOP", &id, &[]);
    w.wait_result(&id, RESULT_LIMIT);
    assert_cancelled(&w, &id, "cancelled");
    assert!(!alive(pid));
    assert!(
        !alive(gpid),
        "the setsid grandchild {gpid} survived the cancel"
    );
    assert!(
        !alive(dpid),
        "the daemonized grandchild {dpid} survived the cancel"
    );
}

#[test]
fn a_timeout_stops_the_whole_tree_the_same_way() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let gpidfile = scratch(&w, "gpid");
    let id = w.enqueue(
        &[
            "--timeout",
            "1s",
            "--grace",
            "500ms",
            "--env",
            &env_flag("PIDFILE", &pidfile),
            "--env",
            &env_flag("GPID", &gpidfile),
        ],
        &kit(&[
            "ignore-stop",
            "escape",
            "[",
            "pid",
            "$GPID",
            "sleep",
            "60",
            "]",
            "pid",
            "$PIDFILE",
            "sleep",
            "30",
        ]),
    );
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let gpid = read_pid(&gpidfile, Duration::from_secs(10));
    w.wait_result(&id, RESULT_LIMIT);
    assert_cancelled(&w, &id, "timeout");
    let d = w.detail(&id);
    assert_eq!(d["graceExpired"], true, "detail: {d}");
    assert_eq!(d["signal"], "SIGKILL", "detail: {d}");
    assert!(!alive(pid));
    assert!(
        !alive(gpid),
        "the setsid grandchild {gpid} survived the timeout"
    );
}

#[test]
fn a_marker_minted_by_an_independent_signer_acts() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    let path = w.write_marker("PC", &id, "PC");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    w.wait_result(&id, RESULT_LIMIT);
    assert!(!alive(pid));
    assert_cancelled(&w, &id, "cancelled");
    let d = w.detail(&id);
    assert_eq!(d["marker"]["origin"], "LAPTOP", "detail: {d}");
    assert_eq!(
        d["marker"]["createdAt"], written["createdAt"],
        "detail: {d}"
    );
    wait_consumed(&w, &id);
}

// ---------------------------------------------------------------------------
// completion race and `cancel --wait`

#[test]
fn a_job_that_exits_0_before_the_watcher_polls_keeps_its_success_and_the_marker_is_consumed() {
    // The watcher looks at spawn time and then every 3 s. The job itself
    // drops a valid marker in place 0.5 s in and exits 0 at 0.8 s: the marker
    // was there while it ran, but no signal was sent before it ended.
    let w = World::with_target();
    let staged = scratch(&w, "staged-marker.json");
    let id = "20261129-193000-00000000000000b1";
    std::fs::write(&staged, signed_marker_text(id)).unwrap();
    let id = w.enqueue(
        &[
            "--job-id",
            id,
            "--env",
            &env_flag("STAGED", &staged),
            "--env",
            &env_flag("MARKER", &w.marker(id)),
        ],
        &kit(&["sleep", "0.5", "move", "$STAGED", "$MARKER", "sleep", "0.3"]),
    );
    let counters = once_counters(spawn_once(&w, &["--poll-interval", "3s"]));
    assert!(!staged.exists(), "the job did not move the marker in");
    assert_done_ok(&w, &id);
    assert!(!w.marker(&id).exists(), "marker left in cancel/");
    assert!(
        w.consumed(&id).exists(),
        "marker not consumed after the raced completion"
    );
    assert_eq!(counters["done"], 1, "counters: {counters}");
    assert_eq!(counters["cancelled"], 0, "counters: {counters}");
    assert_eq!(counters["failed"], 0, "counters: {counters}");
}

#[test]
fn cancel_wait_exits_0_when_the_job_was_stopped() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    read_pid(&pidfile, Duration::from_secs(10));
    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "--json",
        "cancel",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "20s",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(v["status"], "requested", "{v}");
    assert_eq!(v["outcome"], "stopped", "{v}");
    assert_cancelled(&w, &id, "cancelled");
}

#[test]
fn cancel_wait_exits_0_for_a_before_start_cancel() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    let waiter = ListenerGuard::spawn(w.bg_cmd_as("LAPTOP").args([
        "cancel",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "20s",
    ]));
    wait_until(Duration::from_secs(10), || w.marker(&id).exists());
    w.listen_once(&[]);
    let (code, out, err) = waiter.wait(RESULT_LIMIT);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!("{id} stopped (cancelled-before-start)")),
        "{out}"
    );
    assert!(!side.exists());
}

#[test]
fn cancel_wait_exits_1_when_the_job_finished_first() {
    // Poll 4 s, no events: the watcher's second look comes long after the
    // 1 s job ends.
    let w = World::with_target();
    let started = scratch(&w, "started");
    let id = w.enqueue(
        &["--env", &env_flag("STARTED", &started)],
        &kit(&["touch", "$STARTED", "sleep", "1"]),
    );
    let _g = listener_polling(&w, "4s");
    wait_until(Duration::from_secs(10), || started.exists());
    wait_until(Duration::from_secs(5), || w.running(&id).exists());
    let (code, out, err) = cancel_as(&w, "LAPTOP", &id, &["--wait", "--wait-timeout", "20s"]);
    assert!(
        out.starts_with(&format!("cancel of {id} requested (job running)")),
        "the cancel came too late to race: {out}{err}"
    );
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(&format!("{id} was not stopped: it finished first")),
        "{out}"
    );
    assert_done_ok(&w, &id);
    wait_consumed(&w, &id);
}

#[test]
fn cancel_wait_gives_up_with_124() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let (code, out, err) = cancel_as(&w, "LAPTOP", &id, &["--wait", "--wait-timeout", "300ms"]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        w.marker(&id).exists(),
        "the marker is written before waiting"
    );
    assert!(!w.result_path(&id).exists());
}

// ---------------------------------------------------------------------------
// before start, and the governor

#[test]
fn a_queued_job_with_a_valid_marker_is_cancelled_before_start() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    let v = cancel_json(&w, &id);
    assert_eq!(
        v,
        json!({"jobId": id, "status": "requested", "job": "queued", "alreadyRequested": false, "target": "PC"})
    );
    let counters = w.listen_once(&[]);
    assert!(!side.exists(), "the cancelled job was spawned");
    assert_cancelled(&w, &id, "cancelled-before-start");
    assert_eq!(w.result(&id)["startedAt"], "");
    assert_eq!(w.detail(&id)["marker"]["origin"], "LAPTOP");
    assert!(w.done(&id).exists());
    assert!(!w.inbox(&id).exists());
    assert!(w.consumed(&id).exists());
    assert!(!w.marker(&id).exists());
    assert_eq!(
        files(&w.pc().join("logs")),
        Vec::<String>::new(),
        "nothing spawned, nothing logged"
    );
    assert_eq!(counters["cancelled"], 1, "counters: {counters}");
    assert_eq!(counters["done"], 0, "counters: {counters}");
}

#[test]
fn a_marker_written_while_another_job_runs_cancels_the_queued_job_before_start() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (busy, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    read_pid(&pidfile, Duration::from_secs(10));
    let queued = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    let (code, out, err) = cancel_as(&w, "LAPTOP", &queued, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        format!("cancel of {queued} requested (job queued)")
    );
    cancel_as(&w, "LAPTOP", &busy, &[]);
    w.wait_result(&busy, RESULT_LIMIT);
    w.wait_result(&queued, RESULT_LIMIT);
    assert_cancelled(&w, &busy, "cancelled");
    assert_cancelled(&w, &queued, "cancelled-before-start");
    assert!(!side.exists(), "the cancelled queued job was spawned");
    wait_consumed(&w, &queued);
}

#[test]
fn a_marker_landing_after_cancel_was_listed_still_cancels_the_queued_job_before_start() {
    // The listener answers a queued job's cancel check from its listing of
    // cancel/, made at the first job's start, while the folder's time is
    // unchanged. The marker lands while the first job runs, and the waits
    // make each folder time old enough to be listed, not looked up: only
    // the new time tells the listing is out of date.
    let w = World::with_target();
    let started = scratch(&w, "started");
    let gate = scratch(&w, "gate");
    let side = scratch(&w, "side");
    w.enqueue(&[], &kit(&["touch", p(&started), "wait-for", p(&gate)]));
    let queued = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    std::thread::sleep(Duration::from_millis(200));
    let g = spawn_once(&w, &["--settle", "0s"]);
    wait_until(Duration::from_secs(10), || started.exists());
    let (code, out, err) = cancel_as(&w, "LAPTOP", &queued, &[]);
    assert_eq!(code, 0, "{out}{err}");
    std::thread::sleep(Duration::from_millis(200));
    std::fs::write(&gate, "").unwrap();
    let counters = once_counters(g);
    assert_cancelled(&w, &queued, "cancelled-before-start");
    assert!(!side.exists(), "the cancelled queued job was spawned");
    assert_eq!(counters["done"], 1, "counters: {counters}");
    assert_eq!(counters["cancelled"], 1, "counters: {counters}");
}

/// Unix: Windows looks every marker up by name (docs/protocol.md §7.4).
#[cfg(unix)]
#[test]
fn a_marker_hidden_by_setting_the_cancel_folders_time_back_still_stops_the_job_once_it_runs() {
    // SECURITY.md's promise: who sets cancel/'s time back to the
    // value listed hides a new marker from the before-start check alone.
    let w = World::with_target();
    let started = scratch(&w, "started");
    let gate = scratch(&w, "gate");
    w.enqueue(&[], &kit(&["touch", p(&started), "wait-for", p(&gate)]));
    let queued = w.enqueue(&[], &kit(&["sleep", "30"]));
    std::thread::sleep(Duration::from_millis(200));
    let cancel = w.pc().join("cancel");
    let listed = std::fs::metadata(&cancel).unwrap().modified().unwrap();
    let g = spawn_once(
        &w,
        &["--settle", "0s", "--poll-interval", "3s", "--no-watch"],
    );
    wait_until(Duration::from_secs(10), || started.exists());
    let (code, out, err) = cancel_as(&w, "LAPTOP", &queued, &[]);
    assert_eq!(code, 0, "{out}{err}");
    std::fs::File::open(&cancel)
        .unwrap()
        .set_modified(listed)
        .unwrap();
    let opened = Instant::now();
    std::fs::write(&gate, "").unwrap();
    let counters = once_counters(g);
    assert_cancelled(&w, &queued, "cancelled");
    // One poll interval (3 s) after its spawn, with room for a loaded machine.
    assert!(
        opened.elapsed() < Duration::from_secs(8),
        "the running job's look took {:?}",
        opened.elapsed()
    );
    assert_eq!(counters["cancelled"], 1, "counters: {counters}");
}

#[test]
fn before_start_cancel_is_checked_before_the_red_governor() {
    let w = World::with_target();
    let gov = scratch(&w, "governor");
    std::fs::write(&gov, "RED because the GPU is busy\n").unwrap();
    let side = |n: &str| scratch(&w, n);
    let marked = w.enqueue(
        &["--env", &env_flag("SIDE", &side("marked"))],
        &kit(&["touch", "$SIDE"]),
    );
    let normal = w.enqueue(
        &["--env", &env_flag("SIDE", &side("normal"))],
        &kit(&["touch", "$SIDE"]),
    );
    let high = w.enqueue(
        &[
            "--priority",
            "high",
            "--env",
            &env_flag("SIDE", &side("high")),
        ],
        &kit(&["touch", "$SIDE"]),
    );
    w.write_marker("PC", &marked, "PC");
    let counters = w.listen_once(&["--governor-file", p(&gov)]);
    assert_cancelled(&w, &marked, "cancelled-before-start");
    assert!(w.consumed(&marked).exists());
    for id in [&normal, &high] {
        assert!(w.inbox(id).exists(), "RED must leave {id} queued");
        assert!(!w.result_path(id).exists());
    }
    for n in ["marked", "normal", "high"] {
        assert!(!side(n).exists(), "{n} ran under RED");
    }
    assert_eq!(counters["cancelled"], 1, "counters: {counters}");
    assert_eq!(counters["deferred"], 2, "counters: {counters}");
    assert_eq!(counters["done"], 0, "counters: {counters}");
}

#[test]
fn yellow_governor_runs_only_high_jobs() {
    let w = World::with_target();
    let gov = scratch(&w, "governor");
    std::fs::write(&gov, "yellow\n").unwrap();
    let normal_side = scratch(&w, "normal");
    let high_side = scratch(&w, "high");
    let normal = w.enqueue(
        &["--env", &env_flag("SIDE", &normal_side)],
        &kit(&["touch", "$SIDE"]),
    );
    let high = w.enqueue(
        &["--priority", "high", "--env", &env_flag("SIDE", &high_side)],
        &kit(&["touch", "$SIDE"]),
    );
    let counters = w.listen_once(&["--governor-file", p(&gov)]);
    assert_done_ok(&w, &high);
    assert!(high_side.exists());
    assert!(w.inbox(&normal).exists());
    assert!(!normal_side.exists());
    assert_eq!(counters["done"], 1, "counters: {counters}");
    assert_eq!(counters["deferred"], 1, "counters: {counters}");
}

#[test]
fn a_missing_governor_file_is_green() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    let gov = scratch(&w, "no-such-governor");
    let counters = w.listen_once(&["--governor-file", p(&gov)]);
    assert_done_ok(&w, &id);
    assert!(side.exists());
    assert_eq!(counters["deferred"], 0, "counters: {counters}");
}

#[test]
fn an_unreadable_governor_file_is_yellow() {
    // A directory cannot be read as a file, even by root.
    let w = World::with_target();
    let gov = scratch(&w, "governor-dir");
    std::fs::create_dir(&gov).unwrap();
    let normal = w.enqueue(&[], &kit(&[]));
    let high = w.enqueue(&["--priority", "high"], &kit(&[]));
    let counters = w.listen_once(&["--governor-file", p(&gov)]);
    assert_done_ok(&w, &high);
    assert!(w.inbox(&normal).exists());
    assert_eq!(counters["deferred"], 1, "counters: {counters}");
}

// ---------------------------------------------------------------------------
// what `cancel` writes, and when it writes nothing

#[test]
fn cancel_of_a_finished_job_is_not_running_writes_nothing_and_repeats_identically() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    w.listen_once(&[]);
    assert_done_ok(&w, &id);
    let before = files(&w.root);

    let first = cancel_as(&w, "LAPTOP", &id, &[]);
    let second = cancel_as(&w, "LAPTOP", &id, &[]);
    assert_eq!(first.0, 0, "{first:?}");
    assert!(
        first.1.contains(&format!("{id} is not running")),
        "{first:?}"
    );
    assert_eq!(first, second, "repeating the call must be identical");

    let j1 = cancel_json(&w, &id);
    let j2 = cancel_json(&w, &id);
    assert_eq!(j1["status"], "not_running", "{j1}");
    assert_eq!(j1, j2);

    assert_eq!(
        files(&w.root),
        before,
        "a cancel of a finished job wrote something"
    );
    assert_eq!(files(&w.pc().join("cancel")), Vec::<String>::new());
}

#[test]
fn cancel_resolves_the_target_case_insensitively() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .args(["cancel", "--target", "pc", "--job-id", &id]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        files(&w.root)
            .iter()
            .filter(|f| f.contains("cancel/"))
            .count(),
        1
    );
    w.listen_once(&[]);
    assert_cancelled(&w, &id, "cancelled-before-start");
    assert!(!side.exists());
}

#[test]
fn cancel_of_an_unknown_target_or_an_invalid_id_writes_nothing() {
    let w = World::with_target();
    let before = files(&w.root);
    let (code, out, err) = cancel_as(&w, "LAPTOP", "../../etc/x", &[]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(err.contains("VALIDATION_ERROR"), "{err}");
    let (code, out, err) = output(w.cmd_as("LAPTOP").args([
        "cancel",
        "--target",
        "NOWHERE",
        "--job-id",
        "20261129-193000-00000000000000a9",
    ]));
    assert_eq!(code, 66, "{out}{err}");
    assert!(err.contains("NOT_FOUND"), "{err}");
    assert_eq!(files(&w.root), before);
    assert!(!w.root.join("NOWHERE").exists());
}

#[test]
fn an_existing_marker_is_reported_not_rewritten() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let (code, _, err) = cancel_as(&w, "LAPTOP", &id, &[]);
    assert_eq!(code, 0, "{err}");
    let bytes = std::fs::read(w.marker(&id)).unwrap();
    let m: Value = serde_json::from_slice(&bytes).unwrap();
    std::thread::sleep(Duration::from_millis(20)); // a rewrite would change createdAt

    let (code, out, err) = cancel_as(&w, "PHONE", &id, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains(&format!(
            "cancel of {id} was already requested by LAPTOP at {}",
            m["createdAt"].as_str().unwrap()
        )),
        "{out}"
    );
    let v = cancel_json(&w, &id);
    assert_eq!(v["status"], "requested", "{v}");
    assert_eq!(v["alreadyRequested"], true, "{v}");
    assert_eq!(
        std::fs::read(w.marker(&id)).unwrap(),
        bytes,
        "the marker was rewritten"
    );
    assert_eq!(files(&w.pc().join("cancel")), vec![format!("{id}.json")]);
}

#[test]
fn an_invalid_file_in_the_markers_place_is_moved_aside_and_the_cancel_lands() {
    // A folder writer without the key squats the slot with a forgery: the
    // sender, which holds the key, files it under archive/rejected/ with
    // its reason and places the genuine marker.
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let forged = foreign_marker_text(&id);
    std::fs::write(w.marker(&id), &forged).unwrap();
    let (code, out, err) = output(
        w.cmd_as("LAPTOP")
            .args(["--json", "cancel", "--target", "PC", "--job-id", &id]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(v["status"], "requested", "{v}");
    assert_eq!(v["alreadyRequested"], false, "{v}");
    let name = format!("{id}.json");
    assert_eq!(std::fs::read_to_string(w.rejected(&name)).unwrap(), forged);
    let reason: Value = serde_json::from_str(
        &std::fs::read_to_string(w.rejected(&format!("{name}.reason.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(reason["kind"], "marker", "{reason}");
    assert_eq!(reason["verdict"], "bad-signature", "{reason}");
    let placed: Value =
        serde_json::from_str(&std::fs::read_to_string(w.marker(&id)).unwrap()).unwrap();
    assert_eq!(placed["origin"], "LAPTOP", "{placed}");
    // And it acts: the queued job is cancelled before it starts.
    assert_eq!(w.listen_once(&[])["cancelled"], 1);
    assert_eq!(w.result(&id)["error"], "cancelled-before-start");
}

#[test]
fn inside_a_job_only_the_direct_parent_may_cancel() {
    let w = World::with_target();
    let parent = "20261129-193000-00000000000000c1";
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_JOB_ID", parent)
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let child = out.trim().lines().next().unwrap().to_string();
    let outsider = w.enqueue(&[], &kit(&[]));
    let before = files(&w.root);

    let inside = |caller: &str, id: &str, json: bool| {
        let mut c = w.cmd();
        c.env("FLEET_DISPATCH_JOB_ID", caller);
        if json {
            c.arg("--json");
        }
        output(c.args(["cancel", "--target", "PC", "--job-id", id]))
    };
    // Another job: refused.
    let (code, out, err) = inside("20261129-193000-00000000000000c2", &child, false);
    assert_eq!(code, 77, "{out}{err}");
    assert!(err.contains("FORBIDDEN"), "{err}");
    // The child itself is not its own parent.
    let (code, out, err) = inside(&child, &child, true);
    assert_eq!(code, 77, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(v["error"]["code"], "FORBIDDEN", "{v}");
    // A job enqueued from outside any job has no parent job to cancel it.
    let (code, out, err) = inside(parent, &outsider, false);
    assert_eq!(code, 77, "{out}{err}");
    assert_eq!(files(&w.root), before, "a refused cancel wrote something");

    // The direct parent: accepted, and the marker acts.
    let (code, out, err) = inside(parent, &child, false);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        out.trim(),
        format!("cancel of {child} requested (job queued)")
    );
    let counters = w.listen_once(&[]);
    assert_cancelled(&w, &child, "cancelled-before-start");
    assert_done_ok(&w, &outsider);
    assert_eq!(counters["cancelled"], 1, "counters: {counters}");
}

#[test]
fn inside_a_job_an_unknown_job_is_not_found() {
    let w = World::with_target();
    let before = files(&w.root);
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_JOB_ID", "20261129-193000-00000000000000d1")
            .args([
                "cancel",
                "--target",
                "PC",
                "--job-id",
                "20261129-193000-00000000000000d2",
            ]),
    );
    assert_eq!(code, 66, "{out}{err}");
    assert!(err.contains("NOT_FOUND"), "{err}");
    assert_eq!(files(&w.root), before);
}

// ---------------------------------------------------------------------------
// markers that must never act

#[test]
fn a_renamed_marker_cannot_retarget_a_cancel_before_start() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let a = "20261129-193000-00000000000000e1";
    let b = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    // A valid marker for A, copied under B's name.
    std::fs::write(w.marker(&b), signed_marker_text(a)).unwrap();
    let counters = w.listen_once(&[]);
    assert_done_ok(&w, &b);
    assert!(side.exists(), "B did not run");
    assert!(!w.consumed(&b).exists());
    assert_eq!(w.reason(&format!("{b}.json"))["verdict"], "job-id-mismatch");
    assert_eq!(counters["done"], 1, "counters: {counters}");
    assert_eq!(counters["cancelled"], 0, "counters: {counters}");
}

#[test]
fn a_renamed_marker_cannot_retarget_a_running_job() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let a = "20261129-193000-00000000000000e2";
    let b = w.enqueue(
        &["--env", &env_flag("PIDFILE", &pidfile)],
        &kit(&["pid", "$PIDFILE", "sleep", "1"]),
    );
    let _g = w.spawn_listener(&[]);
    read_pid(&pidfile, Duration::from_secs(10));
    std::fs::write(w.marker(&b), signed_marker_text(a)).unwrap();
    w.wait_result(&b, RESULT_LIMIT);
    assert_done_ok(&w, &b);
    wait_marker_gone(&w, &b);
    assert!(!w.consumed(&b).exists());
    assert_eq!(w.reason(&format!("{b}.json"))["verdict"], "job-id-mismatch");
}

#[test]
fn unsigned_and_bad_signature_markers_never_act_before_start() {
    let w = World::with_target();
    let mut jobs = Vec::new();
    for (n, make) in [
        (
            "unsigned",
            (|id: &str| marker_text(id, &now_text(), None)) as fn(&str) -> String,
        ),
        ("foreign", foreign_marker_text),
        ("garbage-sig", |id: &str| {
            marker_text(id, &now_text(), Some("zz".repeat(32)))
        }),
    ] {
        let side = scratch(&w, n);
        let id = w.enqueue(
            &["--env", &env_flag("SIDE", &side)],
            &kit(&["touch", "$SIDE"]),
        );
        std::fs::write(w.marker(&id), make(&id)).unwrap();
        jobs.push((n, id, side));
    }
    let counters = w.listen_once(&[]);
    for (n, id, side) in &jobs {
        assert_done_ok(&w, id);
        assert!(side.exists(), "{n}: the job did not run");
        assert!(!w.consumed(id).exists(), "{n}: the marker was consumed");
        assert!(
            !w.marker(id).exists(),
            "{n}: the marker was left in cancel/"
        );
        assert_eq!(
            w.reason(&format!("{id}.json"))["verdict"],
            "bad-signature",
            "{n}"
        );
    }
    assert_eq!(counters["done"], 3, "counters: {counters}");
    assert_eq!(counters["cancelled"], 0, "counters: {counters}");
}

#[test]
fn markers_for_another_target_too_large_or_linked_never_act() {
    let w = World::with_target();
    let created = now_text();
    let mut jobs = Vec::new();
    let mut cases = vec![
        ("other-target", "target-mismatch"),
        ("too-large", "too-large"),
    ];
    // Wine cannot create symbolic links; Windows links: `windows`.
    if cfg!(unix) {
        cases.push(("symlink", "not-a-file"));
    }
    for (n, verdict) in cases {
        let side = scratch(&w, n);
        let id = w.enqueue(
            &["--env", &env_flag("SIDE", &side)],
            &kit(&["touch", "$SIDE"]),
        );
        match n {
            // Genuinely signed, but for the machine LAPTOP.
            "other-target" => {
                let body = marker_doc(&id, "LAPTOP", &created, "LAPTOP", Signer::Fleet);
                std::fs::write(w.marker(&id), body.to_string()).unwrap();
            }
            // Genuinely signed; an unknown field pads it past 16 KiB.
            "too-large" => {
                let mut body: Value = serde_json::from_str(&signed_marker_text(&id)).unwrap();
                body["pad"] = json!("x".repeat(17 * 1024));
                std::fs::write(w.marker(&id), body.to_string()).unwrap();
            }
            // A link to a genuine marker kept outside the folder.
            _ => {
                let outside = scratch(&w, &format!("{id}.json"));
                std::fs::write(&outside, signed_marker_text(&id)).unwrap();
                #[cfg(unix)]
                std::os::unix::fs::symlink(&outside, w.marker(&id)).unwrap();
            }
        }
        jobs.push((n, verdict, id, side));
    }
    let counters = w.listen_once(&[]);
    for (n, verdict, id, side) in &jobs {
        assert_done_ok(&w, id);
        assert!(side.exists(), "{n}: the job did not run");
        assert!(!w.consumed(id).exists(), "{n}: the marker was consumed");
        assert_eq!(w.reason(&format!("{id}.json"))["verdict"], *verdict, "{n}");
    }
    assert_eq!(counters["done"], jobs.len(), "counters: {counters}");
    assert_eq!(counters["cancelled"], 0, "counters: {counters}");
}

#[test]
fn unsigned_and_bad_signature_markers_never_stop_a_running_job() {
    let w = World::with_target();
    let _g = w.spawn_listener(&[]);
    for (n, make) in [
        (
            "unsigned",
            (|id: &str| marker_text(id, &now_text(), None)) as fn(&str) -> String,
        ),
        ("foreign", foreign_marker_text),
    ] {
        let pidfile = scratch(&w, &format!("{n}.pid"));
        let id = w.enqueue(
            &["--env", &env_flag("PIDFILE", &pidfile)],
            &kit(&["pid", "$PIDFILE", "sleep", "1"]),
        );
        read_pid(&pidfile, Duration::from_secs(10));
        std::fs::write(w.marker(&id), make(&id)).unwrap();
        w.wait_result(&id, RESULT_LIMIT);
        assert_done_ok(&w, &id);
        wait_marker_gone(&w, &id);
        assert!(!w.consumed(&id).exists(), "{n}: the marker was consumed");
    }
}

// ---------------------------------------------------------------------------
// steer

#[test]
fn enqueue_interrupt_cancels_the_old_job_and_runs_before_older_normal_jobs() {
    let w = World::with_target();
    let order = scratch(&w, "order");
    let (old, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    wait_until(Duration::from_secs(5), || w.running(&old).exists());
    let normal = w.enqueue(
        &["--env", &env_flag("ORDER", &order)],
        &kit(&["append", "$ORDER", "normal"]),
    );
    let (code, out, err) = w.run(&[
        "--json",
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        &old,
        "--env",
        &env_flag("ORDER", &order),
        "--",
        p(&jobkit()),
        "append",
        "$ORDER",
        "steer",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(v["priority"], "high", "{v}");
    assert_eq!(v["interrupt"]["status"], "requested", "{v}");
    assert_eq!(v["interrupt"]["job"], "running", "{v}");
    let steer = v["jobId"].as_str().unwrap().to_string();

    w.wait_result(&old, RESULT_LIMIT);
    w.wait_result(&steer, RESULT_LIMIT);
    w.wait_result(&normal, RESULT_LIMIT);
    assert_cancelled(&w, &old, "cancelled");
    assert!(!alive(pid));
    assert_done_ok(&w, &steer);
    assert_done_ok(&w, &normal);
    assert_eq!(archived_spec(&w, &steer)["priority"], "high");
    assert_eq!(std::fs::read_to_string(&order).unwrap(), "steer\nnormal\n");
}

#[test]
fn enqueue_interrupt_of_a_finished_job_says_not_running_and_the_new_job_still_runs() {
    let w = World::with_target();
    let old = w.enqueue(&[], &kit(&[]));
    w.listen_once(&[]);
    let side = scratch(&w, "side");
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        &old,
        "--env",
        &env_flag("SIDE", &side),
        "--",
        p(&jobkit()),
        "touch",
        "$SIDE",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    // Stdout is only the new id; what became of the interrupt is on stderr.
    assert_eq!(out.lines().count(), 1, "{out}");
    let new = out.trim().to_string();
    assert!(err.contains(&format!("{old} is not running")), "{err}");
    assert!(err.contains(&format!("{new} waits its turn")), "{err}");
    assert!(
        !w.marker(&old).exists(),
        "a marker was written for a finished job"
    );
    assert!(w.inbox(&new).exists());
    let counters = w.listen_once(&[]);
    assert_done_ok(&w, &new);
    assert!(side.exists());
    assert_eq!(counters["done"], 1, "counters: {counters}");
}

#[test]
fn enqueue_interrupt_that_cannot_be_requested_says_so_and_the_new_job_still_queues() {
    // Inside a job that is not OLD's parent, the cancel is refused; the new
    // job is queued all the same, and the output says what happened.
    let w = World::with_target();
    let side = scratch(&w, "side");
    let old = w.enqueue(&[], &kit(&[]));
    let caller = "20261129-193000-00000000000000f1";
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_JOB_ID", caller).args([
        "--json",
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        &old,
        "--env",
        &env_flag("SIDE", &side),
        "--",
        p(&jobkit()),
        "touch",
        "$SIDE",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"));
    assert_eq!(v["interrupt"]["status"], "not_requested", "{v}");
    assert_eq!(v["interrupt"]["error"]["code"], "FORBIDDEN", "{v}");
    let new = v["jobId"].as_str().unwrap().to_string();
    assert!(w.inbox(&new).exists());
    assert!(!w.marker(&old).exists(), "a refused cancel wrote a marker");
    let counters = w.listen_once(&[]);
    assert_done_ok(&w, &old);
    assert_done_ok(&w, &new);
    assert!(side.exists());
    assert_eq!(counters["done"], 2, "counters: {counters}");
}

// ---------------------------------------------------------------------------
// listener shutdown

#[test]
#[cfg(unix)] // a Unix signal to the listener (Wine 8 cannot send it console events)
fn sigterm_to_the_listener_interrupts_the_running_job_and_exits_130() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    g.signal(libc::SIGTERM);
    let (code, out, err) = g.wait(Duration::from_secs(15));
    assert_eq!(code, 130, "{out}{err}");
    assert!(!alive(pid), "the job outlived the listener's shutdown");
    assert_cancelled(&w, &id, "interrupted");
    assert!(w.done(&id).exists());
}

#[test]
#[cfg(unix)] // Unix signals to the listener (Wine 8 cannot send it console events)
fn a_second_signal_exits_at_once_and_kills_the_job_group() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    w.enqueue(
        &["--grace", "30s", "--env", &env_flag("PIDFILE", &pidfile)],
        &kit(&["ignore-stop", "pid", "$PIDFILE", "sleep", "30"]),
    );
    let g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    g.signal(libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        alive(pid),
        "the job ignores SIGTERM and should still be in its grace"
    );
    let second = Instant::now();
    g.signal(libc::SIGINT);
    let (code, out, err) = g.wait(Duration::from_secs(5));
    assert_eq!(code, 130, "{out}{err}");
    assert!(second.elapsed() < Duration::from_secs(3));
    wait_until(Duration::from_secs(3), || !alive(pid));
}

// ---------------------------------------------------------------------------
// counters and what a cancel leaves alone

#[test]
fn a_kill_and_a_before_start_cancel_both_count_as_cancelled() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let (running, pidfile) = sleeper(&w);
    let queued = w.enqueue(
        &["--env", &env_flag("SIDE", &side)],
        &kit(&["touch", "$SIDE"]),
    );
    w.write_marker("PC", &queued, "PC");
    let g = spawn_once(&w, &["--poll-interval", "100ms"]);
    read_pid(&pidfile, Duration::from_secs(10));
    cancel_as(&w, "LAPTOP", &running, &[]);
    let counters = once_counters(g);
    assert_cancelled(&w, &running, "cancelled");
    assert_cancelled(&w, &queued, "cancelled-before-start");
    assert_eq!(
        counters,
        json!({"done": 0, "failed": 0, "cancelled": 2, "deferred": 0, "rejected": 0, "skipped": 0, "repaired": 0})
    );
}

#[test]
fn a_cancel_leaves_other_queued_jobs_the_working_directory_and_child_jobs_alone() {
    let w = World::with_target();
    let workdir = scratch(&w, "work");
    std::fs::create_dir(&workdir).unwrap();
    std::fs::write(workdir.join("keep.txt"), "precious\n").unwrap();
    let child_id_file = scratch(&w, "child-id");
    let child_out = scratch(&w, "child-out");
    let other_out = scratch(&w, "other-out");
    let bin = bin();
    // The job enqueues a child job (its parentJobId is this job), then waits.
    // `$$OUT` reaches the child job as `$OUT`, its own variable.
    let parent = w.enqueue(
        &[
            "--cwd",
            p(&workdir),
            "--env",
            &env_flag("FD", &bin),
            "--env",
            &env_flag("CHILD_ID", &child_id_file),
            "--env",
            &env_flag("CHILD_OUT", &child_out),
        ],
        &kit(&[
            "run-to",
            "$CHILD_ID.tmp",
            "[",
            "$FD",
            "enqueue",
            "--target",
            "PC",
            "--env",
            "OUT=$CHILD_OUT",
            "--",
            p(&jobkit()),
            "write",
            "$$OUT",
            "child",
            "]",
            "move",
            "$CHILD_ID.tmp",
            "$CHILD_ID",
            "pid",
            "pid",
            "sleep",
            "30",
        ]),
    );
    let other = w.enqueue(
        &["--env", &env_flag("OUT", &other_out)],
        &kit(&["write", "$OUT", "other"]),
    );
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&workdir.join("pid"), Duration::from_secs(10));
    let child = std::fs::read_to_string(&child_id_file)
        .unwrap()
        .trim()
        .to_string();
    assert!(w.inbox(&child).exists(), "the child job was not queued");

    cancel_as(&w, "LAPTOP", &parent, &[]);
    w.wait_result(&parent, RESULT_LIMIT);
    assert!(!alive(pid));
    assert_cancelled(&w, &parent, "cancelled");
    w.wait_result(&other, RESULT_LIMIT);
    w.wait_result(&child, RESULT_LIMIT);
    assert_done_ok(&w, &other);
    assert_done_ok(&w, &child);
    assert_eq!(std::fs::read_to_string(&other_out).unwrap(), "other\n");
    assert_eq!(std::fs::read_to_string(&child_out).unwrap(), "child\n");
    assert_eq!(archived_spec(&w, &child)["parentJobId"], parent.as_str());
    assert_eq!(files(&workdir), vec!["keep.txt", "pid"]);
    assert_eq!(
        std::fs::read_to_string(workdir.join("keep.txt")).unwrap(),
        "precious\n"
    );
    assert_eq!(
        files(&w.pc().join("archive").join("consumed")),
        vec![format!("{parent}.cancel.json")],
        "only the parent's marker was consumed"
    );
}

#[test]
fn garbage_in_the_markers_place_is_moved_aside_and_the_cancel_lands() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    std::fs::write(w.marker(&id), b"\x00\xff{not a marker").unwrap();
    let v = cancel_json(&w, &id);
    assert_eq!(v["status"], "requested", "{v}");
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "malformed");
    assert_eq!(w.listen_once(&[])["cancelled"], 1);
    assert_eq!(w.result(&id)["error"], "cancelled-before-start");
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 cannot deliver CTRL_BREAK: every stop there is the forced one after the grace"
)]
fn cancel_of_a_running_job_lands_within_the_usual_bound_though_a_forgery_squats_its_slot() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let _g = w.spawn_listener(&[]);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    wait_until(Duration::from_secs(5), || w.running(&id).exists());
    // A folder writer fills the slot just before the genuine cancel.
    std::fs::write(w.marker(&id), foreign_marker_text(&id)).unwrap();
    let started = Instant::now();
    let (code, out, err) = cancel_as(&w, "LAPTOP", &id, &[]);
    assert_eq!(code, 0, "{out}{err}");
    w.wait_result(&id, RESULT_LIMIT);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert!(!alive(pid), "the job's process {pid} survived its cancel");
    assert_cancelled(&w, &id, "cancelled");
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "bad-signature");
}

/// Fills `id`'s marker slot with a file nobody but root can read (mode
/// 000, which Syncthing carries).
#[cfg(unix)]
fn unreadable_squatter(w: &World, id: &str) {
    std::fs::write(w.marker(id), b"{\"jobId\": \"x\"}").unwrap();
    set_mode(&w.marker(id), 0o000);
}

#[test]
#[cfg(unix)] // mode 000 is a Unix permission; Windows denies reads by ACL instead
fn an_unreadable_file_in_the_markers_place_is_moved_aside_by_cancel() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    unreadable_squatter(&w, &id);
    let mut c = w.bg_cmd_as("LAPTOP");
    c.args(["--json", "cancel", "--target", "PC", "--job-id", &id]);
    let mut c = without_read_override(c);
    let o = c.output().unwrap();
    let (out, err) = (
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr),
    );
    assert_eq!(o.status.code(), Some(0), "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["status"], "requested", "{v}");
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "unreadable");
    let placed: Value =
        serde_json::from_str(&std::fs::read_to_string(w.marker(&id)).unwrap()).unwrap();
    assert_eq!(placed["origin"], "LAPTOP", "{placed}");
}

#[test]
#[cfg(unix)] // mode 000 is a Unix permission; Windows denies reads by ACL instead
fn an_unreadable_file_in_a_running_jobs_marker_place_is_moved_aside_once_settled() {
    let w = World::with_target();
    let (id, pidfile) = sleeper(&w);
    let mut c = w.bg_cmd();
    c.args(["listen", "--poll-interval", "100ms", "--settle", "1s"]);
    let mut c = without_read_override(c);
    let _g = ListenerGuard::spawn(&mut c);
    let pid = read_pid(&pidfile, Duration::from_secs(10));
    unreadable_squatter(&w, &id);
    let reason = format!("{id}.json.reason.json");
    wait_until(Duration::from_secs(10), || w.rejected(&reason).exists());
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "unreadable");
    assert!(alive(pid), "moving a squatter aside must not stop the job");
    // The slot is free again: a genuine marker lands.
    w.write_marker("PC", &id, "PC");
    let r = w.wait_result(&id, RESULT_LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
}
