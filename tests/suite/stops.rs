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
    l.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(500));
    l.signal(libc::SIGINT);
    let (code, _, err) = l.wait(LIMIT);
    assert_eq!(code, 130, "{err}");
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
