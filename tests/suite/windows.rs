//! Windows (run under Wine by `ci/windows`): a job's whole process tree
//! stops together on a cancel, a timeout and the listener's death; moves
//! never replace; a file or folder another program holds open (OneDrive,
//! an antivirus, the indexer) delays the bookkeeping but never loses or
//! repeats a job; the key, enqueue and listen basics on Windows paths.
//!
//! A job tree here is `cmd /C tree.cmd`: the script starts `child.cmd` in the
//! background with `start /B`, and each of the two scripts writes
//! `<name>.started` at once and `<name>.finished` a few seconds later (the
//! child first, after 8 s; the parent after 10 s). A tree that was stopped
//! whole never writes a `.finished` file; one left alone writes both.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::util::{
    World, appends, files, kit, lines, now_text, polite_stop, scratch, uid, wait_until,
};

const TREE: &str = "@echo off\r\n\
    echo started> parent.started\r\n\
    start /B cmd /C child.cmd\r\n\
    ping -n 11 127.0.0.1 >nul\r\n\
    echo late> parent.finished\r\n";
const CHILD: &str = "@echo off\r\n\
    echo started> child.started\r\n\
    ping -n 9 127.0.0.1 >nul\r\n\
    echo late> child.finished\r\n";

/// A folder holding the tree scripts, to run jobs in.
fn tree_dir(w: &World) -> PathBuf {
    let dir = w.dir.path().join("work");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tree.cmd"), TREE).unwrap();
    std::fs::write(dir.join("child.cmd"), CHILD).unwrap();
    dir
}

/// Waits until both scripts of the tree are running.
fn wait_tree_started(dir: &Path) -> Instant {
    wait_until(Duration::from_secs(30), || {
        dir.join("parent.started").exists() && dir.join("child.started").exists()
    });
    Instant::now()
}

/// Waits until the tree would have finished had it run on, then checks that
/// neither script got there.
fn assert_tree_never_finished(dir: &Path, started: Instant) {
    let finish_by = started + Duration::from_secs(13);
    std::thread::sleep(finish_by.saturating_duration_since(Instant::now()));
    for f in ["parent.finished", "child.finished"] {
        assert!(
            !dir.join(f).exists(),
            "{f} was written: part of the tree outlived its stop"
        );
    }
}

#[test]
fn a_job_tree_left_alone_finishes_both_scripts() {
    // The control for the tests below: the scripts do write `.finished`.
    let w = World::with_target();
    let dir = tree_dir(&w);
    let id = w.enqueue(
        &["--cwd", dir.to_str().unwrap()],
        &["cmd", "/C", "tree.cmd"],
    );
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    assert_eq!(w.result(&id)["exitCode"], 0);
    for f in ["parent.finished", "child.finished"] {
        assert!(dir.join(f).exists(), "{f} missing");
    }
}

#[test]
fn a_cancel_stops_the_whole_job_tree() {
    let w = World::new();
    let dir = tree_dir(&w);
    let _listener = w.spawn_listener(&[]);
    let id = w.enqueue(
        &["--cwd", dir.to_str().unwrap(), "--grace", "1s"],
        &["cmd", "/C", "tree.cmd"],
    );
    let started = wait_tree_started(&dir);
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "cancel failed: {out}{err}");
    let r = w.wait_result(&id, Duration::from_secs(30));
    assert_eq!(r["error"], "cancelled", "{r}");
    assert_eq!(r["exitCode"], -1);
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the stop took {:?}",
        started.elapsed()
    );
    // The result is written before the marker moves: wait for the move.
    wait_until(Duration::from_secs(10), || w.consumed(&id).exists());
    assert_tree_never_finished(&dir, started);
}

