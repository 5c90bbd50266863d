//! Unit tests of the local state: the lock, the instance id and the ledger
//! (its lines, replay, compaction and the fixture of an older format).

use super::*;
use crate::base::names::Machine;
use time::macros::datetime;

fn state() -> (tempfile::TempDir, StateDirs) {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
    std::fs::create_dir_all(state.base()).unwrap();
    (dir, state)
}

const TEN_DAYS: Duration = Duration::from_secs(86400 * 10);

#[test]
fn ledger_keeps_recent_ids_and_drops_old_ones() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.record("old", t0, b"r1").unwrap();
    l.record("new", t0 + time::Duration::days(9), b"r2")
        .unwrap();
    l.checkpoint(t0).unwrap();
    let path = l.path().to_path_buf();
    drop(l);
    // A torn line from a crash is skipped.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"jobId\":\"x")
        .unwrap();
    let later = t0 + time::Duration::days(15);
    let (mut l, left) = Ledger::load(&state, later, TEN_DAYS).unwrap();
    assert!(!l.contains("old"));
    assert!(l.contains("new"));
    assert!(!l.contains("x"));
    assert!(left.started.is_empty() && left.recorded.is_empty());
    assert!(l.wants_checkpoint());
    l.checkpoint(later).unwrap();
    let text = std::fs::read_to_string(l.path()).unwrap();
    assert_eq!(text.lines().count(), 1, "compacted: {text}");
}

#[test]
fn a_start_without_a_result_and_results_after_the_checkpoint_are_unfinished() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.start("a", t0, true).unwrap();
    l.note_pid("a", 41).unwrap();
    l.record("a", t0, b"result a").unwrap();
    l.checkpoint(t0).unwrap();
    l.start("b", t0, true).unwrap();
    l.note_pid("b", 42).unwrap();
    l.record("b", t0, b"result b").unwrap();
    l.start("c", t0, true).unwrap();
    l.note_pid("c", 43).unwrap();
    drop(l);
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("a") && l.contains("b") && l.contains("c"));
    assert_eq!(
        left.recorded,
        vec![Recorded {
            job_id: "b".into(),
            result: b"result b".to_vec()
        }]
    );
    assert_eq!(
        left.started,
        vec![Started {
            job_id: "c".into(),
            started_at: crate::base::clock::format(t0),
            pid: 43
        }]
    );
    assert!(l.wants_checkpoint(), "recovery is followed by a rewrite");
}

#[test]
fn compaction_while_a_job_runs_keeps_its_start_and_pid_for_recovery() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    // A damaged line makes the first checkpoint compact.
    std::fs::write(state.ledger(), b"{\"jobId\":\"x\n").unwrap();
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.wants_checkpoint());
    l.start("long", t0, true).unwrap();
    l.note_pid("long", 4242).unwrap();
    l.start("short", t0, true).unwrap();
    l.record("short", t0, b"result short").unwrap();
    l.checkpoint(t0).unwrap();
    assert!(!l.wants_checkpoint(), "compacted");
    drop(l);
    let text = std::fs::read_to_string(state.ledger()).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("long") && l.contains("short"));
    assert!(left.recorded.is_empty());
    assert_eq!(
        left.started,
        vec![Started {
            job_id: "long".into(),
            started_at: crate::base::clock::format(t0),
            pid: 4242
        }]
    );
}

#[test]
fn compaction_keeps_one_plain_line_per_id_and_nothing_to_recover() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    let big = vec![b'x'; 64 * 1024];
    for i in 0..100 {
        let id = format!("j{i}");
        l.start(&id, t0, true).unwrap();
        l.record(&id, t0, &big).unwrap();
    }
    let before = std::fs::metadata(l.path()).unwrap().len();
    assert!(before > COMPACT_AFTER, "{before}");
    l.checkpoint(t0).unwrap();
    let text = std::fs::read_to_string(l.path()).unwrap();
    assert_eq!(text.lines().count(), 100, "compacted");
    assert!(!text.contains("result"), "{}", &text[..200]);
    // Appends go on to the new file.
    l.start("after", t0, true).unwrap();
    drop(l);
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("j0") && l.contains("j99") && l.contains("after"));
    assert_eq!(left.started.len(), 1);
    assert!(left.recorded.is_empty());
}

