//! `status`: the listener's liveness, the running job, the queue in drain
//! order, pending cancels and recent results, human and JSON.

use std::time::Duration;

use serde_json::Value;

use crate::util::*;

fn status_json(w: &World, args: &[&str]) -> Value {
    let mut a = vec!["--json", "status"];
    a.extend_from_slice(args);
    let (code, out, err) = w.run(&a);
    assert_eq!(code, 0, "{out}{err}");
    serde_json::from_str(out.trim()).unwrap()
}

#[test]
fn status_shows_running_queued_in_drain_order_cancels_and_recent_results() {
    let w = World::new();
    let l = w.spawn_listener(&[]);
    let failed = w.enqueue(&["--label", "first"], &kit(&["exit", "2"]));
    w.wait_result(&failed, Duration::from_secs(10));
    let long = w.enqueue(&["--label", "long"], &kit(&["sleep", "30"]));
    wait_until(Duration::from_secs(10), || w.running(&long).exists());
    let normal = w.enqueue(&["--label", "later"], &kit(&[]));
    let high = w.enqueue(&["--priority", "high", "--label", "urgent"], &kit(&[]));
    let cancelled = w.enqueue(&[], &kit(&[]));
    let (code, _, _) = w.run(&["cancel", "--target", "PC", "--job-id", &cancelled]);
    assert_eq!(code, 0);

    let v = status_json(&w, &[]);
    let t = &v["targets"][0];
    assert_eq!(t["target"], "PC");
    assert_eq!(t["listener"]["alive"], true);
    assert_eq!(t["listener"]["pid"], l.pid());
    assert_eq!(t["running"][0]["jobId"], long.as_str());
    assert_eq!(t["running"][0]["label"], "long");
    let queued: Vec<&str> = t["queued"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["jobId"].as_str().unwrap())
        .collect();
    assert_eq!(
        queued,
        [high.as_str(), normal.as_str(), cancelled.as_str()],
        "drain order, running job excluded"
    );
    assert_eq!(t["queuedCount"], 3);
    // A queued job's header (priority) and, readable here, its payload.
    assert_eq!(t["queued"][0]["priority"], "high");
    assert_eq!(t["queued"][0]["label"], "urgent");
    assert!(!t["queued"][0]["argv"].as_array().unwrap().is_empty());
    assert_eq!(t["queued"][1]["priority"], "normal");
    assert_eq!(t["cancelPending"][0]["jobId"], cancelled.as_str());
    assert_eq!(t["cancelPending"][0]["job"], "queued");
    let recent = &t["recent"][0];
    assert_eq!(recent["jobId"], failed.as_str());
    assert_eq!(recent["outcome"], "failed");
    assert_eq!(recent["exitCode"], 2);
    assert_eq!(recent["verified"], true);

    let (code, out, _) = w.run(&["status", "--target", "pc"]);
    assert_eq!(code, 0);
    assert!(out.contains("listener alive"), "{out}");
    assert!(out.contains(&format!("running  {long}")), "{out}");
    assert!(out.contains("queued   3 job(s)"), "{out}");
    assert!(
        out.contains(&format!("cancel   {cancelled} (job queued)")),
        "{out}"
    );
    drop(l);
}

#[test]
fn status_says_when_the_listener_has_stopped() {
    let w = World::new();
    let l = w.spawn_listener(&[]);
    let (code, out, err) = l.stop(&w, libc::SIGTERM, Duration::from_secs(10));
    assert_eq!(code, polite_stop::EXIT, "{out}{err}");
    let v = status_json(&w, &["--target", "PC"]);
    assert_eq!(v["targets"][0]["listener"]["alive"], false);
    assert_eq!(v["targets"][0]["listener"]["state"], "stopped");
    let (_, out, _) = w.run(&["status"]);
    assert!(out.contains("listener not running"), "{out}");
}

