//! Stopping a listener says what it does: the first Ctrl-C names the job
//! being stopped and its grace, a second kills it and leaves the folder
//! saying the listener stopped; `listen --drain` lets the running job
//! finish, starts no new one and stops the listener, for service managers.

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
fn ctrl_c_typed_on_a_terminal_names_the_job_and_its_grace() {
    use std::io::{Read, Write};
    let w = World::with_target();
    let id = w.enqueue(&["--grace", "20s"], &kit(&["ignore-stop", "sleep", "60"]));
    let line = format!("{} listen --poll-interval 100ms", bin().display());
    let mut c = std::process::Command::new("script");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &w.home)
        .env("FLEET_DISPATCH_ROOT", &w.root)
        .env("FLEET_DISPATCH_KEY_FILE", &w.key)
        .env("FLEET_DISPATCH_STATE_DIR", &w.state)
        .env("FLEET_DISPATCH_MACHINE", "PC")
        .env("TERM", "xterm")
        .args(["-q", "-e", "-c", &line, "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let Ok(mut child) = c.spawn() else {
        eprintln!("SKIPPED: script missing: Ctrl-C on a terminal is not checked");
        return;
    };
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
