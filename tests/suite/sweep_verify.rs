//! docs/protocol.md §8 `verify-marker` and `sweep` through the real binary: the verdict
//! and its exit status; which markers and temp files sweep removes, which it
//! must keep (a queued or running job's marker, other people's files,
//! anything behind a link), and how it reports.

#[cfg(unix)]
use std::ffi::CString;
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::util::*;

const HOUR: u64 = 3600;
const DAY: u64 = 24 * HOUR;

/// Sets `p`'s modification time to `secs_ago` seconds before now.
fn age(p: &Path, secs_ago: u64) {
    set_mtime(p, SystemTime::now() - Duration::from_secs(secs_ago));
}

fn set_mtime(p: &Path, t: SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Ages a symbolic link itself (not what it points to).
#[cfg(unix)]
fn age_link(p: &Path, secs_ago: u64) {
    let when = SystemTime::now() - Duration::from_secs(secs_ago);
    let secs = when
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as libc::time_t;
    let times = [
        libc::timespec {
            tv_sec: secs,
            tv_nsec: 0,
        },
        libc::timespec {
            tv_sec: secs,
            tv_nsec: 0,
        },
    ];
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid path and two timespecs, as utimensat(2) wants.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            times.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(rc, 0, "{}", std::io::Error::last_os_error());
}

/// A marker for `id` in PC's cancel folder whose file is `secs_ago` old.
fn old_marker(w: &World, id: &str, secs_ago: u64) -> PathBuf {
    let p = w.write_marker("PC", id, "PC");
    age(&p, secs_ago);
    p
}

fn spec() -> Value {
    json!({"argv": ["true"]})
}

fn sweep(w: &World, args: &[&str]) -> (i32, String, String) {
    let mut a = vec!["sweep"];
    a.extend_from_slice(args);
    w.run(&a)
}

fn sweep_ok(w: &World, args: &[&str]) -> String {
    let (code, out, err) = sweep(w, args);
    assert_eq!(code, 0, "sweep {args:?}: {out}{err}");
    assert!(err.is_empty(), "sweep {args:?} stderr: {err}");
    out
}

// ---------------------------------------------------------------- verify-marker

#[test]
fn verify_marker_valid_marker_exits_0() {
    let w = World::with_target();
    let m = w.write_marker("PC", "job-1", "PC");
    let (code, out, err) = w.run(&["verify-marker", m.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("valid: "), "{out}");
    assert!(out.contains("LAPTOP"), "says who asked: {out}");
    assert!(m.exists(), "verify-marker only looks");
}

#[test]
fn verify_marker_target_defaults_to_the_folder_of_the_file() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    // Machine is PC, but the marker sits in LAPTOP's folder and is for LAPTOP.
    let for_laptop = w.write_marker("LAPTOP", "job-1", "LAPTOP");
    let (code, out, err) = w.run(&["verify-marker", for_laptop.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("valid: "), "{out}");
    // A PC marker moved into LAPTOP's folder is checked against LAPTOP.
    let moved = w.write_marker("LAPTOP", "job-2", "PC");
    let (code, out, _) = w.run(&["verify-marker", moved.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("target-mismatch: "), "{out}");
    // A relative path works out its folder too.
    let (code, out, err) = output(
        w.cmd()
            .current_dir(w.root.join("LAPTOP").join("cancel"))
            .args(["verify-marker", "job-1.json"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("valid: "), "{out}");
}

#[test]
fn verify_marker_target_flag_mismatch_exits_1() {
    let w = World::with_target();
    let m = w.write_marker("PC", "job-1", "PC");
    let (code, out, err) = w.run(&["verify-marker", m.to_str().unwrap(), "--target", "LAPTOP"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("target-mismatch: "), "{out}");
    assert!(err.is_empty(), "a plain no, not an error: {err}");
}

#[test]
#[cfg(unix)] // making a symbolic link needs a privilege on Windows
fn verify_marker_never_reads_through_a_cancel_folder_swapped_for_a_link() {
    let w = World::with_target();
    let m = w.write_marker("PC", "job-1", "PC");
    // The genuine folder moves out of the root; a link takes its name.
    let outside = w.dir.path().join("outside-cancel");
    std::fs::rename(w.pc().join("cancel"), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, w.pc().join("cancel")).unwrap();
    let (code, out, err) = w.run(&["verify-marker", m.to_str().unwrap()]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(!out.starts_with("valid"), "{out}");
    assert!(err.contains("FORBIDDEN") && err.contains("link"), "{err}");
}

#[test]
fn verify_marker_outside_a_cancel_folder_needs_target() {
    let w = World::with_target();
    let m = w.write_marker("PC", "job-1", "PC");
    let elsewhere = w.dir.path().join("job-1.json");
    std::fs::copy(&m, &elsewhere).unwrap();
    let (code, out, err) = w.run(&["verify-marker", elsewhere.to_str().unwrap()]);
    assert_eq!(code, 64, "{out}{err}");
    assert!(
        err.starts_with("fleet-dispatch: error: VALIDATION_ERROR: "),
        "{err}"
    );
    assert!(err.contains("--target"), "hint: {err}");
    let (code, out, _) = w.run(&[
        "verify-marker",
        elsewhere.to_str().unwrap(),
        "--target",
        "PC",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("valid: "), "{out}");
}

#[test]
fn verify_marker_missing_file_is_not_found() {
    let w = World::with_target();
    let missing = w.marker("nope");
    let (code, out, err) = w.run(&["verify-marker", missing.to_str().unwrap()]);
    assert_eq!(code, 66, "{out}{err}");
    assert!(
        err.starts_with("fleet-dispatch: error: NOT_FOUND: "),
        "{err}"
    );
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    let missing = w.dir.path().join("nope.json");
    let (code, _, err) = w.run(&["verify-marker", missing.to_str().unwrap(), "--target", "PC"]);
    assert_eq!(code, 66, "{err}");
    // Outside any cancel folder, without --target: still the missing file,
    // not the target that cannot be told.
    let (code, _, err) = w.run(&["verify-marker", missing.to_str().unwrap()]);
    assert_eq!(code, 66, "{err}");
    assert!(err.contains("no marker file at"), "{err}");
}

#[test]
fn verify_marker_json_gives_verdict_and_message() {
    let w = World::with_target();
    let good = w.write_marker("PC", "job-1", "PC");
    let (code, out, _) = w.run(&["--json", "verify-marker", good.to_str().unwrap()]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["verdict"], "valid");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    let bad = w.write_marker("PC", "job-2", "PC");
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(&bad).unwrap()).unwrap();
    doc["origin"] = "EVIL".into();
    std::fs::write(&bad, doc.to_string()).unwrap();
    let (code, out, _) = w.run(&["--json", "verify-marker", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["verdict"], "bad-signature");
    assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
}

// ---------------------------------------------------------------- sweep: markers

#[test]
fn sweep_removes_markers_older_than_max_age_and_keeps_younger() {
    let w = World::with_target();
    let old = old_marker(&w, "old", 2 * HOUR);
    let young = old_marker(&w, "young", 10 * 60);
    let out = sweep_ok(&w, &["--max-age", "1h"]);
    assert!(!old.exists());
    assert!(young.exists());
    assert!(
        out.contains(old.to_str().unwrap()),
        "says what it removed: {out}"
    );
    assert!(!out.contains(young.to_str().unwrap()), "{out}");
}

#[test]
fn sweep_default_max_age_is_24h() {
    let w = World::with_target();
    let old = old_marker(&w, "old", 25 * HOUR);
    let young = old_marker(&w, "young", 23 * HOUR);
    sweep_ok(&w, &[]);
    assert!(!old.exists());
    assert!(young.exists());
}

#[test]
fn sweep_goes_by_file_time_not_created_at() {
    let w = World::with_target();
    // Signed three days ago, but the file arrived just now (sync lag).
    let created = ts_offset(-3 * DAY as i64);
    let late = w.marker("late");
    std::fs::write(
        &late,
        marker_doc("late", "PC", &created, "LAPTOP", Signer::Fleet).to_string(),
    )
    .unwrap();
    // Signed just now, but the file is old.
    let old = old_marker(&w, "old", 2 * DAY);
    sweep_ok(&w, &[]);
    assert!(late.exists());
    assert!(!old.exists());
}

#[test]
fn sweep_keeps_a_three_day_old_marker_whose_job_is_still_queued() {
    let w = World::with_target();
    w.write_job("PC", "queued", "PC", &now_text(), &spec());
    let kept = old_marker(&w, "queued", 3 * DAY);
    let gone = old_marker(&w, "finished", 3 * DAY);
    sweep_ok(&w, &[]);
    assert!(
        kept.exists(),
        "a machine offline for days must still find its cancel"
    );
    assert!(!gone.exists());
    assert!(w.inbox("queued").exists(), "the job is untouched");
}

#[test]
fn sweep_keeps_a_marker_whose_job_is_running() {
    let w = World::with_target();
    std::fs::write(w.running("busy"), "{}").unwrap();
    let kept = old_marker(&w, "busy", 3 * DAY);
    let gone = old_marker(&w, "idle", 3 * DAY);
    sweep_ok(&w, &[]);
    assert!(kept.exists());
    assert!(!gone.exists());
    assert!(w.running("busy").exists());
}

#[test]
fn sweep_keeps_a_25h_old_marker_whose_job_is_queued() {
    let w = World::with_target();
    w.write_job("PC", "queued", "PC", &now_text(), &spec());
    let kept = old_marker(&w, "queued", 25 * HOUR);
    let gone = old_marker(&w, "other", 25 * HOUR);
    sweep_ok(&w, &[]);
    assert!(kept.exists());
    assert!(!gone.exists());
}

#[test]
fn sweep_keeps_a_marker_with_an_mtime_in_the_future() {
    let w = World::with_target();
    let future = w.write_marker("PC", "future", "PC");
    set_mtime(&future, SystemTime::now() + Duration::from_secs(2 * DAY));
    let past = old_marker(&w, "past", HOUR);
    sweep_ok(&w, &["--max-age", "1s"]);
    assert!(future.exists());
    assert!(!past.exists());
}

#[test]
fn sweep_dry_run_removes_nothing_but_lists() {
    let w = World::with_target();
    let old = old_marker(&w, "old", 2 * DAY);
    let tmp = w.pc().join("inbox").join(".x.json.0123456789ab.tmp");
    std::fs::write(&tmp, "partial").unwrap();
    age(&tmp, 2 * HOUR);
    let before = files(&w.root);
    let out = sweep_ok(&w, &["--dry-run"]);
    assert_eq!(files(&w.root), before);
    assert!(out.contains(old.to_str().unwrap()), "{out}");
    assert!(out.contains(tmp.to_str().unwrap()), "{out}");
    assert!(out.contains("would"), "{out}");
    let (code, out, _) = w.run(&["--json", "sweep", "--dry-run"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["dryRun"], true);
    assert_eq!(v["removed"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(files(&w.root), before);
}

// ---------------------------------------------------------------- sweep: temp files

#[test]
fn sweep_removes_our_temp_files_older_than_an_hour() {
    let w = World::with_target();
    let old_inbox = w.pc().join("inbox").join(".a.json.0123456789ab.tmp");
    let old_done = w
        .pc()
        .join("archive")
        .join("done")
        .join(".b.json.abcdef012345.tmp");
    let old_cancel = w.pc().join("cancel").join(".c.json.00aa11bb22cc.tmp");
    let young = w.pc().join("inbox").join(".d.json.0123456789ab.tmp");
    for p in [&old_inbox, &old_done, &old_cancel] {
        std::fs::write(p, "x").unwrap();
        age(p, HOUR + 120);
    }
    std::fs::write(&young, "x").unwrap();
    age(&young, 50 * 60);
    let out = sweep_ok(&w, &[]);
    for p in [&old_inbox, &old_done, &old_cancel] {
        assert!(!p.exists(), "{} kept", p.display());
        assert!(out.contains(p.to_str().unwrap()), "{out}");
    }
    assert!(young.exists(), "may still be being written");
}

#[test]
fn sweep_never_touches_other_peoples_temp_files() {
    let w = World::with_target();
    let mut theirs = Vec::new();
    for dir in ["inbox", "cancel", "results", "archive/done"] {
        for name in [
            ".syncthing.x.json.tmp",
            "~$x.json",
            ".x.json.tmp",
            ".x.json.0123456789.tmp",
            "x.json.0123456789ab.tmp",
            "x.sync-conflict-20261129-193000-ABCDEFG.json",
        ] {
            let p = w.pc().join(dir).join(name);
            std::fs::write(&p, "theirs").unwrap();
            age(&p, 3 * DAY);
            theirs.push(p);
        }
    }
    let ours = w.pc().join("inbox").join(".x.json.0123456789ab.tmp");
    std::fs::write(&ours, "ours").unwrap();
    age(&ours, 3 * DAY);
    sweep_ok(&w, &["--max-age", "1s"]);
    assert!(!ours.exists(), "control: our own old temp file goes");
    for p in &theirs {
        assert!(p.exists(), "{} was removed", p.display());
        assert_eq!(std::fs::read_to_string(p).unwrap(), "theirs");
    }
}

// ---------------------------------------------------------------- sweep: links

#[test]
#[cfg(unix)] // symbolic links: Wine cannot create them; Windows links: `windows`
fn sweep_never_follows_links_out_of_the_root() {
    let w = World::with_target();
    let outside = w.dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    // An old, genuine marker outside the root, linked into cancel/.
    let target_file = outside.join("linked.json");
    std::fs::copy(w.write_marker("PC", "linked", "PC"), &target_file).unwrap();
    std::fs::remove_file(w.marker("linked")).unwrap();
    age(&target_file, 3 * DAY);
    std::os::unix::fs::symlink(&target_file, w.marker("linked")).unwrap();
    age_link(&w.marker("linked"), 3 * DAY);
    // Our-looking old temp file and marker in an outside folder linked into the target.
    let outside_tmp = outside.join(".a.json.0123456789ab.tmp");
    std::fs::write(&outside_tmp, "x").unwrap();
    age(&outside_tmp, 3 * DAY);
    let outside_marker = outside.join("far.json");
    std::fs::copy(w.write_marker("PC", "far", "PC"), &outside_marker).unwrap();
    std::fs::remove_file(w.marker("far")).unwrap();
    age(&outside_marker, 3 * DAY);
    std::os::unix::fs::symlink(&outside, w.pc().join("inbox").join("elsewhere")).unwrap();
    std::os::unix::fs::symlink(&outside, w.pc().join("cancel").join("sub")).unwrap();
    let before: Vec<(String, Vec<u8>)> = files(&outside)
        .into_iter()
        .map(|f| {
            let bytes = std::fs::read(outside.join(&f)).unwrap();
            (f, bytes)
        })
        .collect();
    assert_eq!(before.len(), 3);
    sweep(&w, &["--max-age", "1s"]);
    sweep(&w, &["--all", "--max-age", "1s"]);
    for (f, bytes) in &before {
        let p = outside.join(f);
        assert_eq!(&std::fs::read(&p).unwrap(), bytes, "{f} changed");
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        assert!(
            SystemTime::now().duration_since(mtime).unwrap() > Duration::from_secs(2 * DAY),
            "{f} was touched"
        );
    }
}

/// `<root>/PC` planted as a link to a folder outside the root that holds an
/// old marker and one of our old temp files; returns the outside folder.
#[cfg(unix)]
fn linked_target_folder(w: &World) -> PathBuf {
    let outside = w.dir.path().join("outside");
    for d in ["cancel", "inbox"] {
        std::fs::create_dir_all(outside.join(d)).unwrap();
    }
    let marker = outside.join("cancel").join("old.json");
    std::fs::write(&marker, "{}").unwrap();
    age(&marker, 3 * DAY);
    let tmp = outside.join("inbox").join(".a.json.0123456789ab.tmp");
    std::fs::write(&tmp, "x").unwrap();
    age(&tmp, 3 * DAY);
    std::os::unix::fs::symlink(&outside, w.root.join("PC")).unwrap();
    outside
}

#[cfg(unix)]
fn assert_sweeps_stay_inside(w: &World, outside: &Path, fleet: Option<&str>) {
    let before = files(outside);
    assert_eq!(before.len(), 2);
    for args in [&[][..], &["--all"][..], &["--target", "PC"][..]] {
        let mut a = vec!["sweep", "--max-age", "1s"];
        a.extend_from_slice(args);
        let mut c = w.cmd();
        if let Some(f) = fleet {
            c.env("FLEET_DISPATCH_FLEET", f);
        }
        let _ = output(c.args(&a));
        assert_eq!(
            files(outside),
            before,
            "sweep {args:?} (FLEET_DISPATCH_FLEET={fleet:?}) reached outside the root"
        );
    }
}

#[test]
#[cfg(unix)] // symbolic links: Wine cannot create them; Windows links: `windows`
fn sweep_never_follows_a_target_folder_that_is_a_link() {
    // Folder access alone could plant <root>/PC -> somewhere else.
    let w = World::new();
    let outside = linked_target_folder(&w);
    assert_sweeps_stay_inside(&w, &outside, None);
}

#[test]
#[cfg(unix)] // symbolic links: Wine cannot create them; Windows links: `windows`
fn sweep_never_follows_a_fleet_members_target_folder_that_is_a_link() {
    let w = World::new();
    let outside = linked_target_folder(&w);
    assert_sweeps_stay_inside(&w, &outside, Some("PC"));
}

#[test]
fn sweep_refuses_a_target_name_that_leaves_the_root() {
    let w = World::with_target();
    let before = files(w.dir.path());
    for bad in ["..", "PC/..", "../PC", "CON"] {
        let flag = format!("--target={bad}");
        let (code, out, err) = sweep(&w, &[&flag]);
        assert_eq!(code, 64, "{bad}: {out}{err}");
    }
    assert_eq!(files(w.dir.path()), before);
}

// ---------------------------------------------------------------- sweep: reporting, targets

#[test]
fn sweep_is_quiet_when_there_is_nothing_to_do() {
    let w = World::with_target();
    w.write_marker("PC", "young", "PC");
    let (code, out, err) = sweep(&w, &[]);
    assert_eq!(code, 0);
    assert!(out.is_empty(), "{out:?}");
    assert!(err.is_empty(), "{err:?}");
    let empty = World::with_target();
    let (code, out, err) = sweep(&empty, &["--all"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}

#[test]
fn sweep_all_sweeps_every_target() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    w.make_target("server-2");
    let pc = old_marker(&w, "a", 2 * DAY);
    let laptop = w.write_marker("LAPTOP", "b", "LAPTOP");
    age(&laptop, 2 * DAY);
    let server = w.write_marker("server-2", "c", "server-2");
    age(&server, 2 * DAY);
    let out = sweep_ok(&w, &["--all"]);
    for p in [&pc, &laptop, &server] {
        assert!(!p.exists(), "{} kept", p.display());
        assert!(out.contains(p.to_str().unwrap()), "{out}");
    }
}

#[test]
fn sweep_default_target_is_this_machine() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let pc = old_marker(&w, "a", 2 * DAY);
    let laptop = w.write_marker("LAPTOP", "b", "LAPTOP");
    age(&laptop, 2 * DAY);
    let (code, out, err) = output(w.cmd_as("LAPTOP").arg("sweep"));
    assert_eq!(code, 0, "{out}{err}");
    assert!(!laptop.exists());
    assert!(
        pc.exists(),
        "another machine's folder is not swept by default"
    );
    let (code, _, _) = sweep(&w, &[]);
    assert_eq!(code, 0);
    assert!(!pc.exists());
}

#[test]
fn sweep_json_lists_removed_paths() {
    let w = World::with_target();
    let old = old_marker(&w, "old", 2 * DAY);
    let tmp = w.pc().join("inbox").join(".x.json.0123456789ab.tmp");
    std::fs::write(&tmp, "x").unwrap();
    age(&tmp, 2 * HOUR);
    let young = old_marker(&w, "young", HOUR);
    let (code, out, err) = w.run(&["--json", "sweep"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let mut paths: Vec<PathBuf> = v["removed"]
        .as_array()
        .unwrap_or_else(|| panic!("no removed list: {v}"))
        .iter()
        .map(|r| PathBuf::from(r["path"].as_str().unwrap()))
        .collect();
    paths.sort();
    let mut want = vec![old.clone(), tmp.clone()];
    want.sort();
    assert_eq!(paths, want);
    assert!(!old.exists() && !tmp.exists() && young.exists());
    // Nothing to do: still one JSON document, with an empty list.
    let (code, out, _) = w.run(&["--json", "sweep"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["removed"], json!([]));
}

#[test]
fn verify_marker_judges_a_consumed_marker_under_its_cancel_name() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    w.listen_once(&[]);
    let consumed = w
        .pc()
        .join("archive")
        .join("consumed")
        .join(format!("{id}.cancel.json"));
    assert!(consumed.is_file(), "the marker was consumed");
    let (code, out, err) = w.run(&[
        "verify-marker",
        consumed.to_str().unwrap(),
        "--target",
        "PC",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("valid: "), "{out}");
    // Under another id's name it is still no marker of that job.
    let renamed = consumed.with_file_name("other.cancel.json");
    std::fs::copy(&consumed, &renamed).unwrap();
    let (code, out, _) = w.run(&["verify-marker", renamed.to_str().unwrap(), "--target", "PC"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("job-id-mismatch: "), "{out}");
}

/// Runs `sweep ARGS` to its end and returns the bytes it read by `read`
/// calls (`rchar` of `/proc/PID/io`, taken while it is a zombie), with
/// its exit status.
#[cfg(target_os = "linux")]
fn sweep_reading(w: &World, args: &[&str]) -> (u64, i32) {
    reading(w, "sweep", args)
}

/// What the command `cmd` read in bytes (`/proc/<pid>/io`), and its status.
#[cfg(target_os = "linux")]
fn reading(w: &World, cmd: &str, args: &[&str]) -> (u64, i32) {
    let mut child = w
        .bg_cmd()
        .arg(cmd)
        .args(args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::id_t;
    // SAFETY: waitid on our own child, WNOWAIT: it stays a zombie, its
    // /proc entry readable, until `wait` below reaps it.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
    assert_eq!(r, 0);
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap();
    let rchar = io
        .lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .unwrap()
        .parse()
        .unwrap();
    let status = child.wait().unwrap().code().unwrap_or(-1);
    (rchar, status)
}

/// A root of ten targets, each inbox holding one queued job file of
/// 256 KiB (a long argv) four times (hard links): the world, the targets
/// and the bytes the inboxes hold.
#[cfg(target_os = "linux")]
fn ten_big_inboxes() -> (World, Vec<String>, u64) {
    let w = World::new();
    // One queued job file of 256 KiB (a long argv), linked into each
    // target's inbox four times.
    let big = json!({"argv": ["true", "x".repeat(256 * 1024)]});
    let targets: Vec<String> = (0..10).map(|t| format!("T{t}")).collect();
    w.make_target(&targets[0]);
    let first = w.write_job(&targets[0], "big-0", &targets[0], &now_text(), &big);
    let size = std::fs::metadata(&first).unwrap().len();
    for t in &targets {
        w.make_target(t);
        for j in 0..4 {
            let path = w.root.join(t).join("inbox").join(format!("big-{j}.json"));
            if path != first {
                std::fs::hard_link(&first, path).unwrap();
            }
        }
    }
    let inboxes = size * 4 * targets.len() as u64;
    (w, targets, inboxes)
}

#[cfg(target_os = "linux")]
#[test]
fn sweep_all_reads_each_inbox_once_whatever_the_number_of_targets() {
    let (w, targets, inboxes) = ten_big_inboxes();
    let (read, status) = sweep_reading(&w, &["--all"]);
    assert_eq!(status, 0);
    assert!(
        read < 2 * inboxes,
        "sweep --all read {read} bytes; the inboxes hold {inboxes}"
    );
    for t in &targets {
        assert!(w.root.join(t).join("inbox/big-3.json").exists());
    }
}

#[cfg(target_os = "linux")]
#[test]
fn doctor_all_reads_what_the_roots_jobs_wait_for_once_whatever_the_number_of_targets() {
    let (w, _, inboxes) = ten_big_inboxes();
    // Each target's own queue is read for its status (once over all), and
    // the sweep plan's jobs waited for once more: twice the inboxes, where
    // a plan per target read the whole root again (eleven times).
    let (read, _) = reading(&w, "doctor", &["--all", "--json"]);
    assert!(
        read < 4 * inboxes,
        "doctor --all read {read} bytes; the inboxes hold {inboxes}"
    );
}
