//! `doctor`: what stands between this machine and a working lane, one
//! check a line, each failure with what to do about it. The key file, the
//! dispatch root (its layout, the sync engine that owns it, whether its
//! files stay on this device), every target's listener as its heartbeat
//! tells (age, identity, key fingerprint, clock), its queue, pending
//! cancels, recent rejections, file counts and conflict copies, and the
//! local state (ledger, lock, where the settings came from).
//!
//! `gather` reads the facts, through held folder handles as every reader
//! of the root does; the judgements below are plain functions over those
//! facts and a given `now`, unit-tested without a disk. A target's queue
//! and heartbeat are read as `status` reads them ([`crate::observe`],
//! [`crate::heartbeat`]): doctor judges that document, it does not read
//! the folder a second way.

mod gather;
mod service;
mod target;

pub use service::{ServiceFacts, judge_service};
pub use target::{BeatFile, TargetFacts, conflict_copy, judge_target, skew_secs};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;

use crate::clock;
use crate::events::Watching;
use crate::governor::Tier;
use crate::heartbeat::{self, Beat};
use crate::layout::Place;
use crate::observe::TargetStatus;
use crate::platform::Residency;
use crate::rejected::Reason;

pub use gather::{Inputs, examine, listener_warnings, running_governor};

/// The number of files in one folder past which a sync engine slows down:
/// OneDrive documents degraded syncing beyond about 300,000 items, and
/// Dropbox gives the same figure. Checked per folder of a target's layout
/// and for each target folder as a whole.
pub const FILE_LIMIT: usize = 300_000;

/// A clock difference beyond which the job age window (`listen
/// --max-job-age`, a job's `createdAt` judged by the listener's clock)
/// and heartbeat ages stop meaning what they say.
pub const SKEW_LIMIT: Duration = Duration::from_secs(60);

/// How far back rejected files are reported.
pub const REJECTED_WINDOW: Duration = Duration::from_secs(24 * 3600);

/// A queued job signed longer ago than this is worth a look: the queue is
/// not moving, and at `listen --max-job-age` (7 days unless set) the job
/// is refused as stale.
pub const OLD_QUEUED: Duration = Duration::from_secs(24 * 3600);

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Nothing to do.
    Ok,
    /// Something to fix; the check carries a hint.
    Warn,
}

/// One check's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// What was checked: `key`, `heartbeat`, `files`, …
    pub check: &'static str,
    /// The target it concerns, for per-target checks.
    pub target: Option<String>,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub message: String,
    /// What to do, on a warning.
    pub hint: Option<String>,
}

impl Check {
    fn ok(check: &'static str, message: impl Into<String>) -> Check {
        Check {
            check,
            target: None,
            status: Status::Ok,
            message: message.into(),
            hint: None,
        }
    }

    fn warn(check: &'static str, message: impl Into<String>, hint: impl Into<String>) -> Check {
        Check {
            check,
            target: None,
            status: Status::Warn,
            message: message.into(),
            hint: Some(hint.into()),
        }
    }

    fn on(mut self, target: &str) -> Check {
        self.target = Some(target.to_string());
        self
    }
}

/// Every check, the failing ones first (otherwise in the order made).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    /// True when every check passed.
    pub ok: bool,
    /// This machine's key fingerprint, when the key loads.
    pub key_fingerprint: Option<String>,
    /// The checks.
    pub checks: Vec<Check>,
}

impl Report {
    /// The report of `checks`, failures moved first.
    pub fn new(mut checks: Vec<Check>, key_fingerprint: Option<String>) -> Report {
        checks.sort_by_key(|c| c.status != Status::Warn);
        Report {
            ok: checks.iter().all(|c| c.status == Status::Ok),
            key_fingerprint,
            checks,
        }
    }
}

// ---------------------------------------------------------------------------
// The key
// ---------------------------------------------------------------------------

/// What the key file is.
#[derive(Clone, Debug, PartialEq)]
pub enum KeyFile {
    /// No setting names one (no home directory).
    Unset,
    /// Nothing at the path.
    Missing(PathBuf),
    /// There but not readable.
    Unreadable(PathBuf, String),
    /// No key file (too short, or unlike a key where others may read it):
    /// why, as [`crate::trust::judge_file_text`] says.
    NotAKey(PathBuf, String),
    /// A key, with its length and fingerprint.
    Loaded(PathBuf, usize, String),
}

/// The key file and its permissions.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyFacts {
    /// What is there.
    pub file: KeyFile,
    /// Whether only its owner may read it: the refusal and its hint.
    pub private: Result<(), (String, Option<String>)>,
    /// True when it lies inside the root (it would sync).
    pub inside_root: bool,
}

