//! Output manners: a closed pipe ends a command quietly, colour appears
//! only on a terminal and never with NO_COLOR, and every command speaks JSON.

use std::process::Stdio;

use crate::util::*;

#[test]
fn a_closed_stdout_pipe_exits_quietly() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    // The reader goes away before the command writes: `result --wait`
    // prints only once the listener (started after the drop) has run it.
    let mut child = w
        .bg_cmd()
        .args(["result", "--target", "PC", "--job-id", &id, "--wait"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start();
    drop(child.stdout.take());
    w.listen_once(&[]);
    let status = child.wait().unwrap();
    let err = stderr_text(&mut child);
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "nothing on stderr, got: {err}");
}

/// Runs `args` with stdout a pipe whose reader is gone at once (as
/// `| head -c0`); returns (status, stderr).
fn into_a_closed_pipe(w: &World, args: &[&str]) -> (Option<i32>, String) {
    let mut child = w
        .bg_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .start();
    drop(child.stdout.take());
    let err = stderr_text(&mut child);
    (child.wait().unwrap().code(), err)
}

#[test]
fn every_reading_command_ends_quietly_on_a_closed_pipe() {
    let w = World::with_target();
    let finished = w.enqueue(&[], &kit(&["fill", "200000", "line"]));
    w.listen_once(&[]);
    let queued = w.enqueue(&[], &kit(&[]));
    let marker = w.write_marker("PC", &queued, "PC");
    let marker = marker.to_str().unwrap();
    let (status, result, logs) = (
        vec!["status", "--target", "PC"],
        vec!["result", "--target", "PC", "--job-id", &finished],
        vec!["logs", "--target", "PC", "--job-id", &finished],
    );
    let commands: Vec<Vec<&str>> = vec![
        status,
        result,
        logs,
        vec!["config"],
        vec!["doctor"],
        vec!["verify-marker", marker],
        vec!["enqueue", "--target", "PC", "--", "true"],
    ];
    for json in [false, true] {
        for command in &commands {
            let mut args: Vec<&str> = if json { vec!["--json"] } else { vec![] };
            args.extend_from_slice(command);
            // What it exits with when someone reads its output.
            let (normal, out, _) = w.run(&args);
            assert!(!out.is_empty(), "{args:?} printed nothing to lose");
            let (code, err) = into_a_closed_pipe(&w, &args);
            assert!(
                code == Some(0) || code == Some(normal),
                "{args:?}: exit {code:?}, {normal} when read; stderr: {err}"
            );
            let lower = err.to_lowercase();
            assert!(
                !lower.contains("broken pipe")
                    && !lower.contains("os error 32")
                    && !lower.contains("panicked"),
                "{args:?}: {err}"
            );
        }
    }
}

#[test]
fn no_colour_off_a_terminal() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "3"]));
    w.listen_once(&[]);
    let (_, plain, _) = w.run(&["result", "--target", "PC", "--job-id", &id]);
    assert!(
        plain.contains("failed") && !plain.contains('\u{1b}'),
        "not a terminal: {plain:?}"
    );
}

#[cfg(unix)] // a pseudo-terminal through util-linux `script`
#[test]
#[ignore = "needs util-linux `script` for a pseudo-terminal"]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&["exit", "3"]));
    w.listen_once(&[]);
    let args = format!("result --target PC --job-id {id}");
    let tty = on_a_terminal(&w, &args, &[]);
    assert!(
        tty.contains("\u{1b}[31mfailed"),
        "coloured on a terminal: {tty:?}"
    );
    let no = on_a_terminal(&w, &args, &[("NO_COLOR", "1")]);
    assert!(
        no.contains("failed") && !no.contains('\u{1b}'),
        "NO_COLOR: {no:?}"
    );
}

