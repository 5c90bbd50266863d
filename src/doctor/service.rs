//! The service entry check: whether `service install` wrote an entry for
//! this machine, and whether it still runs this binary with the current
//! settings. No entry is no failure (a listener may be started by hand or
//! by a recipe of one's own): only a hint.

use std::path::PathBuf;

use super::{Check, Status};

/// What the entry at its place is, against what `service install` would
/// write now.
#[derive(Clone, Debug, PartialEq)]
pub enum ServiceFacts {
    /// Nothing at the entry's path.
    Absent {
        /// Where `service install` would write it.
        path: PathBuf,
        /// What it would be (`systemd user unit`, …).
        kind: &'static str,
    },
    /// The same entry `service install` would write now.
    Matches {
        /// Its path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
        /// The service manager's word for its state, when it was cheap to
        /// ask and the manager has loaded this very entry (`active`,
        /// `failed`, …).
        state: Option<String>,
        /// The command that starts it.
        start: String,
    },
    /// An entry that differs: the lines it has that a new one would not.
    Differs {
        /// Its path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
        /// Its lines a new entry would not have.
        lines: String,
        /// The command that restarts it once rewritten.
        restart: String,
    },
    /// An entry, but the current settings make none to compare it with.
    Unchecked {
        /// Its path.
        path: PathBuf,
        /// Why not.
        why: String,
    },
}

/// The service check.
pub fn judge_service(f: &ServiceFacts) -> Check {
    match f {
        ServiceFacts::Absent { path, kind } => Check {
            check: "service",
            target: None,
            status: Status::Ok,
            message: format!(
                "no {kind} at {}: the listener runs only when started by hand",
                path.display()
            ),
            hint: Some("`fleet-dispatch service install` runs it at every login".into()),
        },
        ServiceFacts::Matches {
            path,
            kind,
            state,
            start,
        } => match state.as_deref() {
            Some("active" | "activating" | "reloading") | None => Check::ok(
                "service",
                format!(
                    "{kind} {}: runs this binary with the current settings{}",
                    path.display(),
                    state
                        .as_deref()
                        .map_or(String::new(), |s| format!("; it is {s}"))
                ),
            ),
            Some(s) => Check::warn(
                "service",
                format!(
                    "{kind} {} matches the current settings but is {s}",
                    path.display()
                ),
                format!("start it: {start}"),
            ),
        },
        ServiceFacts::Differs {
            path,
            kind,
            lines,
            restart,
        } => Check::warn(
            "service",
            format!(
                "{kind} {} differs from what `service install` would write now (it has: {lines})",
                path.display()
            ),
            format!(
                "rewrite it with `fleet-dispatch service install --force`, then restart it: {restart}"
            ),
        ),
        ServiceFacts::Unchecked { path, why } => Check::warn(
            "service",
            format!(
                "{} is installed, but the current settings give nothing to compare it with: {why}",
                path.display()
            ),
            "fix the settings (the checks above say how), or remove the entry with `fleet-dispatch service uninstall`",
        ),
    }
}
