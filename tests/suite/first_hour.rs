//! What a newcomer meets in the first hour: `--json` on every command, the
//! exit a job gave shown as it gave it, a follow that prints each line
//! once, no escape codes for a dumb terminal, help examples that do not
//! break at 80 columns, and the messages that say what to do next (a
//! program not on the listener's PATH, a file that is not a key, the
//! folder `demo --keep` kept).

use std::time::Duration;

use serde_json::Value;

use crate::util::*;

/// A job that exits 143 by itself, unsignalled, is shown as `exit 143` by
/// `result`, `status`, `enqueue --wait` and the listener's log: never as the
/// `-1` the result records for a job that gave no code of its own.
#[test]
fn a_job_that_exits_143_by_itself_is_shown_as_exit_143() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "143"]));
    let listen = output(
        w.cmd()
            .args(["listen", "--once", "--poll-interval", "100ms"]),
    );
    assert!(listen.1.contains("failed (exit 143,"), "{listen:?}");
    assert_eq!(w.result(&id)["exitCode"], 143);
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 143, "{out}{err}");
    assert!(out.contains("failed (exit 143)"), "{out}");
    let (_, status, _) = w.run(&["status"]);
    let line = status.lines().find(|l| l.contains(&id)).unwrap();
    assert!(line.contains("exit 143"), "{status}");
}

/// A job ended by a signal has no exit code of its own: it is shown by the
/// signal, and one that exited after a stop signal by the code it gave.
#[cfg(unix)]
#[test]
fn a_job_without_an_exit_code_is_shown_by_its_signal_never_as_exit_minus_1() {
    let w = World::with_target();
    let killed = w.enqueue(&[], &["sh", "-c", "kill -TERM $$"]);
    let timed = w.enqueue(
        &["--timeout", "300ms"],
        &kit(&["exit-on-stop", "143", "sleep", "30"]),
    );
    w.listen_once(&[]);
    let (_, out, _) = w.run(&["result", "--target", "PC", "--job-id", &killed]);
    assert!(out.contains("failed (ended by SIGTERM)"), "{out}");
    let (_, out, _) = w.run(&["result", "--target", "PC", "--job-id", &timed]);
    assert!(out.contains("timeout (exited 143 after SIGTERM)"), "{out}");
    let (_, status, _) = w.run(&["status"]);
    assert!(!status.contains("exit -1"), "{status}");
}

/// `--wait --follow` prints each line of the job's output once: followed
/// as it is written, and not again in the result's tail.
#[test]
fn wait_follow_prints_each_output_line_once() {
    let w = World::with_target();
    let steps = ["out", "first-line", "err", "second-line", "exit", "3"];
    // `result --wait --follow` of a job that has finished.
    let id = w.enqueue(&[], &kit(&steps));
    w.listen_once(&[]);
    let args = [
        "result", "--target", "PC", "--job-id", &id, "--wait", "--follow",
    ];
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 3, "{out}{err}");
    assert_eq!(out.matches("first-line").count(), 1, "{out}");
    assert_eq!(err.matches("second-line").count(), 1, "{err}");
    assert!(out.contains("failed (exit 3)"), "{out}");
    // `enqueue --wait --follow` with the listener running.
    let _listener = w.spawn_listener(&[]);
    let mut args = vec!["enqueue", "--target", "PC", "--wait", "--follow", "--"];
    let argv = kit(&steps);
    args.extend(argv.iter().map(String::as_str));
    let (code, out, err) = output_within(w.cmd().args(&args), Duration::from_secs(30));
    assert_eq!(code, 3, "{out}{err}");
    assert_eq!(out.matches("first-line").count(), 1, "{out}");
    assert_eq!(err.matches("second-line").count(), 1, "{err}");
}

/// Under `TERM=dumb` a terminal gets no escape code: no progress line
/// redrawn in place, no colour; the same commands under `TERM=xterm` do
/// send them, so the test can tell.
#[cfg(unix)]
#[test]
#[ignore = "needs util-linux `script` for a pseudo-terminal"]
fn a_dumb_terminal_gets_no_escape_codes() {
    let w = World::with_target();
    let failed = w.enqueue(&[], &kit(&["exit", "3"]));
    w.listen_once(&[]);
    let queued = w.enqueue(&[], &kit(&[]));
    let wait = format!("result --target PC --job-id {queued} --wait --wait-timeout 600ms");
    let shown = format!("result --target PC --job-id {failed}");
    let xterm = on_a_terminal(&w, &wait, &[]);
    assert!(xterm.contains('\u{1b}'), "xterm: {xterm:?}");
    for args in [&wait, &shown, &"status".to_string()] {
        let dumb = on_a_terminal(&w, args, &[("TERM", "dumb")]);
        assert!(!dumb.contains('\u{1b}'), "{args}: {dumb:?}");
        assert!(!dumb.is_empty(), "{args}");
    }
}