#[test]
fn a_timeout_stops_the_whole_job_tree() {
    let w = World::with_target();
    let dir = tree_dir(&w);
    let id = w.enqueue(
        &[
            "--cwd",
            dir.to_str().unwrap(),
            "--timeout",
            "3s",
            "--grace",
            "1s",
        ],
        &["cmd", "/C", "tree.cmd"],
    );
    let t = Instant::now();
    let c = w.listen_once(&[]);
    assert_eq!(c["failed"], 1, "{c}");
    let r = w.result(&id);
    assert_eq!(r["error"], "timeout", "{r}");
    assert_eq!(r["ok"], false);
    assert!(dir.join("parent.started").exists() && dir.join("child.started").exists());
    assert_tree_never_finished(&dir, t);
}

#[test]
fn the_listeners_death_takes_its_job_tree_with_it() {
    let w = World::new();
    let dir = tree_dir(&w);
    let listener = w.spawn_listener(&[]);
    w.enqueue(
        &["--cwd", dir.to_str().unwrap()],
        &["cmd", "/C", "tree.cmd"],
    );
    let started = wait_tree_started(&dir);
    // TerminateProcess: no handler runs, only the kill-on-close Job Objects
    // can stop the tree.
    drop(listener);
    assert_tree_never_finished(&dir, started);
}

#[test]
fn a_job_runs_and_its_exit_code_comes_back() {
    let w = World::with_target();
    let id = w.enqueue(&[], &["cmd", "/C", "echo hello from windows& exit 3"]);
    let c = w.listen_once(&[]);
    assert_eq!(c["failed"], 1, "{c}");
    let r = w.result(&id);
    assert_eq!(r["exitCode"], 3, "{r}");
    assert_eq!(r["ok"], false);
    assert_eq!(r["error"], "");
    assert!(
        w.detail(&id)["stdoutTail"]
            .as_str()
            .unwrap()
            .contains("hello from windows")
    );
    assert!(w.done(&id).exists());
}

#[test]
fn keygen_writes_a_private_key_that_signs() {
    let w = World::with_target();
    let key = w
        .dir
        .path()
        .join("profile")
        .join(".claude")
        .join("fleet.key");
    let k = key.to_str().unwrap();
    let (code, out, err) =
        crate::util::output(w.cmd().env("FLEET_DISPATCH_KEY_FILE", k).args(["keygen"]));
    assert_eq!(code, 0, "keygen failed: {out}{err}");
    fleet_dispatch::platform::check_key_permissions(&key).unwrap();
    assert_eq!(std::fs::read_to_string(&key).unwrap().trim().len(), 64);
    // A second keygen refuses to replace it.
    let (code, ..) =
        crate::util::output(w.cmd().env("FLEET_DISPATCH_KEY_FILE", k).args(["keygen"]));
    assert_ne!(code, 0);
    let (code, out, err) = crate::util::output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", k)
            .args(["enqueue", "--target", "PC", "--", "cmd", "/C", "exit", "0"]),
    );
    assert_eq!(code, 0, "enqueue with the new key failed: {out}{err}");
}

#[test]
fn publishing_never_replaces_a_name_in_any_case() {
    use fleet_dispatch::store::fsops::{Dir, Flush};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("job.json");
    let d = Dir::open_trusted(dir.path()).unwrap();
    assert!(d.publish("job.json", b"one", Flush::DataAndName).unwrap());
    assert!(!d.publish("job.json", b"two", Flush::DataAndName).unwrap());
    // Windows folders are case-insensitive: JOB.JSON is job.json.
    assert!(!d.publish("JOB.JSON", b"three", Flush::DataAndName).unwrap());
    assert_eq!(std::fs::read(&p).unwrap(), b"one");
    let other = dir.path().join("other.json");
    std::fs::write(&other, "other").unwrap();
    let e = fleet_dispatch::platform::rename_no_replace(&other, &p).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
    assert_eq!(std::fs::read(&other).unwrap(), b"other");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        2,
        "no temp file left"
    );
}

