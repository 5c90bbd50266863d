//! Refusals (docs/protocol.md §6.6): a refused inbox file is counted, said
//! once, and moved to `archive/rejected/` with its reason; one that cannot
//! be moved stays and is retried, and never takes the listener down.

use super::Listener;
use crate::accept::{Rejection, Verdict};
use crate::error::Result;
use crate::fsops::Dir;
use crate::layout::Folders;
use crate::rejected::{self, Kind};

impl Listener {
    /// Counts and moves aside a refused inbox file. A file we cannot move
    /// stays and is retried; it must never take the listener down.
    pub(super) fn refuse(&mut self, f: &Folders, name: &str, r: &Rejection) {
        self.inbox.forget(name);
        // A job refused may be one a held job waits for.
        if let Some(id) = crate::names::JobId::from_file_name(name) {
            self.held.ended(self.dirs.target().as_str(), &id);
        }
        if r.verdict == Verdict::AlreadyProcessed {
            self.counters.skipped += 1;
        } else {
            self.counters.rejected += 1;
        }
        self.say(format!(
            "rejected {name}: {} ({})",
            r.verdict.as_str(),
            r.message
        ));
        if let Err(e) = self.reject(f, f.inbox(), name, r, Kind::Job) {
            self.say_once(name, format!("could not move {name} aside: {e}"));
        }
    }

    pub(super) fn say_once(&mut self, name: &str, line: String) {
        if self.inbox.first_note(name) {
            self.say(line);
        }
    }

    /// Moves the refused entry `name` of `from` to `archive/rejected/` with
    /// its reason.
    pub(super) fn reject(
        &self,
        f: &Folders,
        from: &Dir,
        name: &str,
        r: &Rejection,
        kind: Kind,
    ) -> Result<()> {
        let reason =
            rejected::Reason::new(r, kind, self.dirs.target().as_str()).judged_with(&self.key);
        rejected::file(f.rejected(), from, name, &reason)
    }
}
