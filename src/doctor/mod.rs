//! `doctor`: what stands between this machine and a working lane, one
//! check a line, each failure with what to do about it. The key file, the
//! dispatch root (its layout, the sync engine that owns it, whether its
//! files stay on this device), every target's listener as its heartbeat
//! tells (age, identity, key fingerprint, clock), its queue, pending
//! cancels, recent rejections, file counts and conflict copies, and the
//! local state (ledger, lock, where the settings came from).
//!
//! [`gather`] reads the facts, through held folder handles as every reader
//! of the root does; the judgements below are plain functions over those
//! facts and a given `now`, unit-tested without a disk. A target's queue
//! and heartbeat are read as `status` reads them ([`crate::observe`],
//! [`crate::heartbeat`]): doctor judges that document, it does not read
//! the folder a second way.

mod gather;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use time::OffsetDateTime;

use crate::clock;
use crate::heartbeat::{self, Beat};
use crate::key::MIN_KEY_BYTES;
use crate::observe::TargetStatus;
use crate::platform::Residency;
use crate::rejected::Reason;

pub use gather::{Inputs, examine};

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
    /// Too short to be a key: its length after trimming.
    Short(PathBuf, usize),
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
        KeyFile::Short(p, n) => Check::warn(
            "key",
            format!(
                "key file {} holds {n} bytes, fewer than {MIN_KEY_BYTES}",
                p.display()
            ),
            "run `fleet-dispatch keygen --force` to make a new key, and copy it to every machine",
        ),
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
    /// True when the root itself holds a target's layout.
    pub is_target: bool,
    /// The target folder the root lies inside, if any.
    pub inside_target: Option<PathBuf>,
}

