//! The listener on a bucket (docs/object-store.md, "The protocol on
//! objects"), through the binary against the S3 engine `ci/engine-s3`
//! starts: a job sent with `enqueue` runs once, its output placed as
//! numbered chunk objects before its signed result, its claim (its copy
//! in `archive/done/`) the job byte for byte, its inbox copy removed; a
//! job another listener claimed never started here; a running job
//! stopped by `cancel`, with its process
//! tree; a queued one cancelled before anything is spawned; a job waiting
//! for another on the bucket held until it ends; forged inputs refused into
//! `archive/rejected/` with their reason; a second listener of the target
//! refused `BUSY` while the first one's heartbeat is fresh; and a listener
//! killed (SIGKILL) while its job runs: the next start stops the job's
//! leftover process and gives it one `interrupted` result, never running
//! it again.

use std::time::{Duration, Instant};

use crate::util::engine::*;
use crate::util::*;

/// `fleet-dispatch` on the engine's bucket as machine `machine`, with `PC`
/// a fleet member and a state directory of its own.
fn cmd_as(e: &Engine, w: &World, machine: &str) -> std::process::Command {
    let mut c = w.bg_cmd_as(machine);
    c.env("FLEET_DISPATCH_ROOT", lane_root(e))
        .env("FLEET_DISPATCH_FLEET", "PC")
        .env(
            "FLEET_DISPATCH_STATE_DIR",
            w.home.join(format!("state-{machine}")),
        );
    for (k, v) in &e.vars {
        c.env(k, v);
    }
    c
}

fn run_as(e: &Engine, w: &World, machine: &str, args: &[&str]) -> (i32, String, String) {
    output(&mut assert_cmd::Command::from_std({
        let mut c = cmd_as(e, w, machine);
        c.args(args);
        c
    }))
}

/// Sends `argv` to PC from `me`; its id.
fn send(e: &Engine, w: &World, extra: &[&str], argv: &[String]) -> String {
    let mut args = vec!["enqueue", "--target", "PC"];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend(argv.iter().map(String::as_str));
    let got = lane_run(e, w, &args);
    assert_eq!(got.0, 0, "{got:?}");
    got.1.trim().to_string()
}

/// The keys under `PC/<place>/`, as names.
fn names(e: &Engine, place: &str) -> Vec<String> {
    let prefix = e.key(&format!("PC/{place}/"));
    let mut out: Vec<String> = e
        .client()
        .list(&prefix, None, 1000)
        .unwrap()
        .into_iter()
        .filter_map(|x| x.key.strip_prefix(&prefix).map(str::to_string))
        .filter(|n| !n.contains('/'))
        .collect();
    out.sort();
    out
}

/// The result document of `id`, once `result` verifies it.
fn result_json(e: &Engine, w: &World, id: &str) -> serde_json::Value {
    let got = lane_run(e, w, &["result", "--target", "PC", "--job-id", id]);
    assert!(got.0 != 124 && got.0 != 66 && got.0 != 77, "{got:?}");
    lane_json(&lane_object(e, &format!("PC/results/{id}.json")).expect("a result"))
}

