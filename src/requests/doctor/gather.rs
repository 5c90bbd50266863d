//! The facts doctor judges, read from the disk. Everything under the root
//! is read through held folder handles ([`Dir`]) that never follow a link;
//! the root and the folders above it are opened as the user named them.
//! The only write is one temp file in the root, removed at once, to learn
//! whether the root is writable; the only lock taken is a shared one on a
//! target's local lock file, dropped at once, to learn whether a listener
//! holds it (a listener starting in that instant answers `BUSY`, and its
//! service manager starts it again).

use std::fs::TryLockError;
use std::path::{Path, PathBuf};
use std::time::Duration;

use time::OffsetDateTime;

use super::{
    BeatFile, Check, Engine, KeyFacts, KeyFile, LocalFacts, LocalTarget, LockHolder, Report,
    RootFacts, RootState, Shape, TargetFacts, holds_layout,
};
use crate::base::clock;
use crate::base::names::{Machine, is_machine};
use crate::base::read::FileRead;
use crate::local::governor::Tier;
use crate::places::heartbeat::{self, BeatVerdict};
use crate::places::observe;
use crate::places::prune;
use crate::places::rejected::{self, Reason};
use crate::store::events::Watching;
use crate::store::fsops::{Child, Dir};
use crate::store::layout::{self, ARCHIVE, LISTENER_JSON, Place, StateDirs, TargetDirs};
use crate::trust::Key;

/// What to examine, as the command resolved it from the settings.
#[derive(Clone, Debug)]
pub struct Inputs<'a> {
    /// The dispatch root, when configured.
    pub root: Option<&'a Path>,
    /// The key file, when configured.
    pub key_file: Option<&'a Path>,
    /// The state directory, when configured.
    pub state_dir: Option<&'a Path>,
    /// This machine's name, when valid.
    pub machine: Option<&'a str>,
    /// The targets to examine.
    pub targets: &'a [TargetDirs],
    /// The machines this machine knows before their listeners run (the
    /// fleet setting).
    pub fleet: &'a [String],
    /// [`super::FILE_LIMIT`], or a lower limit for a test.
    pub file_limit: usize,
    /// The retention `sweep` prunes by here, for what it would free.
    pub retention: std::time::Duration,
    /// Where each setting came from, as `config` says it.
    pub config: Vec<String>,
    /// In a mode other than `shared-key` (`--auth`), the key the command
    /// loaded for it, when it did: heartbeats are judged with it, and the
    /// fleet key file is not examined (the mode's checks are
    /// [`super::roster`]'s).
    pub judge_with: Option<Option<&'a Key>>,
}

/// Examines everything `i` names and judges it.
pub fn examine(i: &Inputs<'_>) -> Report {
    let now = clock::now();
    let (mut checks, loaded) = match i.judge_with {
        Some(_) => (Vec::new(), None),
        None => {
            let (key_facts, key) = key(i.key_file, i.root);
            (super::judge_key(&key_facts), key)
        }
    };
    let key = i.judge_with.unwrap_or(loaded.as_ref());
    let fleet: Vec<String> = i
        .machine
        .map(str::to_string)
        .into_iter()
        .chain(i.fleet.iter().cloned())
        .collect();
    let root = root(i.root, &fleet);
    checks.extend(super::judge_root(&root));
    let key_id = key.map(Key::key_id).filter(|k| !k.is_empty());
    let beats: Vec<(BeatFile, Option<bool>)> = i.targets.iter().map(|d| beat(d, key)).collect();
    // The fleet's machine names, for OneDrive's `<name>-<HOST>` copies.
    let mut hosts: Vec<String> = i.machine.map(str::to_string).into_iter().collect();
    if let Some(r) = i.root {
        hosts.extend(layout::existing_targets(r).unwrap_or_default());
    }
    for b in &beats {
        if let (BeatFile::Beat(b, _), _) = b
            && is_machine(&b.host)
        {
            hosts.push(b.host.clone());
        }
    }
    // The folders a root one level off would offer as targets are not
    // targets: the layout check says where the root is.
    let targets = if root.shape.off() { &[] } else { i.targets };
    // What the root's queued jobs wait for, read once for every target
    // (each target's sweep plan read every inbox of the root again).
    let awaited = targets.first().and_then(|d| prune::Awaited::read(d).ok());
    for (dirs, beat) in targets.iter().zip(beats) {
        let facts = target(dirs, beat, key, &hosts, now, i.retention, awaited.as_ref());
        checks.extend(super::judge_target(
            &facts,
            key_id.as_deref(),
            now,
            i.file_limit,
        ));
    }
    checks.extend(super::judge_local(&local(i)));
    Report::new(checks, key_id)
}

