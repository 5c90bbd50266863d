//! The judgements over facts made up here: no disk, a fixed `now`.

use std::path::{Path, PathBuf};

use time::OffsetDateTime;

use super::root::{judge_shape, layout_off};
use super::target::skew_secs;
use super::*;
use crate::platform::Residency;
use crate::store::events::Watching;

fn at(s: &str) -> OffsetDateTime {
    clock::parse(s).unwrap()
}

const NOW: &str = "2026-11-29T19:30:00.000Z";

fn beat(heartbeat_at: &str, fingerprint: &str) -> Beat {
    Beat {
        target: "PC".into(),
        pid: 42,
        state: "listening".into(),
        running: None,
        running_jobs: Vec::new(),
        started_at: "2026-11-29T19:00:00.000Z".into(),
        heartbeat_at: heartbeat_at.into(),
        poll_interval_ms: 2000,
        version: "0.1.0".into(),
        host: "pc".into(),
        instance: "0123456789abcdef".into(),
        key_fingerprint: fingerprint.into(),
        run: "fedcba9876543210".into(),
        alg: None,
        key_id: None,
        sig: String::new(),
    }
}

fn facts(beat: BeatFile) -> TargetFacts {
    TargetFacts {
        prunable: 0,
        markers_due: None,
        name: "PC".into(),
        beat,
        beat_verified: None,
        status: None,
        rejected: Vec::new(),
        counts: vec![("inbox".into(), 3), ("results".into(), 10)],
        conflicts: Vec::new(),
    }
}

fn find<'a>(checks: &'a [Check], name: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.check == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:#?}"))
}

fn judged(t: &TargetFacts) -> Vec<Check> {
    judge_target(t, Some("aaaa0000"), at(NOW), FILE_LIMIT)
}

#[test]
fn a_fresh_heartbeat_with_our_key_and_a_true_clock_passes() {
    let b = BeatFile::Beat(
        Box::new(beat("2026-11-29T19:29:50.000Z", "aaaa0000")),
        Some(at("2026-11-29T19:29:50.000Z")),
    );
    let checks = judged(&facts(b));
    assert!(checks.iter().all(|c| c.status == Status::Ok), "{checks:#?}");
    assert!(checks.iter().all(|c| c.target.as_deref() == Some("PC")));
}

#[test]
fn a_stale_heartbeat_warns_naming_host_and_instance() {
    let b = BeatFile::Beat(Box::new(beat("2026-11-29T19:20:00.000Z", "aaaa0000")), None);
    let c = find(&judged(&facts(b)), "heartbeat").clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("stale"), "{}", c.message);
    assert!(
        c.message.contains("pc, instance 0123456789abcdef"),
        "{}",
        c.message
    );
    let missing = find(&judged(&facts(BeatFile::Missing)), "heartbeat").clone();
    assert_eq!(missing.status, Status::Warn);
}

#[test]
fn a_listener_with_another_key_warns_with_both_fingerprints() {
    let b = BeatFile::Beat(Box::new(beat(NOW, "bbbb1111")), None);
    let c = find(&judged(&facts(b)), "listener key").clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("bbbb1111") && c.message.contains("aaaa0000"));
    // An older listener that reports none is not a mismatch.
    let b = BeatFile::Beat(Box::new(beat(NOW, "")), None);
    assert_eq!(find(&judged(&facts(b)), "listener key").status, Status::Ok);
}

#[test]
fn skew_is_the_heartbeat_time_against_the_file_time_or_the_future() {
    let now = at(NOW);
    let hb = "2026-11-29T19:29:00.000Z";
    assert_eq!(
        skew_secs(hb, Some(at("2026-11-29T19:29:00.000Z")), now),
        Some(0)
    );
    assert_eq!(
        skew_secs(hb, Some(at("2026-11-29T19:24:00.000Z")), now),
        Some(300)
    );
    assert_eq!(
        skew_secs(hb, Some(at("2026-11-29T19:31:00.000Z")), now),
        Some(-120)
    );
    // A heartbeat dated after now is skew, even when its file's time agrees.
    let ahead = "2026-11-29T19:35:00.000Z";
    assert_eq!(skew_secs(ahead, Some(at(ahead)), now), Some(300));
    assert_eq!(skew_secs("soon", None, now), None);
    let b = BeatFile::Beat(
        Box::new(beat(NOW, "aaaa0000")),
        Some(at("2026-11-29T19:25:00.000Z")),
    );
    let c = find(&judged(&facts(b)), "clock").clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("ahead"), "{}", c.message);
}

