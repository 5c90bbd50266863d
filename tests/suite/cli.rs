//! docs/protocol.md §2–§4, §8 and §9 through the real binary: `keygen`, loading the
//! key, finding the root, `enqueue`, `result`, the error forms, `--help`
//! and `demo`. Each test is named after the rule it protects.

#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::util::*;

/// The parsed job file `w.inbox(id)`.
fn job_doc(w: &World, id: &str) -> Value {
    let text = std::fs::read_to_string(w.inbox(id)).unwrap_or_else(|_| panic!("no job {id}"));
    serde_json::from_str(&text).unwrap()
}

/// The parsed spec string of a job document.
fn spec_of(doc: &Value) -> Value {
    serde_json::from_str(doc["spec"].as_str().unwrap()).unwrap()
}

/// The job's signature, recomputed independently with the fleet key.
fn expected_job_sig(doc: &Value) -> String {
    independent_sig(&job_canonical_of(doc))
}

/// `^\d{8}-\d{6}-[0-9a-f]{16}$`, without a regex crate.
fn is_generated_id(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 8 + 1 + 6 + 1 + 16
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'-'
        && b[16..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// Asserts a human error: exit status, `fleet-dispatch: error: CODE:` on
/// stderr, nothing on stdout.
fn assert_error(got: &(i32, String, String), status: i32, code: &str) {
    let (s, out, err) = got;
    assert_eq!(*s, status, "exit status; stdout {out:?} stderr {err:?}");
    assert!(
        err.starts_with(&format!("fleet-dispatch: error: {code}: ")),
        "stderr: {err:?}"
    );
    assert!(out.is_empty(), "stdout should be empty: {out:?}");
}

/// Waits for a child with a deadline; returns (status, stdout, stderr).
fn finish(child: Child, limit: Duration) -> (i32, String, String) {
    let mut child = child;
    let until = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("command did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn spawn(mut c: Command) -> Child {
    c.stdout(Stdio::piped()).stderr(Stdio::piped()).start()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

// ---------------------------------------------------------------- keygen

#[test]
fn keygen_writes_64_hex_chars_and_a_newline_with_mode_600() {
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    let (code, out, err) = w.run(&["keygen"]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(&w.key).unwrap();
    assert_eq!(text.len(), 65, "{text:?}");
    assert!(text.ends_with('\n'));
    assert!(
        text[..64]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "{text:?}"
    );
    #[cfg(unix)] // Windows: the access list, see `windows`
    assert_eq!(mode(&w.key), 0o600);
    // Random: a second key differs.
    let (code, _, _) = w.run(&["keygen", "--force"]);
    assert_eq!(code, 0);
    assert_ne!(std::fs::read_to_string(&w.key).unwrap(), text);
}

#[test]
fn keygen_refuses_to_overwrite_without_force() {
    let w = World::new();
    let before = std::fs::read(&w.key).unwrap();
    let got = w.run(&["keygen"]);
    assert_error(&got, 64, "VALIDATION_ERROR");
    assert!(got.2.contains("--force"), "hint names --force: {}", got.2);
    assert_eq!(std::fs::read(&w.key).unwrap(), before, "key unchanged");
    assert_eq!(
        files(w.key.parent().unwrap()),
        ["fleet.key"],
        "no temp file left beside the key"
    );
}

#[test]
fn keygen_force_replaces_the_key() {
    let w = World::new();
    let (code, out, err) = w.run(&["keygen", "--force"]);
    assert_eq!(code, 0, "{out}{err}");
    let text = std::fs::read_to_string(&w.key).unwrap();
    assert_ne!(text, VECTOR_KEY);
    assert_eq!(text.len(), 65);
    #[cfg(unix)] // Windows: the access list, see `windows`
    assert_eq!(mode(&w.key), 0o600);
    assert_eq!(files(w.key.parent().unwrap()), ["fleet.key"]);
}

#[test]
fn keygen_never_prints_the_key() {
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    let (c1, out1, err1) = w.run(&["keygen"]);
    let key1 = std::fs::read_to_string(&w.key).unwrap();
    let (c2, out2, err2) = w.run(&["--json", "keygen", "--force"]);
    let key2 = std::fs::read_to_string(&w.key).unwrap();
    let (c3, out3, err3) = w.run(&["keygen"]); // refused: names the file only
    assert_eq!((c1, c2, c3), (0, 0, 64));
    for (key, texts) in [
        (key1.trim(), [&out1, &err1, &out3, &err3]),
        (key2.trim(), [&out2, &err2, &out3, &err3]),
    ] {
        for t in texts {
            assert!(!t.contains(key), "the key was printed: {t}");
            assert!(!t.contains(&key[..16]), "part of the key was printed: {t}");
        }
    }
    assert!(
        out1.contains(w.key.to_str().unwrap()),
        "names the file: {out1}"
    );
}

#[test]
fn keygen_default_path_is_home_claude_fleet_dispatch_key() {
    let w = World::new();
    let (code, out, err) = output(
        w.cmd()
            .env_remove("FLEET_DISPATCH_KEY_FILE")
            .args(["keygen"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let p = w.home.join(".claude").join("fleet-dispatch.key");
    assert_eq!(std::fs::read(&p).unwrap().len(), 65);
    #[cfg(unix)] // Windows: the access list, see `windows`
    assert_eq!(mode(&p), 0o600);
    assert_eq!(std::fs::read_to_string(&w.key).unwrap(), VECTOR_KEY);
}

// ---------------------------------------------------------------- key loading

#[test]
fn missing_key_is_config_naming_the_path_with_a_keygen_hint() {
    let w = World::with_target();
    std::fs::remove_file(&w.key).unwrap();
    let got = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    assert!(got.2.contains("fleet-dispatch keygen"), "{}", got.2);
    assert!(files(&w.pc().join("inbox")).is_empty());
}

#[test]
fn key_shorter_than_32_bytes_is_config() {
    let w = World::with_target();
    // 31 bytes, padded with trailing whitespace that does not count.
    write_private(&w.key, &format!("{}\n\n   \n", "a".repeat(31)));
    let got = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    assert!(files(&w.pc().join("inbox")).is_empty());
    // 32 bytes are enough.
    std::fs::write(&w.key, "a".repeat(32)).unwrap();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{out}{err}");
}

#[test]
#[cfg(unix)] // Unix modes; Windows: the access-list rule, see `windows`
fn key_readable_by_others_is_config_with_chmod_600_hint() {
    let w = World::with_target();
    for m in [0o644, 0o640, 0o604] {
        set_mode(&w.key, m);
        let got = w.run(&["enqueue", "--target", "PC", "--", "true"]);
        assert_error(&got, 78, "CONFIG");
        assert!(got.2.contains("chmod 600"), "mode {m:o}: {}", got.2);
        assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    }
    assert!(files(&w.pc().join("inbox")).is_empty());
}

#[test]
fn key_trailing_whitespace_is_trimmed() {
    let w = World::with_target();
    write_private(&w.key, &format!("{} \t\r\n\n  \n", VECTOR_KEY.trim_end()));
    let id = w.enqueue(&[], &kit(&[]));
    let doc = job_doc(&w, &id);
    assert_eq!(doc["sig"].as_str().unwrap(), expected_job_sig(&doc));
}

#[test]
fn key_file_inside_the_root_is_config() {
    let w = World::with_target();
    let inside = w.root.join("fleet.key");
    write_private(&inside, VECTOR_KEY);
    let before = files(&w.root);
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &inside)
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(inside.to_str().unwrap()), "{}", got.2);
    assert_eq!(files(&w.root), before, "nothing written");
    // keygen refuses to create one there too.
    let fresh = w.root.join("PC").join("new.key");
    let got = output(
        w.cmd()
            .args(["keygen", "--key-file"])
            .arg(&fresh)
            .env_remove("FLEET_DISPATCH_KEY_FILE"),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(!fresh.exists());
}

// ---------------------------------------------------------------- root

#[test]
fn no_root_is_config() {
    let w = World::with_target();
    let before = files(w.dir.path());
    let got = output(
        w.cmd()
            .env_remove("FLEET_DISPATCH_ROOT")
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains("--root"), "hint at how to set it: {}", got.2);
    assert_eq!(files(w.dir.path()), before, "nothing written");
}

#[test]
fn root_that_does_not_exist_is_config() {
    let w = World::new();
    let missing = w.dir.path().join("nowhere");
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_ROOT", &missing)
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(missing.to_str().unwrap()), "{}", got.2);
    assert!(!missing.exists(), "the root is not created");
    let file = w.dir.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_ROOT", &file)
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(file.to_str().unwrap()), "{}", got.2);
}

#[test]
fn root_flag_overrides_the_environment() {
    let w = World::with_target();
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_ROOT", w.dir.path().join("nowhere"))
            .arg("--root")
            .arg(&w.root)
            .args([
                "enqueue", "--target", "PC", "--job-id", "via-flag", "--", "true",
            ]),
    );
    assert_eq!(code, 0, "{out}{err}");
    assert!(w.inbox("via-flag").exists());
}

// ---------------------------------------------------------------- enqueue

#[test]
fn enqueue_prints_a_generated_id() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{err}");
    let id = out.trim();
    assert!(is_generated_id(id), "{out:?}");
    assert!(w.inbox(id).exists());
    let other = w.enqueue(&[], &kit(&[]));
    assert_ne!(other, id);
}

#[test]
fn enqueue_publishes_a_signed_job_that_verifies_independently() {
    let w = World::with_target();
    let id = w.enqueue(&["--cwd", "/tmp"], &["echo", "a|b", "c d"]);
    assert_eq!(files(&w.pc().join("inbox")), [format!("{id}.json")]);
    let doc = job_doc(&w, &id);
    assert_eq!(doc["v"], 1);
    assert_eq!(doc["jobId"], id.as_str());
    assert_eq!(doc["target"], "PC");
    assert_eq!(doc["origin"], "PC");
    assert_eq!(doc["sig"].as_str().unwrap(), expected_job_sig(&doc));
    let spec = spec_of(&doc);
    assert_eq!(spec["argv"], serde_json::json!(["echo", "a|b", "c d"]));
    assert_eq!(spec["cwd"], "/tmp");
}

#[test]
fn enqueue_json_gives_job_id_target_path_and_result_path() {
    let w = World::with_target();
    let (code, out, err) = w.run(&["--json", "enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let id = v["jobId"].as_str().unwrap();
    assert!(is_generated_id(id), "{v}");
    assert_eq!(v["target"], "PC");
    assert_eq!(Path::new(v["path"].as_str().unwrap()), w.inbox(id));
    assert_eq!(
        Path::new(v["resultPath"].as_str().unwrap()),
        w.result_path(id)
    );
    assert!(w.inbox(id).exists());
}

#[test]
fn enqueue_validates_the_job_id_before_touching_a_path() {
    let w = World::with_target();
    let before = files(w.dir.path());
    for bad in [
        "../x",
        "a/b",
        "x.json",
        "",
        "a b",
        &"a".repeat(65),
        "..",
        "a_b",
    ] {
        let got = w.run(&["enqueue", "--target", "PC", "--job-id", bad, "--", "true"]);
        assert_error(&got, 64, "VALIDATION_ERROR");
        assert_eq!(files(w.dir.path()), before, "{bad:?} wrote something");
    }
    let longest = "a-".repeat(32);
    let (code, out, err) = w.run(&[
        "enqueue", "--target", "PC", "--job-id", &longest, "--", "true",
    ]);
    assert_eq!(code, 0, "a 64-character id is valid: {err}");
    assert_eq!(out.trim(), longest);
}

#[test]
fn enqueue_refuses_an_invalid_target_name() {
    let w = World::with_target();
    // Even a folder of that name would not make it valid (Windows cannot
    // create one at all).
    #[cfg(unix)]
    std::fs::create_dir_all(w.root.join("CON").join("inbox")).unwrap();
    let before = files(w.dir.path());
    for bad in [
        "PC/..", "CON", "con", "nul", "COM1", "lpt9", "-x", "_x", "", "../PC", "P C",
    ] {
        let flag = format!("--target={bad}");
        let got = w.run(&["enqueue", &flag, "--", "true"]);
        assert_error(&got, 64, "VALIDATION_ERROR");
        assert_eq!(files(w.dir.path()), before, "{bad:?} wrote something");
    }
}

#[test]
fn enqueue_to_an_unknown_target_is_not_found_listing_known_targets() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let before = files(w.dir.path());
    let got = w.run(&["enqueue", "--target", "SERVER", "--", "true"]);
    assert_error(&got, 66, "NOT_FOUND");
    assert!(got.2.contains("SERVER"), "{}", got.2);
    assert!(
        got.2.contains("PC") && got.2.contains("LAPTOP"),
        "{}",
        got.2
    );
    assert_eq!(files(w.dir.path()), before);
    assert!(!w.root.join("SERVER").exists());
}

#[test]
fn enqueue_resolves_the_target_case_insensitively() {
    let w = World::with_target();
    let (code, out, err) = w.run(&[
        "enqueue", "--target", "pc", "--job-id", "lower", "--", "true",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out.trim(), "lower");
    assert!(w.inbox("lower").exists());
    // By name, not `exists()`, which a case-insensitive file system
    // answers for `pc` as for `PC`.
    let spellings: Vec<String> = std::fs::read_dir(&w.root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.eq_ignore_ascii_case("pc"))
        .collect();
    assert_eq!(spellings, ["PC"], "no second folder for the same machine");
    assert_eq!(
        job_doc(&w, "lower")["target"],
        "PC",
        "signed with the folder's spelling"
    );
}

#[test]
fn enqueue_to_a_fleet_member_creates_its_folder() {
    let w = World::with_target();
    assert!(!w.root.join("LAPTOP").exists());
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_FLEET", "PC, LAPTOP").args([
        "enqueue",
        "--target",
        "laptop",
        "--job-id",
        "for-laptop",
        "--",
        "true",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let job = w.root.join("LAPTOP").join("inbox").join("for-laptop.json");
    assert!(job.exists(), "{:?}", files(&w.root));
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&job).unwrap()).unwrap();
    assert_eq!(doc["target"], "LAPTOP");
    assert_eq!(doc["sig"].as_str().unwrap(), expected_job_sig(&doc));
    // Without the fleet list the same name is unknown.
    let w2 = World::with_target();
    let got = w2.run(&["enqueue", "--target", "LAPTOP", "--", "true"]);
    assert_error(&got, 66, "NOT_FOUND");
}

#[test]
fn enqueue_env_is_recorded_in_the_spec() {
    let w = World::with_target();
    let id = w.enqueue(
        &["--env", "A=1", "--env", "_B=x=y", "--env", "EMPTY="],
        &["true"],
    );
    let spec = spec_of(&job_doc(&w, &id));
    assert_eq!(
        spec["env"],
        serde_json::json!({"A": "1", "_B": "x=y", "EMPTY": ""})
    );
}

#[test]
fn enqueue_refuses_a_bad_env_name() {
    let w = World::with_target();
    let before = files(w.dir.path());
    for bad in [
        "1X=1",
        "A-B=1",
        "=1",
        "NOEQUALS",
        "FLEET_DISPATCH_X=1",
        "A B=1",
    ] {
        let got = w.run(&["enqueue", "--target", "PC", "--env", bad, "--", "true"]);
        assert_error(&got, 64, "VALIDATION_ERROR");
        assert_eq!(files(w.dir.path()), before, "{bad:?} wrote something");
    }
    // One variable given twice: which value was meant is not the sender's to guess.
    let got = w.run(&[
        "enqueue", "--target", "PC", "--env", "A=1", "--env", "A=2", "--", "true",
    ]);
    assert_error(&got, 64, "VALIDATION_ERROR");
    assert!(
        got.2.contains("--env A: the variable is given twice"),
        "{}",
        got.2
    );
    assert_eq!(
        files(w.dir.path()),
        before,
        "a twice-given variable wrote something"
    );
}

#[test]
fn enqueue_durations_are_recorded_in_seconds() {
    let w = World::with_target();
    let id = w.enqueue(&["--timeout", "90s", "--grace", "1500ms"], &["true"]);
    let spec = spec_of(&job_doc(&w, &id));
    assert_eq!(spec["timeoutSec"].as_f64(), Some(90.0));
    assert_eq!(spec["graceSec"].as_f64(), Some(1.5));
    let id = w.enqueue(&["--timeout", "2h"], &["true"]);
    assert_eq!(
        spec_of(&job_doc(&w, &id))["timeoutSec"].as_f64(),
        Some(7200.0)
    );
}

#[test]
fn enqueue_refuses_a_bad_duration() {
    let w = World::with_target();
    let before = files(w.dir.path());
    for (flag, bad) in [
        ("--timeout", "5 minutes"),
        ("--timeout", "5x"),
        ("--timeout", "1.5s"),
        ("--grace", "soon"),
        ("--grace", ""),
    ] {
        let got = w.run(&["enqueue", "--target", "PC", flag, bad, "--", "true"]);
        assert_error(&got, 64, "VALIDATION_ERROR");
        assert!(got.2.contains(flag), "names the flag: {}", got.2);
        assert_eq!(files(w.dir.path()), before);
    }
}

#[test]
fn enqueue_priority_high_is_recorded() {
    let w = World::with_target();
    let high = w.enqueue(&["--priority", "high"], &["true"]);
    assert_eq!(spec_of(&job_doc(&w, &high))["priority"], "high");
    let normal = w.enqueue(&[], &kit(&[]));
    let p = &spec_of(&job_doc(&w, &normal))["priority"];
    assert!(p.is_null() || p == "normal", "{p}");
    let got = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--priority",
        "urgent",
        "--",
        "true",
    ]);
    assert_eq!(got.0, 64, "an unknown priority is a bad value: {}", got.2);
}

#[test]
fn enqueue_label_is_recorded() {
    let w = World::with_target();
    let id = w.enqueue(&["--label", "nightly | build \"x\""], &["true"]);
    assert_eq!(spec_of(&job_doc(&w, &id))["label"], "nightly | build \"x\"");
}

#[test]
fn enqueue_takes_parent_job_id_from_the_environment() {
    let w = World::with_target();
    let (code, out, err) = output(w.cmd().env("FLEET_DISPATCH_JOB_ID", "parent-1").args([
        "enqueue", "--target", "PC", "--job-id", "child-1", "--", "true",
    ]));
    assert_eq!(code, 0, "{out}{err}");
    let doc = job_doc(&w, "child-1");
    assert_eq!(spec_of(&doc)["parentJobId"], "parent-1");
    assert_eq!(doc["sig"].as_str().unwrap(), expected_job_sig(&doc));
    // Outside a job there is no parent.
    let id = w.enqueue(&[], &kit(&[]));
    assert!(spec_of(&job_doc(&w, &id)).get("parentJobId").is_none());
}

#[test]
fn enqueue_refuses_an_invalid_fleet_dispatch_job_id() {
    let w = World::with_target();
    let before = files(w.dir.path());
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_JOB_ID", "../x")
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_error(&got, 64, "VALIDATION_ERROR");
    assert!(got.2.contains("FLEET_DISPATCH_JOB_ID"), "{}", got.2);
    assert_eq!(files(w.dir.path()), before);
}

#[test]
fn enqueue_never_overwrites_a_queued_job() {
    let w = World::with_target();
    let id = w.enqueue(&["--job-id", "taken"], &["echo", "first"]);
    let before = std::fs::read(w.inbox(&id)).unwrap();
    let got = w.run(&[
        "enqueue", "--target", "PC", "--job-id", "taken", "--", "echo", "second",
    ]);
    assert_error(&got, 64, "VALIDATION_ERROR");
    assert!(got.2.contains("taken"), "{}", got.2);
    assert_eq!(
        std::fs::read(w.inbox(&id)).unwrap(),
        before,
        "bytes identical"
    );
    assert_eq!(files(&w.pc().join("inbox")), ["taken.json"], "no temp left");
}

#[test]
fn enqueue_refuses_an_id_already_used() {
    let w = World::with_target();
    // A result counts only when it verifies; an archived job likewise
    // (`trust::junk_in_the_archive_*` holds the other half).
    let result = signed_result(json!({
        "jobId": "old-result", "target": "PC", "ok": true, "exitCode": 0, "error": "",
        "startedAt": now_text(), "finishedAt": now_text(), "detail": "{}",
    }));
    std::fs::write(w.result_path("old-result"), result.to_string()).unwrap();
    let job = w.write_job(
        "PC",
        "old-done",
        "PC",
        &now_text(),
        &json!({"argv": ["true"]}),
    );
    std::fs::rename(job, w.done("old-done")).unwrap();
    let before = files(w.dir.path());
    for id in ["old-result", "old-done"] {
        let got = w.run(&["enqueue", "--target", "PC", "--job-id", id, "--", "true"]);
        assert_error(&got, 64, "VALIDATION_ERROR");
        assert!(got.2.contains(id), "{}", got.2);
        assert!(!w.inbox(id).exists());
        assert_eq!(files(w.dir.path()), before);
    }
}

#[test]
fn enqueue_error_leaves_no_folder_behind_for_a_fleet_member() {
    // docs/protocol.md §9: every error names its side effects, none unless stated.
    let w = World::with_target();
    std::fs::remove_file(&w.key).unwrap();
    let before = files(w.dir.path());
    let got = output(
        w.cmd()
            .env("FLEET_DISPATCH_FLEET", "PC,LAPTOP")
            .args(["enqueue", "--target", "LAPTOP", "--", "true"]),
    );
    assert_error(&got, 78, "CONFIG");
    assert_eq!(files(w.dir.path()), before);
    assert!(
        !w.root.join("LAPTOP").exists(),
        "a refused enqueue created {}",
        w.root.join("LAPTOP").display()
    );
}

#[test]
fn enqueue_without_a_program_is_a_parse_error() {
    let w = World::with_target();
    for args in [
        &["enqueue", "--target", "PC"][..],
        &["enqueue", "--target", "PC", "--"][..],
    ] {
        let (code, out, err) = w.run(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(out.is_empty());
    }
    assert!(files(&w.pc().join("inbox")).is_empty());
}

// ---------------------------------------------------------------- result

#[test]
fn result_before_the_job_ran_is_unfinished_and_an_unknown_id_not_found() {
    // A queued job is not an error: it has no result yet (exit 124, as a
    // wait that ran out), with a hint; an id nothing knows is NOT_FOUND.
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(err.contains(&id) && err.contains("queued"), "{err}");
    assert!(err.contains("--wait"), "{err}");
    let got = w.run(&["result", "--target", "PC", "--job-id", "never-sent"]);
    assert_error(&got, 66, "NOT_FOUND");
}

#[test]
fn result_shows_a_genuine_result_human_and_json() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "hello-from-job", "exit", "3"]));
    w.listen_once(&[]);
    // `result` exits with the job's own exit code, as `result --wait`.
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 3, "{err}");
    assert!(out.contains(&id), "{out}");
    assert!(out.contains("exit 3"), "{out}");
    assert!(out.contains("hello-from-job"), "{out}");
    let (code, out, err) = w.run(&["--json", "result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 3, "{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["verified"], true);
    assert_eq!(v["jobId"], id.as_str());
    assert_eq!(v["target"], "PC");
    assert_eq!(v["ok"], false);
    assert_eq!(v["exitCode"], 3);
    assert_eq!(v["error"], "");
}

#[test]
fn result_that_was_tampered_with_is_forbidden_and_not_shown() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "3"]));
    w.listen_once(&[]);
    let mut doc = w.result(&id);
    assert_eq!(doc["exitCode"], 3);
    doc["exitCode"] = 4242.into();
    doc["ok"] = true.into();
    std::fs::write(w.result_path(&id), doc.to_string()).unwrap();
    for extra in [&[][..], &["--wait", "--wait-timeout", "2s"][..]] {
        let mut args = vec!["result", "--target", "PC", "--job-id", &id];
        args.extend_from_slice(extra);
        let got = w.run(&args);
        assert_error(&got, 77, "FORBIDDEN");
        assert!(!got.2.contains("4242"), "tampered value shown: {}", got.2);
        let mut json = vec!["--json"];
        json.extend_from_slice(&args);
        let (code, out, err) = w.run(&json);
        assert_eq!(code, 77);
        assert!(err.is_empty(), "{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["error"]["code"], "FORBIDDEN");
        assert!(!out.contains("4242"), "tampered value shown: {out}");
        assert!(v.get("verified").is_none());
    }
}

