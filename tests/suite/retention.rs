//! docs/protocol.md §8.3, retention: what `sweep` prunes of a target's past
//! — processed job files, results, logs, consumed markers, rejected files
//! and their reasons — and what it must keep (anything younger than the
//! retention, anything of a queued or running job), through the real
//! binary; and the replay guarantee that makes pruning safe: a job file
//! that comes back after its history was pruned is refused as stale and
//! never runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

const DAY: u64 = 86400;

/// Sets `p`'s modification time to `days` days ago.
fn age(p: &Path, days: u64) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .set_modified(SystemTime::now() - Duration::from_secs(days * DAY))
        .unwrap();
}

fn logs(w: &World, id: &str) -> [PathBuf; 2] {
    ["stdout", "stderr"].map(|s| w.pc().join("logs").join(format!("{id}.{s}.log")))
}

/// Every file a processed job `id` left: job file, result, logs, and the
/// consumed marker when it has one.
fn history(w: &World, id: &str) -> Vec<PathBuf> {
    let mut v = vec![w.done(id), w.result_path(id)];
    v.extend(logs(w, id));
    v.push(w.consumed(id));
    v.into_iter().filter(|p| p.exists()).collect()
}

/// A job run through the real listener (jobkit, so on every platform),
/// printing a line on each stream; returns its id.
fn ran(w: &World) -> String {
    let id = w.enqueue(&[], &kit(&["out", "hello", "err", "oops"]));
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    id
}

/// A job cancelled before it started: its marker ends in
/// `archive/consumed/`.
fn cancelled(w: &World) -> String {
    let id = w.enqueue(&[], &kit(&["out", "never"]));
    w.write_marker("PC", &id, "PC");
    let c = w.listen_once(&[]);
    assert_eq!(c["cancelled"], 1, "{c}");
    assert!(w.consumed(&id).exists());
    id
}

/// A job file refused at once (its name is not its id): it lands in
/// `archive/rejected/` with its reason. Returns the two paths.
fn rejected(w: &World) -> [PathBuf; 2] {
    let p = w.write_job("PC", "body-id", "PC", &now_text(), &kit_spec(&["out", "x"]));
    std::fs::rename(&p, w.inbox("named-otherwise")).unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(c["rejected"], 1, "{c}");
    let r = [
        w.rejected("named-otherwise.json"),
        w.rejected("named-otherwise.json.reason.json"),
    ];
    assert!(r.iter().all(|p| p.exists()));
    r
}

