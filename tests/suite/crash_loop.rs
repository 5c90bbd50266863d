//! The crash loop (docs/protocol.md §7 "a crash at any point"): a
//! listener draining and cancelling a stream of real jobs is killed hard
//! (SIGKILL; `TerminateProcess` on Windows) at random moments and
//! restarted, again and again. Afterwards:
//! every job has exactly one signed result, no job's side effect happened
//! twice, every job that was running at a kill is `interrupted` (and no other
//! job is), and no process of any job is left alive.
//!
//! The same loop runs a listener with four slots (`listen --slots 4`):
//! every job running at a kill, whichever slot held it, is `interrupted`.
//!
//! The moments come from a tiny xorshift with a fixed seed, so a failure
//! replays. `FD_CRASH_SEED` and `FD_CRASH_ITERATIONS` run other or longer
//! loops (`FD_CRASH_ITERATIONS=500 cargo test --test tests crash_loop --
//! --nocapture`); the figures are printed on stderr.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::*;

/// Kills per run unless `FD_CRASH_ITERATIONS` says otherwise: fewer under
/// Wine, where each process start costs a good part of a second and fifty
/// rounds take six minutes; the rules checked after each kill are the same.
const ITERATIONS: u64 = if cfg!(windows) { 12 } else { 50 };

/// Kills per run with four slots: each round enqueues more jobs, and a
/// kill lands among several running ones.
const SLOT_ITERATIONS: u64 = if cfg!(windows) { 6 } else { 20 };
const SEED: u64 = 0x5eed_f1ee_7d15_9a7c;

/// xorshift64: deterministic, and no crate needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// Uniform enough in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    let text = text.trim();
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// What the test asked of one job.
struct Job {
    id: String,
    /// Enqueued with a timeout far shorter than its sleep.
    times_out: bool,
    /// `cancel` was run for it (whatever it answered).
    cancel_requested: bool,
}

/// The job: pid file first, then the side effect, then the nap. It is one
/// process (it starts no child), so its pid file names every process it
/// has. Everything it touches lies outside the root.
fn job_argv(pid_dir: &Path, side: &Path, nap: &str) -> Vec<String> {
    kit(&[
        "pid",
        p(&pid_dir.join("$FLEET_DISPATCH_JOB_ID.pid")),
        "append",
        p(side),
        "$FLEET_DISPATCH_JOB_ID",
        "sleep",
        nap,
    ])
}

struct Loop<'w> {
    w: &'w World,
    /// `listen --slots`.
    slots: u64,
    rng: Rng,
    pid_dir: PathBuf,
    side: PathBuf,
    jobs: Vec<Job>,
}

impl Loop<'_> {
    /// Enqueues one job with the real `enqueue`: a quick one sleeping
    /// 0–400 ms, or (one in five) one that outlives its 100–300 ms timeout.
    fn enqueue(&mut self) {
        let times_out = self.rng.one_in(5);
        let (nap, timeout) = if times_out {
            // Sleeps far beyond its timeout, so `timeout` is the only honest
            // ending even on a loaded machine; the kill comes at the timeout.
            (
                "5".to_string(),
                Some(format!("{}ms", 100 + self.rng.below(201))),
            )
        } else {
            let ms = self.rng.below(401);
            (format!("{}.{:03}", ms / 1000, ms % 1000), None)
        };
        let mut extra = vec!["--grace", "1s"];
        if let Some(t) = &timeout {
            extra.extend(["--timeout", t.as_str()]);
        }
        let id = self
            .w
            .enqueue(&extra, &job_argv(&self.pid_dir, &self.side, &nap));
        self.jobs.push(Job {
            id,
            times_out,
            cancel_requested: false,
        });
    }

    /// Cancels, with the real `cancel`, the running job (when there is one
    /// and the dice say so) or a random job that has no result yet.
    fn cancel_one(&mut self) {
        let running = running_ids(self.w);
        let id = match running.first() {
            Some(id) if self.rng.one_in(2) => id.clone(),
            _ => {
                let open: Vec<&Job> = self
                    .jobs
                    .iter()
                    .filter(|j| !j.cancel_requested && !self.w.result_path(&j.id).exists())
                    .collect();
                if open.is_empty() {
                    return;
                }
                open[self.rng.below(open.len() as u64) as usize].id.clone()
            }
        };
        let (code, out, err) = self
            .w
            .run(&["--json", "cancel", "--target", "PC", "--job-id", &id]);
        assert_eq!(code, 0, "cancel {id}: {out}{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert!(
            v["status"] == "requested" || v["status"] == "not_running",
            "cancel {id}: {v}"
        );
        if let Some(j) = self.jobs.iter_mut().find(|j| j.id == id) {
            j.cancel_requested = true;
        }
    }

    fn nap(&mut self, max_ms: u64) {
        std::thread::sleep(Duration::from_millis(self.rng.below(max_ms + 1)));
    }
}