#[test]
fn result_copied_under_another_id_or_target_is_forbidden() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let id = w.enqueue(&[], &kit(&[]));
    let other = w.enqueue(&[], &kit(&["exit", "9"]));
    w.listen_once(&[]);
    // A genuine result of one job, placed where another job's result goes.
    std::fs::copy(w.result_path(&id), w.result_path(&other)).unwrap();
    let got = w.run(&["result", "--target", "PC", "--job-id", &other]);
    assert_error(&got, 77, "FORBIDDEN");
    // A genuine PC result placed in LAPTOP's folder.
    let laptop = w
        .root
        .join("LAPTOP")
        .join("results")
        .join(format!("{id}.json"));
    std::fs::copy(w.result_path(&id), &laptop).unwrap();
    let got = w.run(&["result", "--target", "LAPTOP", "--job-id", &id]);
    assert_error(&got, 77, "FORBIDDEN");
}

#[test]
fn result_wait_exits_with_the_jobs_exit_code() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "7"]));
    let waiter = spawn({
        let mut c = w.bg_cmd();
        c.args(["result", "--target", "PC", "--job-id", &id, "--wait"]);
        c
    });
    std::thread::sleep(Duration::from_millis(300));
    w.listen_once(&[]);
    let (code, out, err) = finish(waiter, Duration::from_secs(10));
    assert_eq!(code, 7, "{out}{err}");
    assert!(out.contains("exit 7"), "{out}");
}