/// A ledger written by the binary before line versions, pinned.
const LEDGER_V1: &[u8] = include_bytes!("../../../tests/data/ledger-v1.jsonl");
const V1_IDS: [&str; 5] = [
    "20261101-080000-0123456789abcdef",
    "20261101-080100-fedcba9876543210",
    "job-a",
    "job-b",
    "job-c",
];

/// A state dir holding the pinned version 1 ledger.
fn upgraded() -> (tempfile::TempDir, StateDirs) {
    let (dir, state) = state();
    std::fs::write(state.ledger(), LEDGER_V1).unwrap();
    (dir, state)
}

fn v1_job_b() -> Recorded {
    Recorded {
        job_id: "job-b".into(),
        result: b"{\"v\":1,\"jobId\":\"job-b\",\"ok\":true}\n".to_vec(),
    }
}

#[test]
fn a_version_1_ledger_loads_with_its_ids_and_its_unfinished_job() {
    let (_dir, state) = upgraded();
    let now = datetime!(2026-11-01 09:00 UTC);
    let (mut l, left) = Ledger::load(&state, now, TEN_DAYS).unwrap();
    for id in V1_IDS {
        assert!(l.contains(id), "{id}");
    }
    assert!(!l.contains("job-d"));
    assert_eq!(left.recorded, vec![v1_job_b()]);
    assert_eq!(
        left.started,
        vec![Started {
            job_id: "job-c".into(),
            started_at: "2026-11-01T08:08:00.125Z".into(),
            pid: 4301
        }]
    );
    // Once recovery is done the file is rewritten in the current format.
    assert!(l.wants_checkpoint());
    l.checkpoint(now).unwrap();
    let text = std::fs::read_to_string(l.path()).unwrap();
    assert_eq!(text.lines().count(), V1_IDS.len(), "{text}");
    assert!(
        text.lines()
            .all(|l| l.starts_with(r#"{"v":2,"kind":"record","#))
    );
    drop(l);
    let (l, left) = Ledger::load(&state, now, TEN_DAYS).unwrap();
    assert!(V1_IDS.iter().all(|id| l.contains(id)));
    assert!(left.started.is_empty() && left.recorded.is_empty());
}

#[test]
fn version_2_lines_appended_to_a_version_1_ledger_read_back_with_it() {
    let (_dir, state) = upgraded();
    let t = datetime!(2026-11-01 09:00 UTC);
    let (mut l, _) = Ledger::load(&state, t, TEN_DAYS).unwrap();
    // Recovery records the interrupted job; then the next job starts.
    l.record("job-c", t, b"result c").unwrap();
    l.start("job-d", t, true).unwrap();
    l.note_pid("job-d", 7).unwrap();
    drop(l);
    let appended = std::fs::read(state.ledger()).unwrap()[LEDGER_V1.len()..].to_vec();
    let appended = String::from_utf8(appended).unwrap();
    assert_eq!(appended.lines().count(), 3);
    assert!(
        appended.lines().all(|l| l.starts_with(r#"{"v":2,"#)),
        "{appended}"
    );
    // Lines a later version wrote are skipped without losing the others.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(state.ledger())
        .unwrap();
    f.write_all(b"{\"v\":3,\"kind\":\"start\",\"jobId\":\"job-e\"}\n")
        .unwrap();
    f.write_all(b"{\"v\":2,\"kind\":\"lease\",\"jobId\":\"job-d\"}\n")
        .unwrap();
    drop(f);
    let (l, left) = Ledger::load(&state, t, TEN_DAYS).unwrap();
    assert!(V1_IDS.iter().all(|id| l.contains(id)) && l.contains("job-d"));
    assert!(!l.contains("job-e"));
    let recorded_c = Recorded {
        job_id: "job-c".into(),
        result: b"result c".to_vec(),
    };
    assert_eq!(left.recorded, vec![v1_job_b(), recorded_c]);
    assert_eq!(
        left.started,
        vec![Started {
            job_id: "job-d".into(),
            started_at: crate::base::clock::format(t),
            pid: 7
        }]
    );
}

#[test]
fn a_second_lock_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let state = StateDirs::new(dir.path(), &Machine::parse("PC", "t").unwrap());
    let _held = Lock::acquire(&state, "PC").unwrap();
    let err = Lock::acquire(&state, "PC").unwrap_err();
    assert_eq!(err.code, Code::Busy);
    assert!(
        err.message.contains(&std::process::id().to_string()),
        "{}",
        err.message
    );
}

#[test]
fn a_line_torn_by_a_crash_is_cut_so_the_next_start_reads_back() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.start("a", t0, true).unwrap();
    let path = l.path().to_path_buf();
    drop(l);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(b"{\"v\":2,\"kind\":\"res").unwrap();
    drop(f);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.start("b", t0, true).unwrap();
    // A second crash: nothing is cut this time.
    std::mem::forget(l);
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("a") && l.contains("b"));
    let started: Vec<_> = left.started.iter().map(|s| s.job_id.as_str()).collect();
    assert_eq!(started, ["a", "b"]);
}

#[test]
fn lines_are_written_into_zeroed_space_which_a_clean_stop_cuts_off() {
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.start("a", t0, true).unwrap();
    let path = l.path().to_path_buf();
    let text = std::fs::read(&path).unwrap();
    let end = lines_end(&text);
    assert!(
        text.len() as u64 >= end as u64 + GROW_BY,
        "room ahead of the line"
    );
    assert!(text[end..].iter().all(|&b| b == 0));
    // Lines fill the room in order, and more room is added as they pass it.
    let big = vec![b'x'; GROW_BY as usize];
    l.record("a", t0, &big).unwrap();
    l.start("b", t0, true).unwrap();
    let text = std::fs::read(&path).unwrap();
    let end = lines_end(&text);
    assert!(end as u64 > GROW_BY && text.len() > end);
    assert!(text[end..].iter().all(|&b| b == 0));
    // A listener killed here leaves the zeros; the next one reads past them.
    std::mem::forget(l);
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("a") && l.contains("b"));
    assert_eq!(left.started.len(), 1);
    drop(l);
    let text = std::fs::read(&path).unwrap();
    assert_eq!(text.last(), Some(&b'\n'), "cut to its last line");
    assert!(!text.contains(&0));
}