/// The job ids in `running/` (docs/protocol.md §3), temp files aside.
fn running_ids(w: &World) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(w.pc().join("running")) else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let id = name.strip_suffix(".json")?;
            (!id.starts_with('.')).then(|| id.to_string())
        })
        .collect()
}

/// A process that is alive and carries this job's id: pid reuse by a
/// stranger is not a leftover.
#[cfg(unix)]
fn job_process_alive(pid: i32, id: &str, _pid_file: &Path) -> bool {
    let needle = format!("FLEET_DISPATCH_JOB_ID={id}");
    alive(pid)
        && std::fs::read(format!("/proc/{pid}/environ"))
            .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
}

/// A process that is alive and was created before the job wrote its pid
/// file: one created later is a stranger that was given the pid again.
/// (Another process's environment cannot be read on Windows.)
#[cfg(windows)]
fn job_process_alive(pid: i32, _id: &str, pid_file: &Path) -> bool {
    let written = std::fs::metadata(pid_file).and_then(|m| m.modified());
    alive(pid)
        && created_at(pid)
            .zip(written.ok())
            .is_some_and(|(c, w)| c <= w)
}

/// When process `pid` was created.
#[cfg(windows)]
fn created_at(pid: i32) -> Option<std::time::SystemTime> {
    use windows_sys::Win32::Foundation::{CloseHandle, FILETIME};
    use windows_sys::Win32::System::Threading::{
        GetProcessTimes, OpenProcess, PROCESS_QUERY_LIMITED_INFORMATION,
    };
    let zero = FILETIME {
        dwLowDateTime: 0,
        dwHighDateTime: 0,
    };
    let (mut created, mut exited, mut kernel, mut user) = (zero, zero, zero, zero);
    // SAFETY: OpenProcess gives a handle we own or null; it is closed here,
    // and GetProcessTimes only writes the four FILETIMEs given.
    let ok = unsafe {
        let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid as u32);
        if h.is_null() {
            return None;
        }
        let ok = GetProcessTimes(h, &mut created, &mut exited, &mut kernel, &mut user);
        CloseHandle(h);
        ok != 0
    };
    // FILETIME: 100 ns units since 1601-01-01.
    let ticks = (u64::from(created.dwHighDateTime) << 32) | u64::from(created.dwLowDateTime);
    let since_unix = ticks.checked_sub(116_444_736_000_000_000)?;
    ok.then(|| std::time::UNIX_EPOCH + Duration::from_nanos(since_unix * 100))
}

/// Every live process carrying one of `ids` in its environment: a job's
/// process that died before writing its pid file would show only here.
/// Unix only: `/proc`. On Windows the listener's Job Object (closed with
/// the killed listener) ends every process of the job.
#[cfg(unix)]
fn live_job_processes(ids: &BTreeSet<&str>) -> Vec<(i32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        for kv in env.split(|&b| b == 0) {
            if let Some(id) = kv.strip_prefix(b"FLEET_DISPATCH_JOB_ID=")
                && let Ok(id) = std::str::from_utf8(id)
                && ids.contains(id)
                && alive(pid)
            {
                out.push((pid, id.to_string()));
            }
        }
    }
    out
}

#[test]
fn sigkill_at_random_moments_loses_no_job_runs_none_twice_and_leaves_no_process() {
    crash_loop(1, ITERATIONS);
}

#[test]
fn with_four_slots_sigkill_interrupts_every_running_job_runs_none_twice_and_leaves_no_process() {
    crash_loop(4, SLOT_ITERATIONS);
}

