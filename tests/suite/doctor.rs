//! `doctor`: one line per check, failures first with a hint; exit 0 when
//! every check passes, 1 when one warns. Each check that can be arranged
//! on one machine is arranged here and seen through the real binary.
//! Not here: the Windows "Always keep on this device" mark (Wine has no
//! Cloud Files API; the judgement is unit-tested) and OneDrive's and
//! Dropbox's ownership of a root (the judgement is unit-tested).

use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::util::*;

fn doctor(w: &World, args: &[&str]) -> (i32, String, String) {
    let mut a = vec!["doctor"];
    a.extend_from_slice(args);
    w.run(&a)
}

fn doctor_json(w: &World, args: &[&str]) -> (i32, Value) {
    let mut a = vec!["--json", "doctor"];
    a.extend_from_slice(args);
    let (code, out, err) = w.run(&a);
    let v = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}{err}"));
    (code, v)
}

/// This machine's key fingerprint, as `status` reports it.
fn ours(w: &World) -> String {
    let (code, out, err) = w.run(&["--json", "status", "--all"]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    v["keyFingerprint"].as_str().unwrap().to_string()
}

/// Writes PC's heartbeat as a listener on `laptop` would, dated `at`,
/// the file's modification time set to `modified`.
fn heartbeat(w: &World, at: &str, fingerprint: &str, modified: SystemTime) {
    let p = Beat {
        state: "listening",
        heartbeat_at: at.to_string(),
        host: "laptop".to_string(),
        instance: "0123456789abcdef".to_string(),
        run: "fedcba9876543210".to_string(),
        key_fingerprint: Some(fingerprint.to_string()),
    }
    .write(w);
    std::fs::File::options()
        .write(true)
        .open(&p)
        .unwrap()
        .set_modified(modified)
        .unwrap();
}

/// A world with PC's layout and a fresh heartbeat carrying our key.
fn healthy() -> World {
    let w = World::with_target();
    heartbeat(&w, &now_text(), &ours(&w), SystemTime::now());
    w
}

/// The check named `check` (of `target`, if given) in a JSON report.
fn check<'a>(v: &'a Value, check: &str, target: Option<&str>) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == check && c["target"].as_str() == target)
        .unwrap_or_else(|| panic!("no {check} check for {target:?} in {v:#}"))
}

/// Asserts a warning of `check`, that the human output lists it before
/// every passing line, and returns its JSON form.
fn warns(w: &World, args: &[&str], name: &str, target: Option<&str>) -> Value {
    let (code, out, err) = doctor(w, args);
    assert_eq!(code, 1, "{out}{err}");
    let subject = match target {
        Some(t) => format!("{t} {name}:"),
        None => format!("{name}:"),
    };
    let lines: Vec<&str> = out.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("warn") && l.contains(&subject))
        .unwrap_or_else(|| panic!("no warning for {subject}:\n{out}"));
    assert!(
        lines[at + 1].trim_start().starts_with("hint: "),
        "a warning is followed by its hint:\n{out}"
    );
    let first_ok = lines.iter().position(|l| l.starts_with("ok")).unwrap();
    assert!(at < first_ok, "failing lines come first:\n{out}");
    let (code, v) = doctor_json(w, args);
    assert_eq!(code, 1);
    assert_eq!(v["ok"], false);
    let c = check(&v, name, target).clone();
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["hint"].is_string(), "{c}");
    c
}

#[test]
fn all_good_exits_0_and_names_the_listener_running_here() {
    let w = World::with_target();
    let l = w.spawn_listener(&[]);
    let (code, out, err) = doctor(&w, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.lines().all(|l| !l.starts_with("warn")), "{out}");
    assert!(out.trim_end().ends_with("checks pass"), "{out}");
    let (code, v) = doctor_json(&w, &[]);
    assert_eq!(code, 0);
    assert_eq!(v["ok"], true);
    assert_eq!(v["keyFingerprint"], ours(&w).as_str());
    let state = check(&v, "state", Some("pc"));
    assert!(
        state["message"]
            .as_str()
            .unwrap()
            .contains(&format!("a listener runs here (pid {})", l.pid())),
        "{state}"
    );
    let key = check(&v, "key", None)["message"].as_str().unwrap();
    assert!(key.contains(&ours(&w)), "{key}");
    drop(l);
    // The listener gone, the lock is free again.
    let (_, v) = doctor_json(&w, &[]);
    let state = check(&v, "state", Some("pc"))["message"].as_str().unwrap();
    assert!(state.contains("no listener runs here"), "{state}");
}