#[test]
fn result_wait_exits_1_when_the_job_never_started() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "0"]));
    w.write_marker("PC", &id, "PC");
    w.listen_once(&[]);
    assert_eq!(w.result(&id)["error"], "cancelled-before-start");
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id, "--wait"]);
    assert_eq!(code, 1, "{out}{err}");
    // Without --wait too: `result` exits by the job's outcome.
    let (code, _, _) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 1);
}

#[test]
fn result_wait_exits_1_when_the_job_timed_out() {
    let w = World::with_target();
    let id = w.enqueue(
        &["--timeout", "1s", "--grace", "1s"],
        &kit(&["sleep", "30"]),
    );
    w.listen_once(&[]);
    assert_eq!(w.result(&id)["error"], "timeout");
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id, "--wait"]);
    assert_eq!(code, 1, "{out}{err}");
}

#[test]
fn enqueue_wait_exits_with_the_jobs_exit_code() {
    let w = World::with_target();
    let waiter = spawn({
        let mut c = w.bg_cmd();
        c.args([
            "enqueue", "--target", "PC", "--job-id", "waited", "--wait", "--",
        ])
        .args(kit(&["exit", "7"]));
        c
    });
    wait_until(Duration::from_secs(10), || w.inbox("waited").exists());
    w.listen_once(&[]);
    let (code, out, err) = finish(waiter, Duration::from_secs(10));
    assert_eq!(code, 7, "{out}{err}");
    assert!(out.starts_with("waited\n"), "prints the id first: {out}");
}