#[test]
fn a_listener_whose_clock_stepped_back_is_still_alive() {
    // A running listener's clock reads three hours early: its beats are
    // dated so, but its file keeps changing. Liveness is that change.
    let w = World::new();
    let l = w.spawn_listener(&[]);
    let path = w.pc().join("listener.json");
    let mut beat: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    beat["heartbeatAt"] = Value::String(ts_offset(-3 * 3600));
    std::fs::write(&path, signed_beat(beat).to_string()).unwrap();
    let v = status_json(&w, &["--target", "PC"]);
    let listener = &v["targets"][0]["listener"];
    assert_eq!(listener["verified"], true, "{listener}");
    assert_eq!(listener["alive"], true, "{listener}");
    let (_, out, _) = w.run(&["status", "--target", "PC"]);
    assert!(out.contains("listener alive"), "{out}");
    let (_, out, _) = w.run(&["doctor", "--target", "PC"]);
    assert!(out.contains("its file written"), "{out}");
    assert!(!out.contains("stale: the last heartbeat"), "{out}");
    // Nor does `result` say of a job it holds that its listener is unheard of.
    let id = uid("ahead");
    let spec = serde_json::json!({"argv": ["true"]});
    w.write_job("PC", &id, "PC", &ts_offset(3 * 3600), &spec);
    let (code, out, err) = w.run(&["result", "--target", "all", "--job-id", &id]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        !format!("{out}{err}").contains("not been heard from"),
        "{out}{err}"
    );
    drop(l);
}

#[test]
fn status_flags_forged_results_and_invalid_inbox_files() {
    let w = World::with_target();
    std::fs::write(w.inbox("forged"), br#"{"jobId":"forged"}"#).unwrap();
    std::fs::write(
        w.result_path("fake"),
        br#"{"v":1,"jobId":"fake","target":"PC","ok":true,"exitCode":0,"error":"","startedAt":"","finishedAt":"","detail":"{}","sig":"00"}"#,
    )
    .unwrap();
    let v = status_json(&w, &[]);
    let t = &v["targets"][0];
    assert_eq!(t["invalidInInbox"], 1);
    assert_eq!(t["queuedCount"], 0);
    assert_eq!(t["recent"][0]["verified"], false);
    assert_eq!(t["listener"]["seen"], false);
}

#[test]
fn status_all_lists_every_target() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let v = status_json(&w, &["--all"]);
    let names: Vec<&str> = v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["LAPTOP", "PC"]);
    let (code, _, err) = w.run(&["status", "--target", "NOPE"]);
    assert_eq!(code, 66, "{err}");
}

#[test]
fn status_shows_history_by_count_outcome_and_label() {
    let w = World::with_target();
    let mut ids = Vec::new();
    for (label, code) in [
        ("nightly", "0"),
        ("nightly", "3"),
        ("adhoc", "3"),
        ("nightly", "0"),
    ] {
        ids.push(w.enqueue(&["--label", label], &kit(&["exit", code])));
        // Distinct file times, so "newest first" is well defined.
        std::thread::sleep(Duration::from_millis(20));
        w.listen_once(&[]);
    }
    let recent = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["--target", "PC"];
        all.extend_from_slice(args);
        status_json(&w, &all)["targets"][0]["recent"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["jobId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        recent(&["--results", "2"]),
        [ids[3].clone(), ids[2].clone()]
    );
    assert_eq!(
        recent(&["--outcome", "failed"]),
        [ids[2].clone(), ids[1].clone()]
    );
    assert_eq!(
        recent(&["--outcome", "failed", "--label", "night"]),
        [ids[1].clone()]
    );
    assert_eq!(recent(&["--results", "10"]).len(), 4);
    let (code, _, err) = w.run(&["status", "--outcome", "exploded"]);
    assert_eq!(code, 64, "{err}");
}

#[test]
fn status_shows_a_rejected_jobs_verdict_and_warns_when_the_key_differs() {
    let w = World::with_target();
    let id = uid("status-rejected");
    std::fs::write(w.inbox(&id), foreign_job_text(&id)).unwrap();
    assert_eq!(w.listen_once(&[])["rejected"], 1);
    let v = status_json(&w, &["--target", "PC"]);
    let rejected = &v["targets"][0]["rejected"][0];
    assert_eq!(rejected["verdict"], "bad-signature", "{v}");
    assert!(
        rejected["name"].as_str().unwrap().contains(&id),
        "{rejected}"
    );
    let (code, out, err) = w.run(&["status", "--target", "PC"]);
    assert_eq!(code, 0, "{err}");
    let section = out
        .split("  rejected\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        section.contains(&id) && section.contains("bad-signature"),
        "{out}"
    );
    // The listener's heartbeat carries the fleet key's fingerprint: a
    // machine with the same key is not warned, one with another key is.
    assert!(!out.contains("key differs"), "{out}");
    let other = w.dir.path().join("other.key");
    write_private(&other, &"ab".repeat(32));
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &other)
            .args(["status", "--target", "PC"]),
    );
    assert_eq!(code, 0, "{err}");
    let line = out
        .lines()
        .find(|l| l.contains("key differs"))
        .unwrap_or_else(|| panic!("no warning:\n{out}"));
    let theirs = status_json(&w, &[])["keyFingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(line.contains(&theirs), "{line}");
    assert!(line.contains("jobs sent from here are rejected"), "{line}");
}