/// `--key-file /etc/hostname`: a file that is not a key is answered as not
/// a fleet key file, not with advice to make it private; a key others may
/// read is still refused with that advice.
#[test]
fn a_file_that_is_not_a_key_is_named_so_before_any_permission_advice() {
    let w = World::with_target();
    let hostname = scratch(&w, "hostname");
    let passwd = scratch(&w, "passwd");
    let exposed_key = scratch(&w, "exposed.key");
    std::fs::write(&hostname, "build-box\n").unwrap();
    std::fs::write(
        &passwd,
        "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n",
    )
    .unwrap();
    std::fs::write(&exposed_key, VECTOR_KEY).unwrap();
    #[cfg(unix)]
    for f in [&hostname, &passwd, &exposed_key] {
        set_mode(f, 0o644);
    }
    // A file of several lines is told apart only when others may read it
    // (Unix modes here); a short one always.
    let mut cases = vec![(&hostname, "it holds 9 bytes")];
    if cfg!(unix) {
        cases.push((&passwd, "it holds 2 lines"));
    }
    for (file, why) in cases {
        let got = w.run(&["--key-file", p(file), "status"]);
        assert_eq!(got.0, 78, "{got:?}");
        let wanted = format!("{} is not a fleet key file ({why}", file.display());
        assert!(got.2.contains(&wanted), "{}", got.2);
        assert!(
            !got.2.contains("chmod") && !got.2.contains("icacls"),
            "{}",
            got.2
        );
        // Nor is making a key there advised: it would write over the file.
        assert!(!got.2.contains("keygen --force"), "{}", got.2);
        // doctor says the same, in one check.
        let (code, out, err) = w.run(&["--key-file", p(file), "doctor"]);
        assert_eq!(code, 1, "{out}{err}");
        let key_lines: Vec<&str> = out.lines().filter(|l| l.contains(" key")).collect();
        assert!(
            key_lines
                .iter()
                .any(|l| l.contains("is not a fleet key file")),
            "{out}"
        );
        assert!(
            !out.contains("chmod") && !out.contains("keygen --force"),
            "{out}"
        );
    }
    #[cfg(unix)]
    {
        let got = w.run(&["--key-file", p(&exposed_key), "status"]);
        assert_eq!(got.0, 78, "{got:?}");
        assert!(got.2.contains("chmod 600"), "{}", got.2);
        assert!(!got.2.contains("not a fleet key file"), "{}", got.2);
    }
}

