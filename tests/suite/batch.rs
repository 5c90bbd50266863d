//! `enqueue --batch`: one job per JSON line, every line checked before any
//! is published, the ids printed in the order of the lines.

use serde_json::Value;

use crate::util::*;

/// Writes `lines` to a batch file in the world and returns its path.
fn batch_file(w: &World, lines: &[String]) -> String {
    let path = w.dir.path().join(format!("{}.jsonl", uid("batch")));
    std::fs::write(&path, lines.join("\n")).unwrap();
    path.to_str().unwrap().to_string()
}

/// A batch line running `jobkit STEPS…` with `extra` fields.
fn line(steps: &[&str], extra: Value) -> String {
    let mut v = kit_spec(steps);
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string()
}

fn queued_job(w: &World, target: &str, id: &str) -> Value {
    let p = w.root.join(target).join("inbox").join(format!("{id}.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn batch_prints_ids_in_line_order_and_every_job_runs() {
    let w = World::with_target();
    let file = batch_file(
        &w,
        &[
            line(&["out", "one"], serde_json::json!({"label": "one"})),
            String::new(),
            line(
                &["out", "two"],
                serde_json::json!({"label": "two", "priority": "high"}),
            ),
            "   ".to_string(),
            line(
                &["exit", "4"],
                serde_json::json!({"label": "three", "timeout": "1h"}),
            ),
        ],
    );
    let (code, out, err) = w.run(&[
        "--durability",
        "full",
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 3, "{out}");
    for (id, label) in ids.iter().zip(["one", "two", "three"]) {
        let job = queued_job(&w, "PC", id);
        let spec: Value = serde_json::from_str(job["spec"].as_str().unwrap()).unwrap();
        assert_eq!(spec["label"], label, "ids follow the lines: {out}");
    }
    let counters = w.listen_once(&[]);
    assert_eq!(
        (&counters["done"], &counters["failed"]),
        (&2.into(), &1.into()),
        "{counters}"
    );
    assert_eq!(w.result(ids[0])["exitCode"], 0);
    assert_eq!(w.result(ids[2])["exitCode"], 4);
}

#[test]
fn a_bad_line_publishes_nothing_and_is_named() {
    let w = World::with_target();
    let good = line(&[], serde_json::json!({}));
    for (bad, words) in [
        (
            line(&[], serde_json::json!({"timeout": "soon"})),
            vec!["line 2", "\"timeout\""],
        ),
        (
            line(&[], serde_json::json!({"colour": "red"})),
            vec!["line 2", "unknown field \"colour\""],
        ),
        (
            line(&[], serde_json::json!({"priority": "urgent"})),
            vec!["line 2", "\"priority\""],
        ),
        (
            line(&[], serde_json::json!({"env": {"A": 1}})),
            vec!["line 2", "\"env\""],
        ),
        (
            line(&[], serde_json::json!({"target": "nowhere"})),
            vec!["line 2", "unknown target"],
        ),
        ("[1, 2]".to_string(), vec!["line 2", "not a JSON object"]),
        (
            r#"{"label": "no program"}"#.to_string(),
            vec!["line 2", "no program"],
        ),
    ] {
        let file = batch_file(&w, &[good.clone(), bad, good.clone()]);
        let (code, out, err) = w.run(&["enqueue", "--batch", &file, "--target", "PC"]);
        assert!(code == 64 || code == 66, "{code} {out}{err}");
        assert!(out.is_empty(), "{out}");
        for word in words {
            assert!(err.contains(word), "{word:?} missing: {err}");
        }
        assert!(
            files(&w.pc().join("inbox")).is_empty(),
            "nothing published: {err}"
        );
    }
}

#[test]
fn batch_from_stdin() {
    let w = World::with_target();
    let text = format!(
        "{}\n{}\n",
        line(&[], serde_json::json!({"jobId": "from-stdin-1"})),
        line(
            &[],
            serde_json::json!({"jobId": "from-stdin-2", "target": "pc"})
        )
    );
    let (code, out, err) = output(
        w.cmd()
            .args(["--json", "enqueue", "--batch", "-", "--target", "PC"])
            .write_stdin(text),
    );
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["jobs"][0]["jobId"], "from-stdin-1");
    assert_eq!(v["jobs"][0]["line"], 1);
    assert_eq!(v["jobs"][1]["jobId"], "from-stdin-2");
    assert!(w.inbox("from-stdin-1").exists() && w.inbox("from-stdin-2").exists());
}

#[test]
fn batch_flags_are_defaults_and_a_line_may_fan_out() {
    let w = World::with_target();
    w.make_target("LAPTOP");
    let file = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({})),
            line(
                &[],
                serde_json::json!({"target": "PC,LAPTOP", "label": "own"}),
            ),
        ],
    );
    let (code, out, err) = w.run(&[
        "enqueue",
        "--batch",
        &file,
        "--target",
        "PC",
        "--label",
        "default",
        "--priority",
        "high",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let ids: Vec<&str> = out.lines().collect();
    let spec = |target: &str, id: &str| -> Value {
        serde_json::from_str(queued_job(&w, target, id)["spec"].as_str().unwrap()).unwrap()
    };
    assert_eq!(spec("PC", ids[0])["label"], "default");
    assert_eq!(spec("PC", ids[0])["priority"], "high");
    assert_eq!(spec("LAPTOP", ids[1])["label"], "own");
    assert_eq!(queued_job(&w, "LAPTOP", ids[1])["target"], "LAPTOP");
    assert_eq!(queued_job(&w, "PC", ids[1])["target"], "PC");
}

#[test]
fn batch_refuses_flags_that_name_one_job_and_repeated_ids() {
    let w = World::with_target();
    let file = batch_file(&w, &[line(&[], serde_json::json!({}))]);
    for (extra, word) in [
        (vec!["--job-id", "x"], "--job-id cannot be given"),
        (vec!["--wait"], "--wait cannot be given"),
        (vec!["--", "true"], "a program after `--` cannot be given"),
    ] {
        let mut args = vec!["enqueue", "--batch", &file, "--target", "PC"];
        args.extend(extra);
        let (code, _, err) = w.run(&args);
        assert_eq!(code, 64, "{err}");
        assert!(err.contains(word), "{err}");
    }
    let twice = batch_file(
        &w,
        &[
            line(&[], serde_json::json!({"jobId": "same"})),
            line(&[], serde_json::json!({"jobId": "same"})),
        ],
    );
    let (code, _, err) = w.run(&["enqueue", "--batch", &twice, "--target", "PC"]);
    assert_eq!(code, 64, "{err}");
    assert!(
        err.contains("line 2: job id same is also on line 1"),
        "{err}"
    );
    let (code, _, err) = w.run(&[
        "enqueue",
        "--batch",
        &batch_file(&w, &["".into()]),
        "--target",
        "PC",
    ]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("holds no job"), "{err}");
    assert!(files(&w.pc().join("inbox")).is_empty());
}