#[test]
fn enqueue_wait_json_prints_one_document_with_the_result() {
    let w = World::with_target();
    let waiter = spawn({
        let mut c = w.bg_cmd();
        c.args([
            "--json", "enqueue", "--target", "PC", "--job-id", "waited", "--wait", "--",
        ])
        .args(kit(&["exit", "5"]));
        c
    });
    wait_until(Duration::from_secs(10), || w.inbox("waited").exists());
    w.listen_once(&[]);
    let (code, out, err) = finish(waiter, Duration::from_secs(10));
    assert_eq!(code, 5, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|_| panic!("{out}"));
    assert_eq!(v["jobId"], "waited");
    assert_eq!(v["result"]["exitCode"], 5);
    assert_eq!(v["result"]["verified"], true);
}

#[test]
fn wait_timeout_without_a_listener_exits_124_saying_still_queued() {
    let w = World::with_target();
    let start = Instant::now();
    let (code, out, err) = w.run(&[
        "enqueue",
        "--target",
        "PC",
        "--job-id",
        "slow",
        "--wait",
        "--wait-timeout",
        "300ms",
        "--",
        "true",
    ]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(err.contains("queued"), "{err}");
    assert!(w.inbox("slow").exists(), "the job stays queued");
    let (code, out, err) = w.run(&[
        "result",
        "--target",
        "PC",
        "--job-id",
        "slow",
        "--wait",
        "--wait-timeout",
        "300ms",
    ]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(err.contains("queued"), "{err}");
    assert!(start.elapsed() < Duration::from_secs(5));
}

// ---------------------------------------------------------------- errors, help

#[test]
fn json_errors_are_json_on_stdout() {
    let w = World::with_target();
    let cases: [(&[&str], i32, &str); 4] = [
        (
            &["enqueue", "--target", "CON", "--", "true"],
            64,
            "VALIDATION_ERROR",
        ),
        (
            &["enqueue", "--target", "SERVER", "--", "true"],
            66,
            "NOT_FOUND",
        ),
        (
            &["result", "--target", "PC", "--job-id", "nope"],
            66,
            "NOT_FOUND",
        ),
        (&["sweep", "--max-age", "soon"], 64, "VALIDATION_ERROR"),
    ];
    for (args, status, code) in cases {
        let mut a = vec!["--json"];
        a.extend_from_slice(args);
        let (s, out, err) = w.run(&a);
        assert_eq!(s, status, "{a:?}");
        assert!(err.is_empty(), "{a:?}: stderr {err}");
        let v: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|_| panic!("{a:?}: not one JSON document: {out}"));
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(
            v["error"]["message"]
                .as_str()
                .is_some_and(|m| !m.is_empty())
        );
    }
    std::fs::remove_file(&w.key).unwrap();
    let (s, out, _) = w.run(&["--json", "enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(s, 78);
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["error"]["code"], "CONFIG");
}

/// The subcommand names listed by `fleet-dispatch --help`.
fn subcommands(w: &World) -> Vec<String> {
    let (code, out, _) = w.run(&["--help"]);
    assert_eq!(code, 0);
    out.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|c| c != "help")
        .collect()
}

#[test]
fn every_subcommand_help_has_an_example() {
    let w = World::new();
    let cmds = subcommands(&w);
    for c in [
        "keygen",
        "enqueue",
        "listen",
        "result",
        "cancel",
        "sweep",
        "verify-marker",
        "demo",
    ] {
        assert!(cmds.iter().any(|x| x == c), "{c} missing from {cmds:?}");
    }
    for c in &cmds {
        let (code, out, err) = w.run(&[c.as_str(), "--help"]);
        assert_eq!(code, 0, "{c}: {err}");
        assert!(out.contains("Example"), "{c} --help has no example:\n{out}");
    }
}

#[test]
fn status_subcommand_exists() {
    let w = World::with_target();
    assert!(subcommands(&w).iter().any(|c| c == "status"));
    let (code, out, err) = w.run(&["status", "--target", "PC"]);
    assert_eq!(code, 0, "{out}{err}");
}

// ---------------------------------------------------------------- demo

#[test]
fn demo_runs_on_a_fresh_machine_and_leaves_nothing_behind() {
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut c = assert_cmd::cargo::cargo_bin_cmd!("fleet-dispatch");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        // The same places on Windows.
        .env("USERPROFILE", home.path())
        .env("TMP", tmp.path())
        .env("TEMP", tmp.path())
        .arg("demo");
    let start = Instant::now();
    let (code, out, err) = output_within(&mut c, Duration::from_secs(60));
    let took = start.elapsed();
    assert_eq!(code, 0, "{out}\n{err}");
    // Under Wine every process start costs a good part of a second, and no
    // graceful stop can be delivered (each waits out its grace): the demo's
    // few seconds become about twenty there.
    let limit = Duration::from_secs(if cfg!(windows) { 45 } else { 15 });
    assert!(took < limit, "demo took {took:?}");
    for word in ["cancelled-before-start", "timeout"] {
        assert!(out.contains(word), "demo never mentions {word}:\n{out}");
    }
    assert!(
        out.replace("cancelled-before-start", "")
            .contains("cancelled"),
        "demo never shows an in-flight cancel:\n{out}"
    );
    assert!(
        files(tmp.path()).is_empty(),
        "left behind: {:?}",
        files(tmp.path())
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    assert!(
        files(home.path()).is_empty(),
        "wrote into HOME: {:?}",
        files(home.path())
    );
}

/// Regression: `demo 2>&1 | head` never ended: the listener it started
/// wrote to the closed pipe in its signal handler with `eprintln!`, which
/// panicked there, so the SIGTERM the demo sent it was lost and the demo
/// waited for it for ever, its folder left behind.
#[test]
#[cfg(unix)] // a shell pipeline
fn demo_whose_reader_went_away_ends_and_leaves_nothing_behind() {
    let home = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let line = format!("{} demo 2>&1 | head -3", bin().display());
    let mut c = assert_cmd::Command::new("sh");
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("TMPDIR", tmp.path())
        .args(["-c", &line]);
    let (code, out, err) = output_within(&mut c, Duration::from_secs(60));
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out.lines().count(), 3, "{out}");
    // The demo removes its folder on the way out; the pipeline may end
    // (with `head`) a moment before it does.
    wait_until(Duration::from_secs(20), || files(tmp.path()).is_empty());
}

// ---------------------------------------------------------------- keygen and key files that are no regular file

/// Regression: `keygen --force` renamed its key over whatever had the
/// name, so a FIFO (or, as root, `/dev/null`) became a key file. Anything
/// but a regular file is refused, with or without `--force`, and stays.
#[test]
#[cfg(unix)] // FIFOs exist on Unix only
fn keygen_force_refuses_a_fifo_at_the_key_path_and_leaves_it_a_fifo() {
    use std::os::unix::fs::FileTypeExt;
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    make_fifo(&w.key);
    for args in [&["keygen", "--force"][..], &["keygen"]] {
        let got = output_within(w.cmd().args(args), Duration::from_secs(10));
        assert_error(&got, 78, "CONFIG");
        assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
        assert!(got.2.contains("is a FIFO"), "{}", got.2);
        let kind = std::fs::symlink_metadata(&w.key).unwrap().file_type();
        assert!(kind.is_fifo(), "{args:?}: the FIFO was replaced: {kind:?}");
        assert_eq!(
            files(w.key.parent().unwrap()),
            ["fleet.key"],
            "no temp file left"
        );
    }
}

/// Regression: `keygen --force` on a directory failed as INTERNAL_ERROR
/// ("cannot replace"): it is a key path that names no key file, `CONFIG`.
#[test]
fn keygen_force_refuses_a_directory_at_the_key_path_with_config() {
    let w = World::new();
    std::fs::remove_file(&w.key).unwrap();
    std::fs::create_dir(&w.key).unwrap();
    std::fs::write(w.key.join("kept"), "x").unwrap();
    let got = w.run(&["keygen", "--force"]);
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    assert!(got.2.contains("is a directory"), "{}", got.2);
    assert!(w.key.is_dir());
    assert_eq!(files(w.key.parent().unwrap()), ["fleet.key/kept"]);
}

/// `keygen --force` never writes through a link, nor replaces the link.
#[test]
#[cfg(unix)] // Wine cannot create symbolic links
fn keygen_force_refuses_a_symbolic_link_and_never_writes_through_it() {
    let w = World::new();
    let target = scratch(&w, "elsewhere.key");
    std::fs::rename(&w.key, &target).unwrap();
    std::os::unix::fs::symlink(&target, &w.key).unwrap();
    let got = w.run(&["keygen", "--force"]);
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    assert!(got.2.contains("is a symbolic link"), "{}", got.2);
    assert!(
        std::fs::symlink_metadata(&w.key)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), VECTOR_KEY);
    assert_eq!(
        files(w.key.parent().unwrap()),
        ["fleet.key"],
        "no temp file left"
    );
}

