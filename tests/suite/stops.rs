//! Stopping a listener says what it does: the first Ctrl-C names the job
//! being stopped and its grace, a second kills it and leaves the folder
//! saying the listener stopped; `listen --drain` lets the running job
//! finish, starts no new one and stops the listener, for service managers.
//!
//! A job's stop cannot be escaped: a main process that moves itself into
//! another process group is stopped by its pid, a sibling job's stop never
//! reaches it, a daemon a job beside others leaves is stopped with it
//! (under its keeper), and the result says what the main process died of.
//! A spawn at the process limit is `spawn-failed` and the listener goes on.

use std::time::Duration;

use serde_json::Value;

use crate::util::*;

const LIMIT: Duration = Duration::from_secs(30);

fn heartbeat_state(w: &World) -> String {
    let text = std::fs::read_to_string(w.pc().join("listener.json")).unwrap_or_default();
    serde_json::from_str::<Value>(&text).map_or(String::new(), |v| {
        v["state"].as_str().unwrap_or_default().to_string()
    })
}

#[test]
fn drain_lets_the_running_job_finish_and_starts_no_new_one() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let gate = scratch(&w, "gate");
    let first = w.enqueue(
        &[],
        &kit(&["append", p(&side), "first", "wait-for", p(&gate)]),
    );
    let l = w.spawn_listener(&[]);
    wait_until(LIMIT, || lines(&side) == ["first"]);
    let second = w.enqueue(&[], &kit(&["append", p(&side), "second"]));
    let mut drain = w.bg_cmd();
    drain.args(["listen", "--drain"]);
    let drain = ListenerGuard::spawn(&mut drain);
    // It waits for the job that runs; then the listener stops.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&gate, b"").unwrap();
    let (code, out, err) = drain.wait(LIMIT);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("drained and stopped"), "{out}");
    let (code, out, err) = l.wait(LIMIT);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("(drained)"), "{out}");
    assert_eq!(w.result(&first)["ok"], true);
    assert_eq!(
        lines(&side),
        ["first"],
        "a job started after the drain request"
    );
    assert!(w.inbox(&second).exists());
    assert_eq!(heartbeat_state(&w), "stopped");
}

/// Regression: a listener whose stdout and stderr had been closed (a
/// pipe whose reader went away, a service manager's log gone) could not be
/// stopped by SIGTERM: its signal handler wrote the stop's first words
/// with `eprintln!`, which panicked on the closed pipe and took the
/// handler's thread with it.
#[test]
#[cfg(unix)]
fn a_listener_whose_output_pipes_are_closed_still_stops_on_sigterm() {
    let w = World::with_target();
    let mut c = w.bg_cmd();
    c.args(["listen", "--poll-interval", "100ms"]);
    let mut g = ListenerGuard::spawn(&mut c);
    wait_until(Duration::from_secs(10), || {
        w.pc().join("listener.json").exists()
    });
    // The readers go away.
    let child = g.child.as_mut().unwrap();
    drop(child.stdout.take());
    drop(child.stderr.take());
    g.signal(libc::SIGTERM);
    let started = std::time::Instant::now();
    let child = g.child.as_mut().unwrap();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the listener did not stop on SIGTERM with its output closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // Interrupted (130), or 0 when its summary met the closed stdout: a
    // reader that went away asked for no more.
    let code = child.try_wait().unwrap().unwrap().code();
    assert!(matches!(code, Some(130) | Some(0)), "{code:?}");
}

#[test]
fn drain_without_a_running_listener_says_so() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["listen", "--drain"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("nothing to drain"), "{out}");
}