/// Plain `status` on a machine that only sends shows every target, even
/// when a folder of its own exists (a job once sent to it, a test run of
/// its listener); on a machine whose listener runs, only its own.
#[test]
fn plain_status_on_a_sending_machine_shows_every_target() {
    let w = World::with_target();
    w.make_target("BUILD");
    w.make_target("LAPTOP");
    let targets = |machine: &str| -> Vec<String> {
        let (code, out, err) = output(w.cmd_as(machine).args(["--json", "status"]));
        assert_eq!(code, 0, "{out}{err}");
        let v: Value = serde_json::from_str(out.trim()).unwrap();
        v["targets"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["target"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(targets("LAPTOP"), ["BUILD", "LAPTOP", "PC"]);
    assert_eq!(targets("PHONE"), ["BUILD", "LAPTOP", "PC"]);
    let _listener = w.spawn_listener(&[]);
    assert_eq!(targets("PC"), ["PC"]);
    assert_eq!(targets("LAPTOP"), ["BUILD", "LAPTOP", "PC"]);
}

/// The subcommands `fleet-dispatch --help` lists (all but `help`), so a
/// new one is covered by the tests below as soon as it exists.
fn subcommands() -> Vec<String> {
    let out = std::process::Command::new(bin())
        .arg("--help")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let names: Vec<String> = text
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 10, "no Commands: section in --help: {text}");
    names
}

/// What a command prints on stdout with `--json`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    /// One JSON document.
    Document,
    /// JSON lines, one document each, as they come (the streaming forms:
    /// `demo`, `logs --follow`).
    Lines,
    /// JSON-RPC lines, answering a `ping` given on stdin (`mcp`).
    Rpc,
}

/// How each subcommand runs one-shot in `w` (a target `PC` with a finished
/// job `done` and a queued job `queued`, a marker file `marker`): its
/// arguments and its form. `listen` runs with `--once` (without it, it
/// runs until stopped).
fn invocations(
    name: &str,
    done: &str,
    queued: &str,
    marker: &str,
    fresh_key: &str,
) -> Vec<(Vec<String>, Form)> {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let doc = Form::Document;
    match name {
        "keygen" => vec![(args(&["--key-file", fresh_key, "keygen"]), doc)],
        "identity" => {
            let file = format!("{fresh_key}.identity");
            vec![
                (args(&["--identity-file", &file, "identity", "init"]), doc),
                (args(&["--identity-file", &file, "identity", "show"]), doc),
            ]
        }
        "roster" => {
            let admin = format!("{fresh_key}.admin");
            vec![
                (args(&["roster", "init", "--admin-key", &admin]), doc),
                (args(&["roster", "show"]), doc),
                (args(&["roster", "verify"]), doc),
            ]
        }
        "enqueue" => vec![(args(&["enqueue", "--target", "PC", "--", "true"]), doc)],
        "listen" => vec![(args(&["listen", "--once"]), doc)],
        "result" => vec![(args(&["result", "--target", "PC", "--job-id", done]), doc)],
        "logs" => vec![
            (args(&["logs", "--target", "PC", "--job-id", done]), doc),
            (
                args(&["logs", "--target", "PC", "--job-id", done, "--follow"]),
                Form::Lines,
            ),
            (args(&["logs", "--target", "PC", "--job-id", queued]), doc),
        ],
        "cancel" => vec![(args(&["cancel", "--target", "PC", "--job-id", queued]), doc)],
        "sweep" => vec![(args(&["sweep", "--target", "PC", "--dry-run"]), doc)],
        "status" => vec![(args(&["status"]), doc)],
        "report" => vec![(args(&["report"]), doc)],
        "verify-marker" => vec![(args(&["verify-marker", marker]), doc)],
        "demo" => vec![(args(&["demo"]), Form::Lines)],
        "config" => vec![(args(&["config"]), doc)],
        "doctor" => vec![(args(&["doctor"]), doc)],
        "service" => vec![(args(&["service", "install", "--print"]), doc)],
        "mcp" => vec![(args(&["mcp"]), Form::Rpc)],
        other => panic!(
            "add an invocation for {other} to `invocations` in tests/suite/first_hour.rs: \
             every subcommand is run with --json"
        ),
    }
}

/// Every subcommand `--help` lists speaks JSON with `--json`: its stdout
/// is one JSON document, or JSON lines for the streaming forms, and
/// nothing else.
#[test]
fn every_subcommand_prints_json_with_json() {
    let w = World::with_target();
    let done = w.enqueue(&[], &kit(&["out", "from-the-job"]));
    w.listen_once(&[]);
    let queued = w.enqueue(&[], &kit(&[]));
    let marker = w.write_marker("PC", "m1", "PC");
    let fresh_key = scratch(&w, "keys2/fleet.key");
    for name in subcommands() {
        for (args, form) in invocations(&name, &done, &queued, p(&marker), p(&fresh_key)) {
            let mut a = vec!["--json".to_string()];
            a.extend(args);
            let mut c = w.cmd();
            c.args(&a);
            if form == Form::Rpc {
                c.write_stdin("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
            }
            let (code, out, err) = output_within(&mut c, Duration::from_secs(60));
            assert!(code == 0 || code == 1, "{a:?}: exit {code}\n{out}{err}");
            let docs: Vec<Value> = match form {
                Form::Document => vec![serde_json::from_str(out.trim()).unwrap_or_else(|e| {
                    panic!("{a:?}: stdout is not one JSON document ({e}): {out}")
                })],
                Form::Lines | Form::Rpc => out
                    .lines()
                    .map(|l| {
                        serde_json::from_str(l)
                            .unwrap_or_else(|e| panic!("{a:?}: not a JSON line ({e}): {l}"))
                    })
                    .collect(),
            };
            assert!(!docs.is_empty(), "{a:?}: nothing on stdout");
            assert!(docs.iter().all(Value::is_object), "{a:?}: {out}");
        }
    }
}

/// With `--json`, `logs` carries the job's output in the document (and
/// `--follow` in JSON lines), never as bare text; `demo` narrates in
/// events.
#[test]
fn logs_and_demo_carry_their_text_inside_json() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "from-the-job", "err", "to-stderr"]));
    w.listen_once(&[]);
    let (code, out, err) = w.run(&["--json", "logs", "--target", "PC", "--job-id", &id]);
    assert_eq!(code, 0, "{out}{err}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["stdout"], "from-the-job\n", "{v}");
    assert_eq!(v["stderr"], "to-stderr\n", "{v}");
    assert_eq!(v["result"]["outcome"], "done", "{v}");
    assert!(!err.contains("to-stderr"), "{err}");
    let (_, out, _) = w.run(&[
        "--json", "logs", "--target", "PC", "--job-id", &id, "--follow",
    ]);
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(
        lines.contains(&serde_json::json!({"stream": "stdout", "text": "from-the-job\n"})),
        "{out}"
    );
    assert_eq!(
        lines.last().unwrap()["result"]["jobId"],
        id.as_str(),
        "{out}"
    );
    let (code, out, err) = output_within(w.cmd().args(["--json", "demo"]), Duration::from_secs(60));
    assert_eq!(code, 0, "{out}{err}");
    let events: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events[0]["event"], "start", "{out}");
    assert_eq!(events.last().unwrap()["event"], "end", "{out}");
    assert!(events.iter().any(|e| e["event"] == "command"), "{out}");
}