/// A listener of PC on the bucket, in the background, polling fast.
fn listener(e: &Engine, w: &World) -> std::process::Child {
    let mut c = cmd_as(e, w, "PC");
    c.args(["listen", "--poll-interval", "200ms"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    c.spawn().unwrap()
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_job_runs_once_with_its_output_in_chunks_its_result_and_its_archive() {
    let (e, w) = (Engine::new(), World::new());
    let id = send(
        &e,
        &w,
        &[],
        &kit(&["out", "marker-out-1", "err", "marker-err-1"]),
    );
    let sent = lane_object(&e, &format!("PC/inbox/{id}.json")).expect("the job");
    let got = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
    assert_eq!(got.0, 0, "{got:?}");
    let summary: serde_json::Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(summary["counters"]["done"], serde_json::json!(1), "{got:?}");
    let r = result_json(&e, &w, &id);
    assert_eq!(r["ok"], serde_json::json!(true), "{r}");
    let shown = lane_run(&e, &w, &["result", "--target", "PC", "--job-id", &id]);
    assert!(shown.1.contains("marker-out-1"), "{shown:?}");
    let out = lane_object(&e, &format!("PC/logs/{id}.stdout.0")).expect("the first stdout chunk");
    assert_eq!(String::from_utf8_lossy(&out).trim(), "marker-out-1");
    let err = lane_object(&e, &format!("PC/logs/{id}.stderr.0")).expect("the first stderr chunk");
    assert_eq!(String::from_utf8_lossy(&err).trim(), "marker-err-1");
    assert!(lane_object(&e, &format!("PC/logs/{id}.stdout.1")).is_none());
    // `logs` reads them back, held against the result.
    let logs = lane_run(&e, &w, &["logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(logs.0, 0, "{logs:?}");
    assert!(logs.1.contains("marker-out-1"), "{logs:?}");
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    assert_eq!(names(&e, "archive/done"), vec![format!("{id}.json")]);
    // A second pass finds nothing to do: the job never runs twice, even
    // when its file comes back into the inbox.
    let done = lane_object(&e, &format!("PC/archive/done/{id}.json")).unwrap();
    assert_eq!(
        done, sent,
        "the archived copy is the job as sent, byte for byte"
    );
    assert!(matches!(
        e.client()
            .create_only(&e.key(&format!("PC/inbox/{id}.json")), &done),
        fleet_dispatch::store::objstore::Answer::Done(_)
    ));
    let again = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
    assert_eq!(again.0, 0, "{again:?}");
    let summary: serde_json::Value = serde_json::from_str(&again.1).unwrap();
    assert_eq!(
        summary["counters"]["done"],
        serde_json::json!(0),
        "{again:?}"
    );
    assert_eq!(
        summary["counters"]["skipped"],
        serde_json::json!(1),
        "{again:?}"
    );
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
    let rejected = names(&e, "archive/rejected");
    assert!(
        rejected.contains(&format!("{id}.json.reason.json")),
        "{rejected:?}"
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_job_too_large_to_hold_is_read_again_for_its_claim_byte_for_byte() {
    // A job's bytes are held from its listing up to 64 KiB, and its claim
    // (its archived copy) written from them; a larger one is read again,
    // and claimed only while it is the job judged.
    let (e, w) = (Engine::new(), World::new());
    let big = "x".repeat(100 * 1024);
    let id = send(&e, &w, &[], &["true".to_string(), big]);
    let sent = lane_object(&e, &format!("PC/inbox/{id}.json")).expect("the job");
    assert!(sent.len() > 100 * 1024, "{}", sent.len());
    let got = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
    assert_eq!(got.0, 0, "{got:?}");
    let summary: serde_json::Value = serde_json::from_str(&got.1).unwrap();
    assert_eq!(summary["counters"]["done"], serde_json::json!(1), "{got:?}");
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    let done = lane_object(&e, &format!("PC/archive/done/{id}.json")).expect("archived");
    assert_eq!(
        done, sent,
        "the archived copy is the job as sent, byte for byte"
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_cancel_stops_a_running_job_and_its_tree_and_a_queued_one_never_starts() {
    let (e, w) = (Engine::new(), World::new());
    let pids = w.home.join("pids");
    let child_pid = w.home.join("child");
    let long = send(
        &e,
        &w,
        &[],
        &kit(&[
            "spawn",
            "[",
            "pid",
            p(&child_pid),
            "sleep",
            "60",
            "]",
            "pid",
            p(&pids),
            "sleep",
            "60",
        ]),
    );
    let queued_ran = w.home.join("queued-ran");
    let queued = send(&e, &w, &[], &kit(&["touch", p(&queued_ran)]));
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the long job to start", || {
        child_pid.exists() && pids.exists()
    });
    // Claimed by its copy in archive/done/; shown in running/ once it has
    // run a second.
    assert_eq!(names(&e, "archive/done"), vec![format!("{long}.json")]);
    until(Duration::from_secs(10), "running/ to show the job", || {
        names(&e, "running") == vec![format!("{long}.json")]
    });
    let st = lane_run(
        &e,
        &w,
        &["--json", "result", "--target", "PC", "--job-id", &long],
    );
    assert!(st.1.contains("running"), "{st:?}");
    until(
        Duration::from_secs(10),
        "status to show the job running",
        || {
            let st = lane_run(&e, &w, &["--json", "status"]);
            let st: serde_json::Value = serde_json::from_str(&st.1).unwrap();
            let pc = &st["targets"][0];
            pc["running"] == serde_json::json!([long])
                && pc["queued"] == serde_json::json!([queued])
                && pc["listener"] == serde_json::json!("running")
        },
    );
    // The queued job is cancelled first: it ends before it starts.
    let c = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &queued]);
    assert_eq!(c.0, 0, "{c:?}");
    let c = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &long]);
    assert_eq!(c.0, 0, "{c:?}");
    until(Duration::from_secs(30), "both results", || {
        lane_object(&e, &format!("PC/results/{long}.json")).is_some()
            && lane_object(&e, &format!("PC/results/{queued}.json")).is_some()
    });
    let r = result_json(&e, &w, &long);
    assert_eq!(r["error"], serde_json::json!("cancelled"), "{r}");
    let r = result_json(&e, &w, &queued);
    assert_eq!(
        r["error"],
        serde_json::json!("cancelled-before-start"),
        "{r}"
    );
    assert!(!queued_ran.exists(), "the cancelled queued job ran");
    let child: i32 = std::fs::read_to_string(&child_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    until(
        Duration::from_secs(10),
        "the job's child to be gone",
        || !pid_alive(child),
    );
    until(
        Duration::from_secs(10),
        "the markers to be consumed",
        || names(&e, "cancel").is_empty(),
    );
    assert_eq!(names(&e, "archive/consumed").len(), 2);
    stop(&mut l);
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_job_after_another_waits_for_it_and_forged_inputs_are_refused() {
    let (e, w) = (Engine::new(), World::new());
    let order = w.home.join("order");
    let first = send(
        &e,
        &w,
        &[],
        &kit(&["sleep", "0.5", "append", p(&order), "first"]),
    );
    let second = send(
        &e,
        &w,
        &["--priority", "high", "--after", &first],
        &kit(&["append", p(&order), "second"]),
    );
    // A job signed with another key, and a marker for the first job signed
    // with another key: neither is accepted.
    let forged = serde_json::json!({"jobId": "20261204-050000-00000000000000aa"});
    assert!(matches!(
        e.client().create_only(
            &e.key("PC/inbox/20261204-050000-00000000000000aa.json"),
            forged.to_string().as_bytes()
        ),
        fleet_dispatch::store::objstore::Answer::Done(_)
    ));
    let got = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert_eq!(std::fs::read_to_string(&order).unwrap(), "first\nsecond\n");
    assert_eq!(result_json(&e, &w, &second)["ok"], serde_json::json!(true));
    let rejected = names(&e, "archive/rejected");
    assert!(
        rejected.contains(&"20261204-050000-00000000000000aa.json".to_string())
            && rejected.contains(&"20261204-050000-00000000000000aa.json.reason.json".to_string()),
        "{rejected:?}"
    );
    let reason = lane_json(
        &lane_object(
            &e,
            "PC/archive/rejected/20261204-050000-00000000000000aa.json.reason.json",
        )
        .unwrap(),
    );
    assert_eq!(
        reason["verdict"],
        serde_json::json!("malformed"),
        "{reason}"
    );
}

#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_second_listener_is_refused_and_a_killed_one_is_recovered_without_a_second_run() {
    let (e, w) = (Engine::new(), World::new());
    let runs = w.home.join("runs");
    let pid = w.home.join("pid");
    let id = send(
        &e,
        &w,
        &[],
        &kit(&["append", p(&runs), "ran", "pid", p(&pid), "sleep", "60"]),
    );
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the job to start", || pid.exists());
    // Another machine's state directory, the same target: refused.
    let mut c = cmd_as(&e, &w, "PC");
    c.env("FLEET_DISPATCH_STATE_DIR", w.home.join("state-other"))
        .args(["listen", "--once"]);
    let got = output(&mut assert_cmd::Command::from_std(c));
    assert_eq!(got.0, 75, "{got:?}");
    assert!(got.2.contains("another listener serves PC"), "{}", got.2);
    // Killed at once, before the job has run a second: its process is
    // left, and so is its claim, its copy in archive/done/ (running/ shows
    // nothing yet: the next start finds it by the claim alone).
    l.kill().unwrap();
    l.wait().unwrap();
    let job: i32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(job));
    assert_eq!(names(&e, "archive/done"), vec![format!("{id}.json")]);
    assert_eq!(names(&e, "inbox"), vec![format!("{id}.json")]);
    // Its heartbeat is fresh for a while: the next start waits it out as
    // an operator would, by its age.
    let mut got = (0, String::new(), String::new());
    until(
        Duration::from_secs(120),
        "the next start to be allowed",
        || {
            got = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
            got.0 != 75
        },
    );
    assert_eq!(got.0, 0, "{got:?}");
    until(
        Duration::from_secs(10),
        "the leftover process to be stopped",
        || !pid_alive(job),
    );
    let r = result_json(&e, &w, &id);
    assert_eq!(r["error"], serde_json::json!("interrupted"), "{r}");
    assert_eq!(std::fs::read_to_string(&runs).unwrap(), "ran\n");
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
}

/// Of two listeners that both think they serve the target, the one whose
/// claim (the job's copy in archive/done/) is there first runs the job: a
/// job another one claimed after this one started is never started here,
/// and nothing of it is touched until that one's result is there.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_a_job_a_rival_listener_claimed_is_never_started_here() {
    let (e, w) = (Engine::new(), World::new());
    let ran = w.home.join("ran");
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the listener to start", || {
        lane_object(&e, "PC/listener.json").is_some()
    });
    let id = lane_id("rival");
    let claim = format!("PC/archive/done/{id}.json");
    put(&e, &claim, b"a rival's claim");
    send(&e, &w, &["--job-id", &id], &kit(&["touch", p(&ran)]));
    // A job sent after it, to know the listener's passes went by it.
    let after = send(&e, &w, &[], &kit(&["true"]));
    until(Duration::from_secs(30), "the next job to end", || {
        lane_object(&e, &format!("PC/results/{after}.json")).is_some()
    });
    std::thread::sleep(Duration::from_millis(600));
    assert!(!ran.exists(), "a job another listener claimed ran");
    assert_eq!(names(&e, "inbox"), vec![format!("{id}.json")]);
    assert!(lane_object(&e, &format!("PC/results/{id}.json")).is_none());
    assert_eq!(lane_object(&e, &claim).unwrap(), b"a rival's claim");
    stop(&mut l);
}