fn key(path: Option<&Path>, root: Option<&Path>) -> (KeyFacts, Option<Key>) {
    let mut facts = KeyFacts {
        file: KeyFile::Unset,
        private: Ok(()),
        inside_root: false,
    };
    let Some(path) = path else {
        return (facts, None);
    };
    facts.inside_root = root.is_some_and(|r| layout::is_inside(path, r));
    let p = path.to_path_buf();
    // Read as every command reads it: a FIFO or a device is never waited
    // on or read without end.
    let text = match crate::store::fsops::read_local(path, crate::trust::MAX_KEY_FILE_BYTES) {
        FileRead::Bytes(t) => t,
        FileRead::Missing => {
            facts.file = KeyFile::Missing(p);
            return (facts, None);
        }
        FileRead::NotAFile(kind) => {
            facts.file = KeyFile::Unreadable(p, format!("it is a {kind}, not a regular file"));
            return (facts, None);
        }
        FileRead::TooLarge(n) => {
            facts.file = KeyFile::Unreadable(p, format!("it holds {n} bytes or more, not one key"));
            return (facts, None);
        }
        FileRead::Unreadable(e) => {
            facts.file = KeyFile::Unreadable(p, e);
            return (facts, None);
        }
    };
    facts.private = crate::platform::check_key_permissions(path).map_err(|e| (e.message, e.hint));
    let len = text.trim_ascii_end().len();
    match crate::trust::judge_file_text(&text, facts.private.is_err()) {
        Ok(k) => {
            facts.file = KeyFile::Loaded(p, len, k.key_id());
            (facts, Some(k))
        }
        Err(why) => {
            facts.file = KeyFile::NotAKey(p, why);
            (facts, None)
        }
    }
}

fn names(dir: &Dir) -> Vec<String> {
    dir.list().unwrap_or_default()
}

fn folder(dir: &Dir, name: &str) -> Option<Dir> {
    match dir.child(name) {
        Ok(Child::Dir(d)) => Some(d),
        _ => None,
    }
}

/// How many folders of a root that may be one level too high (a whole
/// OneDrive) are looked into.
const LOOK: usize = 500;

fn root(path: Option<&Path>, fleet: &[String]) -> RootFacts {
    let mut facts = RootFacts {
        path: path.map(Path::to_path_buf),
        state: RootState::Missing,
        shape: Shape::default(),
        engine: None,
        residency: crate::platform::Residency::Unknown,
    };
    let Some(path) = path else {
        return facts;
    };
    facts.state = match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => RootState::Folder {
            writable: writable(path),
        },
        Ok(_) => RootState::NotAFolder,
        Err(_) => RootState::Missing,
    };
    if !matches!(facts.state, RootState::Folder { .. }) {
        return facts;
    }
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    facts.shape = shape(&abs, fleet);
    facts.engine = super::engine(&abs, &markers(&abs), &onedrive_folders());
    facts.residency = crate::platform::residency(path);
    facts
}

/// Makes and removes one of our temp files in the root.
fn writable(path: &Path) -> Result<(), String> {
    let dir = Dir::open_trusted(path).map_err(|e| e.message)?;
    dir.check_writable("doctor").map_err(|e| e.message)
}

