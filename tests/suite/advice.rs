//! Advice that works (docs/guide.md, "doctor"): each `doctor` hint names a
//! command that clears its finding now, and running that command does; a
//! `sweep --dry-run` says what it would remove, or that there is nothing
//! to remove and why, with when a kept marker goes.

use serde_json::Value;

use crate::util::*;

fn doctor_json(w: &World, extra: &[&str]) -> Value {
    let mut args = vec!["--json", "doctor"];
    args.extend_from_slice(extra);
    let (_, out, err) = w.run(&args);
    serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("not JSON: {out}{err}"))
}

/// The check `name` of `target` (None: of the machine) in a report.
fn check(v: &Value, name: &str, target: Option<&str>) -> Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name && c["target"].as_str() == target)
        .cloned()
        .unwrap_or_else(|| panic!("no {name} check in {v:#}"))
}

/// The first `fleet-dispatch …` command quoted in backticks in `hint`, as
/// arguments.
fn hinted_command(hint: &str) -> Vec<String> {
    let start = hint
        .find("`fleet-dispatch ")
        .unwrap_or_else(|| panic!("no command in the hint: {hint}"));
    let rest = &hint[start + "`fleet-dispatch ".len()..];
    let end = rest.find('`').unwrap();
    rest[..end].split_whitespace().map(str::to_string).collect()
}

/// A finished job of PC with a leftover marker, written just now.
fn leftover_marker(w: &World) -> String {
    let id = w.enqueue(&[], &kit(&["exit", "0"]));
    let c = w.listen_once(&[]);
    assert_eq!(c["done"], 1, "{c}");
    w.write_marker("PC", &id, "PC");
    id
}

#[test]
fn doctors_hint_for_a_leftover_marker_clears_it_now() {
    let w = World::with_target();
    let id = leftover_marker(&w);
    let cancels = check(&doctor_json(&w, &[]), "cancels", Some("PC"));
    assert_eq!(cancels["status"], "warn", "{cancels}");
    let hint = cancels["hint"].as_str().unwrap();
    let cmd = hinted_command(hint);
    assert_eq!(cmd, ["sweep", "--max-age", "0", "--target", "PC"], "{hint}");
    // When a plain sweep would act, too.
    assert!(
        hint.contains("a plain daily `sweep` takes them from"),
        "{hint}"
    );
    // A plain sweep leaves it for a day: the finding would stay.
    let (code, out, err) = w.run(&["sweep", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker(&id).exists());
    let (code, out, err) = w.run(&cmd.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("removed marker"), "{out}");
    assert!(!w.marker(&id).exists());
    let cancels = check(&doctor_json(&w, &[]), "cancels", Some("PC"));
    assert_eq!(cancels["status"], "ok", "{cancels}");
}

#[test]
fn sweep_max_age_0_never_takes_the_marker_of_a_job_still_queued() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "0"]));
    let (code, out, err) = w.run(&["cancel", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, out, err) = w.run(&["sweep", "--max-age", "0", "--target", "PC", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("nothing to remove"), "{out}");
    assert!(
        out.contains("1 marker kept: its job is still queued or running"),
        "{out}"
    );
    assert!(out.contains(&id), "{out}");
    let (code, out, err) = w.run(&["sweep", "--max-age", "0", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.marker(&id).exists(), "{out}");
}

#[test]
fn sweep_dry_run_says_what_it_would_remove_or_why_nothing() {
    let w = World::with_target();
    // Nothing at all.
    let (code, out, err) = w.run(&["sweep", "--target", "PC", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.starts_with("nothing to remove: no marker older than 24h"),
        "{out}"
    );
    // A marker younger than the max age: when it goes, and how now.
    let id = leftover_marker(&w);
    let (code, out, err) = w.run(&["sweep", "--target", "PC", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("nothing to remove"), "{out}");
    assert!(
        out.contains(&format!("1 marker younger than 24h: {id} (removable at ")),
        "{out}"
    );
    assert!(out.contains(" UTC, or now with --max-age 0)"), "{out}");
    let v: Value = {
        let (_, out, _) = w.run(&["--json", "sweep", "--target", "PC", "--dry-run"]);
        serde_json::from_str(out.trim()).unwrap()
    };
    assert_eq!(v["keptMarkers"][0]["jobId"], id.as_str(), "{v}");
    assert!(v["keptMarkers"][0]["removableAt"].is_string(), "{v}");
    // With --max-age 0 it would go, and a dry run leaves it.
    let (code, out, err) = w.run(&["sweep", "--target", "PC", "--max-age", "0", "--dry-run"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("would remove marker"), "{out}");
    assert!(!out.contains("nothing to remove"), "{out}");
    assert!(w.marker(&id).exists());
}

#[test]
fn doctors_layout_hint_names_the_root_that_clears_it() {
    let w = World::with_target();
    let deep = w.root.join("PC");
    let layout = check(&doctor_json(&w, &["--root", p(&deep)]), "layout", None);
    assert_eq!(layout["status"], "warn", "{layout}");
    let hint = layout["hint"].as_str().unwrap();
    let fix = hint
        .strip_prefix("use --root ")
        .and_then(|h| h.split(" (").next())
        .unwrap_or_else(|| panic!("{hint}"));
    let layout = check(&doctor_json(&w, &["--root", fix]), "layout", None);
    assert_eq!(layout["status"], "ok", "{layout}");
}

#[test]
fn doctors_hint_for_rejections_says_when_the_check_clears() {
    let w = World::with_target();
    std::fs::write(w.inbox("garbage"), b"not json").unwrap();
    w.listen_once(&["--settle", "0s"]);
    let rejected = check(&doctor_json(&w, &[]), "rejected", Some("PC"));
    assert_eq!(rejected["status"], "warn", "{rejected}");
    let hint = rejected["hint"].as_str().unwrap();
    assert!(
        hint.contains("this check clears a day after the last rejection, at "),
        "{hint}"
    );
}

#[test]
fn doctors_hint_for_a_missing_root_makes_it() {
    let w = World::new();
    let missing = w.dir.path().join("not-yet");
    let root = check(&doctor_json(&w, &["--root", p(&missing)]), "root", None);
    assert_eq!(root["status"], "warn", "{root}");
    let hint = root["hint"].as_str().unwrap();
    assert!(
        hint.contains(&format!("`mkdir {:?}`", missing.display().to_string())),
        "{hint}"
    );
    std::fs::create_dir(&missing).unwrap();
    let root = check(&doctor_json(&w, &["--root", p(&missing)]), "root", None);
    assert_eq!(root["status"], "ok", "{root}");
}