fn pid_alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z'))
        })
}

fn stop(l: &mut std::process::Child) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &l.id().to_string()])
        .status();
    let end = Instant::now() + Duration::from_secs(20);
    while Instant::now() < end {
        if l.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = l.kill();
    panic!("the listener did not stop on SIGTERM");
}

/// Places `bytes` at `name` under the prefix, create-only.
fn put(e: &Engine, name: &str, bytes: &[u8]) {
    let a = e.client().create_only(&e.key(name), bytes);
    assert!(
        matches!(a, fleet_dispatch::store::objstore::Answer::Done(_)),
        "{name}: {a:?}"
    );
}

/// A claim of `id` as a listener on another host left it.
fn claim_doc(id: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "jobId": id, "origin": "me", "argv": ["x"], "startedAt": "2026-12-04T04:00:00.000Z",
        "host": "another-host", "listenerPid": 1, "run": "gone", "pid": 0,
    }))
    .unwrap()
}

/// Each crash point of the order of writes (docs/object-store.md), laid
/// out on the bucket as a listener killed there leaves it; one start
/// brings each to its end, and no job runs.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_each_crash_point_is_brought_to_its_end_by_the_next_start_and_nothing_runs() {
    let (e, w) = (Engine::new(), World::new());
    let ran = w.home.join("ran");
    let job = |tag: &str| {
        let id = send(&e, &w, &[], &kit(&["append", p(&ran), tag]));
        let bytes = lane_object(&e, &format!("PC/inbox/{id}.json")).unwrap();
        (id, bytes)
    };
    let result = |id: &str| {
        let r = signed_result(serde_json::json!({
            "v": 1, "jobId": id, "target": "PC", "ok": true, "exitCode": 0, "error": "",
            "startedAt": "2026-12-04T04:00:00.000Z", "finishedAt": "2026-12-04T04:00:01.000Z",
            "detail": "{}",
        }));
        serde_json::to_vec(&r).unwrap()
    };
    // Killed while the job ran (after its claim): no result.
    let (running, _) = job("running");
    put(
        &e,
        &format!("PC/running/{running}.json"),
        &claim_doc(&running),
    );
    // Killed after the result, before the archive move.
    let (placed, _) = job("placed");
    put(
        &e,
        &format!("PC/running/{placed}.json"),
        &claim_doc(&placed),
    );
    put(&e, &format!("PC/results/{placed}.json"), &result(&placed));
    // Killed after the archive move, before the claim's removal.
    let (archived, bytes) = job("archived");
    put(
        &e,
        &format!("PC/running/{archived}.json"),
        &claim_doc(&archived),
    );
    put(
        &e,
        &format!("PC/results/{archived}.json"),
        &result(&archived),
    );
    put(&e, &format!("PC/archive/done/{archived}.json"), &bytes);
    let del = e
        .client()
        .head(&e.key(&format!("PC/inbox/{archived}.json")));
    let fleet_dispatch::store::objstore::Answer::Done(h) = del else {
        panic!("{del:?}")
    };
    e.client().delete_if_match(
        &e.key(&format!("PC/inbox/{archived}.json")),
        &h.etag.unwrap(),
    );

    // Killed after the claim (its copy in archive/done/), before the job
    // had run a second: nothing in running/, no result.
    let (claimed, bytes) = job("claimed");
    put(&e, &format!("PC/archive/done/{claimed}.json"), &bytes);
    // Killed after the result of a job that ran less than a second, before
    // its inbox copy was removed.
    let (ended, bytes) = job("ended");
    put(&e, &format!("PC/archive/done/{ended}.json"), &bytes);
    put(&e, &format!("PC/results/{ended}.json"), &result(&ended));

    let got = run_as(&e, &w, "PC", &["--json", "listen", "--once"]);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(!ran.exists(), "a job ran");
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
    assert_eq!(
        result_json(&e, &w, &claimed)["error"],
        serde_json::json!("interrupted")
    );
    // The inbox copy of an ended job looks like one come back: refused as
    // a replay, its result kept.
    assert_eq!(
        lane_object(&e, &format!("PC/results/{ended}.json")).unwrap(),
        result(&ended)
    );
    assert!(
        names(&e, "archive/rejected").contains(&format!("{ended}.json.reason.json")),
        "{:?}",
        names(&e, "archive/rejected")
    );
    let mut done = vec![
        format!("{running}.json"),
        format!("{placed}.json"),
        format!("{archived}.json"),
        format!("{claimed}.json"),
        format!("{ended}.json"),
    ];
    done.sort();
    assert_eq!(names(&e, "archive/done"), done);
    assert_eq!(
        result_json(&e, &w, &running)["error"],
        serde_json::json!("interrupted")
    );
    // A result already placed is kept as it was.
    assert_eq!(
        lane_object(&e, &format!("PC/results/{placed}.json")).unwrap(),
        result(&placed)
    );
    assert_eq!(
        result_json(&e, &w, &archived)["ok"],
        serde_json::json!(true)
    );
}

