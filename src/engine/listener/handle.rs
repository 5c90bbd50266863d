//! The listener's second door: what the HTTP intake holds to feed a
//! running listener from its own threads, so a job or marker taken over
//! HTTP meets the same folders, key, replay guard and control channel as
//! one dropped into the folder.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use super::site::Site;
use crate::base::names::JobId;
use crate::engine::runner::Mailbox;
use crate::local::state::LedgerView;
use crate::places::replay;
use crate::store::layout::TargetDirs;
use crate::trust::Key;

/// What the HTTP intake holds to feed a running listener from its own
/// threads: the same folders, key and replay guard, and the same control
/// channel, so a job or marker taken over HTTP meets the folder's rules.
#[derive(Clone)]
pub struct Handle {
    /// The listener's target folders.
    pub dirs: TargetDirs,
    /// The dispatch root.
    pub root: PathBuf,
    /// The fleet key.
    pub key: Arc<Key>,
    /// Jobs older than this are stale.
    pub max_age: Duration,
    /// Wakes the idle listener, or reaches the running job's runner.
    pub control: Mailbox,
    ledger: LedgerView,
}

impl Handle {
    /// What another thread needs to feed the listener of `site`, whose
    /// mailbox is `control` and ledger `ledger`.
    pub(super) fn new(site: &Site, control: Mailbox, ledger: LedgerView) -> Handle {
        Handle {
            dirs: site.dirs.clone(),
            root: site.root.clone(),
            key: Arc::clone(&site.key),
            max_age: site.settings.max_age,
            control,
            ledger,
        }
    }

    /// Where `id` was already processed, if anywhere (the replay guard).
    pub fn processed_where(&self, id: &JobId) -> Option<&'static str> {
        replay::used_where(&self.dirs, id, &self.key, || {
            self.ledger.contains(id.as_str())
        })
    }

    /// True while the listener runs `id`: it knows at the spawn, before
    /// `running/` shows it (the publisher writes that a moment later).
    pub fn is_running(&self, id: &JobId) -> bool {
        crate::engine::shutdown::is_running(id.as_str())
    }
}
