//! Parallel slots (`listen --slots N`, docs/protocol.md §7.13): up to N
//! jobs at once, started in drain order, each with its own cancel watch,
//! stop and result; the governor asked before each start; `status`, the
//! heartbeat and a shutdown covering every running job. The crash loop
//! with slots is in `crash_loop`, the HTTP cancel with slots in `http`.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Long enough for any result in this module.
const LIMIT: Duration = Duration::from_secs(20);

/// `--env NAME=<path>`, so a job's steps name the path as `$NAME`.
fn env_flag(name: &str, path: &Path) -> String {
    format!("{name}={}", path.display())
}

/// Enqueues `jobkit STEPS…` with `DIR` set to `dir` and `extra` flags.
fn enqueue_in(w: &World, dir: &Path, extra: &[&str], steps: &[&str]) -> String {
    let env = env_flag("DIR", dir);
    let mut flags = vec!["--env", env.as_str()];
    flags.extend_from_slice(extra);
    w.enqueue(&flags, &kit(steps))
}

/// A job that writes its pid (`DIR/pid-NAME`), says it started
/// (`DIR/started-NAME`), then waits for `DIR/go` (bounded by its timeout).
fn waiting_job(w: &World, dir: &Path, name: &str, extra: &[&str]) -> String {
    let pid = format!("$DIR/pid-{name}");
    let started = format!("$DIR/started-{name}");
    let mut flags = vec!["--timeout", "20s", "--grace", "1s"];
    flags.extend_from_slice(extra);
    let steps = ["pid", &pid, "touch", &started, "wait-for", "$DIR/go"];
    enqueue_in(w, dir, &flags, &steps)
}

fn pid_of(dir: &Path, name: &str) -> i32 {
    read_pid(&dir.join(format!("pid-{name}")), LIMIT)
}

fn started(dir: &Path, name: &str) -> bool {
    dir.join(format!("started-{name}")).exists()
}

fn assert_ok(w: &World, id: &str) {
    let r = w.result(id);
    assert_eq!(
        (r["ok"].as_bool(), r["error"].as_str()),
        (Some(true), Some("")),
        "{r}"
    );
}

/// The jobs whose start line is in target `PC`'s ledger, in its order.
fn start_order(w: &World) -> Vec<String> {
    std::fs::read_to_string(ledger_path(w))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "start")
        .filter_map(|v| v["jobId"].as_str().map(str::to_string))
        .collect()
}

fn dir(w: &World) -> std::path::PathBuf {
    let d = scratch(w, "work");
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn two_slots_run_two_jobs_at_the_same_time() {
    // Each job waits for a file the other writes: a serial drain would
    // time the first one out after 20 s.
    let w = World::with_target();
    let d = dir(&w);
    let a = enqueue_in(
        &w,
        &d,
        &["--timeout", "20s"],
        &["touch", "$DIR/a", "wait-for", "$DIR/b"],
    );
    let b = enqueue_in(
        &w,
        &d,
        &["--timeout", "20s"],
        &["touch", "$DIR/b", "wait-for", "$DIR/a"],
    );
    let t = Instant::now();
    let c = w.listen_once(&["--slots", "2"]);
    assert_eq!(c["done"], 2, "{c}");
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_ok(&w, &a);
    assert_ok(&w, &b);
    assert!(!w.inbox(&a).exists() && w.done(&b).exists());
}

#[test]
fn jobs_start_in_drain_order_and_never_more_than_the_slots_at_once() {
    let w = World::with_target();
    let d = dir(&w);
    let log = d.join("running");
    // Each job notes its start and end: at most two may overlap.
    let job = |priority: &str| {
        enqueue_in(
            &w,
            &d,
            &["--priority", priority],
            &[
                "append",
                "$DIR/running",
                "+",
                "sleep",
                "0.3",
                "append",
                "$DIR/running",
                "-",
            ],
        )
    };
    let normal = job("normal");
    let high = job("high");
    let normal2 = job("normal");
    let high2 = job("high");
    let normal3 = job("normal");
    let c = w.listen_once(&["--slots", "2"]);
    assert_eq!(c["done"], 5, "{c}");
    assert_eq!(start_order(&w), [high, high2, normal, normal2, normal3]);
    let mut now = 0;
    let mut most = 0;
    for l in lines(&log) {
        now += if l == "+" { 1 } else { -1 };
        most = most.max(now);
    }
    assert_eq!(most, 2, "{:?}", lines(&log));
}

#[test]
fn a_cancel_of_one_of_four_running_jobs_stops_only_it() {
    let w = World::with_target();
    let d = dir(&w);
    let ids: Vec<String> = (0..4)
        .map(|i| waiting_job(&w, &d, &i.to_string(), &[]))
        .collect();
    let g = w.spawn_listener(&["--slots", "4"]);
    wait_until(LIMIT, || (0..4).all(|i| started(&d, &i.to_string())));
    let pids: Vec<i32> = (0..4).map(|i| pid_of(&d, &i.to_string())).collect();
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &ids[2]]);
    assert_eq!(code, 0, "{out}{err}");
    let r = w.wait_result(&ids[2], LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
    assert!(!alive(pids[2]));
    assert!(
        [0, 1, 3].iter().all(|&i| alive(pids[i])),
        "a job beside the cancelled one was stopped"
    );
    // The others still run, then finish by themselves.
    for (i, id) in ids.iter().enumerate().filter(|(i, _)| *i != 2) {
        assert!(
            !w.result_path(id).exists(),
            "job {i} ended with the cancelled one"
        );
        assert!(w.running(id).exists(), "job {i} no longer shows as running");
    }
    std::fs::write(d.join("go"), "").unwrap();
    for id in ids.iter().filter(|id| **id != ids[2]) {
        w.wait_result(id, LIMIT);
        assert_ok(&w, id);
    }
    drop(g);
}