#[test]
fn a_folder_or_a_target_past_the_limit_warns_and_names_sweep() {
    let t = facts(BeatFile::Missing);
    let c = find(&judge_target(&t, None, at(NOW), 10), "files").clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("results holds 10"), "{}", c.message);
    assert!(c.hint.unwrap().contains("sweep"));
    let c = find(&judge_target(&t, None, at(NOW), 11), "files").clone();
    assert_eq!(c.status, Status::Warn, "13 in all reaches 11");
    let c = find(&judge_target(&t, None, at(NOW), 14), "files").clone();
    assert_eq!(c.status, Status::Ok);
}

#[test]
fn conflict_copies_of_each_engine_are_told_apart_from_our_names() {
    let hosts = vec!["PC".to_string(), "LAPTOP".to_string()];
    let c = |n: &str| conflict_copy(n, &hosts);
    assert_eq!(
        c("20261129-193000-9f2c4e1ab37d5c08.sync-conflict-20261129-193105-ABCDEFG.json"),
        Some(Engine::Syncthing)
    );
    assert_eq!(c("listener-LAPTOP.json"), Some(Engine::OneDrive));
    assert_eq!(c("listener-laptop.json"), Some(Engine::OneDrive));
    assert_eq!(
        c("listener-laptop-safeBackup-0001.json"),
        Some(Engine::OneDrive)
    );
    assert_eq!(
        c("listener (LAPTOP's conflicted copy 2026-11-29).json"),
        Some(Engine::Dropbox)
    );
    assert_eq!(c("listener.json"), None);
    assert_eq!(c("20261129-193000-9f2c4e1ab37d5c08.json"), None);
    assert_eq!(c("20261129-193000-9f2c4e1ab37d5c08.stdout.log"), None);
    assert_eq!(c("x.json.reason.json"), None);
    assert_eq!(c("-PC.json"), None);
}

#[test]
fn a_root_one_level_off_is_named_both_ways() {
    let root = Path::new("/s/fleet-dispatch");
    let high = Shape {
        nested: vec![("fleet-dispatch".into(), vec!["PC".into()])],
        ..Shape::default()
    };
    let c = judge_shape(Path::new("/s"), &high);
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("one level too high"), "{}", c.message);
    // Joined the platform's way (`/s\fleet-dispatch` on Windows).
    let shown = Path::new("/s").join("fleet-dispatch").display().to_string();
    assert!(c.hint.unwrap().contains(&shown));
    let deep = Shape {
        is_target: true,
        ..Shape::default()
    };
    let c = judge_shape(&root.join("PC"), &deep);
    assert!(c.message.contains("too deep"), "{}", c.message);
    assert!(c.hint.unwrap().contains(&root.display().to_string()));
    let inside = Shape {
        inside_target: Some(root.join("PC")),
        ..Shape::default()
    };
    let c = judge_shape(&root.join("PC").join("inbox"), &inside);
    assert!(
        c.message.contains("inside the target folder"),
        "{}",
        c.message
    );
    let fine = Shape {
        targets: vec!["PC".into()],
        nested: vec![("old".into(), vec!["X".into()])],
        ..Shape::default()
    };
    assert_eq!(judge_shape(root, &fine).status, Status::Ok);
    assert_eq!(judge_shape(root, &Shape::default()).status, Status::Ok);
    // Only other folders: some other folder, not a root.
    let foreign = Shape {
        strangers: vec!["Documents".into(), "Pictures".into()],
        ..Shape::default()
    };
    let c = judge_shape(root, &foreign);
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("not a dispatch root"), "{}", c.message);
    assert!(c.message.contains("Documents, Pictures"), "{}", c.message);
    // Its identity file, or a target beside them, makes it a root.
    for fine in [
        Shape {
            identity: true,
            ..foreign.clone()
        },
        Shape {
            targets: vec!["PC".into()],
            ..foreign.clone()
        },
    ] {
        assert_eq!(judge_shape(root, &fine).status, Status::Ok);
    }
}