/// The loop, with a listener of `slots` slots killed `iterations` times
/// (unless `FD_CRASH_ITERATIONS` says otherwise).
fn crash_loop(slots: u64, iterations: u64) {
    let started = Instant::now();
    let iterations = env_u64("FD_CRASH_ITERATIONS").unwrap_or(iterations);
    let seed = env_u64("FD_CRASH_SEED").unwrap_or(SEED).max(1);
    let w = World::with_target();
    let pid_dir = w.dir.path().join("pids");
    std::fs::create_dir_all(&pid_dir).unwrap();
    let slot_count = slots.to_string();
    let slot_args: Vec<&str> = if slots > 1 {
        vec!["--slots", &slot_count]
    } else {
        Vec::new()
    };
    let mut l = Loop {
        w: &w,
        slots,
        rng: Rng(seed),
        pid_dir,
        side: w.dir.path().join("side-effects.log"),
        jobs: Vec::new(),
    };

    // A backlog, so the first listeners start busy.
    for _ in 0..4 * slots {
        l.enqueue();
    }
    // Jobs that were running (started in the ledger, no result recorded) when a kill
    // landed: exactly these must end `interrupted`.
    let mut interrupted_by_kill: BTreeSet<String> = BTreeSet::new();
    let mut kills_mid_job = 0;
    let mut kills_before_spawn = 0;
    let mut kills_after_result = 0;
    // The most jobs found running at one kill.
    let mut most_open = 0;
    for _ in 0..iterations {
        for _ in 0..(2 + l.rng.below(3)) * l.slots {
            l.enqueue();
        }
        if l.rng.one_in(4) {
            l.cancel_one();
        }
        let g = w.spawn_listener(&slot_args);
        l.nap(350);
        if l.rng.one_in(2) {
            l.cancel_one();
        }
        l.nap(450);

        // What was running just before the kill, then what the dead
        // listener left open in its ledger (the truth the restart acts on).
        let mut seen: BTreeSet<String> = running_ids(&w).into_iter().collect();
        seen.extend(open_jobs(&w).into_iter().map(|(id, _)| id));
        kill_hard(g.pid());
        let _ = g.wait(Duration::from_secs(10));
        let after = open_jobs(&w);
        if after.iter().any(|(_, pid)| *pid == 0) {
            kills_before_spawn += 1;
        }
        most_open = most_open.max(after.len());
        seen.extend(after.into_iter().map(|(id, _)| id));
        let (mut mid_job, mut after_result) = (false, false);
        for id in seen {
            // A result recorded before the kill is kept; only publishing it
            // and the bookkeeping after it are left to the restart.
            if w.result_path(&id).exists() || result_recorded(&w, &id) {
                after_result = true;
            } else {
                mid_job = true;
                interrupted_by_kill.insert(id);
            }
        }
        kills_mid_job += u32::from(mid_job);
        kills_after_result += u32::from(after_result && !mid_job);
    }
    let loop_time = started.elapsed();
    assert!(
        slots == 1 || most_open >= 2,
        "no kill found two jobs running at once: the loop did not test slots"
    );

    // A final clean drain of whatever is left.
    let mut last = vec!["--settle", "1s"];
    last.extend_from_slice(&slot_args);
    let counters = w.listen_once(&last);

    let ids: BTreeSet<&str> = l.jobs.iter().map(|j| j.id.as_str()).collect();
    assert_eq!(ids.len(), l.jobs.len(), "enqueue gave a duplicate id");

    // Every job has exactly one result, and the results folder holds nothing
    // else named like a result.
    let result_names: BTreeSet<String> = std::fs::read_dir(w.pc().join("results"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .collect();
    let expected: BTreeSet<String> = ids.iter().map(|id| format!("{id}.json")).collect();
    assert_eq!(
        result_names, expected,
        "results/ does not hold exactly one result per job"
    );
    assert!(
        running_ids(&w).is_empty(),
        "running/ not empty: {:?}",
        running_ids(&w)
    );
    assert!(open_job(&w).is_none(), "a job left open in the ledger");
    let queued = files(&w.pc().join("inbox"));
    assert!(queued.is_empty(), "still queued: {queued:?}");

    // No side effect happened twice, and only jobs of this test wrote one.
    let log = lines(&l.side);
    let mut runs: BTreeMap<&str, u32> = BTreeMap::new();
    for id in &log {
        assert!(ids.contains(id.as_str()), "unknown id {id:?} in the log");
        *runs.entry(id.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "side effects that happened twice: {twice:?}"
    );

    let mut by_error: BTreeMap<String, u32> = BTreeMap::new();
    let mut wine_flakes = 0;
    for j in &l.jobs {
        let r = w.result(&j.id);
        assert!(result_sig_ok(&r), "result signature does not verify: {r}");
        assert_eq!(r["jobId"], j.id.as_str(), "{r}");
        let error = r["error"].as_str().unwrap();
        *by_error.entry(error.to_string()).or_default() += 1;
        let ran = runs.contains_key(j.id.as_str());
        if interrupted_by_kill.contains(&j.id) {
            assert_eq!(error, "interrupted", "running at a kill: {r}");
            continue;
        }
        assert_ne!(
            error, "interrupted",
            "interrupted, but no kill found it running: {r}"
        );
        let allowed: &[&str] = match (j.cancel_requested, j.times_out) {
            (false, false) => &[""],
            (false, true) => &["timeout"],
            // A cancel may land before the start, mid-run, or lose an
            // honest race with the job's own end (or its timeout).
            (true, false) => &["", "cancelled", "cancelled-before-start"],
            (true, true) => &["timeout", "cancelled", "cancelled-before-start"],
        };
        assert!(allowed.contains(&error), "expected one of {allowed:?}: {r}");
        if error.is_empty() && wine_never_ran(&r) {
            // Its one process died before its first step: no pid file, no
            // side effect; counted, so a run of them still fails below.
            assert!(!ran, "died before its first step, yet it ran: {r}");
            wine_flakes += 1;
            continue;
        }
        if error.is_empty() {
            assert_eq!(
                (r["ok"].as_bool(), r["exitCode"].as_i64()),
                (Some(true), Some(0)),
                "{r}"
            );
        }
        match error {
            "cancelled-before-start" => {
                assert!(!ran, "cancelled before start, yet it ran: {r}");
                assert_eq!(r["startedAt"], "", "{r}");
            }
            // A marker may stop a job a moment after its spawn, before its
            // first step wrote anything: stopped mid-run either way, so it
            // was started.
            "cancelled" => assert_ne!(r["startedAt"], "", "cancelled, never started: {r}"),
            _ => assert!(ran, "{error:?} but its side effect never happened: {r}"),
        }
    }

    // Wine's process creation fails now and then, not in runs.
    assert!(
        wine_flakes <= 1 + l.jobs.len() / 20,
        "{wine_flakes} of {} jobs died in their DLL initialisation",
        l.jobs.len()
    );

    // No process of any job is left alive.
    let leftovers = || -> Vec<(i32, String)> {
        let v: Vec<(i32, String)> = l
            .jobs
            .iter()
            .filter_map(|j| {
                let pid_file = l.pid_dir.join(format!("{}.pid", j.id));
                let text = std::fs::read_to_string(&pid_file).ok()?;
                let pid = text.trim().parse::<i32>().ok()?;
                job_process_alive(pid, &j.id, &pid_file).then(|| (pid, j.id.clone()))
            })
            .collect();
        #[cfg(unix)]
        let v = v.into_iter().chain(live_job_processes(&ids)).collect();
        v
    };
    let until = Instant::now() + Duration::from_secs(2);
    while !leftovers().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        leftovers().is_empty(),
        "processes of jobs left alive: {:?}",
        leftovers()
    );

    eprintln!(
        "crash loop (seed {seed:#x}, {slots} slot(s)): {iterations} hard kills, {kills_mid_job} \
         mid-job ({kills_before_spawn} between start line and spawn, at most {most_open} \
         running at once), {kills_after_result} after a \
         job's result but before its bookkeeping; {} jobs, {} cancels requested, {} ran, \
         0 ran twice; results by error: {by_error:?} ({wine_flakes} never ran under Wine); final drain {counters}; loop {:.1}s, \
         total {:.1}s",
        l.jobs.len(),
        l.jobs.iter().filter(|j| j.cancel_requested).count(),
        runs.len(),
        loop_time.as_secs_f64(),
        started.elapsed().as_secs_f64(),
    );
}

#[cfg(unix)]
/// What a killed listener's ledger says, read as start-up reads it (zero
/// bytes are unused space): results recorded, checkpoints, results after
/// the last checkpoint, and each checkpoint's place among the lines.
struct LedgerTally {
    results: usize,
    checkpoints: usize,
    since_checkpoint: usize,
    /// The jobs started and not recorded when a checkpoint was written.
    running_at_checkpoints: Vec<BTreeSet<String>>,
}

#[cfg(unix)]
fn tally_ledger(w: &World) -> LedgerTally {
    let text = std::fs::read(ledger_path(w)).unwrap_or_default();
    let mut t = LedgerTally {
        results: 0,
        checkpoints: 0,
        since_checkpoint: 0,
        running_at_checkpoints: Vec::new(),
    };
    let mut running = BTreeSet::new();
    for raw in text.split(|&b| b == b'\n' || b == 0) {
        let Ok(v) = serde_json::from_slice::<Value>(raw) else {
            continue;
        };
        let id = v["jobId"].as_str().unwrap_or_default().to_string();
        match v["kind"].as_str() {
            Some("start") => {
                running.insert(id);
            }
            Some("result") => {
                running.remove(&id);
                t.results += 1;
                t.since_checkpoint += 1;
            }
            Some("checkpoint") => {
                t.checkpoints += 1;
                t.since_checkpoint = 0;
                t.running_at_checkpoints.push(running.clone());
            }
            _ => {}
        }
    }
    t
}

#[cfg(unix)]
/// Counts the `"kind":"result"` lines of target `PC`'s ledger.
fn results_in_ledger(w: &World) -> usize {
    let text = std::fs::read(ledger_path(w)).unwrap_or_default();
    let needle = b"\"kind\":\"result\"";
    text.windows(needle.len()).filter(|x| x == needle).count()
}

/// `n` jobs running `true`, queued with one `enqueue --batch`; their ids.
#[cfg(unix)]
fn queue_true_jobs(w: &World, n: usize) -> Vec<String> {
    let file = scratch(w, "true.jsonl");
    std::fs::write(&file, "{\"argv\": [\"true\"]}\n".repeat(n)).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--batch", p(&file), "--target", "PC"]);
    assert_eq!(code, 0, "{err}");
    out.lines().map(str::to_string).collect()
}

/// A listener for `PC` with at most 256 open files, killed hard once its
/// ledger holds `finished` results; returns what the ledger says then.
#[cfg(unix)]
fn drain_and_kill_at(w: &World, extra: &[&str], finished: usize) -> LedgerTally {
    let mut c = w.bg_cmd();
    // Quiet (`--json`): a line per job would fill the pipe no one reads.
    // Relaxed: no flush per job, so 1,500 jobs take seconds on a busy
    // disk; checkpoints and recovery are the same at either level.
    limit_open_files(&mut c, 256).args([
        "--json",
        "--durability",
        "relaxed",
        "listen",
        "--poll-interval",
        "1s",
    ]);
    let g = ListenerGuard::spawn(c.args(extra));
    wait_until(Duration::from_secs(60), || results_in_ledger(w) >= finished);
    kill_hard(g.pid());
    let (code, _, err) = g.wait(Duration::from_secs(10));
    assert_eq!(code, -1, "killed, not exited: {err}");
    tally_ledger(w)
}

/// Restarts `PC`'s listener with at most 256 open files (`listen --once`);
/// returns its counters.
#[cfg(unix)]
fn restart_under_256(w: &World) -> Value {
    let mut c = w.bg_cmd();
    limit_open_files(&mut c, 256).args(["--json", "listen", "--once", "--poll-interval", "100ms"]);
    let (code, out, err) = output(&mut assert_cmd::Command::from_std(c));
    assert_eq!(code, 0, "the restart failed: {err}");
    serde_json::from_str::<Value>(out.trim()).unwrap()["counters"].clone()
}

/// Every job of `ids` has exactly one result and is archived, nothing is
/// left queued, and no temp file a kill left mid-batch in `results/` is
/// left either.
#[cfg(unix)]
fn one_result_each(w: &World, ids: &[String]) {
    let want: BTreeSet<String> = ids.iter().map(|id| format!("{id}.json")).collect();
    for place in ["results", "archive/done"] {
        let got: Vec<String> = files(&w.pc().join(place));
        let missing: Vec<&String> = want.iter().filter(|n| !got.contains(n)).collect();
        let extra: Vec<&String> = got.iter().filter(|n| !want.contains(*n)).collect();
        assert!(
            got.len() == want.len() && missing.is_empty() && extra.is_empty(),
            "{place}: {} files for {} jobs; missing {missing:?}, not results {extra:?}",
            got.len(),
            want.len()
        );
    }
    assert!(files(&w.pc().join("inbox")).is_empty(), "nothing queued");
}

/// Regression: a drain that never paused wrote no checkpoint, so a kill
/// after 1,500 jobs left all 1,500 results for the next start to publish
/// again, at once, one open temp file each: every restart failed with
/// `Too many open files` at `ulimit -n 256`.
#[cfg(unix)]
#[test]
fn a_restart_after_sigkill_at_1500_finished_jobs_recovers_under_256_open_files() {
    let w = World::with_target();
    let ids = queue_true_jobs(&w, 1600);
    let at_kill = drain_and_kill_at(&w, &[], 1500);
    assert!(
        at_kill.checkpoints >= 2 && at_kill.since_checkpoint <= 501,
        "checkpoints during the drain: {} written, {} results after the last",
        at_kill.checkpoints,
        at_kill.since_checkpoint
    );
    // The job running at the kill (if one was) has a start line only.
    let open: Vec<String> = open_jobs(&w).into_iter().map(|(id, _)| id).collect();
    let counters = restart_under_256(&w);
    one_result_each(&w, &ids);
    let ran = counters["done"].as_u64().unwrap() + counters["failed"].as_u64().unwrap();
    assert_eq!(ran as usize, ids.len() - at_kill.results, "{counters}");
    for id in ids.iter().step_by(97).chain(&open) {
        let r = w.result(id);
        assert!(result_sig_ok(&r), "{r}");
        let want = if open.contains(id) { "interrupted" } else { "" };
        assert_eq!(r["error"], want, "{r}");
    }
}

/// The same with a second slot held by a long job the whole time: no
/// checkpoint was written while any slot was busy, and the restart that
/// failed on the backlog never reached the long job, which ran on.
#[cfg(unix)]
#[test]
fn a_restart_after_sigkill_with_a_slot_running_interrupts_that_job_and_stops_it() {
    let w = World::with_target();
    let pid_file = scratch(&w, "long.pid");
    let long = w.enqueue(
        &["--priority", "high"],
        &kit(&["pid", p(&pid_file), "sleep", "300"]),
    );
    let mut ids = queue_true_jobs(&w, 1600);
    let at_kill = drain_and_kill_at(&w, &["--slots", "2"], 1500);
    let pid = read_pid(&pid_file, Duration::from_secs(5));
    assert!(alive(pid), "the long job outlives the killed listener");
    assert!(
        at_kill.checkpoints >= 2
            && at_kill.since_checkpoint <= 600
            && at_kill
                .running_at_checkpoints
                .iter()
                .all(|r| r.contains(&long)),
        "checkpoints while {long} ran: {} written, {} results after the last",
        at_kill.checkpoints,
        at_kill.since_checkpoint
    );
    let counters = restart_under_256(&w);
    ids.push(long.clone());
    one_result_each(&w, &ids);
    let r = w.result(&long);
    assert_eq!(r["error"], "interrupted", "{r}");
    assert!(result_sig_ok(&r), "{r}");
    let gone = Instant::now() + Duration::from_secs(5);
    while alive(pid) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive(pid);
    if survived {
        kill_hard(pid);
    }
    assert!(!survived, "the long job's process was stopped ({counters})");
}

/// Regression: while any slot was busy no checkpoint was written, even
/// with the listener otherwise idle, so a long job kept every result since
/// the last idle moment for a restart to publish again.
#[cfg(unix)]
#[test]
fn a_listener_idle_beside_a_long_job_in_a_slot_writes_a_checkpoint() {
    let w = World::with_target();
    let long = w.enqueue(&["--priority", "high"], &kit(&["sleep", "60"]));
    for _ in 0..3 {
        w.enqueue(&[], &kit(&[]));
    }
    let g = w.spawn_listener(&["--slots", "2"]);
    let started = Instant::now();
    let mut at = tally_ledger(&w);
    wait_until(Duration::from_secs(20), || {
        at = tally_ledger(&w);
        at.results >= 3 && at.checkpoints >= 1
    });
    assert_eq!(at.since_checkpoint, 0, "the three results are checkpointed");
    assert!(
        at.running_at_checkpoints.iter().all(|r| r.contains(&long)),
        "written while {long} ran"
    );
    eprintln!(
        "checkpoint beside a running slot after {:?}",
        started.elapsed()
    );
    let (code, _, err) = g.stop(&w, libc::SIGTERM, Duration::from_secs(20));
    assert_eq!(code, polite_stop::EXIT, "{err}");
    assert_eq!(
        w.result(&long)["error"],
        "interrupted",
        "stopped with the listener"
    );
}

/// An ext4 file system in a loop device mounted over a folder (Linux, as
/// root), whose power can be cut: `EXT4_IOC_SHUTDOWN` without flushing its
/// journal (what xfstests' `godown` does) drops everything not yet
/// flushed, as a power loss would, and a remount replays the journal.
#[cfg(target_os = "linux")]
struct LoopDisk {
    image: PathBuf,
    dir: PathBuf,
}

#[cfg(target_os = "linux")]
impl LoopDisk {
    /// Makes and mounts one; fails the test where none can be made here
    /// (not root, no loop device, no `mkfs.ext4`): its tests are ignored
    /// for that.
    fn over(dir: &Path, image: &Path) -> LoopDisk {
        let made = std::fs::File::create(image).and_then(|f| f.set_len(64 << 20));
        let ok = made.is_ok()
            && std::process::Command::new("mkfs.ext4")
                .args(["-q", "-F"])
                .arg(image)
                .status()
                .is_ok_and(|s| s.success());
        let disk = LoopDisk {
            image: image.to_path_buf(),
            dir: dir.to_path_buf(),
        };
        assert!(
            ok && disk.mount(),
            "no ext4 loop device can be mounted here (not root, or no mkfs.ext4)"
        );
        disk
    }

    fn mount(&self) -> bool {
        std::process::Command::new("mount")
            .args(["-t", "ext4", "-o", "loop"])
            .arg(&self.image)
            .arg(&self.dir)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Cuts the power: nothing more reaches the disk, and what was not
    /// flushed is lost.
    fn power_loss(&self) {
        const EXT4_IOC_SHUTDOWN: libc::Ioctl = 0x8004_587d;
        const EXT4_GOING_FLAGS_NOLOGFLUSH: u32 = 2;
        let dir = std::fs::File::open(&self.dir).unwrap();
        let flags = EXT4_GOING_FLAGS_NOLOGFLUSH;
        // SAFETY: the ioctl reads one u32 from a valid pointer.
        let rc = unsafe {
            libc::ioctl(
                std::os::fd::AsRawFd::as_raw_fd(&dir),
                EXT4_IOC_SHUTDOWN,
                &flags,
            )
        };
        assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
    }

    /// The power back: unmounted, and mounted again (the journal replayed).
    fn power_on(&self) {
        let umount = std::process::Command::new("umount")
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(umount.success());
        assert!(self.mount(), "remount {}", self.image.display());
    }
}

#[cfg(target_os = "linux")]
impl Drop for LoopDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.dir)
            .status();
    }
}

