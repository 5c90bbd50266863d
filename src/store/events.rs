//! File-system events as hints: the listener learns at once that something
//! arrived in `inbox/` or `cancel/`, instead of at its next poll.
//!
//! Events never say *what* to do, only *when to look*: every file is still
//! read through the folders the listener holds open, so acceptance,
//! settling, the replay guard and the order of writes are those of a poll.
//! The poll stays the bound (docs/protocol.md §7): a network share that
//! delivers no events, a lost event or a full event queue only makes a look
//! wait for the next poll.
//!
//! A burst (10,000 files, a sync engine's temp-file churn) costs one look,
//! not one per event: each event only bumps a counter, and at most one wake
//! is in flight until its receiver says it was woken ([`Hint::woken`]).
//!
//! The `notify` crate does the watching (inotify, ReadDirectoryChangesW,
//! FSEvents) on a thread of its own; nothing here is asynchronous.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind, RenameMode};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

/// What events told, shared between the watching thread and its readers.
#[derive(Clone, Debug, Default)]
pub struct Hint(Arc<Flags>);

#[derive(Debug, Default)]
struct Flags {
    /// Bumped by each event that may mean new work or a new marker.
    changes: AtomicU64,
    /// A wake was sent and not yet received.
    pending: AtomicBool,
    /// A watched folder itself went away or moved: watch again.
    lost: AtomicBool,
}

impl Hint {
    /// A hint nothing has touched yet.
    pub fn new() -> Hint {
        Hint::default()
    }

    /// How many changes were seen so far: a reader compares it with the
    /// figure it had when it last looked.
    pub fn changes(&self) -> u64 {
        self.0.changes.load(SeqCst)
    }

    /// Says a wake was received (or dropped): the next change sends
    /// another. Call it before looking, so a change during the look is
    /// not lost.
    pub fn woken(&self) {
        self.0.pending.store(false, SeqCst);
    }

    /// True once after a watched folder went away or moved.
    pub fn take_lost(&self) -> bool {
        self.0.lost.swap(false, SeqCst)
    }

    /// Records one event; true when the caller must send a wake.
    fn note(&self, change: Change) -> bool {
        match change {
            Change::None => return false,
            Change::Lost => self.0.lost.store(true, SeqCst),
            Change::Some => {}
        }
        self.0.changes.fetch_add(1, SeqCst);
        !self.0.pending.swap(true, SeqCst)
    }
}

/// How a loop listener learns of changes, as it records it in its state
/// directory for `doctor` (docs/protocol.md §7.2): by events, or by its
/// poll alone because watching is off or could not be set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Watching {
    /// File-system events wake it.
    Events,
    /// Off by the setting (`--no-watch`, `watch = false`).
    Off,
    /// The watch could not be set up (a watch limit, a file system that
    /// has none): why, as the system said it.
    Unavailable(String),
}

impl Watching {
    /// Its line in the state directory: `events`, `off`, or
    /// `unavailable <why>`.
    pub fn to_line(&self) -> String {
        match self {
            Watching::Events => "events\n".to_string(),
            Watching::Off => "off\n".to_string(),
            Watching::Unavailable(why) => format!("unavailable {}\n", why.replace('\n', " ")),
        }
    }

    /// Reads a line [`Watching::to_line`] wrote.
    pub fn from_line(line: &str) -> Option<Watching> {
        let line = line.trim_end();
        match line.split_once(' ') {
            Some(("unavailable", why)) => Some(Watching::Unavailable(why.to_string())),
            _ if line == "events" => Some(Watching::Events),
            _ if line == "off" => Some(Watching::Off),
            _ => None,
        }
    }

    /// True when a watch limit is the likely cause (Linux's inotify: too
    /// many watches or instances for this user).
    pub fn is_limit(&self) -> bool {
        let Watching::Unavailable(why) = self else {
            return false;
        };
        let why = why.to_ascii_lowercase();
        [
            "no space left",
            "too many open files",
            "max_user_watches",
            "limit",
        ]
        .iter()
        .any(|w| why.contains(w))
    }
}

/// What one event means for a reader.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Nothing new can be there: a file was read, or left the folder (our
    /// own archiving moves files out).
    None,
    /// Something may have arrived or changed, or events were lost.
    Some,
    /// A watched folder itself was removed or moved away.
    Lost,
}

/// The meaning of an event of `kind` on `path` (a watched folder or one of
/// its entries), given the watched `roots`; `rescan` is the watcher's own
/// "events were dropped" flag.
pub fn classify(kind: &EventKind, path: Option<&Path>, roots: &[PathBuf], rescan: bool) -> Change {
    let is_root = path.is_some_and(|p| roots.iter().any(|r| r == p));
    let gone = matches!(
        kind,
        EventKind::Remove(_)
            | EventKind::Modify(ModifyKind::Name(RenameMode::From | RenameMode::Any))
    );
    if is_root && gone {
        return Change::Lost;
    }
    if rescan {
        return Change::Some;
    }
    match kind {
        EventKind::Remove(_)
        | EventKind::Modify(ModifyKind::Name(RenameMode::From))
        | EventKind::Access(AccessKind::Open(_) | AccessKind::Read)
        | EventKind::Access(AccessKind::Close(AccessMode::Read | AccessMode::Execute)) => {
            Change::None
        }
        _ => Change::Some,
    }
}