/// The key checks.
pub fn judge_key(k: &KeyFacts) -> Vec<Check> {
    let keygen = "run `fleet-dispatch keygen` on one machine and copy the file to the others out of band (never into the shared folder)";
    let path = match &k.file {
        KeyFile::Unset => {
            return vec![Check::warn(
                "key",
                "no key file is configured (no home directory)",
                "pass --key-file FILE or set FLEET_DISPATCH_KEY_FILE",
            )];
        }
        KeyFile::Missing(p) => {
            return vec![Check::warn(
                "key",
                format!("no key file at {}", p.display()),
                keygen,
            )];
        }
        KeyFile::Unreadable(p, e) => Check::warn(
            "key",
            format!("cannot read key file {}: {e}", p.display()),
            "check the file's owner and permissions",
        ),
        // Not a key: its permissions protect nothing (no advice to make
        // `/etc/hostname` private), and `keygen --force` would write over it.
        KeyFile::NotAKey(p, why) => {
            return vec![Check::warn(
                "key",
                format!("{} is not a fleet key file ({why})", p.display()),
                crate::trust::POINT_AT_KEY,
            )];
        }
        KeyFile::Loaded(p, n, fp) => Check::ok(
            "key",
            format!("{}: {n} bytes, fingerprint {fp}", p.display()),
        ),
    };
    let mut checks = vec![path];
    checks.push(match &k.private {
        Ok(()) => Check::ok("key permissions", "readable only by its owner"),
        Err((m, hint)) => Check::warn(
            "key permissions",
            m.clone(),
            hint.clone()
                .unwrap_or_else(|| "let only your own account read the key file".into()),
        ),
    });
    if k.inside_root {
        checks.push(Check::warn(
            "key",
            "the key file lies inside the dispatch root: it would sync to every machine, and is refused",
            "move it out, e.g. to ~/.claude/fleet-dispatch.key",
        ));
    }
    checks
}

// ---------------------------------------------------------------------------
// The root
// ---------------------------------------------------------------------------

/// A sync engine that may own the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Engine {
    /// OneDrive.
    OneDrive,
    /// Syncthing.
    Syncthing,
    /// Dropbox.
    Dropbox,
}

impl Engine {
    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Engine::OneDrive => "OneDrive",
            Engine::Syncthing => "Syncthing",
            Engine::Dropbox => "Dropbox",
        }
    }
}

/// What the root's folders look like around it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Shape {
    /// Its folders that hold a target's layout.
    pub targets: Vec<String>,
    /// Its folders that hold no layout themselves but folders that do:
    /// each with the target folders found in it.
    pub nested: Vec<(String, Vec<String>)>,
    /// True when the root itself is a target folder ([`too_deep`]).
    pub is_target: bool,
    /// The names of a target's layout the root itself holds.
    pub own_layout: Vec<String>,
    /// The target folder the root lies inside, if any.
    pub inside_target: Option<PathBuf>,
    /// Its folders that are neither targets nor hold targets, and whose
    /// names are no machine of this fleet (a whole OneDrive's
    /// `Documents`, `Pictures`…).
    pub strangers: Vec<String>,
    /// True when it holds the root's identity file.
    pub identity: bool,
    /// True when one of its folders is the fleet's without being a whole
    /// target: named after a machine of the fleet (a sender made it before
    /// that machine's listener ran), or holding part of a target's layout.
    pub kin: bool,
}

impl Shape {
    /// True when the root is a level off (too deep or too high): the
    /// folders it lists as targets are not targets then.
    pub fn off(&self) -> bool {
        self.is_target
            || self.inside_target.is_some()
            || (self.targets.is_empty() && !self.nested.is_empty())
            || self.foreign()
    }

    /// True when nothing in it is this fleet's (no target folder, no
    /// identity file, no folder named after a machine of the fleet) but
    /// other folders are: it is some other folder, not a dispatch root.
    pub fn foreign(&self) -> bool {
        self.targets.is_empty()
            && self.nested.is_empty()
            && !self.is_target
            && !self.identity
            && !self.kin
            && !self.strangers.is_empty()
    }
}

/// The root as found.
#[derive(Clone, Debug, PartialEq)]
pub enum RootState {
    /// Nothing at the path.
    Missing,
    /// Something other than a folder.
    NotAFolder,
    /// A folder; whether a file could be made in it.
    Folder {
        /// The failure to write, if any.
        writable: Result<(), String>,
    },
}

