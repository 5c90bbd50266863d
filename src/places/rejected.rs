//! `archive/rejected/`: where refused inputs go, each with a
//! `<name>.reason.json` saying why (docs/protocol.md §6.6), and how that reason is found
//! again. Folders of the layout that turned out to be links or files go
//! there too ([`open_repairing`], docs/protocol.md §3.5), so a folder
//! writer can make the listener move things aside but never stop it.
//!
//! A name may be refused more than once (a job file resurrected by sync, a
//! marker for the same id), so each refusal takes the first free slot:
//! `<name>`, then `<name>.1`, `<name>.2`, … up to [`SLOTS`]. Because the
//! first free slot is always taken, the slots in use run from 0 without a
//! gap, which lets a lookup stop at the first free one. Once all are taken
//! (a folder writer can fill them), a refusal goes under `<name>.<random>`,
//! so nothing a writer places can stop a move aside.

use serde::{Deserialize, Serialize};

use crate::base::clock;
use crate::base::error::{Code, Error, Result};
use crate::base::names::JobId;
use crate::base::read::FileRead;
use crate::protocol::accept::Rejection;
use crate::store::fsops::{self, Dir};
use crate::store::layout::{ARCHIVE, Bad, Folders, OpenFailure, Place, TargetDirs};
use crate::trust::Key;

/// How many refusals of one name are kept in numbered slots.
pub const SLOTS: u32 = 1000;

/// How many names with a random part are tried once every slot is taken.
const RANDOM_TRIES: usize = 8;

/// Largest reason document read back.
pub const MAX_BYTES: u64 = 64 * 1024;

/// What was refused.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A job file from the inbox.
    #[default]
    Job,
    /// A cancel marker.
    Marker,
    /// A folder of the layout that was a link or a file.
    Folder,
    /// A result file that does not verify.
    Result,
    /// Something in the place of one of the listener's own files (a link,
    /// a folder).
    Layout,
}

/// A `<name>.reason.json` document. Fields are in alphabetical order, the
/// order earlier versions wrote them in. It is unsigned, so its texts are
/// read [`tame`](crate::base::screen::tame)d: no control character in them reaches
/// a terminal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    /// The fingerprint ([`Key::key_id`]) of the key the refusing side
    /// judged with, so a sender whose key differs can tell.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::base::screen::tamed_opt"
    )]
    pub key_fingerprint: Option<String>,
    /// What was refused (a reason without it is a job's).
    #[serde(default)]
    pub kind: Kind,
    /// Why, naming the offending field or value.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub message: String,
    /// When.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub rejected_at: String,
    /// The listener's target.
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub target: String,
    /// The verdict (docs/protocol.md §6.2).
    #[serde(deserialize_with = "crate::base::screen::tamed")]
    pub verdict: String,
}

impl Reason {
    /// The reason for refusing an input of `kind` by `r`, on `target`, now.
    pub fn new(r: &Rejection, kind: Kind, target: &str) -> Reason {
        Reason {
            key_fingerprint: None,
            kind,
            message: r.message.clone(),
            rejected_at: clock::format(clock::now()),
            target: target.to_string(),
            verdict: r.verdict.as_str().to_string(),
        }
    }

    /// The reason for moving aside the layout folder shown as `shown`
    /// (`archive/done`), found to be a `kind` (`symbolic link`, `file`).
    pub fn folder(shown: &str, kind: &str, target: &str) -> Reason {
        Reason {
            key_fingerprint: None,
            kind: Kind::Folder,
            message: format!(
                "{shown} was a {kind}, not a folder: moved aside, never followed, and made again"
            ),
            rejected_at: clock::format(clock::now()),
            target: target.to_string(),
            verdict: NOT_A_FOLDER.to_string(),
        }
    }
}

impl Reason {
    /// The same, naming the fingerprint of `key`, which judged the input.
    pub fn judged_with(mut self, key: &Key) -> Reason {
        self.key_fingerprint = Some(key.key_id());
        self
    }
}