/// A number below `n`, at random.
fn below(n: u64) -> u64 {
    let mut b = [0u8; 8];
    fleet_dispatch::base::random::fill(&mut b);
    u64::from_le_bytes(b) % n
}

/// The processes left whose environment names the root `root` (a job's
/// marks, docs/protocol.md §7.5).
fn left_on(root: &str) -> Vec<String> {
    let mark = format!("FLEET_DISPATCH_ROOT={root}");
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|e| {
            std::fs::read(e.path().join("environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|v| v == mark.as_bytes()))
        })
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The soak: 200 jobs, 50 of them cancelled at random moments, the
/// listener killed with SIGKILL five times at random moments and started
/// again. Every job ends with exactly one verified result, none runs
/// twice, a job that ran to its end ran once, the inbox and claims are
/// empty, and no process of the lane is left.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_soak_two_hundred_jobs_fifty_cancels_five_kills_every_job_once() {
    const JOBS: usize = 200;
    let (e, w) = (Engine::new(), World::new());
    let runs = w.home.join("runs");
    let ids: Vec<String> = (0..JOBS)
        .map(|n| {
            let tag = n.to_string();
            send(
                &e,
                &w,
                &[],
                &kit(&[
                    "append",
                    p(&runs),
                    &tag,
                    "sleep",
                    // Every tenth runs long enough to be stopped running.
                    if n % 10 == 0 { "1.5" } else { "0.1" },
                    "append",
                    p(&runs),
                    &format!("end-{tag}"),
                ]),
            )
        })
        .collect();
    let lines = |runs: &std::path::Path| {
        std::fs::read_to_string(runs)
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    // Fifty cancels while the lane drains: the job that runs now when it
    // is not cancelled yet, else one still queued.
    let canceller = {
        let (root, vars, home, runs) =
            (lane_root(&e), e.vars.clone(), w.home.clone(), runs.clone());
        let ids = ids.clone();
        let bin = assert_cmd::cargo::cargo_bin!("fleet-dispatch").to_path_buf();
        let base: Vec<(String, String)> = {
            let c = w.bg_cmd_as("me");
            c.get_envs()
                .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v?.to_str()?.to_string())))
                .collect()
        };
        std::thread::spawn(move || {
            let mut picked = std::collections::BTreeSet::new();
            while picked.len() < 50 {
                std::thread::sleep(Duration::from_millis(50 + below(200)));
                let now: Option<usize> = lines(&runs)
                    .last()
                    .and_then(|l| l.parse().ok())
                    .filter(|n| !picked.contains(n));
                let n = now.unwrap_or_else(|| {
                    loop {
                        let n = below(JOBS as u64) as usize;
                        if !picked.contains(&n) {
                            break n;
                        }
                    }
                });
                picked.insert(n);
                let mut c = std::process::Command::new(&bin);
                c.env_clear().envs(base.iter().cloned()).envs(vars.iter());
                c.env("FLEET_DISPATCH_ROOT", &root)
                    .env("FLEET_DISPATCH_FLEET", "PC")
                    .env("HOME", &home)
                    .args(["cancel", "--target", "PC", "--job-id", &ids[n]]);
                let out = c.output().unwrap();
                assert!(out.status.code() == Some(0), "{out:?}");
            }
            picked
        })
    };
    // Five kills, each at a random moment once the listener runs jobs.
    for _ in 0..5 {
        let before = lines(&runs).len();
        let mut l = listener(&e, &w);
        until(Duration::from_secs(60), "the listener to run a job", || {
            lines(&runs).len() > before
        });
        std::thread::sleep(Duration::from_millis(below(400)));
        l.kill().unwrap();
        l.wait().unwrap();
    }
    let mut l = listener(&e, &w);
    let cancelled = canceller.join().unwrap();
    until(Duration::from_secs(300), "every result", || {
        names(&e, "results").len() == JOBS
    });
    stop(&mut l);
    let text = std::fs::read_to_string(&runs).unwrap_or_default();
    let mut seen = std::collections::HashMap::new();
    for line in text.lines() {
        *seen.entry(line.to_string()).or_insert(0) += 1;
    }
    let twice: Vec<_> = seen.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "ran twice: {twice:?}");
    let mut by_error = std::collections::BTreeMap::new();
    for (n, id) in ids.iter().enumerate() {
        let r = result_json(&e, &w, id);
        assert!(result_sig_ok(&r), "{r}");
        let error = r["error"].as_str().unwrap().to_string();
        match error.as_str() {
            "" => assert!(
                seen.contains_key(&format!("end-{n}")),
                "{id} done but did not run: {r}"
            ),
            "cancelled-before-start" => {
                assert!(cancelled.contains(&n), "{id}: {r}");
                assert!(!seen.contains_key(&n.to_string()), "{id}: {r}");
            }
            "cancelled" => assert!(cancelled.contains(&n), "{id}: {r}"),
            "interrupted" => {}
            other => panic!("{id}: {other}: {r}"),
        }
        *by_error.entry(error).or_insert(0) += 1;
    }
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    assert_eq!(names(&e, "archive/done").len(), JOBS);
    let left = left_on(&lane_root(&e));
    assert!(left.is_empty(), "processes left: {left:?}");
    eprintln!("soak: {by_error:?}");
}

