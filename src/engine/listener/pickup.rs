//! How the listener finds work: the layout's folders, held open for a
//! pass; file-system events that hint at a change in `inbox/` or
//! `cancel/`; and a queued job's cancel check (docs/protocol.md §7.4): a
//! valid marker ends it before anything is spawned, and a file in the
//! marker's place that is not one is moved aside (once settled, if it does
//! not parse or cannot be read) so it cannot hold the place a genuine
//! marker needs.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use super::recorder::Counters;
use super::site::Site;
use crate::base::clock;
use crate::base::error::Result;
use crate::base::names::JobId;
use crate::engine::runner::{Control, Mailbox};
use crate::places::rejected;
use crate::protocol::accept::{self, BadMarker};
use crate::protocol::doc::Marker;
use crate::protocol::settle::Settling;
use crate::requests::cancel::set_marker_aside;
use crate::store::events::{Events, Hint, Watching};
use crate::store::fsops;
use crate::store::layout::Folders;
use crate::store::listing::Listing;

/// A pass this soon after the folders were last found in place keeps them
/// without looking (docs/protocol.md §3.5): a drain of short jobs looks
/// every few jobs rather than at each (ten lookups a job), and a job that
/// runs longer than this meets a look before the next one. Writes go
/// through the folders held either way, never through a name.
const RECHECK_AFTER: Duration = Duration::from_millis(10);

/// The folders, the events and the cancel markers as last seen.
pub(super) struct Pickup {
    /// The layout's folders, held open for one pass (opened again at the
    /// next, so a folder swapped meanwhile is noticed and moved aside).
    folders: Option<Folders>,
    /// When the names were last found to lead to the folders held.
    checked: Instant,
    /// `cancel/` as last listed: a queued job's cancel check, and the
    /// completion race's, look at the folder's time, not up the name.
    markers: Listing,
    /// Files in a marker's place that do not parse, by name: the stamp
    /// they had when first seen so, and when.
    unsettled: HashMap<String, Settling>,
    /// What file-system events hinted at, and the watch that feeds it
    /// (none when off, or when it could not be set up).
    hint: Hint,
    events: Option<Events>,
    /// The hint's change count at the last listing of the inbox.
    listed_changes: u64,
    /// A layout folder was moved aside and made again: watch it anew.
    rewatch: bool,
    /// The watch failed once already (said once; tried again only when a
    /// folder is made anew).
    watch_failed: bool,
    /// Where [`Self::record_watching`] writes, in the state directory.
    watching: PathBuf,
    /// The root is not the one this listener knew (docs/protocol.md §3.6):
    /// said once, and again once it is back.
    root_gone: bool,
}

impl Pickup {
    /// The folders opened at start-up, with no watch yet; how the listener
    /// learns of changes is recorded at `watching`.
    pub fn new(folders: Folders, watching: PathBuf) -> Pickup {
        Pickup {
            folders: Some(folders),
            checked: Instant::now(),
            markers: Listing::default(),
            unsettled: HashMap::new(),
            hint: Hint::new(),
            events: None,
            listed_changes: 0,
            rewatch: false,
            watch_failed: false,
            watching,
            root_gone: false,
        }
    }

    /// Counts and logs layout folders moved aside.
    pub fn repaired(&mut self, site: &Site, counters: &mut Counters, notes: Vec<String>) {
        counters.repaired += notes.len() as u64;
        self.rewatch |= !notes.is_empty();
        for n in notes {
            site.say(n);
        }
    }

    /// Watches `inbox/` and `cancel/` (and the root, for `roster.json`, when
    /// judging against a roster) for events (after the layout checks
    /// passed: both are real folders in the root), each event waking the
    /// listener through `mail`. A watch that cannot be set up is said
    /// once on stderr; the poll goes on.
    pub fn watch(&mut self, site: &Site, mail: &Mailbox) {
        self.events = None;
        if site.settings.once {
            return;
        }
        if !site.settings.watch {
            self.record_watching(&Watching::Off);
            return;
        }
        let mail = mail.clone();
        let mut dirs = vec![site.dirs.inbox(), site.dirs.cancel()];
        // Judging against a roster: its change wakes the listener too.
        if site.key.live().is_some() {
            dirs.push(site.root.clone());
        }
        match Events::watch(&dirs, &self.hint, move || mail.send(Control::Wake)) {
            Ok(e) => {
                self.events = Some(e);
                self.record_watching(&Watching::Events);
            }
            Err(e) => {
                self.record_watching(&Watching::Unavailable(e.clone()));
                if !std::mem::replace(&mut self.watch_failed, true) {
                    crate::note!(
                        "fleet-dispatch: cannot watch {} for changes ({e}); looking every {} instead",
                        site.dirs.inbox().display(),
                        clock::format_duration(site.settings.poll)
                    );
                }
            }
        }
    }

    /// Records how this listener learns of changes in its state directory,
    /// where `doctor` reads it; a failed write is ignored.
    fn record_watching(&self, how: &Watching) {
        let _ = fsops::replace(
            &self.watching,
            how.to_line().as_bytes(),
            fsops::Flush::Nothing,
        );
    }