#[test]
fn a_layout_is_an_inbox_with_results_archive_or_a_heartbeat() {
    let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(holds_layout(&n(&["inbox", "results"])));
    assert!(holds_layout(&n(&["inbox", "listener.json"])));
    assert!(!holds_layout(&n(&["inbox"])));
    assert!(!holds_layout(&n(&["results", "archive"])));
}

#[test]
fn the_engine_is_the_nearest_mark_else_a_onedrive_path() {
    let root = Path::new("/home/u/Sync/fleet-dispatch");
    let marks = vec![(PathBuf::from("/home/u/Sync"), Engine::Syncthing)];
    assert_eq!(engine(root, &marks, &[]).unwrap().0, Engine::Syncthing);
    let od = [PathBuf::from("C:/Users/u/OneDrive - Contoso")];
    let root = Path::new("C:/Users/u/OneDrive - Contoso/fleet-dispatch");
    assert_eq!(engine(root, &[], &od).unwrap().0, Engine::OneDrive);
    assert_eq!(
        engine(Path::new("/home/u/OneDrive/fd"), &[], &[])
            .unwrap()
            .0,
        Engine::OneDrive
    );
    assert_eq!(engine(Path::new("/srv/share/fd"), &[], &[]), None);
}

#[test]
fn an_unpinned_onedrive_root_warns_and_a_unix_root_says_nothing() {
    let facts = |engine: Option<Engine>, residency| RootFacts {
        path: Some(PathBuf::from("/r")),
        state: RootState::Folder { writable: Ok(()) },
        shape: Shape::default(),
        engine: engine.map(|e| (e, String::new())),
        residency,
    };
    let pin = |f: &RootFacts| {
        judge_root(f)
            .into_iter()
            .find(|c| c.check == "kept on device")
            .map(|c| c.status)
    };
    let od = Some(Engine::OneDrive);
    assert_eq!(pin(&facts(od, Residency::Pinned)), Some(Status::Ok));
    assert_eq!(pin(&facts(od, Residency::Unmarked)), Some(Status::Warn));
    assert_eq!(pin(&facts(None, Residency::OnlineOnly)), Some(Status::Warn));
    assert_eq!(pin(&facts(None, Residency::Unmarked)), Some(Status::Ok));
    assert_eq!(pin(&facts(od, Residency::Unknown)), None);
}

#[test]
fn key_problems_each_warn_and_a_missing_key_says_only_that() {
    let k = |file, private| KeyFacts {
        file,
        private,
        inside_root: false,
    };
    let p = PathBuf::from("/k");
    let c = judge_key(&k(KeyFile::Missing(p.clone()), Ok(())));
    assert_eq!(c.len(), 1);
    assert!(c[0].hint.as_ref().unwrap().contains("keygen"));
    // A file that is no key: said so, and no advice on who may read it
    // (`chmod 600 /etc/hostname` protects nothing).
    let exposed = Err(("readable by others".into(), Some("chmod 600".into())));
    let c = judge_key(&k(
        KeyFile::NotAKey(p.clone(), "it holds 5 bytes".into()),
        exposed,
    ));
    assert!(
        c[0].message.contains("not a fleet key file"),
        "{}",
        c[0].message
    );
    assert!(c[0].message.contains("5 bytes"), "{}", c[0].message);
    assert_eq!(c.len(), 1, "{c:?}");
    assert!(!c[0].hint.as_ref().unwrap().contains("keygen --force"));
    let c = judge_key(&k(
        KeyFile::Loaded(p, 64, "aaaa0000".into()),
        Err(("readable by others".into(), Some("chmod 600".into()))),
    ));
    assert_eq!(c[0].status, Status::Ok);
    assert!(c[0].message.contains("aaaa0000"));
    assert_eq!(c[1].status, Status::Warn);
    assert_eq!(c[1].hint.as_deref(), Some("chmod 600"));
}