/// `listen --slots 3` on a bucket: six jobs of a second each run three at
/// a time, never more; one cancelled while it runs in its slot stops alone,
/// the others end `done`.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_slots_run_jobs_beside_each_other_and_a_cancel_stops_only_its_own() {
    let (e, w) = (Engine::new(), World::new());
    let log = w.home.join("log");
    let ids: Vec<String> = (0..6)
        .map(|n| {
            let tag = n.to_string();
            send(
                &e,
                &w,
                &[],
                &kit(&[
                    "append",
                    p(&log),
                    &format!("start {tag}"),
                    "sleep",
                    if n == 0 { "30" } else { "2" },
                    "append",
                    p(&log),
                    &format!("end {tag}"),
                ]),
            )
        })
        .collect();
    let mut c = cmd_as(&e, &w, "PC");
    c.args([
        "--json",
        "listen",
        "--once",
        "--slots",
        "3",
        "--poll-interval",
        "200ms",
    ])
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    let l = c.spawn().unwrap();
    until(Duration::from_secs(30), "three jobs to start", || {
        std::fs::read_to_string(&log).is_ok_and(|t| t.matches("start").count() >= 3)
    });
    let before_cancel = std::fs::read_to_string(&log).unwrap().lines().count();
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &ids[0]]);
    assert_eq!(got.0, 0, "{got:?}");
    let out = l.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["counters"]["done"],
        serde_json::json!(5),
        "{summary}"
    );
    assert_eq!(
        summary["counters"]["cancelled"],
        serde_json::json!(1),
        "{summary}"
    );
    // Three started before the cancel, no fourth; never more than three at
    // once after it (the cancelled job, which writes no end, gone then).
    let text = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(before_cancel, 3, "{text}");
    let mut now = 3i32;
    for (i, line) in lines.iter().enumerate().skip(3) {
        if i == 3 {
            now -= 1;
        }
        now += if line.starts_with("start") { 1 } else { -1 };
        assert!(now <= 3, "more than three at once: {text}");
    }
    assert!(!text.contains("end 0"), "{text}");
    assert_eq!(
        result_json(&e, &w, &ids[0])["error"],
        serde_json::json!("cancelled")
    );
    assert_eq!(names(&e, "running"), Vec::<String>::new());
    assert_eq!(names(&e, "inbox"), Vec::<String>::new());
}

