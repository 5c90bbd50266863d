//! Event-driven pickup: a listener watching its `inbox/` and `cancel/`
//! starts a new job and stops a cancelled one at once, not at its next
//! poll; `listen --no-watch` (or `watch = false`) waits for the poll; a
//! burst of files is drained with each job run once; and a watched folder
//! swapped for a link never makes the listener read outside the root.
//!
//! Every listener here polls every 30 s, so anything seen within a few
//! seconds was seen through an event.

use std::time::{Duration, Instant};

use crate::util::*;

const LONG_POLL: &str = "30s";

/// Well under the long poll, generous for a busy machine.
const SOON: Duration = Duration::from_secs(5);

/// A loop listener polling every 30 s, with `extra` flags; waits for its
/// heartbeat (written once its watch is set up). With `--json` it prints no
/// line per job, which could fill the pipe the test reads only at the end.
fn listener(w: &World, extra: &[&str]) -> ListenerGuard {
    let mut args = vec![
        "--json",
        "listen",
        "--poll-interval",
        LONG_POLL,
        "--settle",
        "2s",
    ];
    args.extend_from_slice(extra);
    let hb = w.pc().join("listener.json");
    let _ = std::fs::remove_file(&hb);
    let g = ListenerGuard::spawn(w.bg_cmd().args(&args));
    wait_until(Duration::from_secs(10), || hb.exists());
    g
}

/// Writes a signed job for `PC` elsewhere in the root (the inbox of a
/// target no listener serves), then renames it into `PC/inbox/`, as a sync
/// engine or `enqueue` places a file whole.
fn drop_job(w: &World, id: &str, spec: &serde_json::Value) {
    std::fs::create_dir_all(w.root.join("MAKER").join("inbox")).unwrap();
    let made = w.write_job("MAKER", id, "PC", &now_text(), spec);
    std::fs::rename(&made, w.inbox(id)).unwrap();
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 delivers only some ReadDirectoryChangesW events: a marker and most of a burst wait for the poll"
)]
fn a_job_starts_and_a_marker_stops_it_at_once_with_a_long_poll() {
    let w = World::with_target();
    let _l = listener(&w, &[]);
    let pidfile = scratch(&w, "pid");
    let id = w.enqueue(&[], &kit(&["pid", p(&pidfile), "sleep", "600"]));
    let dropped = Instant::now();
    read_pid(&pidfile, SOON);
    assert!(dropped.elapsed() < SOON);
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let r = w.wait_result(&id, SOON);
    assert_eq!(r["error"], "cancelled", "{r}");
}

#[test]
fn without_watching_a_job_waits_for_the_poll() {
    let w = World::with_target();
    let ran = scratch(&w, "ran");
    let config = scratch(&w, "config.toml");
    std::fs::write(&config, "watch = false\n").unwrap();
    let mut ids = Vec::new();
    // Once by the flag, once by the config file.
    for by_config in [false, true] {
        let extra: &[&str] = if by_config { &[] } else { &["--no-watch"] };
        let mut c = w.bg_cmd();
        if by_config {
            c.env("FLEET_DISPATCH_CONFIG", &config);
        }
        let mut args = vec!["listen", "--poll-interval", LONG_POLL];
        args.extend_from_slice(extra);
        // A job queued before the start runs in the first pass: once it
        // has, the listener is asleep until its next poll.
        let first = uid("first");
        drop_job(&w, &first, &appends(&scratch(&w, "first"), &first));
        let l = ListenerGuard::spawn(c.args(&args));
        w.wait_result(&first, Duration::from_secs(10));
        std::thread::sleep(Duration::from_secs(1));
        let id = uid("nowatch");
        drop_job(&w, &id, &appends(&ran, &id));
        std::thread::sleep(Duration::from_secs(3));
        assert!(
            !lines(&ran).contains(&id),
            "ran before the poll (config: {by_config})"
        );
        assert!(w.inbox(&id).exists());
        drop(l);
        ids.push(id);
    }
    // A short poll finds them.
    let _l = w.spawn_listener(&["--no-watch"]);
    for id in &ids {
        w.wait_result(id, SOON);
    }
    let mut ran = lines(&ran);
    ran.sort();
    ids.sort();
    assert_eq!(ran, ids);
}