/// A world whose root and state folder are on a [`LoopDisk`], with a
/// folder outside it for what must survive the power loss (the jobs' side
/// effects). Fields drop in order: the disk is unmounted first.
#[cfg(target_os = "linux")]
struct OnDisk {
    disk: LoopDisk,
    outside: tempfile::TempDir,
    w: World,
}

#[cfg(target_os = "linux")]
fn world_on_disk() -> OnDisk {
    let w = World::new();
    let outside = tempfile::tempdir().unwrap();
    let disk = LoopDisk::over(w.dir.path(), &outside.path().join("disk.img"));
    // The folders World made are under the mount now.
    let keys = w.key.parent().unwrap().to_path_buf();
    for d in [&w.root, &w.state, &w.home, &keys] {
        std::fs::create_dir_all(d).unwrap();
    }
    write_private(&w.key, VECTOR_KEY);
    w.make_target("PC");
    // The key and the layout are on the disk before the power is ever cut.
    assert!(
        std::process::Command::new("sync")
            .status()
            .unwrap()
            .success()
    );
    OnDisk { disk, outside, w }
}

/// The power cut in the middle of a drain at full durability (the root
/// and the state folder on one disk; the jobs' side effects outside it),
/// then a restart: no job is lost, none ran twice, each has one result.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root: mounts an ext4 loop device"]
fn a_power_loss_mid_drain_loses_no_job_and_runs_none_twice() {
    let OnDisk { disk, outside, w } = world_on_disk();
    let side = outside.path().join("ran.txt");
    let file = outside.path().join("jobs.jsonl");
    let line = kit_spec(&[
        "append",
        p(&side),
        "$FLEET_DISPATCH_JOB_ID",
        "sleep",
        "0.02",
    ]);
    std::fs::write(&file, format!("{line}\n").repeat(150)).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--batch", p(&file), "--target", "PC"]);
    assert_eq!(code, 0, "{err}");
    let ids: Vec<String> = out.lines().map(str::to_string).collect();
    let g = ListenerGuard::spawn(
        w.bg_cmd()
            .args(["--json", "listen", "--poll-interval", "1s"]),
    );
    wait_until(Duration::from_secs(60), || lines(&side).len() >= 60);
    // Everything stops at once: the listener, its job, the disk.
    kill_hard(g.pid());
    let id_set: BTreeSet<&str> = ids.iter().map(String::as_str).collect();
    for (pid, _) in live_job_processes(&id_set) {
        kill_hard(pid);
    }
    let seen = |dir: &str| files(&w.pc().join(dir)).len();
    let (results_cached, ledger_cached) = (seen("results"), results_in_ledger(&w));
    disk.power_loss();
    let _ = g.wait(Duration::from_secs(10));
    let ran_before = lines(&side).len();
    disk.power_on();
    let (results_kept, ledger_kept) = (seen("results"), results_in_ledger(&w));
    let counters = w.listen_once(&[]);
    let ran = lines(&side);
    let mut runs: BTreeMap<&str, usize> = BTreeMap::new();
    for id in &ran {
        *runs.entry(id.as_str()).or_default() += 1;
    }
    let twice: Vec<_> = runs.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        twice.is_empty(),
        "ran twice across the power loss: {twice:?}"
    );
    one_result_each(&w, &ids);
    let mut interrupted = 0;
    for id in &ids {
        let r = w.result(id);
        assert!(result_sig_ok(&r), "{r}");
        match r["error"].as_str().unwrap() {
            "" => assert_eq!(runs.get(id.as_str()), Some(&1), "done, so it ran once: {r}"),
            "interrupted" => interrupted += 1,
            other => panic!("{other}: {r}"),
        }
    }
    assert!(interrupted <= 1, "{interrupted} interrupted with one slot");
    // The interrupted job may have been killed before its first step.
    assert!(
        (ids.len() - interrupted..=ids.len()).contains(&ran.len()),
        "{} runs of {} jobs",
        ran.len(),
        ids.len()
    );
    eprintln!(
        "power loss after {ran_before} of {} jobs ran: results {results_cached} → \
         {results_kept} and ledger results {ledger_cached} → {ledger_kept} across it; \
         {interrupted} interrupted; restart {counters}",
        ids.len()
    );
}