/// The governor on a bucket: under RED a job stays queued (deferred, said
/// once) and a cancelled one still ends at once; YELLOW runs only `high`.
/// `listen --drain` asks a running listener to finish its job, start no
/// new one and stop.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_the_governor_holds_jobs_and_drain_stops_between_jobs() {
    let (e, w) = (Engine::new(), World::new());
    let ran = w.home.join("ran");
    let governor = w.home.join("governor");
    std::fs::write(&governor, "RED\n").unwrap();
    let normal = send(&e, &w, &[], &kit(&["append", p(&ran), "normal"]));
    let cancelled = send(&e, &w, &[], &kit(&["append", p(&ran), "cancelled"]));
    let high = send(
        &e,
        &w,
        &["--priority", "high"],
        &kit(&["append", p(&ran), "high"]),
    );
    let got = lane_run(
        &e,
        &w,
        &["cancel", "--target", "PC", "--job-id", &cancelled],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let once = |gov: &str| {
        std::fs::write(&governor, gov).unwrap();
        let got = run_as(
            &e,
            &w,
            "PC",
            &[
                "--json",
                "listen",
                "--once",
                "--governor-file",
                p(&governor),
            ],
        );
        assert_eq!(got.0, 0, "{got:?}");
        serde_json::from_str::<serde_json::Value>(&got.1).unwrap()["counters"].clone()
    };
    let red = once("RED\n");
    assert_eq!(red["cancelled"], serde_json::json!(1), "{red}");
    assert_eq!(red["deferred"], serde_json::json!(2), "{red}");
    assert!(!ran.exists());
    assert_eq!(
        result_json(&e, &w, &cancelled)["error"],
        serde_json::json!("cancelled-before-start")
    );
    let yellow = once("YELLOW\n");
    assert_eq!(yellow["done"], serde_json::json!(1), "{yellow}");
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "high\n");
    assert_eq!(result_json(&e, &w, &high)["ok"], serde_json::json!(true));
    assert_eq!(names(&e, "inbox"), vec![format!("{normal}.json")]);

    // Drain: the running job ends, the queued one stays.
    let started = w.home.join("started");
    let long = send(
        &e,
        &w,
        &[],
        &kit(&[
            "touch",
            p(&started),
            "sleep",
            "2",
            "append",
            p(&ran),
            "long",
        ]),
    );
    let later = send(&e, &w, &[], &kit(&["append", p(&ran), "later"]));
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the long job to start", || {
        started.exists()
    });
    let drain = run_as(&e, &w, "PC", &["listen", "--drain"]);
    assert_eq!(drain.0, 0, "{drain:?}");
    assert!(drain.1.contains("drained and stopped"), "{drain:?}");
    let status = l.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(result_json(&e, &w, &long)["ok"], serde_json::json!(true));
    assert!(
        std::fs::read_to_string(&ran).unwrap().ends_with("long\n"),
        "the running job finished"
    );
    // `normal` ran before `long` (queued earlier); `later` never started.
    assert_eq!(names(&e, "inbox"), vec![format!("{later}.json")]);
    assert!(!std::fs::read_to_string(&ran).unwrap().contains("later"));
}