impl Shape {
    /// True when the root is a level off (too deep or too high): the
    /// folders it lists as targets are not targets then.
    pub fn off(&self) -> bool {
        self.is_target
            || self.inside_target.is_some()
            || (self.targets.is_empty() && !self.nested.is_empty())
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
                "create it inside the shared folder, or fix --root / FLEET_DISPATCH_ROOT",
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

fn judge_shape(root: &Path, s: &Shape) -> Check {
    let shown = root.display();
    if s.is_target {
        let up = root.parent().unwrap_or(root);
        return Check::warn(
            "layout",
            format!(
                "{shown} is itself a target folder (it holds inbox/): the root is one level too deep"
            ),
            format!("use the folder above it, {}, as the root", up.display()),
        );
    }
    if let Some(t) = &s.inside_target {
        let up = t.parent().unwrap_or(t);
        return Check::warn(
            "layout",
            format!(
                "{shown} lies inside the target folder {}: the root is too deep",
                t.display()
            ),
            format!("use {} as the root", up.display()),
        );
    }
    if s.targets.is_empty() {
        if let Some((inner, found)) = s.nested.first() {
            return Check::warn(
                "layout",
                format!(
                    "{shown} holds no target folders, but its folder {inner} holds {}: the root is one level too high",
                    found.join(", ")
                ),
                format!("use {} as the root", root.join(inner).display()),
            );
        }
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

/// The heartbeat file as found.
#[derive(Clone, Debug, PartialEq)]
pub enum BeatFile {
    /// No heartbeat file.
    Missing,
    /// One that does not parse.
    Unreadable,
    /// A heartbeat, and the file's modification time.
    Beat(Box<Beat>, Option<OffsetDateTime>),
}

/// What one target's folder says.
#[derive(Clone, Debug)]
pub struct TargetFacts {
    /// Its name.
    pub name: String,
    /// Its listener's heartbeat.
    pub beat: BeatFile,
    /// Its status document, when the key loads (the queue needs it).
    pub status: Option<TargetStatus>,
    /// Files its listener rejected within [`REJECTED_WINDOW`]: the name
    /// filed and the reason.
    pub rejected: Vec<(String, Reason)>,
    /// Entries per folder of the layout (`inbox`, `archive/done`, …), the
    /// target folder's own as `the target folder`.
    pub counts: Vec<(String, usize)>,
    /// Conflict copies found: the path under the target folder and the
    /// engine whose naming it follows.
    pub conflicts: Vec<(String, Engine)>,
}

/// Its age at `now`; negative when dated in the future.
fn age_secs(ts: &str, now: OffsetDateTime) -> Option<i64> {
    clock::parse(ts).map(|t| (now - t).whole_seconds())
}

fn human_secs(s: i64) -> String {
    clock::human(Duration::from_secs(s.unsigned_abs()))
}

/// The clock difference between the listener and the clock that stamped
/// its heartbeat file, in seconds (positive: the listener's clock is
/// ahead): the heartbeat's `heartbeatAt` against the file's modification
/// time, or, when larger, how far `heartbeatAt` lies after `now`.
///
/// Engines that carry a file's modification time with it (Syncthing,
/// OneDrive) hand over the listener's own stamp, which hides the skew from
/// the first estimate; a file server (SMB) or an engine that stamps a file
/// as it arrives shows it. A heartbeat dated after `now` is skew whatever
/// the engine. A listener's clock running behind ours cannot be told from
/// sync delay when the stamp travels, so that side goes unseen there.
pub fn skew_secs(
    heartbeat_at: &str,
    modified: Option<OffsetDateTime>,
    now: OffsetDateTime,
) -> Option<i64> {
    let at = clock::parse(heartbeat_at)?;
    let by_file = modified.map(|m| (at - m).whole_seconds());
    let ahead = (at - now).whole_seconds();
    match by_file {
        Some(f) if f.abs() >= ahead => Some(f),
        _ if ahead > 0 => Some(ahead),
        other => other,
    }
}

/// The checks of one target: its listener, clock, key, queue, cancels,
/// rejections, file counts and conflict copies. `ours` is this machine's
/// key fingerprint when its key loads.
pub fn judge_target(
    t: &TargetFacts,
    ours: Option<&str>,
    now: OffsetDateTime,
    limit: usize,
) -> Vec<Check> {
    let name = t.name.as_str();
    let mut checks = judge_listener(t, ours, now);
    if let Some(s) = &t.status {
        checks.push(judge_queue(name, s, now));
        checks.push(judge_cancels(name, s));
    }
    checks.push(judge_rejected(name, &t.rejected, ours));
    checks.push(judge_counts(name, &t.counts, limit));
    checks.push(judge_conflicts(name, &t.conflicts));
    checks.into_iter().map(|c| c.on(name)).collect()
}

fn judge_listener(t: &TargetFacts, ours: Option<&str>, now: OffsetDateTime) -> Vec<Check> {
    let name = t.name.as_str();
    let start = format!("start `fleet-dispatch listen` on {name} (contrib/ has service recipes)");
    let (beat, modified) = match &t.beat {
        BeatFile::Missing => {
            return vec![Check::warn(
                "heartbeat",
                "no listener has run here yet (no listener.json)",
                start,
            )];
        }
        BeatFile::Unreadable => {
            return vec![Check::warn(
                "heartbeat",
                "listener.json does not parse",
                format!("{start}; it writes the file afresh within 30 s"),
            )];
        }
        BeatFile::Beat(b, m) => (b, *m),
    };
    let host = if beat.host.is_empty() {
        "an unnamed host"
    } else {
        &beat.host
    };
    let who = format!(
        "{host}, instance {}, pid {}",
        if beat.instance.is_empty() {
            "unknown"
        } else {
            &beat.instance
        },
        beat.pid
    );
    let age = age_secs(&beat.heartbeat_at, now);
    let alive = heartbeat::alive(
        &beat.state,
        age.and_then(|a| u64::try_from(a).ok())
            .map(Duration::from_secs),
    );
    let mut checks = vec![match age {
        None => Check::warn(
            "heartbeat",
            format!("heartbeatAt {:?} is not a time ({who})", beat.heartbeat_at),
            start.clone(),
        ),
        Some(a) if a < 0 => Check::warn(
            "heartbeat",
            format!(
                "the heartbeat is dated {} in the future ({who})",
                human_secs(a)
            ),
            format!("set {host}'s clock (or this machine's) to network time"),
        ),
        Some(a) if beat.state == "stopped" => Check::warn(
            "heartbeat",
            format!("the listener stopped {} ago ({who})", human_secs(a)),
            start.clone(),
        ),
        Some(a) if !alive => Check::warn(
            "heartbeat",
            format!(
                "stale: the last heartbeat is {} old ({who}); a live listener writes one every {}s",
                human_secs(a),
                heartbeat::EVERY.as_secs()
            ),
            format!("is the listener running on {host}, and is the folder syncing? {start}"),
        ),
        Some(a) => Check::ok(
            "heartbeat",
            format!("{}, {} ago ({who})", beat.state, human_secs(a)),
        ),
    }];
    checks.push(match (ours, beat.key_fingerprint.as_str()) {
        (_, "") => Check::ok(
            "listener key",
            "the listener does not report its key fingerprint (an older version)",
        ),
        (None, theirs) => Check::ok(
            "listener key",
            format!("fingerprint {theirs}; this machine has no key to compare"),
        ),
        (Some(mine), theirs) if mine == theirs => {
            Check::ok("listener key", format!("fingerprint {theirs}, the same as ours"))
        }
        (Some(mine), theirs) => Check::warn(
            "listener key",
            format!(
                "the listener's key has fingerprint {theirs}, this machine's {mine}: jobs sent from here are rejected"
            ),
            "copy one key file to every machine (out of band), then restart the listener",
        ),
    });
    checks.push(match skew_secs(&beat.heartbeat_at, modified, now) {
        None => Check::ok("clock", "no estimate (the heartbeat's time does not parse)"),
        Some(s) if s.unsigned_abs() > SKEW_LIMIT.as_secs() => Check::warn(
            "clock",
            format!(
                "{host}'s clock is about {} {} (heartbeatAt against the file's modification time); the job age window and heartbeat ages depend on clocks",
                human_secs(s),
                if s > 0 { "ahead" } else { "behind" }
            ),
            format!("set both clocks to network time (Windows: `w32tm /resync`; Linux: enable timesyncd or chrony) on {host} and here"),
        ),
        Some(s) => Check::ok("clock", format!("within a minute (about {s}s)")),
    });
    checks
}

fn judge_queue(name: &str, s: &TargetStatus, now: OffsetDateTime) -> Check {
    let oldest = s
        .queued
        .iter()
        .filter_map(|q| age_secs(&q.created_at, now))
        .max();
    let mut msg = format!("{} queued", s.queued_count);
    if let Some(a) = oldest {
        msg.push_str(&format!(", the oldest signed {} ago", human_secs(a)));
    }
    if !s.running.is_empty() {
        msg.push_str(&format!(", {} running", s.running.len()));
    }
    if s.invalid_in_inbox > 0 {
        return Check::warn(
            "queue",
            format!(
                "{msg}; {} inbox file(s) are not valid jobs and will be rejected",
                s.invalid_in_inbox
            ),
            format!(
                "`fleet-dispatch status --target {name}` and archive/rejected/ say why, once the listener has judged them"
            ),
        );
    }
    match oldest {
        Some(a) if a > OLD_QUEUED.as_secs() as i64 => Check::warn(
            "queue",
            msg,
            format!(
                "the queue is not moving: is {name}'s listener running? Jobs older than `listen --max-job-age` (7d by default) are refused"
            ),
        ),
        _ => Check::ok("queue", msg),
    }
}

fn judge_cancels(name: &str, s: &TargetStatus) -> Check {
    if s.cancel_pending.is_empty() {
        return Check::ok("cancels", "none pending");
    }
    let list: Vec<String> = s
        .cancel_pending
        .iter()
        .map(|c| format!("{} ({})", c.job_id, c.job))
        .collect();
    let msg = format!("{} pending: {}", list.len(), list.join(", "));
    if s.cancel_pending.iter().any(|c| c.job == "finished") {
        return Check::warn(
            "cancels",
            msg,
            format!(
                "markers for finished jobs are left over: `fleet-dispatch sweep --target {name}` removes stale ones"
            ),
        );
    }
    Check::ok("cancels", msg)
}

fn judge_rejected(name: &str, rejected: &[(String, Reason)], ours: Option<&str>) -> Check {
    if rejected.is_empty() {
        return Check::ok("rejected", "none in the last day");
    }
    // Reasons by verdict, in the order first seen, with one message each.
    let mut by: Vec<(&str, usize, &str)> = Vec::new();
    for (_, r) in rejected {
        match by.iter_mut().find(|(v, _, _)| *v == r.verdict) {
            Some(e) => e.1 += 1,
            None => by.push((&r.verdict, 1, &r.message)),
        }
    }
    let reasons: Vec<String> = by
        .iter()
        .map(|(v, n, m)| format!("{v} ×{n} ({m})"))
        .collect();
    let other_key = rejected.iter().find_map(|(_, r)| {
        r.key_fingerprint
            .as_deref()
            .filter(|theirs| ours.is_some_and(|mine| mine != *theirs))
    });
    let hint = match other_key {
        Some(theirs) => format!(
            "{name}'s listener judged with a key of fingerprint {theirs}, not ours: copy one key to every machine"
        ),
        None => format!(
            "`fleet-dispatch status --target {name}` lists them; each has a .reason.json in archive/rejected/"
        ),
    };
    Check::warn(
        "rejected",
        format!(
            "{} file(s) rejected in the last day: {}",
            rejected.len(),
            reasons.join("; ")
        ),
        hint,
    )
}

fn judge_counts(name: &str, counts: &[(String, usize)], limit: usize) -> Check {
    let total: usize = counts.iter().map(|(_, n)| n).sum();
    let mut over: Vec<String> = counts
        .iter()
        .filter(|(_, n)| *n >= limit)
        .map(|(f, n)| format!("{f} holds {n}"))
        .collect();
    if over.is_empty() && total >= limit {
        over.push(format!("{total} in all"));
    }
    let busiest = counts
        .iter()
        .max_by_key(|(_, n)| *n)
        .map(|(f, n)| format!(", most in {f} ({n})"))
        .unwrap_or_default();
    if over.is_empty() {
        return Check::ok("files", format!("{total} in all{busiest}"));
    }
    Check::warn(
        "files",
        format!(
            "{}: sync engines slow down past {limit} files in a folder",
            over.join(", ")
        ),
        format!(
            "run `fleet-dispatch sweep --target {name}`, and move old results, logs and archive/ files out of the shared folder"
        ),
    )
}

fn judge_conflicts(name: &str, found: &[(String, Engine)]) -> Check {
    if found.is_empty() {
        return Check::ok("conflicts", "no conflict copies");
    }
    let shown: Vec<String> = found
        .iter()
        .take(5)
        .map(|(p, e)| format!("{p} ({})", e.name()))
        .collect();
    let more = if found.len() > 5 {
        format!(" and {} more", found.len() - 5)
    } else {
        String::new()
    };
    Check::warn(
        "conflicts",
        format!(
            "{} conflict copies: {}{more}",
            found.len(),
            shown.join(", ")
        ),
        format!(
            "two machines wrote one name: is a second listener serving {name}, or a machine's clock or sync stuck? Readers ignore the copies; delete them once the original is right"
        ),
    )
}

/// The engine whose conflict-copy naming `name` follows, if any:
/// Syncthing's `.sync-conflict-`, Dropbox's `conflicted copy` and `(Case
/// Conflict)`, OneDrive's `<stem>-<HOST>.<ext>` (the Linux client's
/// `-<host>-safeBackup-<n>`), where `HOST` is one of `hosts`, the fleet's
/// machine names (any case). A job id that happens to end in a machine
/// name (`--job-id build-PC`) reads as OneDrive's copy too; the check
/// says "conflict copies", and the listener treats both alike.
pub fn conflict_copy(name: &str, hosts: &[String]) -> Option<Engine> {
    if name.contains(".sync-conflict-") {
        return Some(Engine::Syncthing);
    }
    if name.contains("conflicted copy") || name.contains("(Case Conflict)") {
        return Some(Engine::Dropbox);
    }
    if name.contains("-safeBackup-") {
        return Some(Engine::OneDrive);
    }
    let stem = name.rsplit_once('.').map_or(name, |(s, _)| s);
    let (before, host) = stem.rsplit_once('-')?;
    (!before.is_empty() && hosts.iter().any(|h| h.eq_ignore_ascii_case(host)))
        .then_some(Engine::OneDrive)
}

// ---------------------------------------------------------------------------
// Local state
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
    }
    checks.push(Check::ok("config", l.config.join("; ")));
    checks
}

#[cfg(test)]
mod tests;