#[test]
fn rejections_are_counted_by_verdict_and_a_foreign_key_is_named() {
    let r = |verdict: &str, fp: Option<&str>| {
        (
            "x.json".to_string(),
            Reason {
                key_fingerprint: fp.map(str::to_string),
                kind: crate::places::rejected::Kind::Job,
                message: "m".into(),
                rejected_at: NOW.into(),
                target: "PC".into(),
                verdict: verdict.into(),
            },
        )
    };
    let mut t = facts(BeatFile::Missing);
    t.rejected = vec![
        r("bad-signature", Some("bbbb1111")),
        r("bad-signature", Some("bbbb1111")),
        r("malformed", None),
    ];
    let c = find(&judged(&t), "rejected").clone();
    assert_eq!(c.status, Status::Warn);
    assert!(c.message.contains("bad-signature ×2"), "{}", c.message);
    assert!(c.message.contains("malformed ×1"), "{}", c.message);
    assert!(c.hint.unwrap().contains("bbbb1111"));
}

#[test]
fn failures_come_first_and_decide_the_outcome() {
    let r = Report::new(
        vec![
            Check::ok("a", "fine"),
            Check::warn("b", "bad", "fix"),
            Check::ok("c", "fine"),
        ],
        None,
    );
    assert!(!r.ok);
    let order: Vec<&str> = r.checks.iter().map(|c| c.check).collect();
    assert_eq!(order, ["b", "a", "c"]);
    assert!(Report::new(vec![Check::ok("a", "fine")], None).ok);
}

#[test]
fn a_listener_that_fell_back_to_polling_is_a_warning_naming_the_fix() {
    let local = |watching| LocalFacts {
        state_dir: Some(PathBuf::from("/state")),
        inside_root: false,
        targets: vec![LocalTarget {
            name: "pc".into(),
            ledger_bytes: Some(10),
            lock: LockHolder::Held(Some(42)),
            watching: Some(watching),
            governor: None,
        }],
        config: Vec::new(),
    };
    let events = |l: &LocalFacts| {
        judge_local(l)
            .into_iter()
            .find(|c| c.check.contains("events"))
            .expect("an events check")
    };
    // The watch limit reached: a warning, with the sysctl that fixes it.
    let c = events(&local(Watching::Unavailable(
        "OS file watch limit reached. about [\"/r/PC/inbox\"]".into(),
    )));
    assert_eq!(c.status, Status::Warn, "{c:?}");
    assert!(c.message.contains("watching unavailable"), "{}", c.message);
    let hint = c.hint.as_deref().unwrap_or("");
    assert!(hint.contains("fs.inotify.max_user_watches"), "{hint}");
    assert!(hint.contains("fs.inotify.max_user_instances"), "{hint}");
    // Off by the setting is said, not warned; events are said too.
    assert_eq!(events(&local(Watching::Off)).status, Status::Ok);
    assert_eq!(events(&local(Watching::Events)).status, Status::Ok);
    // A listener that no longer runs says nothing of how it watched.
    let mut gone = local(Watching::Unavailable("x".into()));
    gone.targets[0].lock = LockHolder::Free;
    assert!(
        judge_local(&gone)
            .iter()
            .all(|c| !c.check.contains("events"))
    );
}

#[test]
fn a_root_holding_a_targets_folders_and_no_target_is_too_deep() {
    let n = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // What senders alone make in a target whose listener never ran.
    assert!(too_deep(&n(&["inbox", "cancel"]), 0));
    assert!(too_deep(&n(&["inbox", "results", "PC"]), 1));
    // A new root, one with its identity file, one with targets.
    assert!(!too_deep(&n(&[]), 0));
    assert!(!too_deep(&n(&["fleet-root.json", "PC"]), 1));
    assert!(!too_deep(&n(&["cancel", "PC"]), 1));
    let deep = Shape {
        is_target: true,
        own_layout: n(&["inbox", "cancel"]),
        ..Shape::default()
    };
    let off = layout_off(Path::new("/s/PC"), &deep).unwrap();
    assert!(
        off.message.contains("it holds inbox, cancel"),
        "{}",
        off.message
    );
    assert_eq!(off.root.as_deref(), Some(Path::new("/s")));
    assert_eq!(layout_off(Path::new("/s"), &Shape::default()), None);
}