// Unix only: SIGINT sent to one process by pid.
#[cfg(unix)]
#[test]
fn ctrl_c_says_what_stops_and_a_second_leaves_the_folder_saying_stopped() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    let id = w.enqueue(
        &["--grace", "20s"],
        &kit(&["pid", p(&pidfile), "ignore-stop", "sleep", "60"]),
    );
    let l = w.spawn_listener(&[]);
    wait_until(LIMIT, || w.running(&id).exists());
    let job = read_pid(&pidfile, LIMIT);
    l.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        alive(job),
        "the first Ctrl-C killed the job at once; it has a 20s grace"
    );
    l.signal(libc::SIGINT);
    let (code, _, err) = l.wait(LIMIT);
    assert_eq!(code, 130, "{err}");
    // The job ignores the stop request: only the second Ctrl-C's kill ends it.
    wait_until(Duration::from_secs(5), || !alive(job));
    assert!(
        err.contains(&format!("job {id}")) && err.contains("20s") && err.contains("Ctrl-C again"),
        "{err}"
    );
    assert_eq!(heartbeat_state(&w), "stopped");
    assert!(
        !w.running(&id).exists(),
        "running/ still shows the killed job"
    );
}

// Unix only: a pseudo-terminal through util-linux `script`, and Ctrl-C
// typed into it as the terminal's interrupt character.
#[cfg(unix)]
#[test]
#[ignore = "needs util-linux `script` for a pseudo-terminal"]
fn ctrl_c_typed_on_a_terminal_names_the_job_and_its_grace() {
    use std::io::{Read, Write};
    let w = World::with_target();
    let id = w.enqueue(&["--grace", "20s"], &kit(&["ignore-stop", "sleep", "60"]));
    let line = format!("{} listen --poll-interval 100ms", bin().display());
    let mut c = script_command(&w);
    c.args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("util-linux `script` cannot run ({e}): install it"));
    wait_until(LIMIT, || w.running(&id).exists());
    let mut keys = child.stdin.take().unwrap();
    keys.write_all(b"\x03").unwrap();
    keys.flush().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    keys.write_all(b"\x03").unwrap();
    keys.flush().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(
        out.contains(&format!("job {id}")) && out.contains("20s") && out.contains("Ctrl-C again"),
        "{out}"
    );
    assert_eq!(heartbeat_state(&w), "stopped");
}

/// Sends SIGTERM to the listener `l`, which must end (130) well inside a
/// 60 s grace (`slow` says what a slow end would mean); returns its stderr.
#[cfg(unix)]
fn stopped_soon(l: ListenerGuard, slow: &str) -> String {
    let asked = std::time::Instant::now();
    l.signal(libc::SIGTERM);
    let (code, _, err) = l.wait(LIMIT);
    assert_eq!(code, 130, "{err}");
    assert!(
        asked.elapsed() < Duration::from_secs(15),
        "the stop took {:?}: {slow}",
        asked.elapsed()
    );
    err
}

// Unix only: SIGTERM sent to one process by pid.
#[cfg(unix)]
#[test]
fn a_stop_gives_the_running_job_at_most_the_stop_grace() {
    let w = World::with_target();
    let pidfile = scratch(&w, "pid");
    // The job asks for a minute's grace and ignores the stop request.
    let id = w.enqueue(
        &["--grace", "60s"],
        &kit(&["pid", p(&pidfile), "ignore-stop", "sleep", "120"]),
    );
    let l = w.spawn_listener(&["--stop-grace", "1s"]);
    wait_until(LIMIT, || w.running(&id).exists());
    let job = read_pid(&pidfile, LIMIT);
    let err = stopped_soon(l, "the job got its own 60s grace");
    assert!(
        err.contains("grace of 1s"),
        "the first words name the capped grace: {err}"
    );
    assert!(!alive(job), "the job outlived the stop grace");
    // The job's end is recorded: it was stopped, not lost.
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["ok"], false, "{r}");
}

