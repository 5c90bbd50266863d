//! The heartbeat's unit tests: the liveness rules, the tracker, the
//! rival rule and the beat's signature.

use super::liveness::REMEMBERED;
use super::*;

#[test]
fn alive_rule() {
    assert!(alive("listening", Some(Duration::from_secs(5))));
    assert!(alive("running", Some(STALE_AFTER)));
    assert!(!alive(
        "running",
        Some(STALE_AFTER + Duration::from_secs(1))
    ));
    assert!(!alive("stopped", Some(Duration::ZERO)));
    assert!(!alive("listening", None));
    // Dated hours off by a stepped clock, its file just written: alive.
    let hours = Some(Duration::from_secs(3 * 3600));
    let now = Some(Duration::from_secs(2));
    assert!(seen_alive("listening", hours, now));
    assert!(seen_alive("listening", None, now));
    assert!(!seen_alive("listening", hours, hours));
    assert!(!seen_alive("stopped", now, now));
}

fn sight(run: &str, at: &str, age: Option<u64>) -> Sight {
    Sight::Beat {
        mark: (run.into(), at.into()),
        stopped: false,
        age: age.map(Duration::from_secs),
    }
}

#[test]
fn a_tracker_judges_by_new_beats_on_its_own_clock() {
    let t0 = std::time::Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let mut t = Tracker::new(STALE_AFTER);
    // First seen: judged by its age, as a one-shot reader would.
    assert_eq!(t.see(sight("r1", "a", Some(5)), at(0)), Liveness::Alive);
    // The same beat, STALE_AFTER later by this clock: quiet since.
    assert_eq!(
        t.see(sight("r1", "a", Some(5)), at(90)),
        Liveness::Quiet(Some(Duration::from_secs(95)))
    );
    // A new beat, whatever time it bears (hours behind): alive again.
    assert_eq!(t.see(sight("r1", "b", None), at(91)), Liveness::Alive);
    assert_eq!(
        t.see(sight("r1", "b", None), at(91 + 91)),
        Liveness::Quiet(Some(Duration::from_secs(91)))
    );
    // An old beat put back is not new.
    assert_eq!(
        t.see(sight("r1", "a", Some(0)), at(91 + 92)),
        Liveness::Quiet(Some(Duration::from_secs(92)))
    );
    // A new run is.
    assert_eq!(t.see(sight("r2", "a", None), at(200)), Liveness::Alive);
    // A first beat already old, or of no known age: not alive.
    let mut t = Tracker::new(STALE_AFTER);
    assert_eq!(
        t.see(sight("r1", "a", Some(600)), at(0)),
        Liveness::Quiet(Some(Duration::from_secs(600)))
    );
    let mut t = Tracker::new(STALE_AFTER);
    assert_eq!(t.see(sight("r1", "a", None), at(0)), Liveness::Quiet(None));
    assert_eq!(t.see(sight("r1", "x", None), at(1)), Liveness::Alive);
    // Stopped, with how long ago by this clock; missing; unverified.
    let stopped = Sight::Beat {
        mark: ("r1".into(), "z".into()),
        stopped: true,
        age: Some(Duration::from_secs(3)),
    };
    assert_eq!(
        t.see(stopped, at(11)),
        Liveness::Stopped(Some(Duration::ZERO))
    );
    assert_eq!(t.see(Sight::Missing, at(12)), Liveness::Never);
    assert_eq!(t.see(Sight::Unverified, at(12)), Liveness::Unverified);
    // A shorter staleness, as a wait may be told.
    let mut t = Tracker::new(Duration::from_secs(2));
    assert_eq!(t.see(sight("r1", "a", Some(0)), at(0)), Liveness::Alive);
    assert!(matches!(
        t.see(sight("r1", "a", Some(0)), at(3)),
        Liveness::Quiet(_)
    ));
}

#[test]
fn a_tracker_forgets_only_its_oldest_beats() {
    let t0 = std::time::Instant::now();
    let mut t = Tracker::new(STALE_AFTER);
    for i in 0..REMEMBERED + 1 {
        t.see(sight("r", &i.to_string(), Some(0)), t0);
    }
    let late = t0 + STALE_AFTER + Duration::from_secs(1);
    // The last one is remembered: not new, so quiet by now.
    assert!(matches!(
        t.see(sight("r", &REMEMBERED.to_string(), Some(0)), late),
        Liveness::Quiet(_)
    ));
}

fn key(b: u8) -> Key {
    Key::from_bytes(&[b; 32]).unwrap()
}

/// A fresh beat of `instance`/`run`, signed with `k` when given.
fn beat(instance: &str, run: &str, at: &str, k: Option<&Key>) -> Beat {
    let b = Beat {
        target: "PC".into(),
        pid: 42,
        state: "listening".into(),
        running: None,
        running_jobs: Vec::new(),
        started_at: at.into(),
        heartbeat_at: at.into(),
        poll_interval_ms: 2000,
        version: "0.1.0".into(),
        host: "pc|x".into(),
        instance: instance.into(),
        key_fingerprint: "aaaa0000".into(),
        run: run.into(),
        alg: None,
        key_id: None,
        sig: String::new(),
    };
    let sig = k.map(|k| k.sign(&b.canonical())).unwrap_or_default();
    Beat { sig, ..b }
}