/// The folders around `root` (an absolute path), as the layout rule
/// ([`super::root::layout_off`]) judges them; `fleet` names this fleet's
/// machines (a folder so named is never a stranger).
pub(super) fn shape(root: &Path, fleet: &[String]) -> Shape {
    let Ok(dir) = Dir::open_trusted(root) else {
        return Shape::default();
    };
    let entries = names(&dir);
    let mut s = Shape::default();
    for n in entries.iter().filter(|n| !n.starts_with('.')).take(LOOK) {
        let Some(child) = folder(&dir, n) else {
            continue;
        };
        let inner = names(&child);
        if holds_layout(&inner) {
            if is_machine(n) {
                s.targets.push(n.clone());
            }
            continue;
        }
        let found: Vec<String> = inner
            .iter()
            .filter(|m| is_machine(m))
            .take(LOOK)
            .filter(|m| folder(&child, m).is_some_and(|d| holds_layout(&names(&d))))
            .cloned()
            .collect();
        if !found.is_empty() {
            s.nested.push((n.clone(), found));
        } else if fleet.iter().any(|m| m.eq_ignore_ascii_case(n))
            || !super::layout_names(&inner).is_empty()
        {
            s.kin = true;
        } else {
            s.strangers.push(n.clone());
        }
    }
    s.strangers.sort_by_key(|n| n.to_lowercase());
    s.identity = entries.iter().any(|n| n == crate::store::layout::ROOT_FILE);
    s.targets.sort();
    s.is_target = super::too_deep(&entries, s.targets.len());
    s.own_layout = super::layout_names(&entries);
    s.own_layout.sort();
    // `<root>/<TARGET>/archive/done` is the deepest folder of a layout.
    s.inside_target = root
        .ancestors()
        .skip(1)
        .take(3)
        .find(|a| Dir::open_trusted(a).is_ok_and(|d| holds_layout(&names(&d))))
        .map(Path::to_path_buf);
    s
}

/// Syncthing's and Dropbox's marks in the root or a folder above it,
/// nearest first.
fn markers(root: &Path) -> Vec<(PathBuf, Engine)> {
    let mut found = Vec::new();
    for a in root.ancestors() {
        let Ok(d) = Dir::open_trusted(a) else {
            continue;
        };
        if d.exists(".stfolder") {
            found.push((a.to_path_buf(), Engine::Syncthing));
        }
        if d.exists(".dropbox") || d.exists(".dropbox.cache") {
            found.push((a.to_path_buf(), Engine::Dropbox));
        }
    }
    found
}

/// The folders OneDrive's variables name.
fn onedrive_folders() -> Vec<PathBuf> {
    ["OneDrive", "OneDriveCommercial", "OneDriveConsumer"]
        .iter()
        .filter_map(|v| std::env::var_os(v).filter(|d| !d.is_empty()))
        .map(PathBuf::from)
        .collect()
}

/// The heartbeat of `dirs`' listener, and whether it verifies under `key`
/// (nothing said without a key: the beat is only shown).
fn beat(dirs: &TargetDirs, key: Option<&Key>) -> (BeatFile, Option<bool>) {
    let judged = match key {
        Some(k) => heartbeat::judged(dirs, k),
        None => heartbeat::peek(dirs).and_then(|b| Err(BeatVerdict::Unverified(Box::new(b)))),
    };
    let (b, verified) = match judged {
        Ok(b) => (b, true),
        Err(BeatVerdict::Unverified(b)) => (*b, false),
        Err(BeatVerdict::Missing) => return (BeatFile::Missing, None),
        Err(BeatVerdict::NotRead | BeatVerdict::Malformed) => {
            return (BeatFile::Unreadable, None);
        }
    };
    let modified = dirs
        .open_base()
        .ok()
        .flatten()
        .and_then(|base| base.entry(LISTENER_JSON).ok())
        .and_then(|e| e.modified)
        .map(clock::from_system);
    (BeatFile::Beat(Box::new(b), modified), key.map(|_| verified))
}