/// The root and its surroundings.
#[derive(Clone, Debug, PartialEq)]
pub struct RootFacts {
    /// Its path, when one is configured.
    pub path: Option<PathBuf>,
    /// What is there.
    pub state: RootState,
    /// Its layout.
    pub shape: Shape,
    /// The engine that seems to own it, with the evidence.
    pub engine: Option<(Engine, String)>,
    /// Whether its files stay on this device.
    pub residency: Residency,
}

/// True when a folder whose entries are `names` holds a target's layout:
/// an `inbox/` and one of `results/`, `archive/` or a heartbeat.
pub fn holds_layout(names: &[String]) -> bool {
    let has = |n: &str| names.iter().any(|x| x == n);
    has("inbox") && (has("results") || has("archive") || has(crate::layout::LISTENER_JSON))
}

/// The names a target folder holds (its places, `archive/`, its heartbeat
/// and lock) that are among `names`.
pub fn layout_names(names: &[String]) -> Vec<String> {
    let own = Place::ALL
        .into_iter()
        .filter(|p| !p.in_archive())
        .map(Place::name)
        .chain([
            crate::layout::ARCHIVE,
            crate::layout::LISTENER_JSON,
            crate::layout::FOLDER_LOCK,
        ]);
    let own: Vec<&str> = own.collect();
    names
        .iter()
        .filter(|n| own.contains(&n.as_str()))
        .cloned()
        .collect()
}

/// True when a folder whose entries are `names`, and that holds
/// `targets` target folders, is itself a target folder: it holds a
/// target's layout ([`holds_layout`]), or, holding no target folder, any
/// name of one (a target whose listener never ran has only the `inbox/`
/// and `cancel/` senders made).
pub fn too_deep(names: &[String], targets: usize) -> bool {
    holds_layout(names) || (targets == 0 && !layout_names(names).is_empty())
}

/// The engine that seems to own `root`: a Syncthing `.stfolder` or a
/// Dropbox `.dropbox` in it or a folder above it (`markers`, nearest
/// first), else a path inside one of `onedrive` (the `OneDrive*`
/// variables) or with a component named `OneDrive…`.
pub fn engine(
    root: &Path,
    markers: &[(PathBuf, Engine)],
    onedrive: &[PathBuf],
) -> Option<(Engine, String)> {
    if let Some((at, e)) = markers.first() {
        let mark = if *e == Engine::Syncthing {
            ".stfolder"
        } else {
            ".dropbox"
        };
        return Some((*e, format!("{mark} in {}", at.display())));
    }
    if let Some(d) = onedrive.iter().find(|d| root.starts_with(d)) {
        return Some((
            Engine::OneDrive,
            format!("inside the OneDrive folder {}", d.display()),
        ));
    }
    root.components()
        .filter_map(|c| c.as_os_str().to_str())
        .find(|c| c.starts_with("OneDrive"))
        .map(|c| {
            (
                Engine::OneDrive,
                format!("a folder named {c:?} on its path"),
            )
        })
}

/// The root checks: present and writable, its layout, its engine and (on
/// Windows) whether it is kept on this device.
pub fn judge_root(r: &RootFacts) -> Vec<Check> {
    let Some(path) = &r.path else {
        return vec![Check::warn(
            "root",
            "no dispatch root is configured",
            "pass --root DIR or set FLEET_DISPATCH_ROOT (or `root` in the config file)",
        )];
    };
    let shown = path.display();
    let mut checks = vec![match &r.state {
        RootState::Missing => {
            return vec![Check::warn(
                "root",
                format!("dispatch root {shown} does not exist"),
                format!(
                    "create it inside the shared folder (`mkdir {shown:?}`), or fix --root / FLEET_DISPATCH_ROOT"
                ),
            )];
        }
        RootState::NotAFolder => {
            return vec![Check::warn(
                "root",
                format!("dispatch root {shown} is not a folder"),
                "point --root / FLEET_DISPATCH_ROOT at a folder inside the shared folder",
            )];
        }
        RootState::Folder { writable: Err(e) } => Check::warn(
            "root",
            format!("{shown} is there but a file cannot be made in it: {e}"),
            "let this account write to the root; listeners and senders both write into it",
        ),
        RootState::Folder { writable: Ok(()) } => Check::ok("root", format!("{shown}: writable")),
    }];
    checks.push(judge_shape(path, &r.shape));
    checks.push(match &r.engine {
        Some((e, why)) => Check::ok("sync engine", format!("{} ({why})", e.name())),
        None => Check::ok(
            "sync engine",
            "none recognised (no .stfolder, .dropbox or OneDrive path): a plain folder or a network share",
        ),
    });
    let onedrive = matches!(r.engine, Some((Engine::OneDrive, _)));
    let pin = "right-click the root → Always keep on this device: a listener started by Task Scheduler cannot download online-only files";
    match r.residency {
        Residency::Unknown => {}
        Residency::Pinned => checks.push(Check::ok(
            "kept on device",
            "marked Always keep on this device",
        )),
        Residency::OnlineOnly => checks.push(Check::warn(
            "kept on device",
            "the root is online-only: its files are downloaded only when opened",
            pin,
        )),
        Residency::Unmarked if onedrive => checks.push(Check::warn(
            "kept on device",
            "the root is not marked Always keep on this device: OneDrive may make its files online-only",
            pin,
        )),
        Residency::Unmarked => checks.push(Check::ok(
            "kept on device",
            "no cloud marks: its files are local",
        )),
    }
    checks
}