/// A watch on some folders (not their subfolders), calling a wake function
/// on the first change after each [`Hint::woken`].
pub struct Events {
    _watcher: RecommendedWatcher,
}

impl Events {
    /// Watches `dirs` (each already checked to be a real folder in the
    /// root), noting changes in `hint` and calling `wake` when a reader is
    /// to be woken. An error means events cannot be had here (an
    /// unsupported or network file system, a watch limit): poll instead.
    pub fn watch(
        dirs: &[PathBuf],
        hint: &Hint,
        wake: impl Fn() + Send + 'static,
    ) -> Result<Events, String> {
        let roots = dirs.to_vec();
        let shared = hint.clone();
        let handler = move |ev: notify::Result<notify::Event>| {
            let change = match ev {
                Ok(ev) => {
                    let rescan = ev.need_rescan();
                    // An event with no path is about the watch as a whole.
                    let paths: Vec<Option<&Path>> = if ev.paths.is_empty() {
                        vec![None]
                    } else {
                        ev.paths.iter().map(|p| Some(p.as_path())).collect()
                    };
                    paths
                        .into_iter()
                        .map(|p| classify(&ev.kind, p, &roots, rescan))
                        .max_by_key(|c| match c {
                            Change::None => 0,
                            Change::Some => 1,
                            Change::Lost => 2,
                        })
                        .unwrap_or(Change::None)
                }
                // A watcher error (a full queue, say): look at everything.
                Err(_) => Change::Some,
            };
            if shared.note(change) {
                wake();
            }
        };
        let mut watcher = notify::recommended_watcher(handler).map_err(|e| e.to_string())?;
        for d in dirs {
            watcher
                .watch(d, RecursiveMode::NonRecursive)
                .map_err(|e| format!("{}: {e}", d.display()))?;
        }
        Ok(Events { _watcher: watcher })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, RemoveKind};

    fn roots() -> Vec<PathBuf> {
        vec![PathBuf::from("/r/T/inbox"), PathBuf::from("/r/T/cancel")]
    }

    fn of(kind: EventKind, path: &str) -> Change {
        classify(&kind, Some(Path::new(path)), &roots(), false)
    }

    #[test]
    fn how_a_listener_watches_is_one_line_read_back() {
        for w in [
            Watching::Events,
            Watching::Off,
            Watching::Unavailable("OS file watch limit reached. about [\"/r/T/inbox\"]".into()),
        ] {
            assert_eq!(Watching::from_line(&w.to_line()), Some(w));
        }
        assert_eq!(Watching::from_line("what\n"), None);
        // notify's word for inotify's ENOSPC, and the errno's own.
        assert!(Watching::Unavailable("OS file watch limit reached.".into()).is_limit());
        assert!(Watching::Unavailable("Too many open files (os error 24)".into()).is_limit());
        assert!(!Watching::Unavailable("Operation not supported".into()).is_limit());
        assert!(!Watching::Off.is_limit());
    }

    #[test]
    fn arrivals_count_and_departures_and_reads_do_not() {
        let f = "/r/T/inbox/a.json";
        assert_eq!(of(EventKind::Create(CreateKind::File), f), Change::Some);
        let to = EventKind::Modify(ModifyKind::Name(RenameMode::To));
        assert_eq!(of(to, f), Change::Some);
        let both = EventKind::Modify(ModifyKind::Name(RenameMode::Both));
        assert_eq!(of(both, f), Change::Some);
        let data = EventKind::Modify(ModifyKind::Data(DataChange::Any));
        assert_eq!(of(data, f), Change::Some);
        let closed = EventKind::Access(AccessKind::Close(AccessMode::Write));
        assert_eq!(of(closed, f), Change::Some);
        assert_eq!(of(EventKind::Any, f), Change::Some);
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        assert_eq!(of(from, f), Change::None);
        assert_eq!(of(EventKind::Remove(RemoveKind::File), f), Change::None);
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(of(open, f), Change::None);
    }

    #[test]
    fn a_watched_folder_moving_away_is_lost_and_a_dropped_queue_is_a_change() {
        let from = EventKind::Modify(ModifyKind::Name(RenameMode::From));
        assert_eq!(of(from, "/r/T/inbox"), Change::Lost);
        let gone = EventKind::Remove(RemoveKind::Folder);
        assert_eq!(of(gone, "/r/T/cancel"), Change::Lost);
        let open = EventKind::Access(AccessKind::Open(AccessMode::Any));
        assert_eq!(classify(&open, None, &roots(), true), Change::Some);
    }

    #[test]
    fn a_burst_sends_one_wake_until_it_is_received() {
        let h = Hint::new();
        let wakes = (0..10_000).filter(|_| h.note(Change::Some)).count();
        assert_eq!(wakes, 1);
        assert_eq!(h.changes(), 10_000);
        assert!(!h.note(Change::None));
        h.woken();
        assert!(h.note(Change::Some));
        assert!(!h.take_lost());
        h.woken();
        assert!(h.note(Change::Lost));
        assert!(h.take_lost());
        assert!(!h.take_lost());
    }
}