#[test]
fn what_a_job_leaves_behind_is_stopped_without_touching_the_job_beside_it() {
    // Left behind outside the job's group: the stop finds it by the job's
    // id in its environment, not by being below the listener, which the
    // job beside it is too.
    let w = World::with_target();
    let d = dir(&w);
    let beside = waiting_job(&w, &d, "beside", &[]);
    let g = w.spawn_listener(&["--slots", "2"]);
    wait_until(LIMIT, || started(&d, "beside"));
    let leaver = enqueue_in(
        &w,
        &d,
        &["--grace", "1s"],
        &[
            "escape",
            "[",
            "pid",
            "$DIR/left.pid",
            "sleep",
            "30",
            "]",
            "sleep",
            "0.5",
        ],
    );
    let left = read_pid(&d.join("left.pid"), LIMIT);
    let r = w.wait_result(&leaver, LIMIT);
    assert_eq!(r["ok"], true, "{r}");
    wait_until(Duration::from_secs(5), || !alive(left));
    assert!(
        !w.result_path(&beside).exists() && w.running(&beside).exists(),
        "the job beside it was stopped too"
    );
    std::fs::write(d.join("go"), "").unwrap();
    w.wait_result(&beside, LIMIT);
    assert_ok(&w, &beside);
    drop(g);
}

#[test]
fn enqueue_interrupt_with_slots_stops_the_old_job_and_the_steer_takes_a_slot() {
    let w = World::with_target();
    let d = dir(&w);
    let old = waiting_job(&w, &d, "old", &[]);
    let other = waiting_job(&w, &d, "other", &[]);
    let g = w.spawn_listener(&["--slots", "2"]);
    wait_until(LIMIT, || started(&d, "old") && started(&d, "other"));
    let queued = waiting_job(&w, &d, "queued", &[]);
    let env = env_flag("DIR", &d);
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--interrupt",
        &old,
        "--env",
        &env,
        "--",
        p(&jobkit()),
        "touch",
        "$DIR/started-steer",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let steer = out.trim().to_string();
    let r = w.wait_result(&old, LIMIT);
    assert_eq!(r["error"], "cancelled", "{r}");
    // The freed slot goes to the steer (high), before the older queued job.
    w.wait_result(&steer, LIMIT);
    assert_ok(&w, &steer);
    assert!(w.running(&other).exists() && !w.result_path(&other).exists());
    wait_until(LIMIT, || start_order(&w).contains(&queued));
    let order = start_order(&w);
    let at = |id: &String| order.iter().position(|o| o == id).unwrap();
    assert!(at(&steer) < at(&queued), "{order:?}");
    std::fs::write(d.join("go"), "").unwrap();
    w.wait_result(&other, LIMIT);
    w.wait_result(&queued, LIMIT);
    drop(g);
}