#[test]
fn human_status_results_n_shows_the_n_newest_results() {
    let w = World::with_target();
    let mut ids = Vec::new();
    for label in ["one", "two", "three"] {
        ids.push(w.enqueue(&["--label", label], &kit(&[])));
        // Distinct file times, so "newest first" is well defined.
        std::thread::sleep(Duration::from_millis(20));
        w.listen_once(&[]);
    }
    let shown = |n: &str| -> Vec<String> {
        let (code, out, err) = w.run(&["status", "--target", "PC", "--results", n]);
        assert_eq!(code, 0, "{err}");
        let section = out
            .split("  results (newest first)\n")
            .nth(1)
            .unwrap_or_else(|| panic!("no results section:\n{out}"));
        section
            .lines()
            .take_while(|l| l.starts_with("    "))
            .map(|l| l.split_whitespace().next().unwrap().to_string())
            .collect()
    };
    assert_eq!(shown("2"), [ids[2].clone(), ids[1].clone()]);
    assert_eq!(
        shown("10"),
        [ids[2].clone(), ids[1].clone(), ids[0].clone()]
    );
    let (_, out, _) = w.run(&["status", "--target", "PC", "--results", "1"]);
    let line = out.lines().find(|l| l.contains(&ids[2])).unwrap();
    assert!(
        line.contains("done") && line.contains("exit 0") && line.contains("three"),
        "{line}"
    );
    // A result without a label ends its row without trailing blanks.
    let bare = w.enqueue(&[], &kit(&[]));
    w.listen_once(&[]);
    let (_, out, _) = w.run(&["status", "--target", "PC"]);
    let line = out.lines().find(|l| l.contains(&bare)).unwrap();
    assert_eq!(line, line.trim_end(), "{line:?}");
}

#[test]
fn a_running_file_brought_back_after_its_job_ended_is_not_shown_as_running() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    assert_eq!(w.listen_once(&[])["done"], 1);
    // A sync engine restores the running/ file the listener removed.
    let shown = serde_json::json!({"jobId": id, "argv": ["true"], "startedAt": now_text()});
    std::fs::write(w.running(&id), shown.to_string()).unwrap();
    let t = &status_json(&w, &["--target", "PC"])["targets"][0];
    assert_eq!(t["running"], serde_json::json!([]), "{t}");
    // One whose job has no result yet still shows.
    let other = "still-going";
    let shown = serde_json::json!({"jobId": other, "argv": ["true"], "startedAt": now_text()});
    std::fs::write(w.running(other), shown.to_string()).unwrap();
    let t = &status_json(&w, &["--target", "PC"])["targets"][0];
    assert_eq!(t["running"][0]["jobId"], other, "{t}");
}

#[test]
fn jobs_running_in_slots_are_listed_in_the_order_they_started() {
    let w = World::with_target();
    // Eight jobs whose start order is neither their names' nor the order
    // their files were made in: whatever order the folder lists them in,
    // only a sort by start gives this one (1 in 40,320 by chance).
    let started = [
        ("zz-first", -80),
        ("cc-second", -70),
        ("xx-third", -60),
        ("aa-fourth", -50),
        ("qq-fifth", -40),
        ("bb-sixth", -30),
        ("yy-seventh", -20),
        ("mm-eighth", -10),
    ];
    for i in [3, 6, 0, 5, 1, 7, 2, 4] {
        let (id, secs) = started[i];
        let shown =
            serde_json::json!({"jobId": id, "argv": ["true"], "startedAt": ts_offset(secs)});
        std::fs::write(w.running(id), shown.to_string()).unwrap();
    }
    let t = &status_json(&w, &["--target", "PC"])["targets"][0];
    let ids: Vec<&str> = t["running"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["jobId"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = started.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, want, "{t}");
}
