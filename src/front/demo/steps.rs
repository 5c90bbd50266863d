//! The demo's steps: this same binary run as a user would run it, its
//! command line shown, the files it made listed, and waiting for what a
//! step expects.

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::json;

use super::narration::{event, say, tell};
use super::{Demo, INTERRUPTED, ORIGIN, STOPPED, TARGET, internal};
use crate::base::error::{Code, Error, Result};

impl Demo {
    pub(super) fn command(&self, args: &[&str]) -> Command {
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

    pub(super) fn step(&self, title: &str) -> Result<()> {
        let at = self.started.elapsed().as_secs_f64();
        tell(
            format!("\n[{at:>5.1}s] {title}"),
            "step",
            json!({"title": title, "atSec": (at * 10.0).round() / 10.0}),
        )
    }

    /// Runs `fleet-dispatch ARGS` as a user would, shows the command and its
    /// output, and returns its stdout.
    pub(super) fn run(&self, args: &[&str]) -> Result<String> {
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
    pub(super) fn show_files(&self, only: &[&str]) -> Result<()> {
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

    pub(super) fn wait_for(&self, what: &str, mut ready: impl FnMut() -> bool) -> Result<()> {
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

pub(super) fn shell_word(a: &str) -> String {
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
pub(super) fn shell(unix: &str, windows: &str) -> Vec<String> {
    if cfg!(windows) {
        vec!["cmd".into(), "/C".into(), windows.into()]
    } else {
        vec!["sh".into(), "-c".into(), unix.into()]
    }
}

pub(super) fn enqueue_args<'a>(extra: &[&'a str], argv: &'a [String]) -> Vec<&'a str> {
    let mut a = vec!["enqueue", "--target", TARGET];
    a.extend_from_slice(extra);
    a.push("--");
    a.extend(argv.iter().map(String::as_str));
    a
}
