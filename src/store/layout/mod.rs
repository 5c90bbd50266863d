//! The on-disk layout (docs/protocol.md §3), in one place: no other module joins path
//! strings. [`TargetDirs`] names everything under `<root>/<TARGET>/` and
//! opens its folders as [`Folders`] (held open, never through a link);
//! [`StateDirs`] names the per-user local state that must never sync.

use std::path::{Path, PathBuf};

use crate::base::error::{Error, Result};
use crate::base::names::{JobId, Machine};
use crate::store::fsops::{Child, Dir, not_a_folder};

mod local;
mod root;
mod targets;

pub use local::{
    DRAIN, StateDirs, default_admin_key_file, default_identity_file, default_key_file,
    default_root, default_state_dir, is_inside,
};
pub use root::{
    Pending, ROOT_FILE, RootGuard, has_layout, identity_canonical, known_identity, not_the_root,
    read_identity, root_key,
};
pub use targets::{
    check_addressable, existing_targets, find_target, is_all, is_target_list, pick_target,
    resolve_among, resolve_target, resolve_targets,
};

/// A folder of the layout under `<root>/<TARGET>/`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Place {
    /// `inbox/`: queued jobs.
    Inbox,
    /// `cancel/`: cancel markers.
    Cancel,
    /// `running/`: what the listener runs now.
    Running,
    /// `results/`: signed results.
    Results,
    /// `logs/`: captured output.
    Logs,
    /// `archive/done/`: processed job files.
    Done,
    /// `archive/consumed/`: consumed cancel markers.
    Consumed,
    /// `archive/rejected/`: rejected inputs and their reasons.
    Rejected,
}

/// The folder `archive/`, which holds three of the places.
pub const ARCHIVE: &str = "archive";

impl Place {
    /// Every place, in the order [`Folders`] holds them.
    pub const ALL: [Place; 8] = [
        Place::Inbox,
        Place::Cancel,
        Place::Running,
        Place::Results,
        Place::Logs,
        Place::Done,
        Place::Consumed,
        Place::Rejected,
    ];

    /// The folder's own name.
    pub fn name(self) -> &'static str {
        match self {
            Place::Inbox => "inbox",
            Place::Cancel => "cancel",
            Place::Running => "running",
            Place::Results => "results",
            Place::Logs => "logs",
            Place::Done => "done",
            Place::Consumed => "consumed",
            Place::Rejected => "rejected",
        }
    }

    /// True for the places inside `archive/`.
    pub fn in_archive(self) -> bool {
        matches!(self, Place::Done | Place::Consumed | Place::Rejected)
    }

    /// Its path under the target folder, as people read it: `archive/done`.
    pub fn shown(self) -> String {
        if self.in_archive() {
            format!("{ARCHIVE}/{}", self.name())
        } else {
            self.name().to_string()
        }
    }
}

