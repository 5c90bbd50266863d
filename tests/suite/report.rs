//! `report`: the fleet as one self-contained HTML page, or its data with
//! `--json`. What a browser sees of the page is `tests/engines/test_report.py`'s
//! (run by `ci/engine-browser`); here, without a browser: a real listener's
//! jobs reported, every folder text escaped, only verified documents
//! drawn, `--since`, the refusals, and where the page goes.

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use crate::util::sign::{Signer, job_doc, signed_result};
use crate::util::*;

fn report_json(w: &World, args: &[&str]) -> Value {
    let mut a = vec!["--json", "report"];
    a.extend_from_slice(args);
    let (code, out, err) = w.run(&a);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}"))
}

/// Runs `report ARGS` in the world's folder; returns (status, stdout, stderr).
fn report_in(w: &World, args: &[&str]) -> (i32, String, String) {
    output(w.cmd().current_dir(w.dir.path()).arg("report").args(args))
}

fn page(w: &World, name: &str) -> String {
    std::fs::read_to_string(w.dir.path().join(name)).unwrap()
}

const EVIL: &str = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";

/// A finished job on PC as its listener leaves it: the job file in
/// `archive/done/`, its signed result; both changed `age` ago.
fn finished(w: &World, id: &str, age: Duration, error: &str, code: i64, detail: Value) {
    let at = |back: Duration| ts_offset(-((age + back).as_secs() as i64));
    let spec = json!({"argv": ["make", EVIL], "label": EVIL}).to_string();
    let job = job_doc(
        id,
        "PC",
        &at(Duration::from_secs(60)),
        "LAPTOP",
        &spec,
        Signer::Fleet,
    );
    let result = signed_result(json!({
        "v": 1, "jobId": id, "target": "PC", "ok": error.is_empty() && code == 0,
        "exitCode": code, "error": error, "startedAt": at(Duration::from_secs(30)),
        "finishedAt": at(Duration::ZERO), "detail": detail.to_string(),
    }));
    for (path, doc) in [(w.done(id), job), (w.result_path(id), result)] {
        std::fs::write(&path, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        set_age(&path, age);
    }
}

fn set_age(path: &std::path::Path, age: Duration) {
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(SystemTime::now() - age)
        .unwrap();
}

#[test]
fn report_draws_the_jobs_a_real_listener_ran() {
    let w = World::with_target();
    let ok = w.enqueue(&["--label", "<b>fine</b>"], &kit(&["out", "hi"]));
    let failed = w.enqueue(
        &["--label", "broke"],
        &kit(&["err", "boom <i>x</i>", "exit", "3"]),
    );
    let cancelled = w.enqueue(&[], &kit(&[]));
    let (code, _, _) = w.run(&["cancel", "--target", "PC", "--job-id", &cancelled]);
    assert_eq!(code, 0);
    w.listen_once(&[]);

    let v = report_json(&w, &[]);
    let lane = &v["lanes"][0];
    assert_eq!(lane["target"], "PC");
    assert_eq!(lane["finished"], 3);
    assert_eq!(
        lane["totals"],
        json!({"done": 1, "failed": 1, "cancelled-before-start": 1})
    );
    assert!(lane["listener"]["restarts"].as_array().unwrap().len() == 1);
    assert_eq!(v["unverifiedFiles"], 0);
    let bars: Vec<&str> = lane["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["jobId"].as_str().unwrap())
        .collect();
    for id in [&ok, &failed, &cancelled] {
        assert!(bars.contains(&id.as_str()), "{id} not drawn: {bars:?}");
    }
    let bad = &v["notWell"];
    assert_eq!(v["notWellCount"], 2);
    let row = bad
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["job"] == failed.as_str())
        .unwrap();
    assert_eq!(row["exitCode"], 3);
    assert_eq!(row["reason"], "exit 3");
    assert_eq!(row["stderr"], "boom <i>x</i>\n");

    let (code, out, err) = report_in(&w, &[]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("wrote fleet-report.html"), "{out}");
    let html = page(&w, "fleet-report.html");
    assert_eq!(
        html.matches("<g class=\"job\" data-outcome=\"done\">")
            .count(),
        1
    );
    assert_eq!(
        html.matches("<g class=\"job\" data-outcome=\"failed\">")
            .count(),
        1
    );
    assert_eq!(
        html.matches("<g class=\"job\" data-outcome=\"cancelled\">")
            .count(),
        1
    );
    assert!(html.contains("&lt;b&gt;fine&lt;/b&gt;") && !html.contains("<b>fine"));
    assert!(html.contains("boom &lt;i&gt;x&lt;/i&gt;") && !html.contains("<i>x"));
}

#[test]
fn report_escapes_every_folder_text_and_draws_only_what_verifies() {
    let w = World::with_target();
    let detail = json!({"label": EVIL, "stderrTail": EVIL, "spawnError": EVIL, "durationMs": 5});
    finished(
        &w,
        "hostile-1",
        Duration::from_secs(600),
        "spawn-failed",
        -1,
        detail,
    );
    // A result forged with another key, whose label would also be markup.
    let forged = json!({"v": 1, "jobId": "forged-1", "target": "PC", "ok": true, "exitCode": 0,
        "error": "", "startedAt": now_text(), "finishedAt": now_text(),
        "detail": json!({"label": "FORGED"}).to_string(), "sig": "0".repeat(64)});
    std::fs::write(w.result_path("forged-1"), forged.to_string()).unwrap();
    // Windows refuses `<`, `>`, `"` and `/` in a file name: there the name
    // holds what it allows of markup (`&` and `'` still need escaping).
    let name = if cfg!(windows) {
        "x&'y onerror=alert(3).json".to_string()
    } else {
        format!("{EVIL}.json").replace('/', "_")
    };
    std::fs::write(w.rejected(&name), "{").unwrap();
    let reason = json!({"verdict": EVIL, "message": EVIL, "rejectedAt": now_text(),
        "kind": "job", "target": "PC"});
    std::fs::write(
        w.rejected(&format!("{name}.reason.json")),
        reason.to_string(),
    )
    .unwrap();

    let v = report_json(&w, &[]);
    assert_eq!(v["unverifiedFiles"], 1);
    assert_eq!(v["lanes"][0]["finished"], 1);
    assert_eq!(v["lanes"][0]["rejected"][0]["name"], name.as_str());

    let (code, out, err) = report_in(&w, &["--out", "page.html"]);
    assert_eq!(code, 0, "{out}{err}");
    let html = page(&w, "page.html");
    assert!(!html.contains("FORGED"), "a forged result was drawn");
    for markup in ["<script", "<img", "onerror=alert(2)>"] {
        assert!(!html.contains(markup), "{markup} on the page");
    }
    let escaped =
        "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;&quot;&#39;&amp;";
    // Label, command, stderr, spawn error, file name, verdict, message: each
    // is on the page, as text.
    let whole = if cfg!(windows) { 6 } else { 7 };
    assert!(html.matches(escaped).count() >= whole, "{html}");
    if cfg!(windows) {
        assert!(
            html.contains("x&amp;&#39;y onerror=alert(3).json"),
            "{html}"
        );
    }
}

#[test]
fn report_since_reads_only_what_it_needs() {
    let w = World::with_target();
    let day = Duration::from_secs(86400);
    finished(&w, "old-1", 3 * day, "", 0, json!({"durationMs": 1}));
    finished(
        &w,
        "new-1",
        Duration::from_secs(60),
        "timeout",
        -1,
        json!({"durationMs": 2}),
    );
    // Garbage last changed three days ago: read (and counted) only when
    // the span reaches back that far.
    let garbage = w.result_path("old-garbage");
    std::fs::write(&garbage, "{ not json").unwrap();
    set_age(&garbage, 3 * day);

    let all = report_json(&w, &[]);
    assert_eq!(all["lanes"][0]["finished"], 2);
    assert_eq!(all["unverifiedFiles"], 1);
    assert_eq!(all["since"], false);

    let recent = report_json(&w, &["--since", "24h"]);
    assert_eq!(recent["lanes"][0]["finished"], 1);
    assert_eq!(recent["lanes"][0]["jobs"][0]["jobId"], "new-1");
    assert_eq!(recent["unverifiedFiles"], 0, "an old file was read");
    assert_eq!(recent["since"], true);
    let from = recent["fromMs"].as_i64().unwrap();
    let to = recent["toMs"].as_i64().unwrap();
    assert!((to - from - 86_400_000).abs() < 5_000, "{from} {to}");

    let at = ts_offset(-4 * 86400);
    let both = report_json(&w, &["--since", &at]);
    assert_eq!(both["lanes"][0]["finished"], 2);
}

#[test]
fn report_refuses_a_bad_since_and_an_unknown_target_and_writes_nothing() {
    let w = World::with_target();
    for (args, code, word) in [
        (&["--since", "yesterday"][..], 64, "VALIDATION_ERROR"),
        (
            &["--since", "2999-01-01T00:00:00Z"][..],
            64,
            "VALIDATION_ERROR",
        ),
        (&["--target", "NAS"][..], 66, "NOT_FOUND"),
        (&["--target", "bad/name"][..], 64, "VALIDATION_ERROR"),
    ] {
        let (got, out, err) = report_in(&w, args);
        assert_eq!(got, code, "{args:?}: {out}{err}");
        assert!(err.contains(word), "{args:?}: {err}");
        assert!(err.contains(args[1]), "{args:?} not named: {err}");
        assert!(!w.dir.path().join("fleet-report.html").exists());
    }
}

#[test]
fn report_writes_the_page_where_out_says() {
    let w = World::with_target();
    finished(&w, "job-1", Duration::from_secs(60), "", 0, json!({}));

    // `-`: the page on stdout, no file.
    let (code, out, err) = report_in(&w, &["--out", "-"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("<!DOCTYPE html>") && out.trim_end().ends_with("</html>"));
    assert!(!w.dir.path().join("-").exists());
    assert!(!w.dir.path().join("fleet-report.html").exists());

    // A file there already is replaced whole.
    let file = w.dir.path().join("r.html");
    std::fs::write(&file, "x".repeat(10 << 20)).unwrap();
    let (code, _, err) = report_in(&w, &["--out", "r.html"]);
    assert_eq!(code, 0, "{err}");
    let replaced = page(&w, "r.html");
    assert!(replaced.starts_with("<!DOCTYPE html>") && replaced.len() < 1 << 20);
    assert!(replaced.contains("job-1"));

    // A folder that is not there: INTERNAL_ERROR naming it, nothing left.
    let (code, _, err) = report_in(&w, &["--out", "nowhere/r.html"]);
    assert_eq!(code, 70, "{err}");
    assert!(
        err.contains("INTERNAL_ERROR") && err.contains("nowhere"),
        "{err}"
    );
    assert!(!w.dir.path().join("nowhere").exists());

    // --json prints the data and writes no page.
    let (code, out, _) = output(w.cmd().current_dir(w.dir.path()).args(["--json", "report"]));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["lanes"][0]["jobs"][0]["jobId"], "job-1");
    assert!(!w.dir.path().join("fleet-report.html").exists());
}

#[test]
fn report_counts_bars_per_slice_past_the_limit_and_says_so() {
    let w = World::with_target();
    let n = fleet_dispatch::places::report::BAR_LIMIT + 1;
    for i in 0..n {
        let id = format!("job-{i}");
        let age = Duration::from_secs(60 + i as u64);
        let (error, code) = if i % 3 == 0 { ("timeout", -1) } else { ("", 0) };
        finished(&w, &id, age, error, code, json!({"durationMs": 1}));
    }
    let v = report_json(&w, &[]);
    let lane = &v["lanes"][0];
    assert_eq!(lane["aggregated"], true);
    assert_eq!(lane["jobs"].as_array().unwrap().len(), 0);
    let counted: u64 = lane["slices"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s.as_object().unwrap().values())
        .map(|c| c.as_u64().unwrap())
        .sum();
    assert_eq!(counted, n as u64);
    assert_eq!(lane["totals"]["timeout"], n.div_ceil(3));

    let (code, _, err) = report_in(&w, &["--out", "big.html"]);
    assert_eq!(code, 0, "{err}");
    let html = page(&w, "big.html");
    assert_eq!(html.matches("<g class=\"job\"").count(), 0);
    assert!(html.contains("<g class=\"slice\">"));
    assert!(html.contains(&format!(
        "more than {} jobs",
        fleet_dispatch::places::report::BAR_LIMIT
    )));
    // The failures table still lists the newest, escaped.
    assert!(html.contains("&lt;script&gt;alert(1)") && !html.contains("<script"));
    assert!(html.len() < 1 << 20, "{} bytes", html.len());
}