#[test]
fn a_held_folder_cannot_be_renamed_or_swapped_while_held() {
    use fleet_dispatch::store::fsops::{Child, Dir};
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("inbox")).unwrap();
    let root = Dir::open_trusted(dir.path()).unwrap();
    let Child::Dir(inbox) = root.child("inbox").unwrap() else {
        panic!("inbox is a folder");
    };
    let moved = std::fs::rename(dir.path().join("inbox"), dir.path().join("elsewhere"));
    assert!(moved.is_err(), "a held folder was renamed");
    assert!(
        inbox
            .publish("a.json", b"x", fleet_dispatch::store::fsops::Flush::Nothing)
            .unwrap()
    );
    drop(inbox);
    std::fs::rename(dir.path().join("inbox"), dir.path().join("elsewhere")).unwrap();
}

#[test]
fn reserved_device_names_are_refused_as_targets() {
    let w = World::new();
    for name in ["CON", "nul", "Com1", "LPT9"] {
        let (code, _, err) = w.run(&["enqueue", "--target", name, "--", "cmd", "/C", "exit"]);
        assert_eq!(code, 64, "{name}: {err}");
        assert!(err.contains("reserved"), "{name}: {err}");
    }
}

// ---------------------------------------------------------------- sharing violations

/// Opens `path` (a file or a folder) the way a scanner, an indexer or
/// OneDrive does: reading, and letting others only read, so while it is
/// held nobody can write it, rename it or delete it.
fn hold(path: &Path) -> std::fs::File {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{FILE_FLAG_BACKUP_SEMANTICS, FILE_SHARE_READ};
    std::fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ)
        .custom_flags(FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)
        .unwrap_or_else(|e| panic!("cannot hold {}: {e}", path.display()))
}

#[test]
fn a_job_file_held_without_delete_sharing_for_2s_runs_once_and_nothing_is_rejected() {
    let w = World::with_target();
    let side = scratch(&w, "side");
    let id = uid("held");
    w.write_job("PC", &id, "PC", &now_text(), &appends(&side, "ran"));
    let held = hold(&w.inbox(&id));
    let l = w.spawn_listener(&[]);
    // The job file can be read, so the job runs and its result is written;
    // only its move to archive/done waits (a sharing violation is retried
    // within a bound of 5 s).
    wait_until(Duration::from_secs(30), || w.result_path(&id).exists());
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        w.inbox(&id).exists() && !w.done(&id).exists(),
        "the job file moved while it was held"
    );
    drop(held);
    wait_until(Duration::from_secs(10), || {
        w.done(&id).exists() && !w.inbox(&id).exists()
    });
    assert_eq!(w.result(&id)["ok"], true, "{}", w.result(&id));
    // Still listening, and healthy: a second job runs.
    let next = uid("next");
    w.write_job("PC", &next, "PC", &now_text(), &appends(&side, "next"));
    assert_eq!(w.wait_result(&next, Duration::from_secs(30))["ok"], true);
    let (code, out, err) = l.stop(&w, libc::SIGINT, Duration::from_secs(30));
    assert_eq!(code, polite_stop::EXIT, "{out}{err}");
    assert!(
        out.contains("done 2, failed 0, cancelled 0, deferred 0, rejected 0"),
        "{out}"
    );
    assert_eq!(lines(&side), ["ran", "next"], "the held job ran twice");
    assert_eq!(
        files(&w.pc().join("archive").join("rejected")),
        Vec::<String>::new()
    );
}

#[test]
fn results_and_logs_folders_held_without_sharing_lose_no_result() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "hello from a held folder"]));
    let held = [hold(&w.pc().join("results")), hold(&w.pc().join("logs"))];
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    drop(held);
    let r = w.result(&id);
    assert_eq!(r["ok"], true, "{r}");
    assert!(
        w.detail(&id)["stdoutTail"]
            .as_str()
            .unwrap()
            .contains("hello from a held folder"),
        "{r}"
    );
    let logs = files(&w.pc().join("logs"));
    assert!(
        logs.iter().any(|f| f.starts_with(&id)),
        "no log for {id}: {logs:?}"
    );
    assert!(w.done(&id).exists());
}