#[test]
fn a_listener_with_another_key_warns_with_both_fingerprints() {
    let w = World::with_target();
    heartbeat(&w, &now_text(), "deadbeef", SystemTime::now());
    let c = warns(&w, &[], "listener key", Some("PC"));
    let m = c["message"].as_str().unwrap();
    assert!(m.contains("deadbeef") && m.contains(&ours(&w)), "{m}");
}

#[test]
fn an_unsigned_heartbeat_warns_that_it_is_not_trusted_and_a_signed_one_passes() {
    let w = healthy();
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(check(&v, "heartbeat signature", Some("PC"))["status"], "ok");
    // The same fields without a signature, as a folder writer writes them.
    let beat = Beat {
        key_fingerprint: Some(ours(&w)),
        ..Beat::aged("listening", 0)
    };
    std::fs::write(w.pc().join("listener.json"), beat.fields().to_string()).unwrap();
    let c = warns(&w, &[], "heartbeat signature", Some("PC"));
    assert!(
        c["message"].as_str().unwrap().contains("not trusted"),
        "{c}"
    );
}

#[test]
fn a_stale_heartbeat_warns_naming_its_host() {
    let w = World::with_target();
    let ten_minutes_ago = SystemTime::now() - Duration::from_secs(600);
    heartbeat(&w, &ts_offset(-600), &ours(&w), ten_minutes_ago);
    let c = warns(&w, &[], "heartbeat", Some("PC"));
    let m = c["message"].as_str().unwrap();
    assert!(m.contains("stale") && m.contains("laptop"), "{m}");
    // Old but consistent: no clock warning.
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(check(&v, "clock", Some("PC"))["status"], "ok");
}

#[test]
fn a_skewed_heartbeat_warns_about_clocks() {
    let w = World::with_target();
    let file_time = SystemTime::now() - Duration::from_secs(300);
    heartbeat(&w, &now_text(), &ours(&w), file_time);
    let c = warns(&w, &[], "clock", Some("PC"));
    let m = c["message"].as_str().unwrap();
    assert!(
        m.contains("laptop's clock is about") && m.contains("ahead"),
        "{m}"
    );
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(check(&v, "heartbeat", Some("PC"))["status"], "ok");
}

#[test]
fn a_root_one_level_too_high_names_the_folder_to_use() {
    let w = World::new();
    w.make_target("fleet-dispatch/PC");
    let c = warns(&w, &[], "layout", None);
    let m = c["message"].as_str().unwrap();
    assert!(m.contains("one level too high"), "{m}");
    let hint = c["hint"].as_str().unwrap();
    assert!(hint.contains(p(&w.root.join("fleet-dispatch"))), "{hint}");
}

#[test]
fn a_root_too_deep_says_so_both_for_a_target_folder_and_inside_one() {
    let w = World::with_target();
    let pc = w.pc();
    let c = warns(&w, &["--root", p(&pc)], "layout", None);
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("is itself a target folder"),
        "{c}"
    );
    assert!(c["hint"].as_str().unwrap().contains(p(&w.root)), "{c}");
    let inbox = pc.join("inbox");
    let c = warns(&w, &["--root", p(&inbox)], "layout", None);
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("inside the target folder"),
        "{c}"
    );
    // Its folders are not judged as targets.
    let (_, v) = doctor_json(&w, &["--root", p(&pc)]);
    assert!(
        v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["target"].is_null() || c["check"] == "state"),
        "{v:#}"
    );
}

#[test]
fn conflict_copies_of_two_engines_are_found() {
    let w = healthy();
    w.make_target("LAPTOP");
    let id = "20261129-193000-9f2c4e1ab37d5c08";
    let syncthing = format!("{id}.sync-conflict-20261129-193105-ABCDEFG.json");
    std::fs::write(w.pc().join("inbox").join(&syncthing), "{}").unwrap();
    let onedrive = format!("{id}-LAPTOP.json");
    std::fs::write(w.pc().join("results").join(&onedrive), "{}").unwrap();
    let c = warns(&w, &["--target", "PC"], "conflicts", Some("PC"));
    let m = c["message"].as_str().unwrap();
    assert!(m.contains(&format!("inbox/{syncthing} (Syncthing)")), "{m}");
    assert!(m.contains(&format!("results/{onedrive} (OneDrive)")), "{m}");
}