/// Regression: a key file that is a FIFO blocked every command forever
/// (opening it waited for a writer).
#[test]
#[cfg(unix)] // FIFOs exist on Unix only
fn a_key_file_that_is_a_fifo_is_config_at_once() {
    let w = World::with_target();
    std::fs::remove_file(&w.key).unwrap();
    make_fifo(&w.key);
    for args in [
        &["status"][..],
        &["enqueue", "--target", "PC", "--", "true"],
    ] {
        let got = output_within(w.cmd().args(args), Duration::from_secs(10));
        assert_error(&got, 78, "CONFIG");
        assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
        assert!(got.2.contains("is a FIFO"), "{}", got.2);
    }
    assert!(files(&w.pc().join("inbox")).is_empty());
}

/// Regression: `--key-file /dev/zero` read until memory ran out.
#[test]
#[cfg(unix)] // /dev/zero
fn a_key_file_that_is_dev_zero_is_config_at_once() {
    let w = World::with_target();
    let got = output_within(
        w.cmd().args(["--key-file", "/dev/zero", "status"]),
        Duration::from_secs(10),
    );
    assert_error(&got, 78, "CONFIG");
    assert!(
        got.2.contains("/dev/zero is a character device"),
        "{}",
        got.2
    );
}

/// A key file is tens of bytes: one over 4 KiB is no key file, and is
/// refused before it is read whole.
#[test]
fn a_key_file_over_4_kib_is_config() {
    let w = World::with_target();
    write_private(&w.key, &"a".repeat(4097));
    let got = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_error(&got, 78, "CONFIG");
    assert!(got.2.contains(w.key.to_str().unwrap()), "{}", got.2);
    assert!(got.2.contains("more than 4096 bytes"), "{}", got.2);
    assert!(files(&w.pc().join("inbox")).is_empty());
    write_private(&w.key, &"a".repeat(4096));
    let (code, out, err) = w.run(&["enqueue", "--target", "PC", "--", "true"]);
    assert_eq!(code, 0, "4096 bytes are still a key: {out}{err}");
}