/// What `doctor` warns of `dirs`' listener that a sender about to queue a
/// job there should hear (`enqueue`): a heartbeat that is stale, says the
/// listener stopped, or is signed with another key than `key` (naming
/// both fingerprints). Nothing when no listener has run there yet: a new
/// target's first job is expected to wait for it.
pub fn listener_warnings(dirs: &TargetDirs, key: &Key) -> Vec<Check> {
    let (beat, beat_verified) = beat(dirs, Some(key));
    if beat == BeatFile::Missing {
        return Vec::new();
    }
    let facts = TargetFacts {
        name: dirs.target().to_string(),
        beat,
        beat_verified,
        status: None,
        rejected: Vec::new(),
        counts: Vec::new(),
        prunable: 0,
        markers_due: None,
        conflicts: Vec::new(),
    };
    let checks = super::target::judge_listener(&facts, Some(&key.key_id()), clock::now());
    let other_key = checks
        .iter()
        .any(|c| c.check == "listener key" && c.status == super::Status::Warn);
    checks
        .into_iter()
        .filter(|c| c.status == super::Status::Warn)
        .filter(|c| match c.check {
            "heartbeat" | "listener key" => true,
            // Said already, and better, by the fingerprints.
            "heartbeat signature" => !other_key,
            _ => false,
        })
        .map(|c| c.on(dirs.target().as_str()))
        .collect()
}

/// How the target folder itself is named among its folders' counts.
const HERE: &str = "the target folder";

fn target(
    dirs: &TargetDirs,
    (beat, beat_verified): (BeatFile, Option<bool>),
    key: Option<&Key>,
    hosts: &[String],
    now: OffsetDateTime,
    retention: std::time::Duration,
    awaited: Option<&prune::Awaited>,
) -> TargetFacts {
    let history = observe::History {
        count: 0,
        ..observe::History::default()
    };
    let mut counts = Vec::new();
    let mut conflicts = Vec::new();
    let base = dirs.open_base().ok().flatten();
    let mut folders: Vec<(String, Option<Dir>)> = vec![(HERE.into(), base.clone())];
    let archive = base.as_ref().and_then(|b| folder(b, ARCHIVE));
    folders.push((ARCHIVE.into(), archive));
    for p in Place::ALL {
        folders.push((p.shown(), dirs.open(p).ok().flatten()));
    }
    for (shown, dir) in folders {
        let Some(dir) = dir else { continue };
        let entries = names(&dir);
        for n in &entries {
            if let Some(e) = super::conflict_copy(n, hosts) {
                let at = if shown == HERE {
                    n.clone()
                } else {
                    format!("{shown}/{n}")
                };
                conflicts.push((at, e));
            }
        }
        if shown != ARCHIVE {
            counts.push((shown, entries.len()));
        }
    }
    // What a daily sweep with the configured retention would take now.
    let ages = prune::Ages {
        now: std::time::SystemTime::now(),
        marker: prune::MARKER_MAX_AGE,
        retention,
    };
    let plan = match awaited {
        Some(a) => prune::plan_kept(dirs, ages, a),
        None => prune::Awaited::read(dirs).and_then(|a| prune::plan_kept(dirs, ages, &a)),
    };
    let (prunable, markers_due) = plan.map_or((0, None), |(doomed, kept)| {
        let due = kept.iter().filter_map(|k| k.removable_at).max();
        (doomed.len(), due.map(clock::from_system))
    });
    TargetFacts {
        name: dirs.target().to_string(),
        beat,
        beat_verified,
        status: key.map(|k| observe::target(dirs, k, &history)),
        rejected: rejected_since(dirs, now),
        counts,
        prunable,
        markers_due,
        conflicts,
    }
}