#[test]
fn the_governor_is_asked_before_each_start_while_other_slots_run() {
    let w = World::with_target();
    let d = dir(&w);
    let gov = scratch(&w, "governor");
    std::fs::write(&gov, "GREEN\n").unwrap();
    let first = waiting_job(&w, &d, "first", &[]);
    let g = w.spawn_listener(&["--slots", "3", "--governor-file", p(&gov)]);
    wait_until(LIMIT, || started(&d, "first"));
    std::fs::write(&gov, "YELLOW\n").unwrap();
    let normal = waiting_job(&w, &d, "normal", &[]);
    let high = waiting_job(&w, &d, "high", &["--priority", "high"]);
    wait_until(LIMIT, || started(&d, "high"));
    // A poll and more later, the normal job is still held, with a slot free.
    std::thread::sleep(Duration::from_millis(500));
    assert!(!started(&d, "normal"), "YELLOW started a normal job");
    std::fs::write(&gov, "GREEN\n").unwrap();
    wait_until(LIMIT, || started(&d, "normal"));
    std::fs::write(d.join("go"), "").unwrap();
    for id in [&first, &normal, &high] {
        w.wait_result(id, LIMIT);
        assert_ok(&w, id);
    }
    drop(g);
}

#[test]
fn status_and_the_heartbeat_list_every_running_job() {
    let w = World::with_target();
    let d = dir(&w);
    let mut ids: Vec<String> = (0..3)
        .map(|i| waiting_job(&w, &d, &i.to_string(), &[]))
        .collect();
    let g = w.spawn_listener(&["--slots", "3"]);
    wait_until(LIMIT, || ids.iter().all(|id| w.running(id).exists()));
    ids.sort();

    let (code, out, err) = w.run(&["--json", "status", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let t = &v["targets"][0];
    let mut running: Vec<String> = t["running"]
        .as_array()
        .unwrap_or_else(|| panic!("{v}"))
        .iter()
        .map(|r| r["jobId"].as_str().unwrap().to_string())
        .collect();
    running.sort();
    assert_eq!(running, ids, "{v}");

    // The heartbeat says running once a job has run a second.
    let hb = w.pc().join("listener.json");
    let mut beat = Value::Null;
    wait_until(LIMIT, || {
        beat = std::fs::read_to_string(&hb)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or(Value::Null);
        beat["runningJobs"].as_array().is_some_and(|a| a.len() == 3)
    });
    assert_eq!(beat["state"], "running", "{beat}");
    let mut listed: Vec<String> = beat["runningJobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j.as_str().unwrap().to_string())
        .collect();
    assert_eq!(beat["running"], listed[0].as_str(), "{beat}");
    listed.sort();
    assert_eq!(listed, ids);
    std::fs::write(d.join("go"), "").unwrap();
    for id in &ids {
        w.wait_result(id, LIMIT);
    }
    drop(g);
}

#[test]
#[cfg(unix)] // SIGTERM to the listener: Wine 8 cannot send the console event
fn sigterm_stops_every_running_job_and_none_runs_again() {
    let w = World::with_target();
    let d = dir(&w);
    let ids: Vec<String> = (0..3)
        .map(|i| waiting_job(&w, &d, &i.to_string(), &[]))
        .collect();
    let queued = waiting_job(&w, &d, "queued", &[]);
    let g = w.spawn_listener(&["--slots", "3"]);
    wait_until(LIMIT, || (0..3).all(|i| started(&d, &i.to_string())));
    let pids: Vec<i32> = (0..3).map(|i| pid_of(&d, &i.to_string())).collect();
    g.signal(libc::SIGTERM);
    let (code, out, err) = g.wait(Duration::from_secs(10));
    assert_eq!(code, 130, "{out}{err}");
    for id in &ids {
        let r = w.result(id);
        assert_eq!(r["error"], "interrupted", "{r}");
        assert!(!w.running(id).exists());
    }
    assert!(!started(&d, "queued"), "a job started during the shutdown");
    assert!(w.inbox(&queued).exists());
    // Nothing of theirs is left, and none runs again.
    assert!(
        pids.iter().all(|&p| !alive(p)),
        "a job outlived the listener"
    );
    std::fs::write(d.join("go"), "").unwrap();
    let c = w.listen_once(&["--slots", "3"]);
    assert_eq!(c["done"], 1, "{c}");
    assert_ok(&w, &queued);
}

#[test]
#[cfg(unix)] // SIGINT to the listener: Wine 8 cannot send the console event
fn a_second_sigint_kills_every_running_job_and_the_restart_records_each_interrupted() {
    let w = World::with_target();
    let d = dir(&w);
    let names = ["0", "1", "2"];
    let ids: Vec<String> = names
        .iter()
        .map(|n| {
            let pid = format!("$DIR/pid-{n}");
            let started = format!("$DIR/started-{n}");
            let steps = ["ignore-stop", "pid", &pid, "touch", &started, "sleep", "30"];
            enqueue_in(&w, &d, &["--grace", "30s"], &steps)
        })
        .collect();
    let mut g = w.spawn_listener(&["--slots", "3"]);
    wait_until(LIMIT, || names.iter().all(|n| started(&d, n)));
    let pids: Vec<i32> = names.iter().map(|n| pid_of(&d, n)).collect();
    g.signal(libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        g.child.as_mut().unwrap().try_wait().unwrap().is_none(),
        "the first Ctrl-C did not wait for the grace"
    );
    g.signal(libc::SIGINT);
    let (code, out, err) = g.wait(Duration::from_secs(5));
    assert_eq!(code, 130, "{out}{err}");
    wait_until(Duration::from_secs(3), || pids.iter().all(|&p| !alive(p)));
    assert!(
        ids.iter().all(|id| !w.running(id).exists()),
        "running/ still shows a killed job"
    );

    let c = w.listen_once(&["--slots", "3"]);
    assert_eq!(c["failed"], 3, "{c}");
    for id in &ids {
        assert_eq!(w.result(id)["error"], "interrupted");
    }
}

#[test]
fn drain_waits_for_every_running_job_and_starts_no_new_one() {
    let w = World::with_target();
    let d = dir(&w);
    let ids: Vec<String> = (0..2)
        .map(|i| waiting_job(&w, &d, &i.to_string(), &[]))
        .collect();
    let queued = waiting_job(&w, &d, "queued", &[]);
    let g = w.spawn_listener(&["--slots", "2"]);
    wait_until(LIMIT, || started(&d, "0") && started(&d, "1"));
    let mut drain = w.bg_cmd();
    drain.args(["listen", "--drain"]);
    let drainer = spawn(&mut drain);
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        ids.iter().all(|id| !w.result_path(id).exists()),
        "drain stopped a job"
    );
    std::fs::write(d.join("go"), "").unwrap();
    let (code, out, err) = g.wait(LIMIT);
    assert_eq!(code, 0, "{out}{err}");
    let out = drainer.wait_with_output().unwrap();
    assert!(out.status.success());
    for id in &ids {
        assert_ok(&w, id);
    }
    assert!(!started(&d, "queued") && w.inbox(&queued).exists());
}

#[test]
fn a_slot_count_outside_one_to_sixty_four_is_a_validation_error() {
    let w = World::with_target();
    for bad in ["0", "65", "two"] {
        let (code, out, err) = w.run(&["listen", "--once", "--slots", bad]);
        assert_eq!(code, 64, "--slots {bad}: {out}{err}");
        assert!(err.contains("--slots"), "{err}");
    }
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_SLOTS", "3")
            .args(["--json", "config"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["slots"]["value"], "3", "{v}");
    assert_eq!(v["slots"]["source"], "variable", "{v}");
}

#[test]
#[cfg(target_os = "linux")] // a full disk made with a tmpfs
#[ignore = "needs root: mounts a tmpfs"]
fn a_listener_that_fails_stops_its_running_jobs_and_none_is_left_unwatched() {
    let w = World::with_target();
    let disk = Tmpfs::over(&w.state, "4m");
    let d = dir(&w);
    let long = waiting_job(&w, &d, "long", &[]);
    let g = w.spawn_listener(&["--slots", "2"]);
    wait_until(LIMIT, || started(&d, "long"));
    let pid = pid_of(&d, "long");
    // The state disk fills; the ledger cannot grow for the next jobs'
    // results (each keeps a 4 KiB tail of its output).
    disk.fill();
    for _ in 0..24 {
        w.enqueue(&[], &kit(&["fill", "6000", "output"]));
    }
    let (code, out, err) = g.wait(Duration::from_secs(60));
    assert_eq!(code, 70, "{out}{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(!alive(pid), "a running job outlived its listener: {err}");
    let beat: Value =
        serde_json::from_str(&std::fs::read_to_string(w.pc().join("listener.json")).unwrap())
            .unwrap();
    assert_eq!(beat["state"], "stopped", "{beat}");
    // With space again, the next start records it, and never runs it again.
    disk.free();
    w.listen_once(&["--slots", "2"]);
    assert_eq!(w.result(&long)["error"], "interrupted");
}
