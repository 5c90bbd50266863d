//! Unit tests of naming a job: prefixes, `last`, the nearest ids and
//! the ids this machine sent.

use super::*;
use crate::base::names::Machine;
use crate::local::sent::remember;

fn world() -> (tempfile::TempDir, TargetDirs) {
    let dir = tempfile::tempdir().unwrap();
    let dirs = TargetDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
    dirs.make_all().unwrap();
    (dir, dirs)
}

fn key() -> Key {
    Key::from_bytes(&[7u8; 32]).unwrap()
}

/// A job signed with [`key`] for PC, written as `dir/<id>.json`.
fn signed(dir: &std::path::Path, id: &str) {
    signed_for(dir, id, "PC");
}

fn signed_for(dir: &std::path::Path, id: &str, target: &str) {
    let job = crate::protocol::doc::Job::sign(
        &key(),
        JobId::parse(id).unwrap(),
        target,
        "PC",
        crate::base::clock::now(),
        crate::protocol::doc::Spec::of(vec!["true".into()]),
    );
    std::fs::write(dir.join(format!("{id}.json")), job.to_file_bytes()).unwrap();
}

#[test]
fn a_unique_prefix_names_its_verified_job_and_an_ambiguous_one_lists_them() {
    let (_d, dirs) = world();
    let key = key();
    signed(&dirs.inbox(), "20261201-0900-aaaa1111");
    signed(&dirs.rejected(), "20261201-0900-aaaa2222");
    signed(&dirs.done(), "20261201-0900-bbbb3333");
    let got = resolve(&dirs, None, &key, "20261201-0900-b").unwrap();
    assert_eq!(got.as_str(), "20261201-0900-bbbb3333");
    let e = resolve(&dirs, None, &key, "20261201-0900-aaaa").unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::Validation);
    assert!(
        e.message.contains("aaaa1111") && e.message.contains("aaaa2222"),
        "{}",
        e.message
    );
    // A full id nothing knows yet is taken as it is.
    assert_eq!(
        resolve(&dirs, None, &key, "not-synced-yet")
            .unwrap()
            .as_str(),
        "not-synced-yet"
    );
}

#[test]
fn a_file_that_does_not_verify_takes_no_part_and_an_exact_id_wins() {
    let (_d, dirs) = world();
    let key = key();
    // Planted: not JSON, unsigned, signed for another target.
    std::fs::write(dirs.inbox().join("nightly-x.json"), b"junk").unwrap();
    std::fs::write(dirs.results().join("nightly-y.json"), b"{}").unwrap();
    // Signed, but for another target, or under another id's name.
    signed_for(&dirs.inbox(), "nightly-v", "LAPTOP");
    signed(&dirs.done(), "nightly-z");
    let moved = dirs.inbox().join("nightly-w.json");
    std::fs::rename(dirs.done().join("nightly-z.json"), moved).unwrap();
    let got = resolve(&dirs, None, &key, "nightly").unwrap();
    assert_eq!(got.as_str(), "nightly", "taken as it is");
    // A verified job it is the start of is named by it ...
    signed(&dirs.done(), "nightly-2");
    assert_eq!(
        resolve(&dirs, None, &key, "nightly").unwrap().as_str(),
        "nightly-2"
    );
    // ... until a job of exactly that id is known.
    signed(&dirs.inbox(), "nightly");
    assert_eq!(
        resolve(&dirs, None, &key, "nightly").unwrap().as_str(),
        "nightly"
    );
    // The command's own job is known and wins as exactly.
    let mut names = Names::new(&key, None);
    names.add_own(dirs.target(), &JobId::parse("night").unwrap());
    assert_eq!(names.resolve(&dirs, "night").unwrap().as_str(), "night");
    assert_eq!(
        names.resolve(&dirs, "nig").unwrap_err().code,
        crate::base::error::Code::Validation
    );
}

#[test]
fn the_nearest_ids_are_by_edit_distance_then_common_start() {
    assert_eq!(edit_distance("build-1243", "build-1234"), 2);
    assert_eq!(edit_distance("", "abc"), 3);
    assert_eq!(edit_distance("same", "same"), 0);
    let known = ["build-1234", "deploy-77", "build-9999", "build-124"];
    assert_eq!(
        nearest("build-1243", known.into_iter(), 2),
        ["build-124", "build-1234"]
    );
    assert!(nearest("x", std::iter::empty(), 3).is_empty());
}

#[test]
fn an_id_is_known_by_its_folders_or_as_sent_from_here_and_refused_otherwise() {
    let (d, dirs) = world();
    let state = d.path().join("state");
    let key = key();
    let id = |s: &str| JobId::parse(s).unwrap();
    let mut names = Names::new(&key, Some(state.clone()));
    signed(&dirs.done(), "build-1234");
    assert!(names.is_known(&dirs, &id("build-1234")));
    let e = names
        .check_known(&dirs, &id("build-1243"), "--force")
        .unwrap_err();
    assert_eq!(e.code, crate::base::error::Code::NotFound);
    assert!(e.message.contains("build-1234"), "{}", e.message);
    // Sent from here, not synced: known, and still after `last` moved on.
    remember(&state, dirs.target(), &id("sent-1")).unwrap();
    remember(&state, dirs.target(), &id("sent-2")).unwrap();
    assert!(names.is_known(&dirs, &id("sent-1")));
    let other = TargetDirs::new(d.path(), &Machine::parse("LAPTOP", "t").unwrap());
    assert!(!names.is_known(&other, &id("sent-1")), "sent to PC only");
}

#[test]
fn last_is_the_last_job_enqueued_to_that_target() {
    let (d, dirs) = world();
    let state = d.path().join("state");
    let key = key();
    assert_eq!(
        resolve(&dirs, Some(&state), &key, LAST).unwrap_err().code,
        crate::base::error::Code::NotFound
    );
    remember(&state, dirs.target(), &JobId::parse("j-1").unwrap()).unwrap();
    assert_eq!(
        resolve(&dirs, Some(&state), &key, LAST).unwrap().as_str(),
        "j-1"
    );
    let other = TargetDirs::new(d.path(), &Machine::parse("LAPTOP", "t").unwrap());
    let e = resolve(&other, Some(&state), &key, LAST).unwrap_err();
    assert!(e.message.contains("went to PC"), "{}", e.message);
    // A fan-out's copies: `last` names the id on each of its targets,
    // until another id is enqueued.
    remember(&state, other.target(), &JobId::parse("j-1").unwrap()).unwrap();
    assert_eq!(
        resolve(&dirs, Some(&state), &key, LAST).unwrap().as_str(),
        "j-1"
    );
    assert_eq!(
        resolve(&other, Some(&state), &key, LAST).unwrap().as_str(),
        "j-1"
    );
    remember(&state, other.target(), &JobId::parse("j-2").unwrap()).unwrap();
    let e = resolve(&dirs, Some(&state), &key, LAST).unwrap_err();
    assert!(
        e.message.contains("went to LAPTOP, not PC"),
        "{}",
        e.message
    );
}