#[test]
#[cfg_attr(
    windows,
    ignore = "Wine 8 delivers only some ReadDirectoryChangesW events: a marker and most of a burst wait for the poll"
)]
fn a_burst_of_jobs_is_drained_with_each_run_once() {
    const JOBS: usize = 300;
    let w = World::with_target();
    let _l = listener(&w, &[]);
    let ran = scratch(&w, "ran");
    let ids: Vec<String> = (0..JOBS).map(|_| uid("burst")).collect();
    for id in &ids {
        drop_job(&w, id, &appends(&ran, id));
    }
    // Within the first poll interval: events, coalesced, found them all.
    let limit = Duration::from_secs(25);
    let started = Instant::now();
    while lines(&ran).len() < JOBS {
        if started.elapsed() > limit {
            let queued = std::fs::read_dir(w.pc().join("inbox")).unwrap().count();
            panic!(
                "{} of {JOBS} ran within {limit:?}; {queued} left in the inbox",
                lines(&ran).len()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for id in &ids {
        wait_until(limit.saturating_sub(started.elapsed()) + SOON, || {
            w.result_path(id).exists()
        });
    }
    let mut seen = lines(&ran);
    seen.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(seen, want, "every job once");
}

/// Unix only: a folder is swapped for a symbolic link, which Wine cannot
/// create.
#[cfg(unix)]
#[test]
fn a_watched_inbox_swapped_for_a_link_is_never_read_through() {
    let w = World::with_target();
    let _l = listener(&w, &[]);
    let outside = scratch(&w, "elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let ran = scratch(&w, "ran");
    let inbox = w.pc().join("inbox");
    // The listener wakes when its inbox moves and may make a new one
    // before the link is in: swap until the link is there.
    let mut n = 0;
    wait_until(SOON, || {
        n += 1;
        let _ = std::fs::rename(&inbox, w.pc().join(format!("inbox-{n}")));
        std::os::unix::fs::symlink(&outside, &inbox).is_ok()
    });
    // A valid job outside the root, arriving where the link points.
    let lure = uid("lure");
    std::fs::create_dir_all(w.root.join("MAKER").join("inbox")).unwrap();
    let made = w.write_job("MAKER", &lure, "PC", &now_text(), &appends(&ran, &lure));
    let lured = outside.join(format!("{lure}.json"));
    std::fs::rename(&made, &lured).unwrap();
    // The link is moved aside and a real inbox made; a job dropped there
    // is still picked up through events.
    wait_until(SOON, || {
        std::fs::symlink_metadata(&inbox).is_ok_and(|m| m.is_dir())
    });
    let id = uid("after");
    drop_job(&w, &id, &appends(&ran, &id));
    w.wait_result(&id, SOON);
    assert_eq!(lines(&ran), vec![id]);
    assert!(lured.exists(), "the job outside the root stays where it is");
    assert!(!w.result_path(&lure).exists());
}

/// Regression: a wait on a target whose listener never ran (its folder
/// holds only the `inbox/` that `enqueue` made, so there is no `results/`
/// to watch) looked again at once instead of every 200 ms, spinning a whole
/// core for the length of the wait. Unix only: the waiting process's own
/// CPU time comes from `wait4`.
#[cfg(unix)]
#[test]
fn a_wait_with_no_results_folder_to_watch_sleeps_between_looks() {
    let w = World::new();
    let started = Instant::now();
    // Reaped by `wait4` below, which alone reports its CPU time: a later
    // `wait()` could reap another test's child that got the pid.
    #[allow(clippy::zombie_processes)]
    let child = w
        .bg_cmd()
        .env("FLEET_DISPATCH_FLEET", "OFFBOX")
        .args([
            "enqueue",
            "--target",
            "OFFBOX",
            "--wait",
            "--wait-timeout",
            "3s",
        ])
        .args(["--", "true"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let reaped = loop {
        // SAFETY: `pid` is our own unreaped child, and `status` and
        // `usage` outlive the call that writes them.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r != -1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break r;
        }
    };
    let wall = started.elapsed();
    assert_eq!(
        reaped,
        pid,
        "wait4 cannot measure the wait's CPU time here ({})",
        std::io::Error::last_os_error()
    );
    let mut out = String::new();
    let mut err = String::new();
    use std::io::Read;
    child.stdout.unwrap().read_to_string(&mut out).unwrap();
    child.stderr.unwrap().read_to_string(&mut err).unwrap();
    // Unchanged: the job stays queued and the wait ends as unfinished.
    assert!(
        libc::WIFEXITED(status),
        "not exited: {status:#x}; {out}{err}"
    );
    assert_eq!(libc::WEXITSTATUS(status), 124, "{out}{err}");
    let id = out.lines().next().unwrap_or_default();
    assert!(
        err.contains(&format!(
            "gave up waiting for {id} after 3s: it is still queued"
        )),
        "{err}"
    );
    assert!(
        wall >= Duration::from_secs(3),
        "ended early, after {wall:?}"
    );
    assert!(!w.root.join("OFFBOX").join("results").exists());
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    let cpu = tv(usage.ru_utime) + tv(usage.ru_stime);
    // A look every 200 ms costs a few milliseconds in all; a spin costs as
    // much as the machine gives it, a core's worth on an idle one.
    assert!(
        cpu < wall / 4,
        "the wait used {cpu:?} of CPU in {wall:?}: it spins between looks"
    );
}
