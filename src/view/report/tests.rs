//! The page's promises, over a model whose every folder text is hostile.

use std::collections::BTreeMap;

use super::*;
use crate::places::report::{Bar, BeatSeen, Gap, Lane, Listener, Mark, NotWell, Refusal};

const EVIL: &str =
    "<script>document.title='pwned'</script><img src=x onerror=alert(1)>\"'&\u{1b}[2J";

fn bar(outcome: Ending, sealed: bool) -> Bar {
    Bar {
        job_id: "20261203-100000-0123456789abcdef".into(),
        outcome,
        exit_code: 3,
        exit: "exit 3".into(),
        created_ms: Some(1_000),
        started_ms: Some(2_000),
        finished_ms: 5_000,
        finished_at: EVIL.into(),
        duration_ms: Some(3_000),
        label: Some(EVIL.into()),
        argv: Some(EVIL.into()),
        sealed,
    }
}

fn fleet(jobs: Vec<Bar>) -> Fleet {
    let lane = Lane {
        target: "PC".into(),
        finished: jobs.len(),
        jobs,
        aggregated: false,
        slices: Vec::new(),
        rejected: vec![Refusal {
            name: format!("{EVIL}.json"),
            verdict: EVIL.into(),
            message: EVIL.into(),
            rejected_at: EVIL.into(),
            at_ms: 4_000,
        }],
        listener: Listener {
            beat: Some(BeatSeen {
                state: EVIL.into(),
                heartbeat_at: EVIL.into(),
                heartbeat_ms: 5_500,
                alive: false,
                version: EVIL.into(),
                host: EVIL.into(),
            }),
            restarts: vec![Mark {
                at_ms: 3_000,
                what: "listener started".into(),
            }],
            gaps: vec![Gap {
                from_ms: 5_500,
                to_ms: 9_000,
                what: "silent".into(),
            }],
        },
        queue: vec![0, 1, 2, 1],
        queued_now: 1,
        totals: BTreeMap::from([("failed", 1), ("rejected", 1)]),
        median_run_ms: Some(3_000),
        unverified_files: 2,
    };
    Fleet {
        made_at: "2026-12-03T10:00:00.000Z".into(),
        from: "x".into(),
        from_ms: 0,
        to_ms: 10_000,
        since: false,
        key_fingerprint: "abcd1234".into(),
        roster_version: None,
        bar_limit: 1500,
        fleet_bar_limit: 3000,
        slices: 4,
        unverified_files: 2,
        lanes: vec![lane],
        not_well: vec![NotWell {
            target: "PC".into(),
            job: EVIL.into(),
            outcome: "failed".into(),
            reason: EVIL.into(),
            exit_code: Some(3),
            at_ms: 5_000,
            label: Some(EVIL.into()),
            sealed: false,
            stderr: Some(EVIL.into()),
        }],
        not_well_count: 1,
    }
}

#[test]
fn no_folder_text_becomes_markup_on_the_page() {
    let page = html(&fleet(vec![bar(Ending::Failed, false)]));
    // The page's own markup has no script, no image, no event handler.
    assert!(!page.contains("<script"), "a script element");
    assert!(!page.contains("<img"), "an img element");
    assert!(
        !page.contains("onerror=alert(1)>"),
        "an event handler attribute"
    );
    assert!(!page.contains('\u{1b}'), "a control character");
    // Each hostile text is there, as text.
    assert!(page.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"));
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt;&quot;&#39;&amp;"));
    // No fetch, no script allowed at all.
    assert!(page.contains("default-src 'none'"));
}

#[test]
fn every_outcome_has_its_colour_and_a_sealed_job_says_so() {
    let page = html(&fleet(Ending::ALL.iter().map(|e| bar(*e, false)).collect()));
    for (class, _) in GROUPS {
        assert!(
            page.contains(&format!("data-outcome=\"{class}\"")),
            "no {class} bar"
        );
    }
    let sealed = html(&fleet(vec![bar(Ending::Done, true)]));
    assert!(sealed.contains("· sealed · sealed"));
    // Its label and command are not shown, only that it is sealed.
    assert!(sealed.contains("exit 3 · sealed · sealed · queued"));
}

#[test]
fn outcomes_fall_into_the_six_colours() {
    let groups: Vec<&str> = Ending::ALL.iter().map(|e| group(*e)).collect();
    assert_eq!(
        groups,
        [
            "done",
            "failed",
            "cancelled",
            "cancelled",
            "timeout",
            "interrupted",
            "failed",
            "cancelled"
        ]
    );
    assert_eq!(group_of_word("rejected"), "rejected");
    assert_eq!(group_of_word("timeout"), "timeout");
}

#[test]
fn the_page_names_the_fleet_key_or_the_roster_version_it_verified_with() {
    let mut f = fleet(vec![bar(Ending::Done, false)]);
    let shared = html(&f);
    assert!(shared.contains("Key fingerprint</dt><dd id=\"key\"><code>abcd1234"));
    assert!(!shared.contains("Roster version"));
    f.key_fingerprint = String::new();
    f.roster_version = Some(7);
    let roster = html(&f);
    assert!(roster.contains("Roster version</dt><dd id=\"roster\">7</dd>"));
    assert!(!roster.contains("Key fingerprint"));
}
