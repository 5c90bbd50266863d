//! Unit tests of the acceptance rules: each verdict, driven with plain
//! values.

use super::*;
use time::macros::datetime;

fn key() -> Key {
    Key::from_bytes(&[9u8; 32]).unwrap()
}

fn signed_marker(id: &str, target: &str) -> Vec<u8> {
    let k = key();
    let m = Marker {
        job_id: id.into(),
        target: target.into(),
        created_at: "2026-11-29T19:31:00.000Z".into(),
        origin: "LAPTOP".into(),
        alg: None,
        key_id: None,
        sig: k.sign(&marker::canonical(
            id,
            target,
            "2026-11-29T19:31:00.000Z",
            "LAPTOP",
        )),
    };
    serde_json::to_vec(&m).unwrap()
}

#[test]
fn a_signed_marker_is_valid_and_case_of_target_folds() {
    let m = marker(
        "abc.json",
        FileRead::Bytes(signed_marker("abc", "PC")),
        "pc",
        &key(),
    )
    .unwrap();
    assert_eq!(m.job_id, "abc");
}

#[test]
fn steps_fail_in_spec_order() {
    // A renamed file that is also for another target: the name check (5) wins over the target (6).
    let r = marker(
        "xyz.json",
        FileRead::Bytes(signed_marker("abc", "LAPTOP")),
        "PC",
        &key(),
    );
    assert_eq!(r.unwrap_err().verdict, Verdict::JobIdMismatch);
    // Too large wins over everything readable.
    let r = marker("abc.json", FileRead::TooLarge(20_000), "PC", &key());
    assert_eq!(r.unwrap_err().verdict, Verdict::TooLarge);
    let r = marker(
        "abc.json",
        FileRead::NotAFile("symbolic link"),
        "PC",
        &key(),
    );
    assert_eq!(r.unwrap_err().verdict, Verdict::NotAFile);
    let r = marker("abc.json", FileRead::Bytes(b"[1]".to_vec()), "PC", &key());
    assert_eq!(r.unwrap_err().verdict, Verdict::Malformed);
    let r = marker(
        "abc.json",
        FileRead::Bytes(br#"{"jobId":1}"#.to_vec()),
        "PC",
        &key(),
    );
    assert_eq!(r.unwrap_err().verdict, Verdict::Malformed);
    let r = marker("abc.json", FileRead::Bytes(vec![0xff, 0xfe]), "PC", &key());
    assert_eq!(r.unwrap_err().verdict, Verdict::Malformed);
    let big = vec![b' '; 17 * 1024];
    let r = marker("abc.json", FileRead::Bytes(big), "PC", &key());
    assert_eq!(r.unwrap_err().verdict, Verdict::TooLarge);
}

#[test]
fn another_key_is_a_bad_signature() {
    let other = Key::from_bytes(&[8u8; 32]).unwrap();
    let r = marker(
        "abc.json",
        FileRead::Bytes(signed_marker("abc", "PC")),
        "PC",
        &other,
    );
    assert_eq!(r.unwrap_err().verdict, Verdict::BadSignature);
}

#[test]
fn stale_and_future_jobs() {
    let now = datetime!(2026-11-29 12:00 UTC);
    let week = Duration::from_secs(7 * 86400);
    assert!(freshness(now - time::Duration::days(6), now, week).is_ok());
    assert_eq!(
        freshness(now - time::Duration::days(8), now, week)
            .unwrap_err()
            .verdict,
        Verdict::Stale
    );
    // Dated in the future: never stale, deferred beyond the hour.
    assert!(freshness(now + time::Duration::hours(3), now, week).is_ok());
    assert_eq!(ahead(now + time::Duration::minutes(59), now), None);
    assert_eq!(ahead(now - time::Duration::days(1), now), None);
    assert_eq!(
        ahead(now + time::Duration::hours(3), now),
        Some(Duration::from_secs(3 * 3600))
    );
    assert!(ahead_reason(Duration::from_secs(3 * 3600)).contains("3h00m ahead"));
}

#[test]
fn replay_names_where_it_was_seen() {
    let id = JobId::parse("a").unwrap();
    assert!(replay(&id, None).is_ok());
    let r = replay(&id, Some("archive/done")).unwrap_err();
    assert_eq!(r.verdict, Verdict::AlreadyProcessed);
    assert!(r.message.contains("archive/done"));
}

#[test]
fn a_bad_marker_waits_only_while_it_may_be_arriving_and_not_yet_settled() {
    let asked = std::cell::Cell::new(0);
    let never = || {
        asked.set(asked.get() + 1);
        false
    };
    assert_eq!(bad_marker(Verdict::Missing, never), BadMarker::Gone);
    assert_eq!(
        bad_marker(Verdict::BadSignature, never),
        BadMarker::SetAside
    );
    assert_eq!(
        bad_marker(Verdict::TargetMismatch, never),
        BadMarker::SetAside
    );
    assert_eq!(
        asked.get(),
        0,
        "the settle rule is asked only of a file that may be arriving"
    );
    for v in [Verdict::Malformed, Verdict::Unreadable] {
        assert_eq!(bad_marker(v, never), BadMarker::Wait);
        assert_eq!(bad_marker(v, || true), BadMarker::SetAside);
    }
    assert_eq!(asked.get(), 2);
}