#[test]
fn a_folder_over_the_file_limit_warns_and_names_sweep() {
    let w = healthy();
    // Six logs, two of them of jobs past the retention: a sweep would free
    // those two, and the check says so.
    let old = SystemTime::now() - Duration::from_secs(40 * 86400);
    for i in 0..6 {
        let log = w.pc().join("logs").join(format!("j{i}.stdout.log"));
        std::fs::write(&log, "").unwrap();
        if i < 2 {
            std::fs::File::options()
                .write(true)
                .open(&log)
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
    }
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_DOCTOR_FILE_LIMIT", "5")
            .args(["--json", "doctor"]),
    );
    assert_eq!(code, 1, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let c = check(&v, "files", Some("PC"));
    assert_eq!(c["status"], "warn");
    assert!(
        c["message"].as_str().unwrap().contains("logs holds 6"),
        "{c}"
    );
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("`sweep` would free 2"),
        "{c}"
    );
    assert!(
        c["hint"].as_str().unwrap().contains("fleet-dispatch sweep"),
        "{c}"
    );
    assert_eq!(v["checks"][0]["check"], "files", "the failing line first");
    // At the real limit the same folder is fine.
    let (code, out, err) = doctor(&w, &[]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
fn a_missing_key_warns_and_the_rest_is_still_checked() {
    let w = healthy();
    std::fs::remove_file(&w.key).unwrap();
    let c = warns(&w, &[], "key", None);
    assert!(
        c["message"].as_str().unwrap().contains("no key file"),
        "{c}"
    );
    assert!(c["hint"].as_str().unwrap().contains("keygen"), "{c}");
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(check(&v, "root", None)["status"], "ok");
    assert_eq!(check(&v, "heartbeat", Some("PC"))["status"], "ok");
    assert!(v["keyFingerprint"].is_null());
}

// Unix only: the key is made readable by others through its mode (0644);
// Windows judges the key's access list instead, which the `windows` module
// and the platform's unit tests cover (an Everyone-readable key refused).
#[cfg(unix)]
#[test]
fn a_key_others_can_read_warns_with_the_chmod_hint() {
    let w = healthy();
    set_mode(&w.key, 0o644);
    let c = warns(&w, &[], "key permissions", None);
    assert!(c["hint"].as_str().unwrap().contains("chmod 600"), "{c}");
}

#[test]
fn files_rejected_in_the_last_day_warn_with_their_reasons() {
    let w = World::with_target();
    let id = "20261129-193000-0000000000000001";
    w.write_job("PC", id, "LAPTOP", &now_text(), &kit_spec(&[]));
    w.listen_once(&[]);
    assert!(w.rejected(&format!("{id}.json")).exists());
    heartbeat(&w, &now_text(), &ours(&w), SystemTime::now());
    let c = warns(&w, &[], "rejected", Some("PC"));
    let m = c["message"].as_str().unwrap();
    assert!(m.contains("1 file(s) rejected in the last day"), "{m}");
}

#[test]
fn a_missing_root_warns_without_failing_the_command() {
    let w = World::new();
    let gone = w.root.join("nowhere");
    let c = warns(&w, &["--root", p(&gone)], "root", None);
    assert!(
        c["message"].as_str().unwrap().contains("does not exist"),
        "{c}"
    );
}

#[test]
fn the_sync_engine_is_named_from_its_folder_mark() {
    let w = healthy();
    std::fs::create_dir(w.root.join(".stfolder")).unwrap();
    let (code, v) = doctor_json(&w, &[]);
    assert_eq!(code, 0, "{v:#}");
    let m = check(&v, "sync engine", None)["message"].as_str().unwrap();
    assert!(m.starts_with("Syncthing (.stfolder in "), "{m}");
}

/// The `events` check of `PC` in doctor's JSON, when there is one.
fn events_check(v: &Value) -> Option<Value> {
    v["checks"]
        .as_array()?
        .iter()
        .find(|c| c["check"] == "events" && c["target"] == "pc")
        .cloned()
}

#[test]
fn doctor_says_a_running_listener_polls_when_events_are_off() {
    let w = World::with_target();
    let listener = w.spawn_listener(&["--no-watch"]);
    let (_, v) = doctor_json(&w, &[]);
    let c = events_check(&v).unwrap_or_else(|| panic!("no events check: {v}"));
    assert_eq!(c["status"], "ok", "{c}");
    assert!(c["message"].as_str().unwrap().contains("polls"), "{c}");
    drop(listener);
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(events_check(&v), None, "a stopped listener's way: {v}");
}

#[test]
#[cfg(target_os = "linux")]
#[ignore = "needs user namespaces (`unshare -U`), which some hosts and containers refuse"]
fn doctor_names_the_sysctl_when_the_watch_limit_left_the_listener_polling() {
    // The real condition, kept to one user namespace: there the inotify
    // instance limit is 0, so the listener's watch fails as at a full limit.
    let w = World::with_target();
    let probe = std::process::Command::new("unshare")
        .args([
            "-U",
            "-r",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_inotify_instances",
        ])
        .output();
    assert!(
        probe.as_ref().is_ok_and(|o| o.status.success()),
        "no user namespace to lower the inotify limit in ({probe:?})"
    );
    let listen = w.bg_cmd();
    let mut c = std::process::Command::new("unshare");
    c.args([
        "-U",
        "-r",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_inotify_instances && exec \"$0\" \"$@\"",
    ])
    .arg(listen.get_program())
    .args(["listen", "--poll-interval", "100ms"])
    .env_clear()
    .envs(listen.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let hb = w.pc().join("listener.json");
    let listener = ListenerGuard::spawn(&mut c);
    wait_until(Duration::from_secs(10), || hb.exists());
    // It fell back to polling: doctor says so, and what fixes it.
    let (code, v) = doctor_json(&w, &[]);
    let c = events_check(&v).unwrap_or_else(|| panic!("no events check: {v}"));
    assert_eq!(c["status"], "warn", "{c}");
    assert_ne!(code, 0, "{v}");
    assert!(
        c["message"]
            .as_str()
            .unwrap()
            .contains("watching unavailable"),
        "{c}"
    );
    let hint = c["hint"].as_str().unwrap();
    assert!(hint.contains("fs.inotify.max_user_watches"), "{hint}");
    assert!(hint.contains("fs.inotify.max_user_instances"), "{hint}");
    let (code, out, _) = doctor(&w, &[]);
    assert_ne!(code, 0);
    assert!(!out.contains("all checks pass"), "{out}");
    // It still runs jobs, by its poll.
    let side = scratch(&w, "side");
    let id = w.enqueue(&[], &kit(&["append", p(&side), "ran"]));
    assert_eq!(w.wait_result(&id, Duration::from_secs(10))["ok"], true);
    let (_, _, err) = listener.stop(&w, libc::SIGTERM, Duration::from_secs(10));
    assert!(err.contains("cannot watch"), "{err}");
}

fn governor_check(v: &Value) -> Option<Value> {
    v["checks"]
        .as_array()?
        .iter()
        .find(|c| c["check"] == "governor" && c["target"] == "pc")
        .cloned()
}

#[test]
fn doctor_and_status_say_what_the_running_listeners_governor_holds_back_and_how_to_lift_it() {
    let w = World::with_target();
    let gov = w.dir.path().join("governor.txt");
    std::fs::write(&gov, "RED\n").unwrap();
    let listener = w.spawn_listener(&["--governor-file", gov.to_str().unwrap()]);
    let id = w.enqueue(&[], &kit(&[]));
    let (code, v) = doctor_json(&w, &[]);
    let c = governor_check(&v).unwrap_or_else(|| panic!("no governor check: {v}"));
    assert_eq!(c["status"], "warn", "{c}");
    let message = c["message"].as_str().unwrap();
    assert!(message.contains("RED"), "{c}");
    assert!(message.contains("governor.txt"), "{c}");
    assert!(message.contains("no job starts"), "{c}");
    assert!(c["hint"].as_str().unwrap().contains("GREEN"), "{c}");
    assert_eq!(code, 1, "a hold is a warning: {v}");
    assert!(w.inbox(&id).exists(), "the job stays queued under RED");
    // status on this machine says so too, in words and in JSON.
    let (code, out, err) = w.run(&["status"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("governor") && out.contains("says RED: no job starts"),
        "{out}"
    );
    let (_, out, _) = w.run(&["--json", "status"]);
    let st: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(st["targets"][0]["governor"]["tier"], "RED", "{st}");

    // Lifted as the hint says: the job runs, and doctor says GREEN.
    std::fs::write(&gov, "GREEN\n").unwrap();
    w.wait_result(&id, Duration::from_secs(20));
    let (_, v) = doctor_json(&w, &[]);
    let c = governor_check(&v).unwrap_or_else(|| panic!("no governor check: {v}"));
    assert_eq!(c["status"], "ok", "{c}");
    drop(listener);
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(
        governor_check(&v),
        None,
        "a stopped listener's governor: {v}"
    );
}

#[test]
fn doctor_has_no_governor_check_for_a_listener_without_one() {
    let w = World::with_target();
    let gov = w.dir.path().join("governor.txt");
    std::fs::write(&gov, "RED\n").unwrap();
    // A listener that had one, then one that has none: the record goes.
    drop(w.spawn_listener(&["--governor-file", gov.to_str().unwrap()]));
    let listener = w.spawn_listener(&[]);
    let (_, v) = doctor_json(&w, &[]);
    assert_eq!(governor_check(&v), None, "{v}");
    drop(listener);
}