#[test]
fn canonical_string_puts_the_host_last() {
    let b = beat("i1", "r1", "2026-11-29T19:30:00.000Z", None);
    assert_eq!(
        b.canonical(),
        "heartbeat|PC|i1|r1|42|listening|||2026-11-29T19:30:00.000Z|2026-11-29T19:30:00.000Z|2000|0.1.0|aaaa0000|pc|x"
    );
}

fn pc() -> Machine {
    Machine::parse("PC", "target").unwrap()
}

#[test]
fn the_door_gives_a_verified_beat_or_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = TargetDirs::new(tmp.path(), &pc());
    let k = key(1);
    assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Missing));
    std::fs::create_dir_all(dirs.base()).unwrap();
    assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Missing));
    let file = dirs.base().join(LISTENER_JSON);
    std::fs::write(&file, b"{").unwrap();
    assert_eq!(judged(&dirs, &k), Err(BeatVerdict::Malformed));
    std::fs::write(&file, vec![b' '; MAX_BYTES as usize + 1]).unwrap();
    assert_eq!(judged(&dirs, &k), Err(BeatVerdict::NotRead));
    let genuine = beat("i1", "r1", "2026-11-29T19:30:00.000Z", Some(&k));
    std::fs::write(&file, crate::protocol::doc::to_file_bytes(&genuine)).unwrap();
    assert_eq!(judged(&dirs, &k), Ok(genuine.clone()));
    assert_eq!(peek(&dirs), Ok(genuine.clone()));
    assert_eq!(
        judged(&dirs, &key(2)),
        Err(BeatVerdict::Unverified(Box::new(genuine)))
    );
    let unsigned = beat("i1", "r1", "2026-11-29T19:30:00.000Z", None);
    std::fs::write(&file, crate::protocol::doc::to_file_bytes(&unsigned)).unwrap();
    assert_eq!(
        judged(&dirs, &k),
        Err(BeatVerdict::Unverified(Box::new(unsigned)))
    );
}

#[test]
fn every_field_a_reader_trusts_is_signed() {
    let k = key(1);
    let b = beat("i1", "r1", "2026-11-29T19:30:00.000Z", Some(&k));
    assert!(b.verified(&k, &pc()));
    // The same genuine beat read as another target's: not that one's.
    assert!(!b.verified(&k, &Machine::parse("LAPTOP", "target").unwrap()));
    assert!(b.verified(&k, &Machine::parse("pc", "target").unwrap()));
    let edits: [fn(&mut Beat); 4] = [
        |b| b.running_jobs = vec!["job-2".into()],
        |b| b.running = Some("job-2".into()),
        |b| b.state = "stopped".into(),
        |b| b.heartbeat_at = "2026-11-29T19:31:00.000Z".into(),
    ];
    for edit in edits {
        let mut forged = b.clone();
        edit(&mut forged);
        assert!(!forged.verified(&k, &pc()), "{forged:?}");
    }
    assert!(!b.verified(&key(2), &pc()));
}

#[test]
fn only_a_verified_beat_we_did_not_write_is_a_rival() {
    let k = key(1);
    let now = clock::format(clock::now());
    let own = Own {
        instance: "i1".into(),
        run: "r1".into(),
        previous: Some(Written {
            run: "r0".into(),
            at: now.clone(),
        }),
    };
    // Unsigned, or signed with another key: never.
    assert!(!is_rival(&beat("i2", "r9", &now, None), &k, &pc(), &own));
    assert!(!is_rival(
        &beat("i2", "r9", &now, Some(&key(2))),
        &k,
        &pc(),
        &own
    ));
    let mut tampered = beat("i2", "r9", &now, Some(&k));
    tampered.pid = 43;
    assert!(!is_rival(&tampered, &k, &pc(), &own));
    // Another instance: yes; ours from this run: no.
    assert!(is_rival(&beat("i2", "r9", &now, Some(&k)), &k, &pc(), &own));
    assert!(!is_rival(
        &beat("i1", "r1", &now, Some(&k)),
        &k,
        &pc(),
        &own
    ));
    // Our previous run's leftover, no later than its record: no; the
    // same run carrying on after the record (a clone): yes.
    assert!(!is_rival(
        &beat("i1", "r0", &now, Some(&k)),
        &k,
        &pc(),
        &own
    ));
    let earlier = Own {
        previous: Some(Written {
            run: "r0".into(),
            at: clock::format(clock::now() - Duration::from_secs(1)),
        }),
        ..own.clone()
    };
    assert!(is_rival(
        &beat("i1", "r0", &now, Some(&k)),
        &k,
        &pc(),
        &earlier
    ));
    // Our instance from an unknown run (a copied state directory).
    assert!(is_rival(&beat("i1", "r7", &now, Some(&k)), &k, &pc(), &own));
    // Stale or stopped: no.
    let old = clock::format(clock::now() - Duration::from_secs(120));
    assert!(!is_rival(
        &beat("i2", "r9", &old, Some(&k)),
        &k,
        &pc(),
        &own
    ));
}
