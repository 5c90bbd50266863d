//! `demo`: the whole lane on a temporary folder, with no configuration: a
//! key, a listener for a demo machine, jobs that succeed, fail, time out, are
//! cancelled while running and before they start, each step narrated with
//! the files it makes. Runs this same binary as a user would, and leaves
//! nothing behind (`keep`: the folder, with the flags that reach it).
//! With `--json` the narration is JSON lines, one event each.
//!
//! This file is the lane, step by step; `steps.rs` runs each command and
//! `narration.rs` says what happened.

mod narration;
mod steps;

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use narration::{JSON, event, say, tell};
use steps::{enqueue_args, shell, shell_word};

use crate::base::error::{Code, Error, Result};
use crate::base::exit;
use serde_json::{Value, json};

const TARGET: &str = "DEMO-PC";
/// The machine the demo's jobs are sent from.
const ORIGIN: &str = "LAPTOP";

/// The temporary folder, removed on drop unless kept.
struct Scratch {
    dir: PathBuf,
    keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

struct Demo {
    exe: PathBuf,
    root: PathBuf,
    key: PathBuf,
    state: PathBuf,
    started: Instant,
}

fn internal(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(Code::Internal, format!("demo: {what}: {e}"))
}

/// Set by Ctrl-C: the demo stops at the next step and cleans up.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Why the demo stopped early with nothing wrong: the reader of its output
/// went away (`| head`), or Ctrl-C.
const CLOSED: &str = "demo: stdout closed";
const STOPPED: &str = "demo: interrupted";

/// Runs `demo`: with `json`, the narration is JSON lines; with `keep`,
/// the temporary folder stays and its path is printed. The exit status is
/// the demo's; a reader that went away is success, Ctrl-C `INTERRUPTED`.
pub fn run(json: bool, keep: bool) -> Result<u8> {
    JSON.store(json, Ordering::SeqCst);
    let mut r = [0u8; 4];
    crate::base::random::fill(&mut r);
    let scratch = Scratch {
        dir: std::env::temp_dir().join(format!("fleet-dispatch-demo-{}", hex::encode(r))),
        keep,
    };
    let demo = Demo {
        exe: std::env::current_exe().map_err(|e| internal("cannot find this program", e))?,
        root: scratch.dir.join("shared"),
        key: scratch.dir.join("key").join("fleet-dispatch.key"),
        state: scratch.dir.join("state"),
        started: Instant::now(),
    };
    // Ctrl-C must reach the clean-up below: the listener is stopped and
    // the folder removed however the demo ends.
    let _ = ctrlc::set_handler(|| INTERRUPTED.store(true, Ordering::SeqCst));
    std::fs::create_dir_all(&demo.root).map_err(|e| Error::io("create", &demo.root, &e))?;
    let ended = narrate(&demo, &scratch);
    drop(scratch);
    match ended {
        Err(e) if e.message.ends_with(CLOSED) => Ok(exit::SUCCESS),
        Err(e) if e.message.ends_with(STOPPED) || INTERRUPTED.load(Ordering::SeqCst) => {
            Ok(exit::INTERRUPTED)
        }
        other => other,
    }
}

/// The demo itself; the listener it starts is stopped before it returns.
fn narrate(demo: &Demo, scratch: &Scratch) -> Result<u8> {
    say(format!(
        "fleet-dispatch demo: one shared folder, a listener for machine {TARGET}, jobs sent from {ORIGIN}"
    ))?;
    say(format!(
        "  shared folder (the dispatch root): {}",
        demo.root.display()
    ))?;
    say(format!(
        "  local state (lock, journal, ledger): {}",
        demo.state.display()
    ))?;
    event(
        "start",
        json!({"target": TARGET, "origin": ORIGIN, "root": demo.root, "keyFile": demo.key, "stateDir": demo.state}),
    )?;

    demo.step("1. Make the fleet key (kept outside the shared folder)")?;
    demo.run(&["keygen"])?;

    demo.step("2. Start the listener on the target machine")?;
    let mut listener = demo
        .command(&[
            "listen",
            "--machine",
            TARGET,
            "--poll-interval",
            "100ms",
            "--settle",
            "1s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| internal("cannot start the listener", e))?;
    let log = listener.stdout.take();
    let relay = std::thread::spawn(move || {
        use std::io::BufRead;
        if let Some(log) = log {
            for line in std::io::BufReader::new(log).lines().map_while(|l| l.ok()) {
                // Lines that cannot be shown are dropped, never a panic.
                let shown = if JSON.load(Ordering::SeqCst) {
                    crate::base::out::json_text(&json!({"event": "listener", "line": line}))
                } else {
                    format!("    listener | {line}")
                };
                let _ = writeln!(std::io::stdout().lock(), "{shown}");
            }
        }
    });
    let result = drive(demo, &mut listener);
    let stopping = demo.step("8. Stop the listener (SIGTERM, as a service manager would)");
    crate::platform::terminate(&mut listener);
    let _ = listener.wait();
    let _ = relay.join();
    result?;
    stopping?;
    let seconds = demo.started.elapsed().as_secs_f64();
    if scratch.keep {
        kept(demo, scratch, seconds)?;
    } else {
        say(format!(
            "\ndone in {seconds:.1}s; the temporary folder is removed"
        ))?;
        event("end", json!({"seconds": seconds, "kept": null}))?;
    }
    Ok(exit::SUCCESS)
}

/// Says where the kept folder is and how to point every command at it:
/// the flags (any shell), and the variables to paste into this one.
fn kept(demo: &Demo, scratch: &Scratch, seconds: f64) -> Result<()> {
    let settings = [
        ("--root", "FLEET_DISPATCH_ROOT", &demo.root),
        ("--key-file", "FLEET_DISPATCH_KEY_FILE", &demo.key),
        ("--state-dir", "FLEET_DISPATCH_STATE_DIR", &demo.state),
    ];
    let flags: Vec<String> = settings
        .iter()
        .map(|(flag, _, path)| format!("{flag} {}", shell_word(&path.display().to_string())))
        .chain([format!("--machine {ORIGIN}")])
        .collect();
    let variables: Vec<(String, String)> = settings
        .iter()
        .map(|(_, var, path)| (var.to_string(), path.display().to_string()))
        .chain([("FLEET_DISPATCH_MACHINE".to_string(), ORIGIN.to_string())])
        .collect();
    let pasted: Vec<String> = variables
        .iter()
        .map(|(var, value)| {
            if cfg!(windows) {
                format!("$env:{var} = '{}'", value.replace('\'', "''"))
            } else {
                format!("export {var}={}", shell_word(value))
            }
        })
        .collect();
    say(format!(
        "\nkept the demo folder: {}\nto look at it, give each command these flags (as {ORIGIN}, the machine that sent the jobs):\n  fleet-dispatch {} status\nor set them for this shell{}:\n  {}\n  fleet-dispatch status\nremove the folder when done with it.",
        scratch.dir.display(),
        flags.join(" "),
        if cfg!(windows) { " (PowerShell)" } else { "" },
        pasted.join("\n  ")
    ))?;
    event(
        "end",
        json!({
            "seconds": seconds,
            "kept": scratch.dir,
            "flags": flags,
            "env": variables.into_iter().map(|(k, v)| (k, json!(v))).collect::<serde_json::Map<String, Value>>(),
        }),
    )
}

fn drive(demo: &Demo, listener: &mut Child) -> Result<()> {
    let inbox = demo.root.join(TARGET).join("inbox");
    demo.wait_for("the listener to create its folders", || inbox.is_dir())?;
    tell(
        format!("  the listener made {TARGET}/{{inbox,cancel,running,results,logs,archive}}"),
        "note",
        json!({"text": format!("the listener made {TARGET}/{{inbox,cancel,running,results,logs,archive}}")}),
    )?;

    demo.step("3. A job that succeeds: signed, dropped into the inbox, run, answered with a signed result")?;
    let ok = shell("echo hello from the fleet", "echo hello from the fleet");
    demo.run(&enqueue_args(&["--label", "hello", "--wait"], &ok))?;
    demo.show_files(&["results/", "archive/done/", "logs/"])?;

    demo.step("4. A job that fails: its exit code travels back")?;
    let fail = shell(
        "echo something went wrong >&2; exit 3",
        "echo something went wrong 1>&2 & exit /b 3",
    );
    demo.run(&enqueue_args(&["--wait"], &fail))?;

    demo.step(
        "5. A job that outlives its timeout: stopped gracefully (SIGTERM), killed after the grace",
    )?;
    let slow = shell("sleep 30", "ping -n 31 127.0.0.1 >nul");
    demo.run(&enqueue_args(
        &["--timeout", "1s", "--grace", "1s", "--wait"],
        &slow,
    ))?;

    demo.step("6. Cancel a running job, and cancel a queued one before it starts")?;
    let long = demo.run(&enqueue_args(&["--label", "long agent run"], &slow))?;
    let queued = demo.run(&enqueue_args(&["--label", "never starts"], &ok))?;
    let running = demo
        .root
        .join(TARGET)
        .join("running")
        .join(format!("{long}.json"));
    demo.wait_for("the long job to start", || running.exists())?;
    demo.run(&["cancel", "--target", TARGET, "--job-id", &queued])?;
    demo.run(&["cancel", "--target", TARGET, "--job-id", &long, "--wait"])?;
    demo.run(&["result", "--target", TARGET, "--job-id", &queued, "--wait"])?;
    demo.show_files(&["archive/consumed/"])?;

    demo.step("7. A forged job (folder access, no key) is refused and explained, never run")?;
    let forged = demo.root.join(TARGET).join("inbox").join("forged-1.json");
    std::fs::write(
        &forged,
        br#"{"v":1,"jobId":"forged-1","target":"DEMO-PC","createdAt":"2026-01-01T00:00:00.000Z","origin":"EVIL","spec":"{\"argv\":[\"rm\",\"-rf\",\"/\"]}","sig":"00"}"#,
    )
    .map_err(|e| Error::io("write", &forged, &e))?;
    let shown = forged.strip_prefix(&demo.root).unwrap_or(&forged).display();
    tell(
        format!("  wrote {shown} by hand, with a made-up signature"),
        "note",
        json!({"text": format!("wrote {shown} by hand, with a made-up signature")}),
    )?;
    let reason = demo
        .root
        .join(TARGET)
        .join("archive")
        .join("rejected")
        .join("forged-1.json.reason.json");
    demo.wait_for("the listener to reject the forged job", || reason.exists())?;
    demo.show_files(&["archive/rejected/"])?;
    if let Ok(text) = std::fs::read_to_string(&reason) {
        for line in text.lines() {
            say(format!("    {line}"))?;
        }
        let doc: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        let path = reason.strip_prefix(&demo.root).unwrap_or(&reason);
        event("file", json!({"path": path, "content": doc}))?;
    }
    if listener.try_wait().ok().flatten().is_some() {
        return Err(internal("the listener", "stopped unexpectedly"));
    }
    Ok(())
}
