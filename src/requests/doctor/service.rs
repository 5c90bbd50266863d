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

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> PathBuf {
        PathBuf::from("/h/.config/systemd/user/fleet-dispatch.service")
    }

    #[test]
    fn no_entry_is_a_hint_not_a_failure() {
        let c = judge_service(&ServiceFacts::Absent {
            path: path(),
            kind: "systemd user unit",
        });
        assert_eq!(c.status, Status::Ok);
        assert!(c.hint.unwrap().contains("service install"));
    }

    #[test]
    fn a_matching_entry_passes_unless_its_manager_says_it_is_down() {
        let facts = |state: Option<&str>| ServiceFacts::Matches {
            path: path(),
            kind: "systemd user unit",
            state: state.map(str::to_string),
            start: "systemctl --user enable --now fleet-dispatch".into(),
        };
        assert_eq!(judge_service(&facts(None)).status, Status::Ok);
        let active = judge_service(&facts(Some("active")));
        assert_eq!(active.status, Status::Ok);
        assert!(
            active.message.ends_with("it is active"),
            "{}",
            active.message
        );
        let failed = judge_service(&facts(Some("failed")));
        assert_eq!(failed.status, Status::Warn);
        assert!(failed.hint.unwrap().contains("enable --now"));
    }

    #[test]
    fn a_stale_entry_warns_naming_what_differs_and_the_fix() {
        let c = judge_service(&ServiceFacts::Differs {
            path: path(),
            kind: "systemd user unit",
            lines: "Environment=\"FLEET_DISPATCH_MACHINE=PC\"".into(),
            restart: "systemctl --user restart fleet-dispatch".into(),
        });
        assert_eq!(c.status, Status::Warn);
        assert!(c.message.contains("FLEET_DISPATCH_MACHINE=PC"));
        let hint = c.hint.unwrap();
        assert!(
            hint.contains("--force") && hint.contains("restart"),
            "{hint}"
        );
    }
}
