//! Where the listener runs and with what: the root, the target's folders,
//! the key and the settings, fixed from start to stop, and its log lines.
//! Every part of the listener reads it; none changes it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::base::clock;
use crate::store::fsops::{self, Durability};
use crate::store::layout::{StateDirs, TargetDirs};
use crate::trust::Key;

/// Listener settings from the command line.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Drain once and return.
    pub once: bool,
    /// Inbox rescan and cancel poll interval.
    pub poll: Duration,
    /// Watch `inbox/` and `cancel/` for file-system events, looking at once
    /// instead of at the next poll (off for network shares that deliver
    /// none; the poll bounds everything either way).
    pub watch: bool,
    /// How long an unparseable file must stay unchanged before rejection.
    pub settle: Duration,
    /// Jobs older than this are stale.
    pub max_age: Duration,
    /// The most grace the running job gets when the listener is stopped
    /// (its own grace when less, or when this is unset), so a service
    /// manager's stop timeout can cover it.
    pub stop_grace: Option<Duration>,
    /// The governor file, if any.
    pub governor: Option<PathBuf>,
    /// Print a line per event (off with `--json`).
    pub verbose: bool,
    /// Full: a job's start line is flushed before its spawn. Relaxed: the
    /// publisher flushes the ledger once per batch, before it places the
    /// batch's results.
    pub durability: Durability,
    /// How many jobs run at once: 1 runs each in the listener's own thread
    /// (the serial drain); more run each in a thread of its own.
    pub slots: usize,
}

/// The listener's fixed context.
pub(super) struct Site {
    pub dirs: TargetDirs,
    pub key: Arc<Key>,
    pub key_path: PathBuf,
    pub root: PathBuf,
    pub settings: Settings,
    /// This process's id, for the `running/` files (asked once: each ask
    /// is a system call).
    pub pid: u32,
}

impl Site {
    /// The target this listener serves.
    pub fn target(&self) -> &str {
        self.dirs.target().as_str()
    }

    /// Records which governor file this listener obeys in its state
    /// directory (or that it obeys none), where `doctor` and `status` read
    /// it: a hold is otherwise seen only as jobs that stay queued. A failed
    /// write is ignored.
    pub fn record_governor(&self, state: &StateDirs) {
        let at = state.governor();
        match &self.settings.governor {
            Some(file) => {
                let file = std::path::absolute(file).unwrap_or_else(|_| file.clone());
                let line = format!("{}\n", file.display());
                let _ = fsops::replace(&at, line.as_bytes(), fsops::Flush::Nothing);
            }
            None => {
                let _ = std::fs::remove_file(&at);
            }
        }
    }

    /// [`Self::say`] for a line made only when verbose: those said for
    /// every job, so that a quiet drain makes none of them.
    pub fn say_with(&self, line: impl FnOnce() -> String) {
        if self.settings.verbose {
            self.say(line());
        }
    }

    /// Prints `line` when verbose.
    pub fn say(&self, line: impl std::fmt::Display) {
        if self.settings.verbose {
            // A log line that cannot be written (a closed pipe) must never
            // stop the listener or the job it runs.
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{} {}", clock::format(clock::now()), line);
            let _ = out.flush();
        }
    }
}