/// Every refusal (of a job, a marker, a folder) whose reason is dated
/// within [`super::REJECTED_WINDOW`] of `now`. `status` shows the last few
/// job files ([`rejected::recent_jobs`]); doctor counts all kinds, since a
/// marker refused for a bad signature says as much about the key.
fn rejected_since(dirs: &TargetDirs, now: OffsetDateTime) -> Vec<(String, Reason)> {
    let Some(dir) = dirs.open(Place::Rejected).ok().flatten() else {
        return Vec::new();
    };
    let window = super::REJECTED_WINDOW;
    // The file's time skips old reasons unread; a day's margin covers a
    // listener whose clock differs from the file's.
    let recent_file = |name: &str| {
        dir.entry(name)
            .ok()
            .and_then(|e| e.modified)
            .is_none_or(|m| now - clock::from_system(m) <= window + Duration::from_secs(86_400))
    };
    let mut found: Vec<(String, Reason)> = names(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".reason.json") && recent_file(n))
        .filter_map(|n| {
            let FileRead::Bytes(b) = dir.read_limited(&n, rejected::MAX_BYTES) else {
                return None;
            };
            let r: Reason = serde_json::from_slice(&b).ok()?;
            let at = clock::parse(&r.rejected_at)?;
            (now - at <= window).then(|| (n.trim_end_matches(".reason.json").to_string(), r))
        })
        .collect();
    found.sort_by(|a, b| b.1.rejected_at.cmp(&a.1.rejected_at));
    found
}

fn local(i: &Inputs<'_>) -> LocalFacts {
    let mut facts = LocalFacts {
        state_dir: i.state_dir.map(Path::to_path_buf),
        inside_root: false,
        targets: Vec::new(),
        config: i.config.clone(),
    };
    let Some(state) = i.state_dir else {
        return facts;
    };
    facts.inside_root = i.root.is_some_and(|r| layout::is_inside(state, r));
    let mut names: Vec<String> = std::fs::read_dir(state)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    for n in names {
        let Ok(m) = Machine::parse(&n, "target") else {
            continue;
        };
        let s = StateDirs::new(state, &m);
        facts.targets.push(LocalTarget {
            ledger_bytes: std::fs::metadata(s.ledger()).ok().map(|m| m.len()),
            lock: lock_holder(&s.lock_file()),
            watching: std::fs::read_to_string(s.watching())
                .ok()
                .and_then(|l| Watching::from_line(&l)),
            governor: recorded_governor(&s),
            name: n,
        });
    }
    facts
}

/// The governor file the listener running here for `s`'s target obeys,
/// with the tier it says now; None when no listener runs here or it has
/// no governor.
pub fn running_governor(s: &StateDirs) -> Option<(String, Tier)> {
    match lock_holder(&s.lock_file()) {
        LockHolder::Held(_) => recorded_governor(s),
        _ => None,
    }
}

/// The governor file a listener here recorded it obeys, with the tier it
/// says now (read as the listener reads it).
fn recorded_governor(s: &StateDirs) -> Option<(String, Tier)> {
    let text = std::fs::read_to_string(s.governor()).ok()?;
    let file = text.lines().next()?.trim();
    if file.is_empty() {
        return None;
    }
    Some((file.to_string(), Tier::read(Some(Path::new(file)))))
}

/// Whether a listener holds the lock at `path`: a shared lock is tried
/// and dropped at once.
fn lock_holder(path: &Path) -> LockHolder {
    let pid = || {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| t.trim().parse().ok())
    };
    // The pid is read first: Windows refuses reads of a locked range.
    let written = pid();
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LockHolder::None,
        Err(e) => return LockHolder::Unknown(e.to_string()),
    };
    match file.try_lock_shared() {
        Ok(()) => {
            let _ = file.unlock();
            LockHolder::Free
        }
        Err(TryLockError::WouldBlock) => LockHolder::Held(written),
        Err(TryLockError::Error(e)) => LockHolder::Unknown(e.to_string()),
    }
}