/// An error under `--json` is one JSON error document on stdout, for every
/// subcommand that fails (here: a key file that is not there).
#[test]
fn an_error_under_json_is_a_json_error_document() {
    let w = World::with_target();
    let missing = scratch(&w, "no-such.key");
    let marker = w.write_marker("PC", "m1", "PC");
    for name in subcommands() {
        for (args, _) in invocations(&name, "j-1", "j-2", p(&marker), p(&missing)) {
            if name == "keygen" || name == "demo" || name == "config" || name == "doctor" {
                continue; // these make a key, bring their own, or report its absence
            }
            let mut a = vec!["--json".to_string()];
            a.extend(args);
            let (code, out, err) =
                output(w.cmd().env("FLEET_DISPATCH_KEY_FILE", &missing).args(&a));
            if code == 0 {
                continue;
            }
            let v: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| {
                panic!("{a:?}: exit {code} without a JSON error ({e}): {out}{err}")
            });
            assert!(v["error"]["code"].is_string(), "{a:?}: {v}");
        }
    }
}

/// The examples of `--help` (the block under `Example…:`), as printed
/// with `COLUMNS` set to `columns`.
fn examples(sub: Option<&str>, columns: u32) -> Vec<String> {
    let mut c = std::process::Command::new(bin());
    c.env_clear().env("COLUMNS", columns.to_string());
    if let Some(sub) = sub {
        c.arg(sub);
    }
    let out = c.arg("--help").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip_while(|l| !l.starts_with("Example"))
        .take_while(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect()
}

/// No `--help` example is broken across lines on an 80-column terminal:
/// each prints as it does on a wide one, a command whole on its line.
#[test]
fn help_examples_fit_80_columns_without_a_break_mid_command() {
    let mut subs: Vec<Option<String>> = vec![None];
    subs.extend(subcommands().into_iter().map(Some));
    for sub in subs {
        let narrow = examples(sub.as_deref(), 80);
        assert!(sub.is_some() || !narrow.is_empty(), "no examples in --help");
        assert_eq!(
            narrow,
            examples(sub.as_deref(), 500),
            "{sub:?}: an example wraps at 80 columns"
        );
        for line in &narrow {
            assert!(line.chars().count() < 80, "{sub:?}: {line}");
        }
    }
}

/// A program that is not found says that jobs run with the listener's
/// PATH (not the sender's), which PATH was searched, and what to do: the
/// usual trap of a listener under cron or Task Scheduler.
#[test]
fn spawn_failed_names_the_program_and_the_listeners_path() {
    let w = World::with_target();
    let bare = w.enqueue(&[], &["no-such-program-for-fleet"]);
    let own = w.enqueue(
        &["--env", "PATH=/opt/nowhere"],
        &["no-such-program-for-fleet"],
    );
    let full = w.enqueue(&[], &[p(&scratch(&w, "missing/program"))]);
    w.listen_once(&[]);
    let listener_path = std::env::var("PATH").unwrap_or_default();
    let shown: String = listener_path.chars().take(60).collect();
    let (code, out, err) = w.run(&["result", "--target", "PC", "--job-id", &bare]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("spawn-failed (never started)"), "{out}");
    assert!(
        out.contains(
            "\"no-such-program-for-fleet\" was looked for in the listener's PATH, not the sender's"
        ),
        "{out}"
    );
    assert!(out.contains(&shown), "the PATH searched: {out}");
    assert!(out.contains("Task Scheduler"), "{out}");
    let (_, out, _) = w.run(&["result", "--target", "PC", "--job-id", &own]);
    assert!(
        out.contains("the job's PATH (its --env PATH=…): /opt/nowhere"),
        "{out}"
    );
    // A program given by its path was not looked for in any PATH.
    let (_, out, _) = w.run(&["result", "--target", "PC", "--job-id", &full]);
    assert!(
        out.contains("spawn-failed") && !out.contains("PATH"),
        "{out}"
    );
}

/// `demo --keep` says how to point every command at the folder it kept:
/// the flags it prints, given to `status`, show the demo's target and its
/// results; with `--json` its last event carries the same flags and
/// variables.
#[test]
fn demo_keep_says_how_to_reach_the_folder_it_kept() {
    let w = World::new();
    let tmp = scratch(&w, "tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let demo = |args: &[&str]| {
        output_within(
            w.cmd()
                .env("TMPDIR", &tmp)
                .env("TEMP", &tmp)
                .env("TMP", &tmp)
                .args(args),
            Duration::from_secs(60),
        )
    };
    let (code, out, err) = demo(&["demo", "--keep"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("kept the demo folder: "), "{out}");
    let line = out
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("fleet-dispatch --root "))
        .unwrap_or_else(|| panic!("no command line with the flags: {out}"));
    // Each path is one word (no spaces in a temp folder's name), quoted
    // where the shell needs it (on Windows, as PowerShell reads it).
    let words: Vec<&str> = line
        .split_whitespace()
        .skip(1)
        .map(|w| w.trim_matches('\''))
        .collect();
    assert_eq!(words.last(), Some(&"status"), "{line}");
    assert!(
        words.contains(&"--key-file") && words.contains(&"--state-dir"),
        "{line}"
    );
    let (code, status, err) = output(
        assert_cmd::Command::new(bin())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &w.home)
            .args(&words),
    );
    assert_eq!(code, 0, "{line}: {status}{err}");
    assert!(status.contains("DEMO-PC:"), "{status}");
    assert!(status.contains("cancelled-before-start"), "{status}");
    #[cfg(unix)]
    assert!(out.contains("export FLEET_DISPATCH_ROOT="), "{out}");

    let (code, out, err) = demo(&["--json", "demo", "--keep"]);
    assert_eq!(code, 0, "{out}{err}");
    let end: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(end["event"], "end", "{end}");
    let kept = end["kept"].as_str().unwrap();
    assert!(std::path::Path::new(kept).is_dir(), "{end}");
    for var in [
        "FLEET_DISPATCH_ROOT",
        "FLEET_DISPATCH_KEY_FILE",
        "FLEET_DISPATCH_STATE_DIR",
    ] {
        let value = end["env"][var].as_str().unwrap();
        assert!(value.starts_with(kept), "{var}: {end}");
        assert!(std::path::Path::new(value).exists(), "{var}: {end}");
    }
}

/// `--wait --follow --json` keeps stdout JSON: the output as JSON lines
/// (`{"stream", "text"}`), then the command's own document, each once.
#[test]
fn wait_follow_under_json_streams_json_lines_then_the_result() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["out", "first-line", "err", "second-line"]));
    w.listen_once(&[]);
    let args = [
        "--json", "result", "--target", "PC", "--job-id", &id, "--wait", "--follow",
    ];
    let (code, out, err) = w.run(&args);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert_eq!(
        lines[..2],
        [
            serde_json::json!({"stream": "stdout", "text": "first-line\n"}),
            serde_json::json!({"stream": "stderr", "text": "second-line\n"}),
        ],
        "{out}"
    );
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(lines[2]["outcome"], "done", "{out}");
    assert!(!err.contains("second-line"), "{err}");
}
