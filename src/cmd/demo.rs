//! `demo`: the whole lane on a temporary folder, with no configuration: a
//! key, a listener for a demo machine, jobs that succeed, fail, time out, are
//! cancelled while running and before they start, each step narrated with
//! the files it makes. Runs this same binary as a user would, and leaves
//! nothing behind (`--keep`: the folder, with the flags that reach it).
//! With `--json` the narration is JSON lines, one event each.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::cli::DemoArgs;
use crate::config::Context;
use crate::error::{Code, Error, Result};
use crate::exit;
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

/// Set by `--json`: the narration is JSON lines, one event each
/// ([`event`]), rather than text.
static JSON: AtomicBool = AtomicBool::new(false);

/// One line of narration, in text only (with `--json` the same step is an
/// [`event`]). A closed stdout or a Ctrl-C ends the demo through its
/// clean-up, never by a panic or an exit that skips it.
fn say(line: impl std::fmt::Display) -> Result<()> {
    if JSON.load(Ordering::SeqCst) {
        return going_on();
    }
    write(&line.to_string())
}

/// One event of the narration with `--json`: an object whose `event` says
/// what it is (`start`, `step`, `command`, `files`, `file`, `note`,
/// `listener`, `end`); nothing in text.
fn event(kind: &str, mut fields: Value) -> Result<()> {
    if !JSON.load(Ordering::SeqCst) {
        return going_on();
    }
    fields["event"] = json!(kind);
    write(&crate::out::json_text(&fields))
}

/// A line of text ([`say`]) and its event ([`event`]): whichever the form.
fn tell(line: impl std::fmt::Display, kind: &str, fields: Value) -> Result<()> {
    say(line)?;
    event(kind, fields)
}

fn going_on() -> Result<()> {
    if INTERRUPTED.load(Ordering::SeqCst) {
        return Err(Error::new(Code::Internal, STOPPED));
    }
    Ok(())
}

fn write(line: &str) -> Result<()> {
    going_on()?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")
        .and_then(|()| out.flush())
        .map_err(|_| Error::new(Code::Internal, CLOSED))
}

impl Demo {
    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(&self.exe);
        c.args(args)
            .env("FLEET_DISPATCH_ROOT", &self.root)
            .env("FLEET_DISPATCH_KEY_FILE", &self.key)
            .env("FLEET_DISPATCH_STATE_DIR", &self.state)
            .env("FLEET_DISPATCH_MACHINE", ORIGIN)
            .env_remove("FLEET_DISPATCH_JOB_ID")
            .env_remove("FLEET_DISPATCH_FLEET")
            .stdin(Stdio::null());
        c
    }

    fn step(&self, title: &str) -> Result<()> {
        let at = self.started.elapsed().as_secs_f64();
        tell(
            format!("\n[{at:>5.1}s] {title}"),
            "step",
            json!({"title": title, "atSec": (at * 10.0).round() / 10.0}),
        )
    }

    /// Runs `fleet-dispatch ARGS` as a user would, shows the command and its
    /// output, and returns its stdout.
    fn run(&self, args: &[&str]) -> Result<String> {
        say(format!(
            "  $ fleet-dispatch {}",
            args.iter()
                .map(|a| shell_word(a))
                .collect::<Vec<_>>()
                .join(" ")
        ))?;
        let out = self
            .command(args)
            .output()
            .map_err(|e| internal("cannot run fleet-dispatch", e))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        for line in stdout.lines().chain(stderr.lines()) {
            say(format!("    {line}"))?;
        }
        event(
            "command",
            json!({"argv": args, "exitStatus": out.status.code(), "stdout": stdout, "stderr": stderr}),
        )?;
        Ok(stdout.trim().lines().next().unwrap_or("").to_string())
    }

    /// Lists the files under the demo target, relative to the root.
    fn show_files(&self, only: &[&str]) -> Result<()> {
        let base = self.root.join(TARGET);
        let mut files: Vec<String> = walkdir::WalkDir::new(&base)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .filter_map(|e| {
                e.path()
                    .strip_prefix(&self.root)
                    .ok()
                    .map(|p| p.display().to_string())
            })
            .filter(|p| only.iter().any(|o| p.contains(o)))
            .collect();
        files.sort();
        for f in &files {
            say(format!("    {f}"))?;
        }
        event("files", json!({"files": files}))
    }

    fn wait_for(&self, what: &str, mut ready: impl FnMut() -> bool) -> Result<()> {
        let until = Instant::now() + Duration::from_secs(10);
        while !ready() {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(Error::new(Code::Internal, STOPPED));
            }
            if Instant::now() > until {
                return Err(internal("timed out waiting", what));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

fn shell_word(a: &str) -> String {
    if a.chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./=:".contains(c))
    {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', "'\\''"))
    }
}

/// A demo job's command line: the Unix `sh` script, or its Windows `cmd`
/// form (no `sleep` there: `ping` waits a second between its echoes).
fn shell(unix: &str, windows: &str) -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/C".into(), windows.into()]
    } else {
        vec!["sh".into(), "-c".into(), unix.into()]
    }
}

fn enqueue_args<'a>(extra: &[&'a str], argv: &'a [String]) -> Vec<&'a str> {
    let mut a = vec!["enqueue", "--target", TARGET];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend(argv.iter().map(String::as_str));
    a
}

/// Runs `demo`.
pub fn run(ctx: &Context, args: DemoArgs) -> Result<u8> {
    JSON.store(ctx.json(), Ordering::SeqCst);
    let mut r = [0u8; 4];
    crate::random::fill(&mut r);
    let scratch = Scratch {
        dir: std::env::temp_dir().join(format!("fleet-dispatch-demo-{}", hex::encode(r))),
        keep: args.keep,
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
                    crate::out::json_text(&json!({"event": "listener", "line": line}))
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