// ---- the HTTP intake in front of a listener on a bucket ----

fn http_exchange(addr: &str, raw: &[u8]) -> (u16, serde_json::Value) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(raw).unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (
        status,
        serde_json::from_str(body).unwrap_or(serde_json::Value::Null),
    )
}

fn http_post(addr: &str, path: &str, body: &str) -> (u16, serde_json::Value) {
    let raw = format!(
        "POST {path} HTTP/1.1\r\nHost: pc\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    http_exchange(addr, raw.as_bytes())
}

fn http_get(addr: &str, path: &str) -> (u16, serde_json::Value) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let header = request_header("PC", path, t, Signer::Fleet);
    let raw = format!("GET {path} HTTP/1.1\r\nHost: pc\r\nX-Fleet-Signature: {header}\r\n\r\n");
    http_exchange(addr, raw.as_bytes())
}

fn posted_job(id: &str, argv: &[String], by: Signer) -> String {
    job_doc(
        id,
        "PC",
        &now_text(),
        "LAPTOP",
        &serde_json::json!({ "argv": argv }).to_string(),
        by,
    )
    .to_string()
}

/// `listen --http` on a bucket: a posted job is published into the
/// bucket's inbox and starts at once (the poll here is 30 s), a posted
/// marker stops the running job at once, the GETs answer from the bucket,
/// and a forged job is refused with nothing written.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_the_http_intake_feeds_a_listener_on_a_bucket() {
    let (e, w) = (Engine::new(), World::new());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let mut c = cmd_as(&e, &w, "PC");
    c.args(["listen", "--poll-interval", "30s", "--http", &addr])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut l = c.spawn().unwrap();
    until(Duration::from_secs(30), "the intake to answer", || {
        std::net::TcpStream::connect(&addr).is_ok()
    });
    // A job: queued through the bucket, started at once.
    let mark = w.home.join("ran");
    let id = lane_id("20261204-050000");
    let id = format!("20261204-050000-{}", &id[id.len() - 8..].repeat(2));
    let t0 = Instant::now();
    let got = http_post(
        &addr,
        "/v1/jobs",
        &posted_job(&id, &kit(&["touch", p(&mark)]), Signer::Fleet),
    );
    assert_eq!(got.0, 202, "{got:?}");
    assert_eq!(got.1["status"], serde_json::json!("queued"), "{got:?}");
    until(Duration::from_secs(20), "the posted job to run", || {
        mark.exists()
    });
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    until(Duration::from_secs(20), "its result", || {
        http_get(&addr, &format!("/v1/jobs/{id}")).1["state"] == serde_json::json!("done")
    });
    let st = http_get(&addr, &format!("/v1/jobs/{id}"));
    assert_eq!(st.1["result"]["ok"], serde_json::json!(true), "{st:?}");
    // A forged job: refused, nothing written.
    let forged = format!("20261204-050001-{}", &id[id.len() - 16..]);
    let got = http_post(
        &addr,
        "/v1/jobs",
        &posted_job(&forged, &kit(&["touch", p(&mark)]), Signer::Foreign),
    );
    assert_eq!(got.0, 403, "{got:?}");
    assert!(lane_object(&e, &format!("PC/inbox/{forged}.json")).is_none());
    assert_eq!(
        http_get(&addr, &format!("/v1/jobs/{forged}")).1["state"],
        serde_json::json!("unknown")
    );
    // A sleeper, stopped at once by a posted marker.
    let pid = w.home.join("pid");
    let sleeper = format!("20261204-050002-{}", &id[id.len() - 16..]);
    let got = http_post(
        &addr,
        "/v1/jobs",
        &posted_job(
            &sleeper,
            &kit(&["pid", p(&pid), "sleep", "60"]),
            Signer::Fleet,
        ),
    );
    assert_eq!(got.0, 202, "{got:?}");
    until(Duration::from_secs(20), "the sleeper to start", || {
        pid.exists()
    });
    assert_eq!(
        http_get(&addr, &format!("/v1/jobs/{sleeper}")).1["state"],
        serde_json::json!("running")
    );
    let marker = marker_doc(&sleeper, "PC", &now_text(), "LAPTOP", Signer::Fleet).to_string();
    let t0 = Instant::now();
    let got = http_post(&addr, &format!("/v1/jobs/{sleeper}/cancel"), &marker);
    assert_eq!(got.0, 202, "{got:?}");
    let job: i32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    until(Duration::from_secs(20), "the sleeper to stop", || {
        !pid_alive(job)
    });
    assert!(t0.elapsed() < Duration::from_secs(15), "{:?}", t0.elapsed());
    until(Duration::from_secs(20), "its result", || {
        lane_object(&e, &format!("PC/results/{sleeper}.json")).is_some()
    });
    assert_eq!(
        result_json(&e, &w, &sleeper)["error"],
        serde_json::json!("cancelled")
    );
    let st = http_get(&addr, "/v1/status");
    assert_eq!(st.0, 200, "{st:?}");
    assert_eq!(
        st.1["targets"][0]["target"],
        serde_json::json!("PC"),
        "{st:?}"
    );
    stop(&mut l);
}