/// The verdict word of a layout folder moved aside.
pub const NOT_A_FOLDER: &str = "not-a-folder";

/// The stored names of slot `n` for `name`: `<name>` (`<name>.<n>` past
/// the first) and its `.reason.json`.
fn slot(name: &str, n: u32) -> (String, String) {
    let stored = if n == 0 {
        name.to_string()
    } else {
        format!("{name}.{n}")
    };
    let reason = format!("{stored}.reason.json");
    (stored, reason)
}

/// Moves the refused entry `name` of `from` to the first free slot of
/// `rejected` (`archive/rejected/`), its reason written beside it first.
/// A link is moved as itself, never followed.
///
/// # Errors
///
/// A file error, or `INTERNAL` when every slot is taken.
pub fn file(rejected: &Dir, from: &Dir, name: &str, reason: &Reason) -> Result<()> {
    let body = crate::protocol::doc::to_file_bytes(reason);
    // Moved to `dest` with its reason at `reason_name` when both are free.
    let take = |dest: &str, reason_name: &str| -> Result<bool> {
        if rejected.exists(dest) || rejected.exists(reason_name) {
            return Ok(false);
        }
        if !rejected.publish(reason_name, &body, fsops::Flush::Nothing)? {
            return Ok(false);
        }
        if from.move_no_replace(name, rejected, dest)? {
            return Ok(true);
        }
        rejected.remove(reason_name)?;
        Ok(false)
    };
    for n in 0..SLOTS {
        let (dest, reason_name) = slot(name, n);
        if take(&dest, &reason_name)? {
            return Ok(());
        }
    }
    // Every slot is taken: a folder writer can fill them all, to keep a
    // marker's or a result's place blocked, or the listener from starting.
    // The entry then goes under a name no one can take ahead of it: kept,
    // and pruned by its age, but past the walk lookups make (which a writer
    // who filled the slots has made meaningless anyway).
    for _ in 0..RANDOM_TRIES {
        let mut r = [0u8; 8];
        crate::base::random::fill(&mut r);
        let dest = format!("{name}.{}", hex::encode(r));
        if take(&dest, &format!("{dest}.reason.json"))? {
            return Ok(());
        }
    }
    Err(Error::new(
        Code::Internal,
        format!(
            "cannot find a free name for {name} in {}",
            rejected.path().display()
        ),
    ))
}

/// How many folders one opening moves aside before it gives up (a writer
/// swapping faster than that is met again at the next opening).
const REPAIRS: usize = 12;