#[test]
fn lines_after_zeroed_space_are_read() {
    // What an older binary appends to a ledger a killed listener left with
    // zeroed space: read, past the zeros.
    let (_dir, state) = state();
    let t0 = datetime!(2026-11-01 00:00 UTC);
    let (mut l, _) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    l.start("a", t0, true).unwrap();
    let path = l.path().to_path_buf();
    std::mem::forget(l);
    let later = r#"{"v":2,"kind":"start","jobId":"b","processedAt":"2026-11-01T00:00:00.000Z"}"#;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    f.write_all(format!("{later}\n").as_bytes()).unwrap();
    drop(f);
    let (l, left) = Ledger::load(&state, t0, TEN_DAYS).unwrap();
    assert!(l.contains("a") && l.contains("b"));
    assert_eq!(left.started.len(), 2);
}

#[test]
fn a_plain_records_length_is_known_without_making_it() {
    for (id, at) in [
        (
            "20261129-193000-9f2c4e1ab37d5c08",
            datetime!(2026-11-29 19:30:00.5 +01:00),
        ),
        ("a", datetime!(0001-01-01 00:00:00 UTC)),
        ("not an id \"quoted\"", datetime!(2026-01-01 00:00:00 UTC)),
        ("x-1", datetime!(-0001-01-01 00:00:00 UTC)),
    ] {
        assert_eq!(plain_len(id, at), plain(id, at).len() as u64, "{id} {at}");
    }
}