#[test]
fn every_command_speaks_json() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let marker = w.write_marker("PC", "m1", "PC");
    let cases: Vec<Vec<String>> = vec![
        vec![
            "enqueue".into(),
            "--target".into(),
            "PC".into(),
            "--".into(),
            "true".into(),
        ],
        vec!["listen".into(), "--once".into()],
        vec![
            "result".into(),
            "--target".into(),
            "PC".into(),
            "--job-id".into(),
            id.clone(),
        ],
        vec![
            "cancel".into(),
            "--target".into(),
            "PC".into(),
            "--job-id".into(),
            "nope-1".into(),
            "--force".into(),
        ],
        vec!["sweep".into(), "--target".into(), "PC".into()],
        vec!["verify-marker".into(), marker.display().to_string()],
        vec!["status".into()],
    ];
    for args in cases {
        let mut a = vec!["--json"];
        a.extend(args.iter().map(String::as_str));
        let (code, out, err) = w.run(&a);
        assert!(code == 0 || code == 1, "{a:?}: {code} {out}{err}");
        let v: serde_json::Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("{a:?}: not one JSON document ({e}): {out}"));
        assert!(v.is_object(), "{a:?}");
    }
    let keygen_key = w.dir.path().join("k2");
    let (code, out, _) = output(
        w.cmd()
            .env("FLEET_DISPATCH_KEY_FILE", &keygen_key)
            .args(["--json", "keygen"]),
    );
    assert_eq!(code, 0);
    assert!(
        serde_json::from_str::<serde_json::Value>(out.trim()).is_ok(),
        "{out}"
    );
}

#[test]
fn waiting_shows_no_progress_line_off_a_terminal() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    // Not a terminal: only the verdict on stderr, no progress line.
    let (code, out, err) = w.run(&[
        "result",
        "--target",
        "PC",
        "--job-id",
        &id,
        "--wait",
        "--wait-timeout",
        "300ms",
    ]);
    assert_eq!(code, 124, "{out}{err}");
    assert!(
        !err.contains('\r'),
        "no progress line off a terminal: {err:?}"
    );
    assert!(err.contains("still queued"), "{err}");
}

#[cfg(unix)] // a pseudo-terminal through util-linux `script`
#[test]
#[ignore = "needs util-linux `script` for a pseudo-terminal"]
fn waiting_shows_one_progress_line_on_a_terminal() {
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let args = format!("result --target PC --job-id {id} --wait --wait-timeout 600ms");
    let tty = on_a_terminal(&w, &args, &[]);
    assert!(
        tty.contains(&format!("\r\u{1b}[2K{id}: queued ")),
        "progress line on a terminal: {tty:?}"
    );
    // The same wait with --json prints one document and no progress line.
    let json = on_a_terminal(&w, &format!("--json {args}"), &[]);
    assert!(!json.contains("\u{1b}[2K"), "{json:?}");
    assert!(json.contains("\"timedOut\":true"), "{json:?}");
}

#[cfg(unix)] // signals to one process
#[test]
fn an_interrupted_wait_exits_130_saying_the_job_goes_on() {
    use std::io::BufRead;
    let w = World::with_target();
    let id = w.enqueue(&[], &kit(&[]));
    let waits: Vec<_> = [libc::SIGINT, libc::SIGTERM]
        .into_iter()
        .map(|sig| {
            let mut child = w
                .bg_cmd()
                .args(["result", "--target", "PC", "--job-id", &id, "--wait"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .start();
            let (tx, rx) = std::sync::mpsc::channel();
            let err = std::io::BufReader::new(child.stderr.take().unwrap());
            std::thread::spawn(move || {
                for line in err.lines().map_while(Result::ok) {
                    let _ = tx.send(line);
                }
            });
            (sig, child, rx)
        })
        .collect();
    for (sig, mut child, rx) in waits {
        // The note a wait makes after 5 s without progress: it is waiting.
        let first = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
        assert!(first.contains("no listener has ever run"), "{first}");
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, sig) };
        let status = child.wait().unwrap();
        let rest: Vec<String> = rx.iter().collect();
        assert_eq!(status.code(), Some(130), "signal {sig}: {rest:?}");
        assert!(
            rest.iter()
                .any(|l| l.contains(&format!("stopped waiting for {id} on PC; the job goes on"))),
            "signal {sig}: {rest:?}"
        );
    }
    assert!(w.inbox(&id).exists(), "the job itself was touched");
}