fn sweep_json(w: &World, args: &[&str]) -> Value {
    let mut a = vec!["--json", "sweep"];
    a.extend_from_slice(args);
    let (code, out, err) = w.run(&a);
    assert_eq!(code, 0, "sweep {args:?}: {out}{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

#[test]
fn old_processed_jobs_are_pruned_with_every_kind_counted() {
    let w = World::with_target();
    let done = ran(&w);
    let stopped = cancelled(&w);
    let refused = rejected(&w);
    let mut old = history(&w, &done);
    assert_eq!(old.len(), 4, "job file, result, two logs: {old:?}");
    old.extend(history(&w, &stopped));
    old.extend(refused.iter().cloned());
    for p in &old {
        age(p, 31);
    }
    let logs_count = old
        .iter()
        .filter(|p| p.starts_with(w.pc().join("logs")))
        .count();
    let v = sweep_json(&w, &[]);
    for p in &old {
        assert!(!p.exists(), "{} kept", p.display());
    }
    assert_eq!(
        v["counts"],
        json!({"job file": 2, "result": 2, "log": logs_count,
               "consumed marker": 1, "rejected file": 1, "rejection reason": 1,
               "marker": 0, "temp file": 0}),
        "{v}"
    );
    assert_eq!(v["retention"], "30d");
    assert_eq!(v["removed"].as_array().unwrap().len(), old.len(), "{v}");
    // The human summary counts each kind too, without listing the files.
    let w2 = World::with_target();
    let id = ran(&w2);
    for p in history(&w2, &id) {
        age(&p, 40);
    }
    let (code, out, err) = w2.run(&["sweep"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out.trim(),
        "removed: 1 job file, 1 result, 2 logs (retention 30d)",
        "{out}"
    );
}

#[test]
fn files_younger_than_the_retention_are_kept_and_a_job_keeps_its_files_together() {
    let w = World::with_target();
    let young = ran(&w);
    let half = ran(&w);
    let long = ran(&w);
    // `half`: the job file arrived long ago, but its result is recent; its
    // files stay together.
    for p in history(&w, &half) {
        if p != w.result_path(&half) {
            age(&p, 60);
        }
    }
    age(&w.result_path(&half), 29);
    for p in history(&w, &long) {
        age(&p, 100);
    }
    let v = sweep_json(&w, &[]);
    assert_eq!(v["counts"]["job file"], 1, "{v}");
    assert_eq!(history(&w, &young).len(), 4);
    assert_eq!(
        history(&w, &half).len(),
        4,
        "half a job's history never goes"
    );
    assert!(history(&w, &long).is_empty());
    // A longer retention keeps what the default would prune.
    for p in history(&w, &half) {
        age(&p, 45);
    }
    sweep_json(&w, &["--retention", "60d"]);
    assert_eq!(history(&w, &half).len(), 4);
    sweep_json(&w, &["--retention", "44d"]);
    assert!(history(&w, &half).is_empty());
}

#[test]
fn a_queued_or_running_jobs_files_are_never_pruned() {
    let w = World::with_target();
    let queued = ran(&w);
    let running = ran(&w);
    for id in [&queued, &running] {
        for p in history(&w, id) {
            age(&p, 400);
        }
    }
    // The same ids waiting again: a resurrected file in the inbox, a
    // running/ file (a listener that stopped mid-job and has not yet
    // recovered).
    std::fs::copy(w.done(&queued), w.inbox(&queued)).unwrap();
    std::fs::write(w.running(&running), r#"{"jobId": "x"}"#).unwrap();
    let v = sweep_json(&w, &[]);
    assert_eq!(v["removed"], json!([]), "{v}");
    assert_eq!(history(&w, &queued).len(), 4);
    assert_eq!(history(&w, &running).len(), 4);
    // A rejected file of a queued id stays too, so a sender asking why
    // still finds it.
    let refused = w.rejected(&format!("{queued}.json"));
    std::fs::write(&refused, "x").unwrap();
    age(&refused, 400);
    sweep_json(&w, &[]);
    assert!(refused.exists());
    // Once nothing waits, they go.
    std::fs::remove_file(w.inbox(&queued)).unwrap();
    std::fs::remove_file(w.running(&running)).unwrap();
    let v = sweep_json(&w, &[]);
    assert_eq!(v["counts"]["job file"], 2, "{v}");
    assert_eq!(v["counts"]["rejected file"], 1, "{v}");
}

#[test]
fn a_job_running_under_a_listener_keeps_its_old_history() {
    let w = World::with_target();
    let go = scratch(&w, "go");
    let id = w.enqueue(&[], &kit(&["out", "started", "wait-for", p(&go)]));
    let listener = w.spawn_listener(&[]);
    let [stdout, _] = logs(&w, &id);
    wait_until(Duration::from_secs(10), || {
        w.running(&id).exists() && std::fs::read_to_string(&stdout).is_ok_and(|t| !t.is_empty())
    });
    // Its log as old as a year (a clock set wrong, a copy restored).
    age(&stdout, 365);
    let v = sweep_json(&w, &[]);
    assert_eq!(v["removed"], json!([]), "{v}");
    assert!(stdout.exists());
    std::fs::write(&go, "").unwrap();
    w.wait_result(&id, Duration::from_secs(10));
    drop(listener);
    assert!(stdout.exists() && w.done(&id).exists());
}

#[test]
fn dry_run_removes_nothing_and_lists_what_would_go() {
    let w = World::with_target();
    let id = ran(&w);
    let refused = rejected(&w);
    let mut old = history(&w, &id);
    old.extend(refused.iter().cloned());
    for p in &old {
        age(p, 31);
    }
    let before = files(&w.root);
    let (code, out, err) = w.run(&["sweep", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    for p in &old {
        assert!(
            out.contains(p.to_str().unwrap()),
            "{} not listed: {out}",
            p.display()
        );
    }
    assert!(
        out.contains(
            "would remove: 1 job file, 1 result, 2 logs, 1 rejected file, 1 rejection reason"
        ),
        "{out}"
    );
    let v = sweep_json(&w, &["--dry-run"]);
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["counts"]["log"], 2, "{v}");
    assert_eq!(files(&w.root), before, "a dry run removed something");
}

#[test]
fn a_retention_under_the_job_max_age_plus_a_day_is_refused() {
    let w = World::with_target();
    let id = ran(&w);
    for p in history(&w, &id) {
        age(&p, 10);
    }
    let (code, _, err) = w.run(&["sweep", "--retention", "7d"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("VALIDATION_ERROR") && err.contains("8d"),
        "{err}"
    );
    let (code, _, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_RETENTION", "1h")
            .args(["sweep"]),
    );
    assert_eq!(code, 64, "{err}");
    // A listener with a longer job max age raises the floor.
    let (code, _, err) = w.run(&["sweep", "--max-job-age", "30d", "--retention", "30d"]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("31d"), "{err}");
    // In the config file: a CONFIG error naming the floor.
    let cfg = scratch(&w, "config.toml");
    std::fs::write(&cfg, "retention = \"3d\"\n").unwrap();
    let (code, _, err) = output(w.cmd().env("FLEET_DISPATCH_CONFIG", &cfg).arg("sweep"));
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("CONFIG") && err.contains("8d"), "{err}");
    assert_eq!(history(&w, &id).len(), 4, "a refused sweep removes nothing");
    // The floor itself is allowed.
    let v = sweep_json(&w, &["--retention", "8d"]);
    assert_eq!(v["counts"]["job file"], 1, "{v}");
}

#[test]
fn the_retention_comes_from_the_flag_the_variable_or_the_config_file_and_config_shows_it() {
    let w = World::with_target();
    let id = ran(&w);
    for p in history(&w, &id) {
        age(&p, 50);
    }
    let cfg = scratch(&w, "config.toml");
    std::fs::write(&cfg, "retention = \"60d\"\n").unwrap();
    let shown = |c: &mut assert_cmd::Command| {
        let (code, out, err) = output(c.args(["--json", "config"]));
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        (
            v["retention"]["value"].clone(),
            v["retention"]["source"].clone(),
        )
    };
    assert_eq!(shown(&mut w.cmd()), (json!("30d"), json!("default")));
    assert_eq!(
        shown(w.cmd().env("FLEET_DISPATCH_CONFIG", &cfg)),
        (json!("60d"), json!("file"))
    );
    assert_eq!(
        shown(
            w.cmd()
                .env("FLEET_DISPATCH_CONFIG", &cfg)
                .env("FLEET_DISPATCH_RETENTION", "40d")
        ),
        (json!("40d"), json!("variable"))
    );
    // The file's 60 days keep the 50-day-old job; the variable's 40 prune it.
    let (code, _, err) = output(w.cmd().env("FLEET_DISPATCH_CONFIG", &cfg).arg("sweep"));
    assert_eq!(code, 0, "{err}");
    assert_eq!(history(&w, &id).len(), 4);
    let (code, _, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &cfg)
            .env("FLEET_DISPATCH_RETENTION", "40d")
            .arg("sweep"),
    );
    assert_eq!(code, 0, "{err}");
    assert!(history(&w, &id).is_empty());
}

/// One `max_job_age` in the config file serves the listener (its stale
/// rule) and `sweep` (the retention's floor), so the two cannot disagree
/// on a machine that runs both from the same file.
#[test]
fn the_config_file_s_max_job_age_sets_both_the_stale_rule_and_the_retention_floor() {
    let w = World::with_target();
    let cfg = scratch(&w, "config.toml");
    std::fs::write(&cfg, "max_job_age = \"2d\"\n").unwrap();
    // A job three days old: under the default 7 days it would run.
    let side = scratch(&w, "ran");
    let id = "20250101-000000-00000000000000aa";
    w.write_job(
        "PC",
        id,
        "PC",
        &ts_offset(-3 * DAY as i64),
        &appends(&side, "ran"),
    );
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &cfg)
            .args(["--json", "listen", "--once"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(w.reason(&format!("{id}.json"))["verdict"], "stale");
    assert!(!side.exists(), "a job past the configured max age ran");
    // The floor follows it down: 3 days is allowed with 2d, refused with 7d.
    let (code, _, err) =
        output(
            w.cmd()
                .env("FLEET_DISPATCH_CONFIG", &cfg)
                .args(["sweep", "--retention", "3d"]),
        );
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = w.run(&["sweep", "--retention", "3d"]);
    assert_eq!(code, 64, "{err}");
    // `config` says where it came from; the variable wins over the file.
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_CONFIG", &cfg)
            .env("FLEET_DISPATCH_MAX_JOB_AGE", "9d")
            .args(["--json", "config"]),
    );
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["maxJobAge"]["value"], "9d", "{v}");
    assert_eq!(v["maxJobAge"]["source"], "variable", "{v}");
    // A bad value in the file is CONFIG, naming the key.
    std::fs::write(&cfg, "max_job_age = \"soon\"\n").unwrap();
    let (code, _, err) = output(w.cmd().env("FLEET_DISPATCH_CONFIG", &cfg).arg("sweep"));
    assert_eq!(code, 78, "{err}");
    assert!(err.contains("max_job_age"), "{err}");
}

/// The two rules together (§8.3): a job whose history was pruned, coming
/// back after its listener's ledger forgot it (here: a lane whose ledger
/// never saw it), is older than the job max age and refused as stale.
#[test]
fn a_pruned_job_whose_file_comes_back_is_refused_as_stale_and_never_runs() {
    let w = World::with_target();
    let side = scratch(&w, "ran");
    let id = "20250101-000000-0123456789abcdef";
    let created = ts_offset(-40 * DAY as i64);
    let job = w.write_job("PC", id, "PC", &created, &appends(&side, "ran"));
    let bytes = std::fs::read(&job).unwrap();
    // What a listener left of it forty days ago.
    std::fs::rename(&job, w.done(id)).unwrap();
    std::fs::write(w.result_path(id), "{}").unwrap();
    for p in logs(&w, id) {
        std::fs::write(&p, "").unwrap();
    }
    for p in history(&w, id) {
        age(&p, 40);
    }
    let v = sweep_json(&w, &[]);
    assert_eq!(v["counts"]["job file"], 1, "{v}");
    assert!(history(&w, id).is_empty());
    // Sync brings the job file back.
    std::fs::write(w.inbox(id), &bytes).unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["rejected"].clone(), c["done"].clone()),
        (json!(1), json!(0)),
        "{c}"
    );
    let reason: Value = serde_json::from_str(
        &std::fs::read_to_string(w.rejected(&format!("{id}.json.reason.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(reason["verdict"], "stale", "{reason}");
    assert!(!side.exists(), "the pruned job ran again");
    assert!(!w.result_path(id).exists());
}

/// While the ledger still holds the id (it keeps ids longer than the
/// retention's floor), a pruned job that comes back is refused by it
/// before its age is even looked at.
#[test]
fn a_pruned_job_the_ledger_remembers_is_refused_as_already_processed() {
    let w = World::with_target();
    let side = scratch(&w, "ran");
    let id = w.enqueue(&[], &kit(&["append", p(&side), "ran"]));
    assert_eq!(w.listen_once(&[])["done"], 1);
    let bytes = std::fs::read(w.done(&id)).unwrap();
    for p in history(&w, &id) {
        age(&p, 31);
    }
    sweep_json(&w, &[]);
    assert!(history(&w, &id).is_empty());
    std::fs::write(w.inbox(&id), &bytes).unwrap();
    let c = w.listen_once(&[]);
    assert_eq!(
        (c["skipped"].clone(), c["done"].clone()),
        (json!(1), json!(0)),
        "{c}"
    );
    assert_eq!(lines(&side), ["ran"], "ran once only");
}

#[test]
fn a_folder_moved_aside_into_rejected_is_never_pruned_nor_its_reason() {
    let w = World::with_target();
    // A layout folder a writer replaced by a file: the listener moves the
    // file aside; and a folder planted where a job file goes: moved aside
    // whole, a folder in archive/rejected/.
    let id = uid("dir");
    let planted = w.inbox(&id);
    std::fs::create_dir(&planted).unwrap();
    std::fs::write(planted.join("inside.txt"), b"kept").unwrap();
    let c = w.listen_once(&["--settle", "0s"]);
    assert_eq!(c["rejected"], 1, "{c}");
    let aside = w.rejected(&format!("{id}.json"));
    let reason = w.rejected(&format!("{id}.json.reason.json"));
    assert!(aside.is_dir() && reason.is_file(), "{c}");
    // Old enough for any retention, and so is everything in it.
    for p in [aside.join("inside.txt"), reason.clone()] {
        age(&p, 90);
    }
    let mut open = std::fs::File::options();
    open.read(true);
    // A folder opens as a file on Windows only with backup semantics, and
    // its time is set through FILE_WRITE_ATTRIBUTES.
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        open.custom_flags(0x0200_0000).access_mode(0x0100);
    }
    open.open(&aside)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(90 * DAY))
        .unwrap();
    let v = sweep_json(&w, &[]);
    assert!(aside.join("inside.txt").exists(), "{v}");
    assert!(
        reason.exists(),
        "the reason of a folder moved aside went: {v}"
    );
    assert_eq!(v["removed"], json!([]), "{v}");
}