/// Which folder of a target's layout is not a real folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// `<root>/<TARGET>/` itself.
    Target(&'static str),
    /// `archive/`.
    Archive(&'static str),
    /// One of the places.
    Place(Place, &'static str),
}

impl Bad {
    /// What is there instead of a folder (`symbolic link`, `file`, …).
    pub fn kind(self) -> &'static str {
        match self {
            Bad::Target(k) | Bad::Archive(k) | Bad::Place(_, k) => k,
        }
    }
}

/// Why [`TargetDirs::open_all`] could not open the layout.
#[derive(Debug)]
pub enum OpenFailure {
    /// A link or a file stands where a folder belongs.
    Bad(Bad),
    /// A folder opened a moment ago went away (moved or removed) before
    /// its own folders could be made in it: opening again from the root
    /// finds what stands there now.
    Vanished(Error),
    /// Anything else.
    Error(Error),
}

impl From<Error> for OpenFailure {
    fn from(e: Error) -> OpenFailure {
        OpenFailure::Error(e)
    }
}

/// Every folder of one target's layout, held open: operations name entries
/// of these handles, so a folder swapped for a link after opening is never
/// followed. Opened per pass or per batch of operations, so a swap between
/// two is noticed at the next opening.
#[derive(Clone, Debug)]
pub struct Folders {
    base: Dir,
    archive: Dir,
    places: Vec<Dir>,
}

impl Folders {
    /// `<root>/<TARGET>/`.
    pub fn base(&self) -> &Dir {
        &self.base
    }
    /// `archive/`.
    pub fn archive(&self) -> &Dir {
        &self.archive
    }
    /// The folder of `place`.
    pub fn get(&self, place: Place) -> &Dir {
        let i = Place::ALL.iter().position(|p| *p == place).unwrap_or(0);
        &self.places[i]
    }
    /// `inbox/`.
    pub fn inbox(&self) -> &Dir {
        self.get(Place::Inbox)
    }
    /// `cancel/`.
    pub fn cancel(&self) -> &Dir {
        self.get(Place::Cancel)
    }
    /// `running/`.
    pub fn running(&self) -> &Dir {
        self.get(Place::Running)
    }
    /// `results/`.
    pub fn results(&self) -> &Dir {
        self.get(Place::Results)
    }
    /// `logs/`.
    pub fn logs(&self) -> &Dir {
        self.get(Place::Logs)
    }
    /// `archive/done/`.
    pub fn done(&self) -> &Dir {
        self.get(Place::Done)
    }
    /// `archive/consumed/`.
    pub fn consumed(&self) -> &Dir {
        self.get(Place::Consumed)
    }
    /// `archive/rejected/`.
    pub fn rejected(&self) -> &Dir {
        self.get(Place::Rejected)
    }
}

/// The places under one target's folder in the dispatch root.
#[derive(Clone, Debug)]
pub struct TargetDirs {
    base: PathBuf,
    name: Machine,
    /// The root's identity a writer checked: folders are made only while
    /// the root still holds it ([`TargetDirs::guarded`]).
    guard: Option<RootGuard>,
}

impl TargetDirs {
    /// `<root>/<target>/`, with `target` already resolved to its spelling.
    pub fn new(root: &Path, target: &Machine) -> TargetDirs {
        TargetDirs {
            base: root.join(target.as_str()),
            name: target.clone(),
            guard: None,
        }
    }

    /// The same folder, whose missing folders are made only while the
    /// root holds `guard`'s identity (docs/protocol.md §3.6): a root whose
    /// mount went away, leaving an empty folder, is never built again.
    pub fn guarded(mut self, guard: &RootGuard) -> TargetDirs {
        self.guard = Some(guard.clone());
        self
    }

    /// `Ok` unless guarded by an identity `root` no longer holds.
    fn check_root(&self, root: &Dir) -> Result<()> {
        self.guard.as_ref().map_or(Ok(()), |g| g.check(root))
    }

    /// The folder of `other` in the same root, spelled as it exists there
    /// ([`find_target`]); `None` when no folder serves it yet.
    ///
    /// # Errors
    ///
    /// A file error listing the root; `CONFIG` when several folders differ
    /// from `other` only in case.
    pub fn sibling(&self, other: &Machine) -> Result<Option<TargetDirs>> {
        let root = self.base.parent().unwrap_or(Path::new("."));
        Ok(find_target(root, other)?.map(|name| TargetDirs {
            base: root.join(&name),
            name: Machine::parse(&name, "target").unwrap_or_else(|_| other.clone()),
            guard: self.guard.clone(),
        }))
    }

    /// Every target folder in the same root, this one included.
    ///
    /// # Errors
    ///
    /// A file error listing the root.
    pub fn siblings(&self) -> Result<Vec<TargetDirs>> {
        let root = self.base.parent().unwrap_or(Path::new("."));
        Ok(existing_targets(root)?
            .into_iter()
            .filter_map(|name| Machine::parse(&name, "target").ok())
            .map(|name| TargetDirs {
                guard: self.guard.clone(),
                ..TargetDirs::new(root, &name)
            })
            .collect())
    }

    /// The target's name.
    pub fn target(&self) -> &Machine {
        &self.name
    }

    /// `<root>/<TARGET>/`.
    pub fn base(&self) -> &Path {
        &self.base
    }

    /// Queued jobs.
    pub fn inbox(&self) -> PathBuf {
        self.base.join("inbox")
    }
    /// Cancel markers.
    pub fn cancel(&self) -> PathBuf {
        self.base.join("cancel")
    }
    /// What the listener runs now.
    pub fn running(&self) -> PathBuf {
        self.base.join("running")
    }
    /// Signed results.
    pub fn results(&self) -> PathBuf {
        self.base.join("results")
    }
    /// Captured output.
    pub fn logs(&self) -> PathBuf {
        self.base.join("logs")
    }
    /// Processed job files.
    pub fn done(&self) -> PathBuf {
        self.base.join("archive").join("done")
    }
    /// Consumed cancel markers.
    pub fn consumed(&self) -> PathBuf {
        self.base.join("archive").join("consumed")
    }
    /// Rejected inputs and their reasons.
    pub fn rejected(&self) -> PathBuf {
        self.base.join("archive").join("rejected")
    }
    /// The listener heartbeat.
    pub fn listener_json(&self) -> PathBuf {
        self.base.join(LISTENER_JSON)
    }
    /// The lock a listener holds in the target folder itself, so listeners
    /// with different state directories on one file system (or one SMB
    /// share) cannot serve the target together.
    pub fn folder_lock(&self) -> PathBuf {
        self.base.join(FOLDER_LOCK)
    }

    /// The dispatch root, opened as the user named it (links followed).
    ///
    /// # Errors
    ///
    /// A file error naming the root.
    pub fn open_root(&self) -> Result<Dir> {
        let root = self.base.parent().unwrap_or(Path::new("."));
        Dir::open_trusted(root)
    }

    /// The name of the target's folder in the root.
    pub fn base_name(&self) -> &str {
        self.name.as_str()
    }

    fn open_base_as(&self, make: bool) -> Result<Option<Dir>> {
        let root = self.open_root()?;
        let name = self.base_name();
        if make {
            self.check_root(&root)?;
            return root.child_made(name).map(Some);
        }
        match root.child(name)? {
            Child::Dir(d) => Ok(Some(d)),
            Child::Missing => Ok(None),
            Child::NotAFolder(kind) => Err(not_a_folder(&self.base, kind)),
        }
    }

    /// `<root>/<TARGET>/`, held open; `None` when it does not exist.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` when it is a link or a file; a file error.
    pub fn open_base(&self) -> Result<Option<Dir>> {
        self.open_base_as(false)
    }

    /// The folder of `place`, held open; `None` when it (or a folder above
    /// it) does not exist.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` when it or a folder above it is a link or a file; a file
    /// error.
    pub fn open(&self, place: Place) -> Result<Option<Dir>> {
        let Some(mut dir) = self.open_base()? else {
            return Ok(None);
        };
        let names: &[&str] = if place.in_archive() {
            &[ARCHIVE, place.name()]
        } else {
            &[place.name()]
        };
        for name in names {
            dir = match dir.child(name)? {
                Child::Dir(d) => d,
                Child::Missing => return Ok(None),
                Child::NotAFolder(kind) => return Err(not_a_folder(&dir.shown(name), kind)),
            };
        }
        Ok(Some(dir))
    }

    /// The folder of `place`, held open, made (with the folders above it)
    /// when missing.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN` when it or a folder above it is a link or a file; a file
    /// error.
    pub fn open_made(&self, place: Place) -> Result<Dir> {
        let mut dir = self
            .open_base_as(true)?
            .expect("made folders are always there");
        if place.in_archive() {
            dir = dir.child_made(ARCHIVE)?;
        }
        dir.child_made(place.name())
    }

    /// Every folder of the layout, held open, the missing ones made
    /// (docs/protocol.md §3.5); the first that is a link or a file is named
    /// in [`OpenFailure::Bad`].
    ///
    /// # Errors
    ///
    /// See [`OpenFailure`].
    pub fn open_all(&self) -> std::result::Result<Folders, OpenFailure> {
        let root = self.open_root()?;
        self.check_root(&root)?;
        let made = |dir: &Dir, name: &str, bad: &dyn Fn(&'static str) -> Bad| {
            for _ in 0..3 {
                match dir.child(name)? {
                    Child::Dir(d) => return Ok(d),
                    Child::NotAFolder(kind) => return Err(OpenFailure::Bad(bad(kind))),
                    Child::Missing => {
                        // Made by the next call unless something takes the
                        // name first (then judged on the next turn).
                        let _ = dir.child_made(name);
                    }
                }
            }
            // Made and gone three times over: someone keeps removing it,
            // or `dir` itself was removed after it was opened.
            Err(OpenFailure::Vanished(Error::io(
                "create directory",
                &dir.shown(name),
                &std::io::Error::from(std::io::ErrorKind::NotFound),
            )))
        };
        let base = made(&root, self.base_name(), &Bad::Target)?;
        let archive = made(&base, ARCHIVE, &Bad::Archive)?;
        let mut places = Vec::with_capacity(Place::ALL.len());
        for p in Place::ALL {
            let parent = if p.in_archive() { &archive } else { &base };
            places.push(made(parent, p.name(), &|k| Bad::Place(p, k))?);
        }
        Ok(Folders {
            base,
            archive,
            places,
        })
    }

    /// True when every folder in `f` is still the one its name leads to:
    /// then [`TargetDirs::open_all`] would open the same folders again, and
    /// the listener keeps them for its next pass instead (22 syscalls a job
    /// fewer, 11 `fstatat` instead). Always false on Windows.
    pub fn still_holds(&self, f: &Folders) -> bool {
        f.base.is_at_its_path()
            && f.archive.is_child_of(&f.base, ARCHIVE)
            && Place::ALL.iter().zip(&f.places).all(|(p, d)| {
                let parent = if p.in_archive() { &f.archive } else { &f.base };
                d.is_child_of(parent, p.name())
            })
    }

    /// [`TargetDirs::open_all`] for callers that do not repair: a link or a
    /// file where a folder belongs is `FORBIDDEN`.
    ///
    /// # Errors
    ///
    /// `FORBIDDEN`, or a file error.
    pub fn make_all(&self) -> Result<Folders> {
        self.open_all().map_err(|f| match f {
            OpenFailure::Error(e) | OpenFailure::Vanished(e) => e,
            OpenFailure::Bad(bad) => not_a_folder(&self.bad_path(bad), bad.kind()),
        })
    }

    /// Where `bad` is.
    pub fn bad_path(&self, bad: Bad) -> PathBuf {
        match bad {
            Bad::Target(_) => self.base.clone(),
            Bad::Archive(_) => self.base.join(ARCHIVE),
            Bad::Place(p, _) => self.place(p),
        }
    }

    /// The path of `place`, for messages.
    pub fn place(&self, place: Place) -> PathBuf {
        if place.in_archive() {
            self.base.join(ARCHIVE).join(place.name())
        } else {
            self.base.join(place.name())
        }
    }

    /// `inbox/<id>.json`.
    pub fn job_file(&self, id: &JobId) -> PathBuf {
        self.inbox().join(id.file_name())
    }
    /// `cancel/<id>.json`.
    pub fn marker_file(&self, id: &JobId) -> PathBuf {
        self.cancel().join(id.file_name())
    }
    /// `running/<id>.json`.
    pub fn running_file(&self, id: &JobId) -> PathBuf {
        self.running().join(id.file_name())
    }
    /// `results/<id>.json`.
    pub fn result_file(&self, id: &JobId) -> PathBuf {
        self.results().join(id.file_name())
    }
    /// `archive/done/<id>.json`.
    pub fn done_file(&self, id: &JobId) -> PathBuf {
        self.done().join(id.file_name())
    }
    /// `archive/consumed/<id>.cancel.json`.
    pub fn consumed_file(&self, id: &JobId) -> PathBuf {
        self.consumed().join(consumed_name(id))
    }
    /// `logs/<id>.stdout.log` or `.stderr.log`.
    pub fn log_file(&self, id: &JobId, stream: &str) -> PathBuf {
        self.logs().join(log_name(id, stream))
    }
    /// `archive/rejected/<name>` and its `<name>.reason.json`; `n > 0` adds
    /// `.<n>` when the plain name is taken by an earlier rejection.
    pub fn rejected_files(&self, name: &str, n: u32) -> (PathBuf, PathBuf) {
        let stored = if n == 0 {
            name.to_string()
        } else {
            format!("{name}.{n}")
        };
        (
            self.rejected().join(&stored),
            self.rejected().join(format!("{stored}.reason.json")),
        )
    }
}

/// A consumed marker's name in `archive/consumed/`: `<id>.cancel.json`.
pub fn consumed_name(id: &JobId) -> String {
    format!("{id}.cancel.json")
}

/// A log's name in `logs/`: `<id>.stdout.log` or `<id>.stderr.log`.
pub fn log_name(id: &JobId, stream: &str) -> String {
    format!("{id}.{stream}.log")
}

/// The listener heartbeat's name in the target folder.
pub const LISTENER_JSON: &str = "listener.json";
/// The name of the listener's lock in the target folder.
pub const FOLDER_LOCK: &str = "listener.lock";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_the_spec_layout() {
        let t = TargetDirs::new(Path::new("/r"), &Machine::parse("PC", "t").unwrap());
        let id = JobId::parse("j1").unwrap();
        assert_eq!(t.job_file(&id), Path::new("/r/PC/inbox/j1.json"));
        assert_eq!(t.marker_file(&id), Path::new("/r/PC/cancel/j1.json"));
        assert_eq!(t.running_file(&id), Path::new("/r/PC/running/j1.json"));
        assert_eq!(t.result_file(&id), Path::new("/r/PC/results/j1.json"));
        assert_eq!(t.done_file(&id), Path::new("/r/PC/archive/done/j1.json"));
        assert_eq!(
            t.consumed_file(&id),
            Path::new("/r/PC/archive/consumed/j1.cancel.json")
        );
        assert_eq!(
            t.log_file(&id, "stdout"),
            Path::new("/r/PC/logs/j1.stdout.log")
        );
        assert_eq!(
            t.rejected_files("x.json", 0),
            (
                PathBuf::from("/r/PC/archive/rejected/x.json"),
                PathBuf::from("/r/PC/archive/rejected/x.json.reason.json")
            )
        );
        assert_eq!(
            t.rejected_files("x.json", 2).0,
            Path::new("/r/PC/archive/rejected/x.json.2")
        );
        assert_eq!(t.listener_json(), Path::new("/r/PC/listener.json"));
        assert_eq!(t.folder_lock(), Path::new("/r/PC/listener.lock"));
    }
}