/// Opens every folder of the layout (docs/protocol.md §3.5), making the
/// missing ones; a folder that is a link or a file is moved aside, never
/// followed, and made again: into `archive/rejected/` with a reason, or,
/// when `archive/` or `archive/rejected/` is the one, beside it under the
/// target folder as `<name>.<time>.moved-aside` (the target folder itself
/// likewise in the root). Returns the folders and a line per folder moved.
///
/// # Errors
///
/// A file error, or `FORBIDDEN` when folders keep being swapped.
pub fn open_repairing(dirs: &TargetDirs) -> Result<(Folders, Vec<String>)> {
    let mut notes = Vec::new();
    let (mut last, mut failed, mut vanished) = (None, None, None);
    for _ in 0..REPAIRS {
        match dirs.open_all() {
            Ok(f) => return Ok((f, notes)),
            Err(OpenFailure::Error(e)) => return Err(e),
            Err(OpenFailure::Vanished(e)) => {
                // Moved away under the opening (a sync engine or a writer
                // swapping it): opened afresh from the root after a breath.
                vanished = Some(e);
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            Err(OpenFailure::Bad(bad)) => {
                // A move that fails (the entry changed meanwhile) is tried
                // again after the next opening judges it afresh.
                match move_aside(dirs, bad) {
                    Ok(Some(note)) => notes.push(note),
                    Ok(None) => {}
                    Err(e) => failed = Some(e),
                }
                last = Some(bad);
            }
        }
    }
    let bad = last.map(|bad| fsops::not_a_folder(&dirs.bad_path(bad), bad.kind()));
    Err(failed
        .or(bad)
        .or(vanished)
        .expect("a failed opening keeps its error"))
}

/// [`open_repairing`] for a listener's start: a folder it can list but
/// not write (a read-only share or mount) would run jobs whose results
/// could never be placed, so `results/` is probed, and refused before any
/// job starts, naming it. A probe that fails is tried once more in
/// folders opened afresh: `results/` may have been moved away under the
/// first (a sync engine's swap).
///
/// # Errors
///
/// [`open_repairing`]'s, or the probe's file error.
pub fn open_writable(dirs: &TargetDirs) -> Result<(Folders, Vec<String>)> {
    let (folders, notes) = open_repairing(dirs)?;
    if folders.results().check_writable("write-probe").is_ok() {
        return Ok((folders, notes));
    }
    let (again, more) = open_repairing(dirs)?;
    again.results().check_writable("write-probe")?;
    Ok((again, [notes, more].concat()))
}

/// `20261129T193105.123Z`: the time in a name every platform accepts.
fn stamp() -> String {
    clock::format(clock::now()).replace(['-', ':'], "")
}

/// Moves the entry `name` of `from` to a fresh `<name>.<time>.moved-aside`
/// in `to`; false when it is gone already.
fn set_aside(from: &Dir, name: &str, to: &Dir, shown: &str) -> Result<bool> {
    let base = format!("{}.{}.moved-aside", shown.replace('/', "-"), stamp());
    for n in 0..SLOTS {
        let (stored, _) = slot(&base, n);
        match from.move_no_replace(name, to, &stored) {
            Ok(true) => return Ok(true),
            Ok(false) => continue,
            Err(_) if !from.exists(name) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(false)
}

/// Moves the bad folder aside (see [`open_repairing`]); the line to log,
/// or `None` when someone else moved it meanwhile.
fn move_aside(dirs: &TargetDirs, bad: Bad) -> Result<Option<String>> {
    let target = dirs.target().as_str();
    let gone = |moved: bool, line: String| Ok(moved.then_some(line));
    let base = || -> Result<Dir> {
        dirs.open_base()?
            .ok_or_else(|| Error::not_found(format!("{} vanished", dirs.base().display())))
    };
    match bad {
        Bad::Target(kind) => {
            let root = dirs.open_root()?;
            let moved = set_aside(&root, dirs.base_name(), &root, dirs.base_name())?;
            gone(
                moved,
                format!(
                    "{} was a {kind}, not a folder: moved aside in {} and made again",
                    dirs.base().display(),
                    root.path().display()
                ),
            )
        }
        Bad::Archive(kind) => {
            let base = base()?;
            let moved = set_aside(&base, ARCHIVE, &base, ARCHIVE)?;
            gone(
                moved,
                format!(
                    "{ARCHIVE}/ was a {kind}, not a folder: moved aside as {ARCHIVE}.<time>.moved-aside and made again"
                ),
            )
        }
        Bad::Place(Place::Rejected, kind) => {
            let base = base()?;
            let archive = match base.child(ARCHIVE)? {
                fsops::Child::Dir(d) => d,
                _ => return Ok(None),
            };
            let shown = Place::Rejected.shown();
            let moved = set_aside(&archive, Place::Rejected.name(), &base, &shown)?;
            gone(
                moved,
                format!(
                    "{shown}/ was a {kind}, not a folder: moved aside under the target folder and made again"
                ),
            )
        }
        Bad::Place(place, kind) => {
            let rejected = match dirs.open(Place::Rejected) {
                Ok(Some(d)) => d,
                Ok(None) => dirs.open_made(Place::Rejected)?,
                // Judged (and moved aside) on the next turn.
                Err(_) => return Ok(None),
            };
            let parent = if place.in_archive() {
                base()?.child_made(ARCHIVE)?
            } else {
                base()?
            };
            let shown = place.shown();
            let reason = Reason::folder(&shown, kind, target);
            let stored = format!("{}.{}.moved-aside", shown.replace('/', "-"), stamp());
            if !parent.exists(place.name()) {
                return Ok(None);
            }
            // The entry is renamed to its stored name first, so the slot
            // search in `file` names an entry no one else is moving.
            if !parent.move_no_replace(place.name(), &parent, &stored)? {
                return Ok(None);
            }
            file(&rejected, &parent, &stored, &reason)?;
            gone(
                true,
                format!(
                    "{shown}/ was a {kind}, not a folder: moved to {}/{stored} and made again",
                    Place::Rejected.shown()
                ),
            )
        }
    }
}

/// Why a job file named after `id` was refused, if one was. Markers are
/// refused into the same slots; their reasons are passed over.
pub fn find_job_rejection(dirs: &TargetDirs, id: &JobId) -> Option<Reason> {
    let rejected = dirs.open(Place::Rejected).ok()??;
    let name = id.file_name();
    for n in 0..SLOTS {
        let (dest, reason_name) = slot(&name, n);
        let FileRead::Bytes(b) = rejected.read_limited(&reason_name, MAX_BYTES) else {
            if !rejected.exists(&dest) {
                // The first free slot: no later one is in use.
                return None;
            }
            continue;
        };
        match serde_json::from_slice::<Reason>(&b) {
            Ok(r) if r.kind == Kind::Job => return Some(r),
            _ => continue,
        }
    }
    None
}

/// The last `n` refused job files, newest first: their names and reasons
/// (for `status`). Markers and other kinds are passed over.
pub fn recent_jobs(dirs: &TargetDirs, n: usize) -> Vec<(String, Reason)> {
    let Some(rejected) = dirs.open(Place::Rejected).ok().flatten() else {
        return Vec::new();
    };
    let mut found: Vec<(Option<std::time::SystemTime>, String)> = rejected
        .list()
        .unwrap_or_default()
        .into_iter()
        .filter(|name| name.ends_with(".reason.json"))
        .map(|name| {
            let modified = rejected.entry(&name).ok().and_then(|e| e.modified);
            (modified, name)
        })
        .collect();
    found.sort();
    found
        .into_iter()
        .rev()
        .filter_map(|(_, name)| {
            let FileRead::Bytes(b) = rejected.read_limited(&name, MAX_BYTES) else {
                return None;
            };
            let reason: Reason = serde_json::from_slice(&b).ok()?;
            let refused = name.strip_suffix(".reason.json")?.to_string();
            (reason.kind == Kind::Job).then_some((refused, reason))
        })
        .take(n)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reason_document_keeps_its_keys() {
        let r = Reason {
            key_fingerprint: None,
            kind: Kind::Marker,
            message: "m".into(),
            rejected_at: "t".into(),
            target: "PC".into(),
            verdict: "bad-signature".into(),
        };
        let text = String::from_utf8(crate::protocol::doc::to_file_bytes(&r)).unwrap();
        let earlier = serde_json::json!({
            "verdict": "bad-signature", "message": "m", "rejectedAt": "t",
            "kind": "marker", "target": "PC",
        });
        assert_eq!(
            text,
            String::from_utf8(crate::protocol::doc::to_file_bytes(&earlier)).unwrap()
        );
        assert_eq!(serde_json::from_str::<Reason>(&text).unwrap(), r);
    }

    #[test]
    fn a_reason_without_a_kind_is_a_jobs() {
        let r: Reason = serde_json::from_str(
            r#"{"verdict":"malformed","message":"m","rejectedAt":"t","target":"PC","extra":1}"#,
        )
        .unwrap();
        assert_eq!(r.kind, Kind::Job);
    }
}