#[test]
fn enqueue_with_a_state_directory_it_cannot_use_sends_the_job_and_says_last_is_not_kept() {
    let w = World::with_target();
    let inside = w.root.join("state");
    let (code, out, err) = output(
        w.cmd()
            .env("FLEET_DISPATCH_STATE_DIR", &inside)
            .args(["enqueue", "--target", "PC", "--", "true"]),
    );
    assert_eq!(code, 0, "{out}{err}");
    let id = out.trim();
    assert!(w.inbox(id).is_file(), "the job is sent");
    assert!(err.contains("is not remembered as `last`"), "{err}");
    assert!(err.contains("inside the dispatch root"), "{err}");
    assert!(
        !inside.exists(),
        "nothing of the state was made in the root"
    );
}

#[test]
fn a_usage_line_never_lists_an_option_its_variable_set_as_required() {
    // The world sets FLEET_DISPATCH_ROOT, _KEY_FILE, _STATE_DIR and _MACHINE.
    let w = World::new();
    for args in [
        &["result", "--target", "PC"][..],
        &["cancel", "--job-id", "x"],
        &["logs"],
    ] {
        let (code, out, err) = w.run(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        let usage = err
            .lines()
            .find(|l| l.starts_with("Usage:"))
            .unwrap_or_else(|| panic!("{args:?}: no usage line: {err}"));
        assert!(usage.contains("[OPTIONS]"), "{usage}");
        for set in ["--root", "--key-file", "--state-dir", "--machine"] {
            assert!(!usage.contains(set), "{args:?}: {usage}");
        }
    }
}