    /// True when file-system events are watched.
    pub fn has_events(&self) -> bool {
        self.events.is_some()
    }

    /// The hint the events feed, for a running job's watch.
    pub fn hint(&self) -> &Hint {
        &self.hint
    }

    /// The hint's change count now.
    pub fn changes(&self) -> u64 {
        self.hint.changes()
    }

    /// Says a wake was received: the next change wakes again.
    pub fn woken(&self) {
        self.hint.woken();
    }

    /// The layout's folders for this pass, opened (and repaired) when the
    /// pass has none yet.
    pub fn open(&mut self, site: &Site, counters: &mut Counters) -> Result<Folders> {
        if let Some(f) = &self.folders {
            return Ok(f.clone());
        }
        let (f, notes) = rejected::open_repairing(&site.dirs)?;
        self.repaired(site, counters, notes);
        self.folders = Some(f.clone());
        self.checked = Instant::now();
        Ok(f)
    }

    /// The folders for a pass: those of the last pass when they were found
    /// in place less than [`RECHECK_AFTER`] ago or every name still leads
    /// to the folder held ([`crate::store::layout::TargetDirs::still_holds`]),
    /// else all opened again, and repaired; the watch is set up anew when it
    /// was lost or a folder was made again. None when they cannot be opened:
    /// the pass is skipped (said, the root's absence once).
    pub fn for_pass(
        &mut self,
        site: &Site,
        counters: &mut Counters,
        mail: &Mailbox,
    ) -> Option<Folders> {
        let recent = self.checked.elapsed() < RECHECK_AFTER;
        match &self.folders {
            Some(_) if recent => {}
            Some(f) if site.dirs.still_holds(f) => self.checked = Instant::now(),
            _ => self.folders = None,
        }
        let f = match self.open(site, counters) {
            Ok(f) => {
                if std::mem::take(&mut self.root_gone) {
                    crate::note!(
                        "fleet-dispatch: the dispatch root {} is back",
                        site.root.display()
                    );
                }
                f
            }
            Err(e) if e.code == crate::base::error::Code::Config => {
                // The root went away: nothing is made in what stands there.
                if !std::mem::replace(&mut self.root_gone, true) {
                    crate::note!("fleet-dispatch: {}; waiting for it", e.message);
                }
                return None;
            }
            Err(e) => {
                site.say(format!(
                    "cannot open the folders of {}: {e}; trying again",
                    site.dirs.target()
                ));
                return None;
            }
        };
        if self.hint.take_lost() || std::mem::take(&mut self.rewatch) {
            self.watch(site, mail);
        }
        Some(f)
    }

    /// True when an event hinted at a change since the inbox was listed.
    pub fn hinted(&self) -> bool {
        self.hint.changes() != self.listed_changes
    }

    /// Notes that the inbox is listed now. Read before listing: an event
    /// during the listing lists again.
    pub fn listing(&mut self) {
        self.listed_changes = self.hint.changes();
    }

    /// An idle listener holds no folder, nor the listing of `cancel/`,
    /// which holds that folder too.
    pub fn let_go(&mut self) {
        self.folders = None;
        self.markers = Listing::default();
    }

    /// The valid cancel marker for `id`, if one is there. An invalid one is
    /// moved to `archive/rejected/` (once settled), so it cannot block the
    /// slot a genuine marker needs.
    pub fn valid_marker(&mut self, site: &Site, f: &Folders, id: &JobId) -> Option<Marker> {
        let name = id.file_name();
        if !self.markers.may_hold(f.cancel(), &name, site.settings.poll) {
            return None;
        }
        let r = match crate::protocol::judge::marker(f.cancel(), id, site.target(), &site.key) {
            Ok(m) => return Some(m),
            Err(r) => r,
        };
        // One that may still be arriving is moved aside once settled by
        // the drain's rule, by a rename, which needs no read permission.
        let settled = || {
            let Ok(meta) = f.cancel().entry(&name) else {
                return false;
            };
            let (stamp, now) = ((meta.len, meta.modified), Instant::now());
            self.unsettled
                .entry(format!("cancel/{name}"))
                .or_insert_with(|| Settling::new(stamp, now))
                .observe(stamp, now, SystemTime::now(), site.settings.settle)
        };
        match accept::bad_marker(r.verdict, settled) {
            BadMarker::Gone | BadMarker::Wait => None,
            BadMarker::SetAside => {
                site.say(format!(
                    "rejected marker cancel/{name}: {} ({})",
                    r.verdict.as_str(),
                    r.message
                ));
                let (target, key) = (site.target(), &site.key);
                if let Err(e) = set_marker_aside(f.rejected(), f.cancel(), &name, &r, target, key) {
                    site.say(format!("could not move the marker aside: {e}"));
                }
                None
            }
        }
    }

    /// True when a valid marker for a finished job is in `cancel/`, read
    /// from the folder (for a job whose runner did not meet one).
    pub fn has_valid_marker(&mut self, site: &Site, counters: &mut Counters, id: &JobId) -> bool {
        let Ok(f) = self.open(site, counters) else {
            return false;
        };
        self.valid_marker(site, &f, id).is_some()
    }
}