/// `enqueue --batch` at full durability, the power cut the moment it
/// exits: every job it queued is there after the restart, whole and
/// signed (its files are each closed once written and flushed together,
/// then renamed, and the inbox flushed), and runs.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root: mounts an ext4 loop device"]
fn a_power_loss_right_after_a_batch_keeps_every_job_it_queued() {
    let OnDisk { disk, outside, w } = world_on_disk();
    let file = outside.path().join("jobs.jsonl");
    std::fs::write(&file, "{\"argv\": [\"true\"]}\n".repeat(500)).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--batch", p(&file), "--target", "PC"]);
    assert_eq!(code, 0, "{err}");
    let ids: Vec<String> = out.lines().map(str::to_string).collect();
    disk.power_loss();
    disk.power_on();
    let mut queued: Vec<String> = files(&w.pc().join("inbox"))
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    queued.sort();
    let mut want: Vec<String> = ids.iter().map(|id| format!("{id}.json")).collect();
    want.sort();
    assert!(
        queued == want,
        "{} of {} jobs queued after the power loss",
        queued.len(),
        want.len()
    );
    let counters = w.listen_once(&[]);
    assert_eq!(
        (&counters["done"], &counters["rejected"]),
        (&500.into(), &0.into()),
        "{counters}"
    );
}