// Unix only: SIGTERM sent to one process by pid, and a shell's trap.
#[cfg(unix)]
#[test]
fn a_stop_during_a_cancels_grace_caps_what_is_left_of_it() {
    let w = World::with_target();
    let termed = scratch(&w, "termed");
    // The job notes each stop request and goes on, for its minute's grace.
    let script = format!(
        "trap 'echo term >> {}' TERM; while :; do sleep 0.1; done",
        termed.display()
    );
    let id = w.enqueue(&["--grace", "60s"], &["sh", "-c", &script]);
    let l = w.spawn_listener(&["--stop-grace", "1s"]);
    wait_until(LIMIT, || w.running(&id).exists());
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    // The cancel's stop is under way: the job was asked to end.
    wait_until(LIMIT, || termed.exists());
    stopped_soon(l, "the cancel's 60s grace ran on");
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["error"], "cancelled", "the cancel's word stays: {r}");
}

// ------------------------------------------------ stops that cannot be escaped

/// The job of the escape tests (python3), by its first argument:
/// - `sibling NOTES PIDFILE GO`: writes its group's id to PIDFILE.group and
///   its pid to PIDFILE, waits for GO, exits 0; a SIGTERM is noted in
///   NOTES and ends it.
/// - `own NOTES PIDFILE STAY`: forks a child into a group of its own, then
///   moves itself into that group; writes both pids.
/// - `join NOTES PIDFILE STAY GROUPFILE`: moves itself into the group whose
///   id GROUPFILE holds (another job's).
///
/// The movers note each SIGTERM in NOTES and go on; after STAY seconds the
/// main process prints `survived` and exits 0.
#[cfg(unix)]
const ESCAPER: &str = r#"
import os, signal, sys, time
role, notes, pidfile = sys.argv[1], sys.argv[2], sys.argv[3]
def noted(sig, frame):
    with open(notes, "a") as f:
        f.write("%s %d TERM\n" % (role, os.getpid()))
    if role == "sibling":
        os._exit(0)
signal.signal(signal.SIGTERM, noted)
def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.rename(path + ".tmp", path)
if role == "sibling":
    write(pidfile + ".group", str(os.getpgid(0)))
    write(pidfile, str(os.getpid()))
    while not os.path.exists(sys.argv[4]):
        time.sleep(0.05)
    sys.exit(0)
stay = float(sys.argv[4])
pids = [os.getpid()]
if role == "own":
    child = os.fork()
    if child == 0:
        time.sleep(stay)
        os._exit(0)
    os.setpgid(child, child)
    os.setpgid(0, child)
    pids.append(child)
else:
    while not os.path.exists(sys.argv[5]):
        time.sleep(0.05)
    os.setpgid(0, int(open(sys.argv[5]).read()))
write(pidfile, " ".join(map(str, pids)))
time.sleep(stay)
print("survived", flush=True)
"#;

/// How an escaping job is stopped.
#[cfg(unix)]
#[derive(Clone, Copy, Debug, PartialEq)]
enum How {
    Timeout,
    Cancel,
    ListenerStop,
}

/// Seconds an escaping job's main process would live on by itself.
#[cfg(unix)]
const STAY: &str = "12";

/// `enqueue --target TARGET FLAGS… -- python3 ESCAPER ARGS…`.
#[cfg(unix)]
fn enqueue_python(w: &World, target: &str, flags: &[&str], args: &[&str]) -> String {
    let script = scratch(w, "escaper.py");
    if !script.exists() {
        std::fs::write(&script, ESCAPER).unwrap();
    }
    let mut all = vec!["enqueue", "--target", target];
    all.extend_from_slice(flags);
    all.extend(["--", "python3", p(&script)]);
    all.extend_from_slice(args);
    let (code, out, err) = w.run(&all);
    assert_eq!(code, 0, "{out}{err}");
    out.trim().to_string()
}

/// The pids an escaping job wrote once it moved (its main process first).
#[cfg(unix)]
fn moved_pids(path: &std::path::Path) -> Vec<i32> {
    let mut pids = Vec::new();
    wait_until(LIMIT, || {
        pids = std::fs::read_to_string(path)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        !pids.is_empty()
    });
    assert!(!pids.is_empty(), "{} never moved", path.display());
    pids
}