/// `enqueue --via` and `cancel --via` on a bucket root: posted to the
/// target's intake (started at once, the poll here being 30 s), and into
/// the bucket when the intake cannot be reached, said on stderr.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_via_posts_to_the_intake_and_falls_back_to_the_bucket() {
    let (e, w) = (Engine::new(), World::new());
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let addr = format!("127.0.0.1:{port}");
    let url = format!("http://{addr}");
    // Nothing listens yet: the job goes into the bucket.
    let ran = w.home.join("ran");
    let mut args = vec!["enqueue", "--target", "PC", "--via", &url, "--"];
    let argv = kit(&["append", p(&ran), "first"]);
    args.extend(argv.iter().map(String::as_str));
    let got = lane_run(&e, &w, &args);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(got.2.contains("could not reach"), "{got:?}");
    let first = got.1.trim().to_string();
    assert!(lane_object(&e, &format!("PC/inbox/{first}.json")).is_some());
    let mut c = cmd_as(&e, &w, "PC");
    c.args(["listen", "--poll-interval", "30s", "--http", &addr])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut l = c.spawn().unwrap();
    until(Duration::from_secs(30), "the first job to run", || {
        ran.exists()
    });
    // Now over HTTP: started at once, stopped at once.
    let pid = w.home.join("pid");
    let mut args = vec!["enqueue", "--target", "PC", "--via", &url, "--"];
    let argv = kit(&["pid", p(&pid), "sleep", "60"]);
    args.extend(argv.iter().map(String::as_str));
    let t0 = Instant::now();
    let got = lane_run(&e, &w, &args);
    assert_eq!(got.0, 0, "{got:?}");
    assert!(!got.2.contains("could not reach"), "{got:?}");
    let second = got.1.trim().to_string();
    until(Duration::from_secs(20), "the second job to start", || {
        pid.exists()
    });
    assert!(t0.elapsed() < Duration::from_secs(15));
    let got = lane_run(
        &e,
        &w,
        &[
            "cancel", "--target", "PC", "--job-id", &second, "--via", &url,
        ],
    );
    assert_eq!(got.0, 0, "{got:?}");
    let job: i32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    until(Duration::from_secs(20), "the second job to stop", || {
        !pid_alive(job)
    });
    assert!(t0.elapsed() < Duration::from_secs(25));
    until(Duration::from_secs(20), "its result", || {
        lane_object(&e, &format!("PC/results/{second}.json")).is_some()
    });
    assert_eq!(
        result_json(&e, &w, &second)["error"],
        serde_json::json!("cancelled")
    );
    // A list with --via: refused, nothing sent.
    let got = lane_run(
        &e,
        &w,
        &["enqueue", "--target", "PC,ME", "--via", &url, "--", "true"],
    );
    assert_eq!(got.0, 64, "{got:?}");
    stop(&mut l);
}

/// Junk in a running job's marker key is refused into `archive/rejected/`
/// at the listener's next look, and a genuine marker placed after it stops
/// the job.
#[test]
#[ignore = "needs an S3 engine: ci/engine-s3"]
fn engine_junk_in_a_marker_key_is_moved_aside_and_a_genuine_cancel_then_lands() {
    let (e, w) = (Engine::new(), World::new());
    let pid = w.home.join("pid");
    let id = send(&e, &w, &[], &kit(&["pid", p(&pid), "sleep", "60"]));
    let mut l = listener(&e, &w);
    until(Duration::from_secs(30), "the job to start", || pid.exists());
    put(&e, &format!("PC/cancel/{id}.json"), b"{ not a marker");
    until(
        Duration::from_secs(20),
        "the junk to be moved aside",
        || names(&e, "cancel").is_empty(),
    );
    let rejected = names(&e, "archive/rejected");
    assert!(
        rejected.contains(&format!("{id}.json.reason.json")),
        "{rejected:?}"
    );
    let job: i32 = std::fs::read_to_string(&pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pid_alive(job), "junk stopped the job");
    let got = lane_run(&e, &w, &["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(got.0, 0, "{got:?}");
    until(Duration::from_secs(20), "the job to stop", || {
        !pid_alive(job)
    });
    until(Duration::from_secs(20), "its result", || {
        lane_object(&e, &format!("PC/results/{id}.json")).is_some()
    });
    assert_eq!(
        result_json(&e, &w, &id)["error"],
        serde_json::json!("cancelled")
    );
    stop(&mut l);
}
