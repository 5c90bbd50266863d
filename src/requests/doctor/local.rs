//! Doctor's checks of this machine's local state: the ledger, the lock,
//! the folder watch and the governor.

use std::path::PathBuf;

use super::Check;
use crate::local::governor::Tier;
use crate::store::events::Watching;

/// Whether a listener holds a target's lock on this machine.
#[derive(Clone, Debug, PartialEq)]
pub enum LockHolder {
    /// No lock file: no listener ever ran here for it.
    None,
    /// The lock is free.
    Free,
    /// A listener holds it; the pid it wrote, when readable.
    Held(Option<u32>),
    /// The lock file could not be tried.
    Unknown(String),
}

/// One target's local state.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalTarget {
    /// The state folder's name (the target in lower case).
    pub name: String,
    /// The ledger's size in bytes, when there is one.
    pub ledger_bytes: Option<u64>,
    /// The lock.
    pub lock: LockHolder,
    /// How its listener learns of changes, as it last recorded it.
    pub watching: Option<Watching>,
    /// The governor file its listener obeys, and the tier it says now.
    pub governor: Option<(String, Tier)>,
}

/// The local state and the settings' sources.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalFacts {
    /// The state directory, when configured.
    pub state_dir: Option<PathBuf>,
    /// True when it lies inside the root.
    pub inside_root: bool,
    /// Its targets.
    pub targets: Vec<LocalTarget>,
    /// Where each setting came from, as `config` says it.
    pub config: Vec<String>,
}

/// The running listener's way of learning of changes: events, or its poll
/// alone (docs/protocol.md §7.2). Off by the setting is a choice; a watch
/// that could not be set up is said with what fixes it.
pub fn judge_watching(w: &Watching) -> Check {
    match w {
        Watching::Events => Check::ok("events", "the listener is woken by file-system events"),
        Watching::Off => Check::ok(
            "events",
            "off (--no-watch, or watch = false): the listener polls, so a job waits up to a poll interval",
        ),
        Watching::Unavailable(why) if w.is_limit() => Check::warn(
            "events",
            format!(
                "watching unavailable ({why}): the OS watch limit is reached, and the listener polls, so a job waits up to a poll interval"
            ),
            "raise the limits, e.g. `sysctl fs.inotify.max_user_watches=524288 fs.inotify.max_user_instances=1024` (kept in /etc/sysctl.d/), then restart the listener",
        ),
        Watching::Unavailable(why) => Check::warn(
            "events",
            format!(
                "watching unavailable ({why}): the listener polls, so a job waits up to a poll interval"
            ),
            "a folder on a network share has no events, and the poll covers it; on Linux a watch limit is raised with `sysctl fs.inotify.max_user_watches=… fs.inotify.max_user_instances=…`, then restart the listener",
        ),
    }
}

/// The running listener's governor (docs/protocol.md §7): a tier that
/// holds jobs back is said with what it holds and how to lift it, as
/// otherwise it shows only as jobs that stay queued.
pub fn judge_governor(file: &str, tier: Tier) -> Check {
    let held = match tier {
        Tier::Green => {
            return Check::ok(
                "governor",
                format!("{file} says GREEN: every job may start"),
            );
        }
        Tier::Yellow => "only `high` jobs start, the rest stay queued",
        Tier::Red => "no job starts, every job stays queued",
    };
    Check::warn(
        "governor",
        format!(
            "{file} says {} (a missing file is GREEN; one unreadable or without GREEN, YELLOW or RED is YELLOW): {held}",
            tier.as_str()
        ),
        format!("write GREEN into {file} when this machine may take every job again"),
    )
}

fn size(n: u64) -> String {
    if n < 1024 {
        format!("{n} B")
    } else if n < 1024 * 1024 {
        format!("{:.1} KiB", n as f64 / 1024.0)
    } else {
        format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
    }
}

/// The local checks.
pub fn judge_local(l: &LocalFacts) -> Vec<Check> {
    let mut checks = Vec::new();
    match &l.state_dir {
        None => checks.push(Check::warn(
            "state",
            "no state directory is configured",
            "pass --state-dir DIR or set FLEET_DISPATCH_STATE_DIR",
        )),
        Some(d) if l.inside_root => checks.push(Check::warn(
            "state",
            format!("{} lies inside the dispatch root", d.display()),
            "local state must not sync: move it out (the default is fine)",
        )),
        Some(d) if l.targets.is_empty() => checks.push(Check::ok(
            "state",
            format!("{}: no listener has run on this machine", d.display()),
        )),
        Some(_) => {}
    }
    for t in &l.targets {
        let ledger = t
            .ledger_bytes
            .map_or("no ledger".to_string(), |n| format!("ledger {}", size(n)));
        let lock = match &t.lock {
            LockHolder::None | LockHolder::Free => "no listener runs here".to_string(),
            LockHolder::Held(Some(pid)) => format!("a listener runs here (pid {pid})"),
            LockHolder::Held(None) => "a listener runs here".to_string(),
            LockHolder::Unknown(e) => format!("lock not readable: {e}"),
        };
        checks.push(Check::ok("state", format!("{ledger}; {lock}")).on(&t.name));
        if let (LockHolder::Held(_), Some(w)) = (&t.lock, &t.watching) {
            checks.push(judge_watching(w).on(&t.name));
        }
        if let (LockHolder::Held(_), Some((file, tier))) = (&t.lock, &t.governor) {
            checks.push(judge_governor(file, *tier).on(&t.name));
        }
    }
    checks.push(Check::ok("config", l.config.join("; ")));
    checks
}