/// `id`'s result in `target`'s folder, once there.
#[cfg(unix)]
fn result_in(w: &World, target: &str, id: &str) -> Value {
    let path = w
        .root
        .join(target)
        .join("results")
        .join(format!("{id}.json"));
    wait_until(LIMIT, || path.exists());
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

/// A loop listener for `target` other than PC, with `extra` flags.
#[cfg(unix)]
fn listener_of(w: &World, target: &str, extra: &[&str]) -> ListenerGuard {
    let mut args = vec!["listen", "--poll-interval", "100ms", "--settle", "2s"];
    args.extend_from_slice(extra);
    let hb = w.root.join(target).join("listener.json");
    let g = ListenerGuard::spawn(w.bg_cmd_as(target).args(&args));
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

/// Both escapes (a main process that moves into a group it made through a
/// child, and one that moves into a sibling job's group), each ignoring
/// SIGTERM, stopped `how` under `--slots 1` and `--slots 4` with a sibling
/// job running beside: their processes are gone within the grace and a
/// margin, the sibling is untouched and runs on, and the result says the
/// main process died of SIGKILL and that it never printed `survived`.
#[cfg(unix)]
fn escapes_are_stopped(how: How) {
    for slots in ["1", "4"] {
        let w = World::with_target();
        w.make_target("PC2");
        let notes = scratch(&w, "notes");
        let go = scratch(&w, "go");
        let sibling_pid = scratch(&w, "sibling.pid");
        // The sibling runs beside them in the same listener with four
        // slots (but for the listener's own stop, which is for every job
        // it runs), else under another target's listener.
        let beside = slots == "4" && how != How::ListenerStop;
        let sibling_target = if beside { "PC" } else { "PC2" };
        let sibling = enqueue_python(
            &w,
            sibling_target,
            &["--grace", "1s"],
            &["sibling", p(&notes), p(&sibling_pid), p(&go)],
        );
        let _other = (!beside).then(|| listener_of(&w, "PC2", &[]));
        let mut l = Some(w.spawn_listener(&["--slots", slots, "--stop-grace", "1s"]));
        let sibling_main = read_pid(&sibling_pid, LIMIT);
        let sibling_group = sibling_pid.with_extension("pid.group");
        let timeout: &[&str] = if how == How::Timeout {
            // Long enough for Python to start and move out under load:
            // a job stopped before it wrote its pids would prove nothing.
            &["--timeout", "3s", "--grace", "1s"]
        } else {
            &["--grace", "1s"]
        };
        // With one slot the second waits for the first: each is stopped in
        // turn, or (the listener's stop) the second never starts.
        let kinds: &[&str] = if slots == "1" && how == How::ListenerStop {
            &["join"]
        } else {
            &["own", "join"]
        };
        // Each is enqueued and stopped in turn; the listener's stop comes
        // once, when all of them have moved.
        let mut moved = Vec::new();
        for kind in kinds {
            let pidfile = scratch(&w, &format!("{kind}.pid"));
            let mut args = vec![kind, p(&notes), p(&pidfile), STAY];
            args.extend((*kind == "join").then_some(p(&sibling_group)));
            moved.push((kind, enqueue_python(&w, "PC", timeout, &args), pidfile));
        }
        for (at, (kind, id, pidfile)) in moved.iter().enumerate() {
            let pids = moved_pids(pidfile);
            let since = std::time::Instant::now();
            match how {
                How::Timeout => {}
                How::Cancel => {
                    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", id]);
                    assert_eq!(code, 0, "{out}{err}");
                }
                How::ListenerStop if at + 1 == moved.len() => {
                    l.as_ref().unwrap().signal(libc::SIGTERM)
                }
                How::ListenerStop => continue,
            }
            // Timeout 3 s, grace 1 s, and room for a loaded machine.
            let within = Duration::from_secs(8);
            let until = std::time::Instant::now() + within;
            while pids.iter().any(|&p| alive(p)) && std::time::Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
            assert!(
                left.is_empty(),
                "slots {slots}, {how:?}, {kind}: {left:?} outlived the stop by {:?}",
                since.elapsed()
            );
            if how == How::ListenerStop {
                let (code, _, err) = l.take().unwrap().wait(within);
                assert_eq!(code, 130, "{err}");
            }
        }
        for (kind, id, pidfile) in &moved {
            assert!(moved_pids(pidfile).iter().all(|&p| !alive(p)), "{kind}");
            let r = w.wait_result(id, LIMIT);
            let word = match how {
                How::Timeout => "timeout",
                How::Cancel => "cancelled",
                How::ListenerStop => "interrupted",
            };
            let d = w.detail(id);
            assert_eq!(r["error"], word, "slots {slots}, {kind}: {r}\n{d}");
            assert_eq!(d["signal"], "SIGKILL", "slots {slots}, {kind}: {d}");
            assert_eq!(d["graceExpired"], true, "slots {slots}, {kind}: {d}");
            assert!(d.get("exitCodeAfterSignal").is_none(), "{d}");
            assert!(
                !d["stdoutTail"].as_str().unwrap().contains("survived"),
                "{d}"
            );
            let (_, shown, _) = w.run(&["result", "--target", "PC", "--job-id", id]);
            assert!(shown.contains("ended by SIGKILL"), "{shown}");
        }
        // The sibling was never signalled, and still runs to its own end.
        assert!(
            alive(sibling_main),
            "slots {slots}, {how:?}: the sibling died"
        );
        let noted = std::fs::read_to_string(&notes).unwrap_or_default();
        assert!(
            !noted.contains("sibling"),
            "slots {slots}, {how:?}: {noted}"
        );
        std::fs::write(&go, "").unwrap();
        let r = result_in(&w, sibling_target, &sibling);
        assert_eq!(r["ok"], true, "slots {slots}, {how:?}: {r}");
        drop(l);
    }
}

#[cfg(unix)]
#[test]
fn a_job_that_leaves_its_group_is_stopped_at_its_timeout() {
    escapes_are_stopped(How::Timeout);
}

#[cfg(unix)]
#[test]
fn a_job_that_leaves_its_group_is_stopped_by_its_cancel() {
    escapes_are_stopped(How::Cancel);
}

#[cfg(unix)]
#[test]
fn a_job_that_leaves_its_group_is_stopped_with_the_listener() {
    escapes_are_stopped(How::ListenerStop);
}

/// A job that moved into a sibling job's group (and would die of a
/// SIGTERM) is not touched when that sibling is cancelled, with one slot
/// (the sibling under another listener) and with four (beside it).
#[cfg(unix)]
#[test]
fn a_sibling_jobs_stop_never_reaches_a_job_that_joined_its_group() {
    for slots in ["1", "4"] {
        let w = World::with_target();
        w.make_target("PC2");
        let notes = scratch(&w, "notes");
        let go = scratch(&w, "go");
        let sibling_pid = scratch(&w, "sibling.pid");
        let sibling_target = if slots == "4" { "PC" } else { "PC2" };
        let sibling = enqueue_python(
            &w,
            sibling_target,
            &["--grace", "1s"],
            &["sibling", p(&notes), p(&sibling_pid), p(&go)],
        );
        let _other = (slots == "1").then(|| listener_of(&w, "PC2", &[]));
        let _l = w.spawn_listener(&["--slots", slots]);
        read_pid(&sibling_pid, LIMIT);
        let pidfile = scratch(&w, "join.pid");
        let joiner = enqueue_python(
            &w,
            "PC",
            &[],
            &[
                "join",
                p(&notes),
                p(&pidfile),
                "4",
                p(&sibling_pid.with_extension("pid.group")),
            ],
        );
        let pids = moved_pids(&pidfile);
        let (code, out, err) = w.run(&["cancel", "--target", sibling_target, "--job-id", &sibling]);
        assert_eq!(code, 0, "{out}{err}");
        let r = result_in(&w, sibling_target, &sibling);
        assert_eq!(r["error"], "cancelled", "{r}");
        std::thread::sleep(Duration::from_millis(300));
        let noted = std::fs::read_to_string(&notes).unwrap_or_default();
        assert!(
            !noted.contains("join"),
            "slots {slots}: the sibling's stop reached the job in its group: {noted}"
        );
        assert!(alive(pids[0]), "slots {slots}");
        let r = w.wait_result(&joiner, LIMIT);
        assert_eq!(r["ok"], true, "slots {slots}: {r}");
    }
}

/// A main process that exits 0 on SIGTERM while a child it left ignores
/// it: the grace runs out on the child alone, and the result says the main
/// process exited 0 after SIGTERM, not that it was killed.
#[cfg(unix)]
#[test]
fn a_main_process_that_exits_on_sigterm_is_not_said_killed_for_what_it_left() {
    let w = World::with_target();
    let pidfile = scratch(&w, "child.pid");
    let id = w.enqueue(
        &["--timeout", "1s", "--grace", "1s"],
        &kit(&[
            "exit-on-stop",
            "0",
            "spawn",
            "[",
            "ignore-stop",
            "pid",
            p(&pidfile),
            "sleep",
            "30",
            "]",
            "sleep",
            "30",
        ]),
    );
    let c = w.listen_once(&[]);
    assert_eq!(c["failed"], 1, "{c}");
    let d = w.detail(&id);
    assert_eq!(w.result(&id)["error"], "timeout");
    assert_eq!(d["graceExpired"], true, "{d}");
    assert_eq!(d["signal"], "SIGTERM", "{d}");
    assert_eq!(d["exitCodeAfterSignal"], 0, "{d}");
    assert!(!alive(read_pid(&pidfile, LIMIT)));
    let (_, shown, _) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert!(shown.contains("exited 0 after SIGTERM"), "{shown}");
}

/// A second Ctrl-C kills a job's main process that moved into a group of
/// its own making, and the child that made it, at once.
#[cfg(unix)]
#[test]
fn a_second_ctrl_c_kills_a_job_that_left_its_group() {
    let w = World::with_target();
    let notes = scratch(&w, "notes");
    let pidfile = scratch(&w, "own.pid");
    enqueue_python(
        &w,
        "PC",
        &["--grace", "30s"],
        &["own", p(&notes), p(&pidfile), STAY],
    );
    let l = w.spawn_listener(&[]);
    let pids = moved_pids(&pidfile);
    l.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    l.signal(libc::SIGINT);
    let (code, _, err) = l.wait(LIMIT);
    assert_eq!(code, 130, "{err}");
    let until = std::time::Instant::now() + Duration::from_secs(2);
    while pids.iter().any(|&p| alive(p)) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<i32> = pids.iter().copied().filter(|&p| alive(p)).collect();
    assert!(left.is_empty(), "{left:?} outlived the second Ctrl-C");
}

/// `sh -c` for a job that starts a daemon (a new session, its job id
/// removed from its environment, its standard streams closed, its parent
/// gone at once), writes the daemon's pid to `pidfile`, then sleeps
/// `then` seconds and exits 0.
#[cfg(unix)]
fn daemonising(pidfile: &std::path::Path, then: &str) -> Vec<String> {
    let script = format!(
        "( setsid env -u FLEET_DISPATCH_JOB_ID sh -c 'echo $$ > {}.tmp; mv {0}.tmp {0}; exec sleep 300' </dev/null >/dev/null 2>&1 & ); sleep {then}",
        pidfile.display()
    );
    vec!["sh".into(), "-c".into(), script]
}

/// With slots, a job's daemonised orphan is stopped when its job ends,
/// within a second, while a job in another slot runs on untouched.
#[cfg(unix)]
#[test]
fn a_daemonised_orphan_is_stopped_with_its_job_beside_another_slot() {
    let w = World::with_target();
    let notes = scratch(&w, "notes");
    let go = scratch(&w, "go");
    let sibling_pid = scratch(&w, "sibling.pid");
    let sibling = enqueue_python(
        &w,
        "PC",
        &[],
        &["sibling", p(&notes), p(&sibling_pid), p(&go)],
    );
    let _l = w.spawn_listener(&["--slots", "2"]);
    let sibling_main = read_pid(&sibling_pid, LIMIT);
    let pidfile = scratch(&w, "daemon.pid");
    let id = w.enqueue(&["--grace", "5s"], &daemonising(&pidfile, "0.5"));
    let daemon = read_pid(&pidfile, LIMIT);
    let r = w.wait_result(&id, LIMIT);
    assert_eq!(r["ok"], true, "{r}");
    let ended = std::time::Instant::now();
    while alive(daemon) && ended.elapsed() < Duration::from_secs(1) {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!alive(daemon), "the daemon {daemon} outlived its job");
    assert_eq!(w.detail(&id)["leftoversStopped"], 1);
    assert!(alive(sibling_main), "the job beside it was stopped");
    assert!(
        !std::fs::read_to_string(&notes)
            .unwrap_or_default()
            .contains("TERM")
    );
    std::fs::write(&go, "").unwrap();
    let r = w.wait_result(&sibling, LIMIT);
    assert_eq!(r["ok"], true, "{r}");
}

/// After the listener is killed (`kill -9`) while a job beside another ran
/// with a daemon it started, the next start stops that daemon too.
#[cfg(unix)]
#[test]
fn a_daemonised_orphan_of_a_job_beside_another_is_stopped_after_a_crash() {
    let w = World::with_target();
    let notes = scratch(&w, "notes");
    let go = scratch(&w, "go");
    let sibling_pid = scratch(&w, "sibling.pid");
    enqueue_python(
        &w,
        "PC",
        &[],
        &["sibling", p(&notes), p(&sibling_pid), p(&go)],
    );
    let l = w.spawn_listener(&["--slots", "2"]);
    read_pid(&sibling_pid, LIMIT);
    let pidfile = scratch(&w, "daemon.pid");
    let id = w.enqueue(&[], &daemonising(&pidfile, "60"));
    let daemon = read_pid(&pidfile, LIMIT);
    wait_until(LIMIT, || wait_open_pids(&w) == 2);
    kill_hard(l.pid());
    let (code, _, _) = l.wait(LIMIT);
    assert_ne!(code, 0);
    assert!(alive(daemon), "the daemon died with the listener");
    let c = w.listen_once(&["--slots", "2"]);
    assert_eq!(c["failed"], 2, "{c}");
    assert_eq!(w.result(&id)["error"], "interrupted");
    wait_until(Duration::from_secs(5), || !alive(daemon));
}

/// How many jobs the ledger shows running with their pid noted.
#[cfg(unix)]
fn wait_open_pids(w: &World) -> usize {
    open_jobs(w).iter().filter(|(_, pid)| *pid > 0).count()
}

// ------------------------------------------------ a spawn at the process limit

/// The user a listener runs as for `RLIMIT_NPROC`, which binds no root.
#[cfg(target_os = "linux")]
const NOBODY: u32 = 65534;

/// Makes the world `nobody`'s, so a listener can run as that user.
#[cfg(target_os = "linux")]
fn give_to_nobody(w: &World) {
    fn walk(p: &std::path::Path) {
        std::os::unix::fs::lchown(p, Some(NOBODY), Some(NOBODY)).unwrap();
        if p.is_dir() && !p.is_symlink() {
            for e in std::fs::read_dir(p).unwrap().flatten() {
                walk(&e.path());
            }
        }
    }
    walk(w.dir.path());
}

/// `fleet-dispatch ARGS…` as `nobody`, to its end: (status, stdout, stderr).
#[cfg(target_os = "linux")]
fn as_nobody(w: &World, args: &[&str]) -> (i32, String, String) {
    use std::os::unix::process::CommandExt;
    let out = w
        .bg_cmd()
        .uid(NOBODY)
        .gid(NOBODY)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// How many tasks (threads included, as `RLIMIT_NPROC` counts them) the
/// user `nobody` has on this machine now.
#[cfg(target_os = "linux")]
fn tasks_of_nobody() -> u64 {
    let mut n = 0;
    for pid in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(tasks) = std::fs::read_dir(pid.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
            let uid = status.lines().find_map(|l| l.strip_prefix("Uid:"));
            if uid.and_then(|u| u.split_whitespace().next()) == Some("65534") {
                n += 1;
            }
        }
    }
    n
}

/// A listener whose user reached its process limit (`RLIMIT_NPROC`) when a
/// job is spawned, alone and with slots (where the spawn forks a keeper
/// first): the job is `spawn-failed`, saying why and after how many tries,
/// nothing of it ran, and the listener goes on to run the next job once
/// the user has processes to spare again.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root: runs the listener as another user"]
fn a_spawn_at_the_process_limit_is_spawn_failed_and_the_listener_goes_on() {
    use std::os::unix::process::CommandExt;
    // SAFETY: geteuid has no preconditions.
    assert_eq!(
        unsafe { libc::geteuid() },
        0,
        "only root can run a listener as another user"
    );
    for slots in ["1", "2"] {
        let w = World::with_target();
        let side = scratch(&w, "side");
        give_to_nobody(&w);
        // Room for the listener's threads and a command or two beside it.
        let most = tasks_of_nobody() + 24;
        let mut c = w.bg_cmd();
        c.uid(NOBODY)
            .gid(NOBODY)
            .args(["listen", "--poll-interval", "100ms", "--slots", slots]);
        // SAFETY: setrlimit only, between the fork and the exec.
        unsafe {
            c.pre_exec(move || {
                let limit = libc::rlimit {
                    rlim_cur: most,
                    rlim_max: most,
                };
                if libc::setrlimit(libc::RLIMIT_NPROC, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let _l = ListenerGuard::spawn(&mut c);
        wait_until(LIMIT, || w.pc().join("listener.json").exists());
        let enqueue = |word: &str| {
            let argv = kit(&["append", p(&side), word]);
            let mut args = vec!["enqueue", "--target", "PC", "--"];
            args.extend(argv.iter().map(String::as_str));
            let (code, out, err) = as_nobody(&w, &args);
            assert_eq!(code, 0, "{out}{err}");
            out.trim().to_string()
        };
        // The user's other processes take what is left of its limit.
        let mut fillers = Vec::new();
        while tasks_of_nobody() < most {
            let mut f = std::process::Command::new("sleep");
            f.arg("60").uid(NOBODY).gid(NOBODY);
            fillers.push(f.spawn().unwrap());
        }
        let stuck = enqueue("stuck");
        let r = w.wait_result(&stuck, LIMIT);
        assert_eq!(r["error"], "spawn-failed", "slots {slots}: {r}");
        let why = w.detail(&stuck)["spawnError"].as_str().unwrap().to_string();
        assert!(
            why.contains("Resource temporarily unavailable") && why.contains("(4 tries)"),
            "slots {slots}: {why}"
        );
        assert!(lines(&side).is_empty(), "slots {slots}: it ran");
        for mut f in fillers {
            let _ = f.kill();
            let _ = f.wait();
        }
        let next = enqueue("next");
        let r = w.wait_result(&next, LIMIT);
        assert_eq!(r["ok"], true, "slots {slots}: {r}");
        assert_eq!(lines(&side), ["next"], "slots {slots}");
    }
}