/// A root one level off (too deep or too high): what is wrong, and the
/// folder that is the root.
#[derive(Clone, Debug, PartialEq)]
pub struct Off {
    /// What the folders show.
    pub message: String,
    /// The folder to use as the root instead, when the folders show it.
    pub root: Option<PathBuf>,
}

/// The layout rule, for `doctor` and for every command about to write
/// into the root ([`check_layout`]): `None` when `root`, whose folders are
/// `s`, is where target folders belong.
pub fn layout_off(root: &Path, s: &Shape) -> Option<Off> {
    let shown = root.display();
    if s.is_target {
        let holds = if s.own_layout.is_empty() {
            "inbox/".to_string()
        } else {
            s.own_layout.join(", ")
        };
        return Some(Off {
            message: format!(
                "{shown} is itself a target folder (it holds {holds}, and no target folder): the root is one level too deep"
            ),
            root: Some(root.parent().unwrap_or(root).to_path_buf()),
        });
    }
    if let Some(t) = &s.inside_target {
        return Some(Off {
            message: format!(
                "{shown} lies inside the target folder {}: the root is too deep",
                t.display()
            ),
            root: Some(t.parent().unwrap_or(t).to_path_buf()),
        });
    }
    if s.targets.is_empty()
        && let Some((inner, found)) = s.nested.first()
    {
        return Some(Off {
            message: format!(
                "{shown} holds no target folders, but its folder {inner} holds {}: the root is one level too high",
                found.join(", ")
            ),
            root: Some(root.join(inner)),
        });
    }
    if s.foreign() {
        let mut some: Vec<&str> = s.strangers.iter().take(3).map(String::as_str).collect();
        if s.strangers.len() > 3 {
            some.push("…");
        }
        return Some(Off {
            message: format!(
                "{shown} holds {} folder(s) ({}) and nothing of this fleet's (no target folder, no {}, no folder named after one of its machines): it is not a dispatch root",
                s.strangers.len(),
                some.join(", "),
                crate::layout::ROOT_FILE
            ),
            root: None,
        });
    }
    None
}

/// What to do about a root one level off, as `lead` starts it.
fn off_fix(off: &Off, lead: &str) -> String {
    match &off.root {
        Some(r) => format!(
            "{lead} --root {} (or set FLEET_DISPATCH_ROOT, or `root` in the config file, to it)",
            r.display()
        ),
        None => "point --root (or FLEET_DISPATCH_ROOT, or `root` in the config file) at the folder kept for fleet-dispatch inside the shared folder; a new root is an empty folder".to_string(),
    }
}

/// Refuses a root one level off ([`layout_off`]) before a command writes
/// a target folder into it, where no listener would ever look (`CONFIG`,
/// naming the root to use). An empty root, or one that holds only its
/// identity file, is a new root and fine; so is one that holds a folder
/// named after a machine of `fleet` (this machine and the ones it knows).
pub fn check_layout(root: &Path, fleet: &[String]) -> crate::error::Result<()> {
    let abs = std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf());
    match layout_off(&abs, &gather::shape(&abs, fleet)) {
        None => Ok(()),
        Some(off) => Err(crate::error::Error::config(format!(
            "{}; nothing was written",
            off.message
        ))
        .hint(format!(
            "{}; `fleet-dispatch doctor` checks the root",
            off_fix(&off, "did you mean")
        ))),
    }
}

fn judge_shape(root: &Path, s: &Shape) -> Check {
    if let Some(off) = layout_off(root, s) {
        let fix = off_fix(&off, "use");
        return Check::warn("layout", off.message, fix);
    }
    if s.targets.is_empty() {
        return Check::ok(
            "layout",
            "no target folders yet: a listener makes its own when it first starts",
        );
    }
    Check::ok(
        "layout",
        format!(
            "{} target folder(s): {}",
            s.targets.len(),
            s.targets.join(", ")
        ),
    )
}

// ---------------------------------------------------------------------------
// Each target
// ---------------------------------------------------------------------------

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

#[cfg(test)]
mod tests;
